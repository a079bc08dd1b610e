"""Cost of fn::amem::forget on the embedded engine (mem://, owner session, hash embedder).

    python scripts/speed/measure_forget.py [--writes 1000]

Stores WRITES memory writes (3 facts on one of WRITES/4 people + a passage, one
session per 10 writes), then times, each as the median of 5 runs where it can be
repeated: a dry-run purge of one entity (index reads), a dry run by write (passages
indexed, facts scanned), a dry run by session (scans), then a real soft forget and
a purge of one entity. Figures go to docs/MEMORY-DESIGN.md "Forget".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

from amem_db import Memory
from amem_db.db import call


async def timed(mem: Memory, request: dict, runs: int = 5) -> tuple[float, dict]:
    out, ms = {}, []
    for _ in range(runs):
        t = time.perf_counter()
        out = await call(mem.conn, "fn::amem::forget", request)
        ms.append((time.perf_counter() - t) * 1000)
    return statistics.median(ms), out


async def main(writes: int) -> None:
    async with await Memory.open("mem://", "bench", "forget", embedder="hash:384", migrate=True) as mem:
        ids = []
        for i in range(writes):
            who = {"type": "person", "name": f"Person {i % max(1, writes // 4)}"}
            w = await mem.facts.write({"triples": [{"entity": who, "key": f"k{j}", "value": f"v{i}"} for j in range(3)],
                                       "text": f"Passage number {i} about {who['name']}.", "session_id": f"s{i // 10}"}, embed=False)
            ids.append(w.write)
        print(f"{writes} writes stored ({writes * 3} attribute rows, {writes} passages)")
        p = {"type": "person", "name": "Person 1"}
        for label, req in [("dry-run purge of one entity", {"query": {"entity": p}, "dryRun": True, "purge": True}),
                           ("dry run by write", {"query": {"write": ids[7]}, "dryRun": True}),
                           ("dry run by session", {"query": {"session_id": "s3"}, "dryRun": True})]:
            ms, out = await timed(mem, req)
            print(f"{label:32s} {ms:8.1f} ms  {out['forgotten']}")
        for label, req in [("soft forget of one write", {"query": {"write": ids[11]}}),
                           ("purge of one entity", {"query": {"entity": p}, "purge": True})]:
            ms, out = await timed(mem, req, runs=1)
            print(f"{label:32s} {ms:8.1f} ms  {out['forgotten']}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=1000)
    asyncio.run(main(ap.parse_args().writes))
    sys.stdout.flush()
    os._exit(0)  # the native engine can abort at interpreter exit (docs/ENGINE-ISSUES.md #4)
