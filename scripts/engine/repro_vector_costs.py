"""What a vector read costs per row on the embedded engine (docs/ENGINE-ISSUES.md #30).

    python scripts/engine/repro_vector_costs.py [ROWS]

ROWS random unit 384-dim vectors in a mem:// table with an HNSW index (rows written after
the index: its pending queue, as in a live store), then the median of 9 interleaved runs of:
a scan that decodes every row, an exact cosine top-50, and KNN top-K with the index's own
distance (`vector::distance::knn()`) for K = 10 .. 1024; then 1 - the KNN distance beside
the cosine of the same row (the index computes in f32).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time

from surrealdb import AsyncSurreal

DIM = 384


async def main(n: int) -> None:
    db = AsyncSurreal("mem://")
    await db.connect()
    await db.use("probe", "probe")
    await db.query("DEFINE TABLE t SCHEMALESS; DEFINE INDEX te ON t FIELDS embedding HNSW DIMENSION 384 DIST COSINE M 12 EFC 150;")
    rng = random.Random(1)

    def vec() -> list[float]:
        v = [rng.gauss(0, 1) for _ in range(DIM)]
        norm = sum(x * x for x in v) ** 0.5
        return [x / norm for x in v]

    for i in range(0, n, 100):
        rows = [{"id": f"r{i + j}", "embedding": vec(), "grp": (i + j) % 10} for j in range(min(100, n - i))]
        await db.query("INSERT INTO t $rows RETURN NONE", {"rows": rows})
    e = vec()
    statements = {
        "scan, decode every row (WHERE grp = 3)": "SELECT id FROM t WHERE grp = 3",
        "exact cosine top-50": "SELECT id, s FROM (SELECT id, vector::similarity::cosine(embedding, $e) AS s FROM t) ORDER BY s DESC LIMIT 50",
        "cosine of the 10% a filter keeps": "SELECT id, vector::similarity::cosine(embedding, $e) AS s FROM t WHERE grp = 3",
    }
    for k in (10, 64, 128, 256, 1024):
        statements[f"KNN top-{k}, index distance"] = f"SELECT id, vector::distance::knn() AS d FROM t WHERE embedding <|{k},{max(k, 40)}|> $e"
    statements["KNN top-256, cosine of the row"] = "SELECT id, vector::similarity::cosine(embedding, $e) AS s FROM t WHERE embedding <|256,256|> $e"
    times: dict[str, list[float]] = {s: [] for s in statements}
    for _ in range(9):
        for label, sql in statements.items():
            t0 = time.perf_counter()
            await db.query(sql, {"e": e})
            times[label].append((time.perf_counter() - t0) * 1000)
    print(f"{n} rows, 384 dims, pending HNSW queue (mem://), median of 9 ms")
    for label in statements:
        print(f"  {label:40s} {statistics.median(times[label]):8.2f}")
    pair = await db.query("SELECT 1 - vector::distance::knn() AS knn, vector::similarity::cosine(embedding, $e) AS cos "
                          "FROM t WHERE embedding <|3,40|> $e", {"e": e})
    rows = pair[0] if pair and isinstance(pair[0], list) else pair
    for row in rows:
        print(f"  1 - knn distance {row['knn']:.17f}   cosine {row['cos']:.17f}")
    await db.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
