"""docs/ENGINE-ISSUES.md #19: the embedded engine never compacts HNSW; only REBUILD builds a graph.

SurrealDB 3.x writes each HNSW change to a pending queue (`hp` keys) and relies on a
background task (`Datastore::index_compaction`, started by the server and the Rust
SDK's `engine/tasks.rs`) to fold the queue into the graph. The Python extension
(surrealdb-embedded) creates a `Datastore` and starts no task, so every KNN scans
the whole queue exactly. Symptom: recall 1.0 at any EF, even EF = k on random
vectors, and latency linear in the table. Nothing reachable from SurrealQL drains
the queue (tried below); `REBUILD INDEX` (and a blocking `DEFINE INDEX` over
existing rows) does build a graph: recall at a small EF then drops below 1 (a
graph walk is approximate) and latency falls. Rows written afterwards queue again.

Usage: python scripts/engine/repro_hnsw_compaction.py [rows]   (default 4000; ~1 min)
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
QUERIES = 20


async def knn_probe(db: AsyncSurreal, queries: list[list[float]], exact: list[set[str]], ef: int) -> tuple[float, float]:
    """(recall@10 against the exact top-10, median ms) of `<|10,ef|>`."""
    hits, times = 0, []
    for q, truth in zip(queries, exact):
        t = time.perf_counter()
        (rows,) = await db.query(f"SELECT id FROM t WHERE e <|10,{ef}|> $q", {"q": q})
        times.append((time.perf_counter() - t) * 1000)
        hits += len({str(r["id"]) for r in rows} & truth)
    return hits / (10 * len(queries)), statistics.median(times)


async def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    rng = random.Random(7)
    db = AsyncSurreal("mem://")
    await db.connect()
    await db.use("p", "p")
    await db.query(f"DEFINE TABLE t SCHEMALESS; DEFINE INDEX te ON t FIELDS e HNSW DIMENSION {DIM} DIST COSINE TYPE F32 EFC 150 M 12;")
    vecs = [[rng.gauss(0, 1) for _ in range(DIM)] for _ in range(n)]
    for i in range(0, n, 500):
        rows = [{"id": RecordID("t", f"r{j}"), "e": vecs[j]} for j in range(i, min(n, i + 500))]
        await db.query("INSERT INTO t $rows RETURN NONE", {"rows": rows})
    queries = [[rng.gauss(0, 1) for _ in range(DIM)] for _ in range(QUERIES)]
    exact = []
    for q in queries:  # brute force: `<|k,COSINE|>` never touches the index
        (rows,) = await db.query("SELECT id FROM t WHERE e <|10,COSINE|> $q", {"q": q})
        exact.append({str(r["id"]) for r in rows})

    async def report(label: str) -> None:
        for ef in (10, 40, 200):
            recall, ms = await knn_probe(db, queries, exact, ef)
            print(f"{label:44} EF {ef:3}: recall@10 {recall:.3f}  median {ms:6.1f} ms")

    print(f"{n} random {DIM}-dim vectors, index defined before the rows were written")
    print("INFO FOR INDEX:", (await db.query("INFO FOR INDEX te ON t"))[0])
    await report("written (pending queue)")
    await asyncio.sleep(3)
    await report("3 s later (no background task)")
    for stmt in ("ALTER TABLE t COMPACT", "ALTER DATABASE COMPACT", "ALTER NAMESPACE COMPACT",
                 "ALTER SYSTEM COMPACT", "ALTER INDEX te ON t COMPACT", "ANALYZE INDEX te ON t"):
        try:
            out = await db.query(stmt)
            print(f"{stmt:28} -> {out}")
        except Exception as exc:
            print(f"{stmt:28} -> error: {str(exc)[:100]}")
    await report("after every COMPACT statement")
    t = time.perf_counter()
    await db.query("REBUILD INDEX te ON t")
    print(f"REBUILD INDEX te ON t: {time.perf_counter() - t:.1f} s (blocking)")
    print("INFO FOR INDEX:", (await db.query("INFO FOR INDEX te ON t"))[0])
    await report("after REBUILD (graph)")
    extra = [[rng.gauss(0, 1) for _ in range(DIM)] for _ in range(n // 4)]
    rows = [{"id": RecordID("t", f"x{j}"), "e": v} for j, v in enumerate(extra)]
    for i in range(0, len(rows), 500):
        await db.query("INSERT INTO t $rows RETURN NONE", {"rows": rows[i:i + 500]})
    (own,) = await db.query("SELECT id FROM t WHERE e <|1,10|> $q", {"q": extra[0]})
    print(f"{len(extra)} rows written after REBUILD; nearest to the first of them: {own} (found through the queue)")
    exact = []
    for q in queries:
        (got,) = await db.query("SELECT id FROM t WHERE e <|10,COSINE|> $q", {"q": q})
        exact.append({str(r["id"]) for r in got})
    await report("graph + new rows in the queue")
    await db.close()
    os._exit(0)  # docs/ENGINE-ISSUES.md #4


if __name__ == "__main__":
    asyncio.run(main())
