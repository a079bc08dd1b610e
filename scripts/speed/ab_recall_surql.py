"""Recall before / after a change of its stored functions, on one store (issue 24).

  git archive <base-commit> surql | tar -x -C BASE_DIR
  python scripts/speed/ab_recall_surql.py STORE BASE_DIR/surql [ROUNDS] [QUERIES] [--doc]

STORE is a ``surrealkv://`` directory holding the data and, beside it, ``STORE.queries.json``:
``{ns, db, texts, vecs, opts}`` (the queries, their vectors and the recall options; write it
once from the bench's data or a LoCoMo conversation). Each round applies the base surql/ and
this checkout's in turn (the desired state only: migrations are not touched), in alternating
order, and times recall on every query after a two-query warm-up; ``--doc`` also times
documents.query (hybrid). It prints the p50 of each row of the bench's stage table for both
versions and whether every query returned the same hits with the same scores. Both versions
see the same rows, caches and machine load, so the ratio holds on a loaded machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from amem_db.connection import Target, close_quietly, open_connection
from amem_db.db import call
from amem_db.harness.bench.recall import recall_stages
from amem_db.migrator import Migrator


async def main(store: Path, base: Path, rounds: int, n: int, doc: bool) -> None:
    meta = json.loads(Path(f"{store}.queries.json").read_text())
    conn = await open_connection(Target(url=f"surrealkv://{store}", ns=meta["ns"], db=meta["db"]))
    queries, opts = list(zip(meta["texts"], meta["vecs"]))[:n], meta["opts"]
    stages = {"before": defaultdict(list), "after": defaultdict(list)}
    dq: dict[str, list[float]] = {"before": [], "after": []}
    hits: dict[str, dict[str, list]] = {"before": {}, "after": {}}
    for r in range(rounds):
        for version in (("before", "after") if r % 2 == 0 else ("after", "before")):
            await Migrator(conn, surql_dir=base if version == "before" else None).migrate()
            for text, e in queries[:2]:
                await call(conn, "fn::amem::recall", text, e, opts)
            for text, e in queries:
                t = time.perf_counter()
                res = await call(conn, "fn::amem::recall", text, e, opts)
                for k, v in recall_stages(res, (time.perf_counter() - t) * 1000).items():
                    stages[version][k].append(v)
                hits[version][text] = [(str(h["id"]), round(h["score"], 9)) for h in res["hits"]]
                if doc:
                    t = time.perf_counter()
                    await call(conn, "fn::amem::documents::query", text, e, {"mode": "hybrid", "k": 10})
                    dq[version].append((time.perf_counter() - t) * 1000)
    await Migrator(conn).migrate()  # leave the store on this checkout's functions
    print(f"load average {os.getloadavg()}")
    print(f"{'stage (p50 ms)':40s} {'before':>9s} {'after':>9s}")
    for k in dict.fromkeys([*stages["before"], *stages["after"]]):
        row = [statistics.median(stages[v][k]) if stages[v][k] else float("nan") for v in ("before", "after")]
        print(f"{k:40s} {row[0]:9.2f} {row[1]:9.2f}")
    if doc:
        print(f"{'documents.query hybrid':40s} {statistics.median(dq['before']):9.2f} {statistics.median(dq['after']):9.2f}")
    same = sum(hits["before"][q] == hits["after"][q] for q in hits["before"])
    print(f"same hits and scores: {same}/{len(hits['before'])}")
    await close_quietly(conn)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--doc"]
    asyncio.run(main(Path(args[0]), Path(args[1]), int(args[2]) if len(args) > 2 else 2, int(args[3]) if len(args) > 3 else 20,
                     "--doc" in sys.argv))
    os._exit(0)  # docs/ENGINE-ISSUES.md #4
