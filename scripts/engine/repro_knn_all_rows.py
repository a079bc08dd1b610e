"""docs/ENGINE-ISSUES.md #20: `<|K,EF|>` returns every row when no index is usable.

On a table whose HNSW index is still building (`DEFINE INDEX ... CONCURRENTLY` over
existing rows) or that has no HNSW index on the field at all, the KNN operator is
not an error and not a brute-force top-K: the condition is true for every row, so
`SELECT ... WHERE e <|3,40|> $q` returns the whole table (and a LIMIT-less vector
leg would rank the whole table). `<|3,COSINE|>` (brute force) returns 3 in both cases. During a blocking
`REBUILD INDEX`, a KNN from another request of the same process sees the graph being
built: it returns fewer than K rows, while INFO FOR INDEX still says `ready`.

Usage: python scripts/engine/repro_knn_all_rows.py
"""

from __future__ import annotations

import asyncio
import os
import random

from surrealdb import AsyncSurreal, RecordID

N = 3000


async def main() -> None:
    rng = random.Random(3)
    db = AsyncSurreal("mem://")
    await db.connect()
    await db.use("p", "p")
    rows = [{"id": RecordID("t", f"r{i}"), "e": [rng.random() for _ in range(16)]} for i in range(N)]
    q = [0.5] * 16
    await db.query("DEFINE TABLE t SCHEMALESS; DEFINE TABLE plain SCHEMALESS;")
    for i in range(0, N, 500):
        await db.query("INSERT INTO t $rows RETURN NONE", {"rows": rows[i:i + 500]})
    await db.query("INSERT INTO plain $rows RETURN NONE", {"rows": [{"e": r["e"]} for r in rows[:50]]})
    (no_index,) = await db.query("SELECT id FROM plain WHERE e <|3,40|> $q", {"q": q})
    print(f"no index, 50 rows:           <|3,40|> -> {len(no_index)} rows")
    await db.query("DEFINE INDEX te ON t FIELDS e HNSW DIMENSION 16 DIST COSINE TYPE F32 EFC 150 M 12 CONCURRENTLY;")
    (status,) = await db.query("INFO FOR INDEX te ON t")
    (building,) = await db.query("SELECT id FROM t WHERE e <|3,40|> $q", {"q": q})
    print(f"INFO FOR INDEX right after the DEFINE: {status['building']}")
    (brute,) = await db.query("SELECT id FROM t WHERE e <|3,COSINE|> $q", {"q": q})
    print(f"CONCURRENTLY building, {N}: <|3,40|> -> {len(building)} rows; <|3,COSINE|> -> {len(brute)} rows")
    for _ in range(100):
        (info,) = await db.query("INFO FOR INDEX te ON t")
        if info["building"]["status"] == "ready":
            break
        await asyncio.sleep(0.2)
    (built,) = await db.query("SELECT id FROM t WHERE e <|3,40|> $q", {"q": q})
    print(f"after the build ({info['building']}): <|3,40|> -> {len(built)} rows")
    # a blocking REBUILD on one request, KNN queries on another (one connection, async)
    big = [{"id": RecordID("g", f"r{i}"), "e": [rng.gauss(0, 1) for _ in range(64)]} for i in range(6000)]
    await db.query("DEFINE TABLE g SCHEMALESS; DEFINE INDEX ge ON g FIELDS e HNSW DIMENSION 64 DIST COSINE TYPE F32 EFC 150 M 12;")
    for i in range(0, len(big), 500):
        await db.query("INSERT INTO g $rows RETURN NONE", {"rows": big[i:i + 500]})
    qg = [rng.gauss(0, 1) for _ in range(64)]
    rebuild = asyncio.create_task(db.query("REBUILD INDEX ge ON g"))
    await asyncio.sleep(0.3)
    seen = []
    while not rebuild.done() and len(seen) < 5:
        (status,) = await db.query("INFO FOR INDEX ge ON g")
        (rows,) = await db.query("SELECT id FROM g WHERE e <|3,40|> $q", {"q": qg})
        seen.append((len(rows), status["building"]["status"]))
    await rebuild
    (after,) = await db.query("SELECT id FROM g WHERE e <|3,40|> $q", {"q": qg})
    print(f"during a blocking REBUILD of 6000 rows: <|3,40|> -> (rows, INFO status) {seen}; after it: {len(after)} rows")
    await db.close()
    os._exit(0)  # docs/ENGINE-ISSUES.md #4


if __name__ == "__main__":
    asyncio.run(main())
