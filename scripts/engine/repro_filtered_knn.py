"""docs/ENGINE-ISSUES.md #22: a KNN with a WHERE condition costs far more than without.

`WHERE e <|K,EF|> $q AND cat = 'b'` pushes the condition into the HNSW search (exact,
K rows), evaluating it per visited candidate; on the pending queue of an uncompacted
index (#19) every queued vector is a candidate. KNN-then-filter is cheap but
under-fills (10% admitted: most of the K go). Compared with the brute force
`<|K,COSINE|>` over the same filter, which the planner runs as a scan.

Usage: python scripts/engine/repro_filtered_knn.py [rows]     (default 10000; ~1 min)
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import time

from surrealdb import AsyncSurreal, RecordID

DIM = 64


async def timed(db: AsyncSurreal, sql: str, q: list[float]) -> tuple[int, float]:
    times, n = [], 0
    for _ in range(5):
        t = time.perf_counter()
        (rows,) = await db.query(sql, {"q": q})
        times.append((time.perf_counter() - t) * 1000)
        n = len(rows)
    return n, statistics.median(times)


async def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    rng = random.Random(5)
    db = AsyncSurreal("mem://")
    await db.connect()
    await db.use("p", "p")
    await db.query(f"DEFINE TABLE t SCHEMALESS; DEFINE INDEX te ON t FIELDS e HNSW DIMENSION {DIM} DIST COSINE TYPE F32 EFC 150 M 12;"
                   "DEFINE INDEX tc ON t FIELDS cat;")
    for i in range(0, n, 500):
        rows = [{"id": RecordID("t", f"r{j}"), "e": [rng.gauss(0, 1) for _ in range(DIM)], "cat": "b" if j % 10 == 0 else "a"}
                for j in range(i, min(n, i + 500))]
        await db.query("INSERT INTO t $rows RETURN NONE", {"rows": rows})
    q = [rng.gauss(0, 1) for _ in range(DIM)]
    cases = {
        "KNN, no filter": "SELECT id FROM t WHERE e <|10,40|> $q",
        "KNN AND cat = 'b' (filter in the walk)": "SELECT id FROM t WHERE e <|10,40|> $q AND cat = 'b'",
        "KNN, then filter": "SELECT id FROM (SELECT id, cat FROM t WHERE e <|10,40|> $q) WHERE cat = 'b'",
        "brute force over cat = 'b'": "SELECT id FROM t WHERE cat = 'b' AND e <|10,COSINE|> $q",
    }
    for label, graph in (("pending queue", False), ("built graph", True)):
        if graph:
            await db.query("REBUILD INDEX te ON t")
        print(f"{n} rows, 10% with cat = 'b', {label}:")
        for name, sql in cases.items():
            got, ms = await timed(db, sql, q)
            print(f"  {name:40} {got:3} rows  median {ms:8.1f} ms", flush=True)
    await db.close()
    os._exit(0)  # docs/ENGINE-ISSUES.md #4


if __name__ == "__main__":
    asyncio.run(main())
