"""What the validation of a memory write costs (issue 25, session 15): ``facts::check``,
prepare's ``plan(check)``, ``check_triple`` and ``entities::ref`` over 256 one-fact requests
(the bench's shape) in one statement each, us a request net of the same SELECT without a call,
median of 8, on a fresh ``mem://`` database migrated from the tree on PYTHONPATH. Before /
after a change: run it from each checkout in turn (``git worktree add <dir> <commit>``).

    PYTHONPATH=. python scripts/speed/probe_facts_check.py
"""
from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_facts_batch import fact_request

from amem_db.connection import Target, open_connection
from amem_db.migrator import Migrator

D = "{valid_from: time::now(), valid_until: NONE, category: 'knowledge', confidence: 1.0, geometry: NONE}"
PROBES = {
    "baseline": "SELECT VALUE $this FROM $r",
    "check": "SELECT VALUE fn::amem::facts::check($this) FROM $r",
    "plan(check)": "SELECT VALUE fn::amem::facts::plan(fn::amem::facts::check($this)) FROM $r",
    "check_triple": f"SELECT VALUE fn::amem::facts::check_triple($this.triples[0], 0, {D}) FROM $r",
    "entities::ref": "SELECT VALUE fn::amem::entities::ref('topic', $this.triples[0].entity.name, 'x') FROM $r",
}


async def main() -> None:
    conn = await open_connection(Target(url="mem://", ns="probe", db="check"))
    await Migrator(conn).migrate()
    rng = random.Random(1)
    reqs = [fact_request(rng, i) for i in range(256)]
    us: dict[str, list[float]] = {k: [] for k in PROBES}
    for _ in range(8):
        for k, q in PROBES.items():
            t0 = time.perf_counter()
            await conn.query(q, {"r": reqs})
            us[k].append((time.perf_counter() - t0) * 1e6 / len(reqs))
    base = statistics.median(us.pop("baseline"))
    for k, v in us.items():
        print(f"{k:16s} {statistics.median(v) - base:7.1f} us a request")
    print(f"load {os.getloadavg()[0]:.1f}")
    os._exit(0)  # the native engine may abort at exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    asyncio.run(main())
