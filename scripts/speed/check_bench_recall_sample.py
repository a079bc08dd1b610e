"""Is the product table's HNSW graph worse than a bare rebuild, or is the bench's recall row
a small sample? (docs/BENCHMARKS.md, "What the goal table says", session 8.)

Loads the bench's first N passages the way the amem worker does (amem_db/harness/bench/load.py:
bulk INSERT, REBUILD of each HNSW index, a reopen on disk), then prints recall@10 of the first
10 KNN rows against exact numpy search, over the first 20 queries (the bench's timed queries,
which its recall rows use) and over all 106 (the curve's), before and after a second REBUILD
and a reopen.

    python scripts/speed/check_bench_recall_sample.py --data results/bench/data --size 10000
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

SETTINGS = ((50, 64), (256, 512))  # the bench's floor KNN and the product's pool / EF


async def first_ten(conn, qv, key_of, k: int, ef: int) -> list[list[int | None]]:
    """The first 10 KNN rows of every query, as the bench's floor reads them."""
    found = []
    for q in qv.tolist():
        (rows,) = await conn.query(f"SELECT id, vector::distance::knn() AS d FROM chunk WHERE embedding <|{k},{ef}|> $q ORDER BY d",
                                   {"q": q})
        found.append([key_of(r["id"]) for r in rows[:10]])
    return found


async def report(label: str, conn, qv, truth, key_of) -> None:
    from amem_db.harness.bench.measure import recall_at

    for k, ef in SETTINGS:
        found = await first_ten(conn, qv, key_of, k, ef)
        print(f"{label}: K {k} EF {ef}: first 20 queries {recall_at(found[:20], truth[:20], 10):.4f}, "
              f"all {len(truth)} {recall_at(found, truth, 10):.4f}", flush=True)


async def main() -> int:
    from amem_db.connection import Target, open_connection
    from amem_db.harness.bench.data import corpus_of
    from amem_db.harness.bench.load import Reopener, bulk_load, chunk_key
    from amem_db.harness.bench.measure import exact_topk
    from amem_db.migrator import Migrator

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="results/bench/data", help="the bench's cached passages")
    ap.add_argument("--size", type=int, default=10000)
    a = ap.parse_args()
    rows, vecs, _, qv, _ = corpus_of(Path(a.data), a.size)
    truth = exact_topk(vecs, qv, 10)
    index_of = {f"{r['doc']}_{r['position']}": j for j, r in enumerate(rows)}

    def key_of(rid):
        return index_of.get(chunk_key(rid))

    path = Path(tempfile.mkdtemp(prefix="amem-recall-"))
    try:
        target = Target(url=f"surrealkv://{path / 'db'}", ns="bench", db="b")
        db = Reopener(target, await open_connection(target))
        await Migrator(db.conn).migrate({"embedding_dim": int(vecs.shape[1])})
        await bulk_load(db, rows, vecs, 50)
        await report("as the bench loads it", db.conn, qv, truth, key_of)
        await db.conn.query("REBUILD INDEX chunk_embedding ON chunk")
        await db.reopen()
        await report("after a second REBUILD and a reopen", db.conn, qv, truth, key_of)
    finally:
        shutil.rmtree(path, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
