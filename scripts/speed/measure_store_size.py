"""Where a store's bytes go (issue 25 item 4): the bench's bulk load of N chunks into fresh
`surrealkv://` stores, each with one more part of the schema switched on, and the store
folder's size after close (sstables + value log + WAL), so that each part's bytes are the
difference between two rows. Then the trace table's growth per query on the full store.

    PYTHONPATH=. python scripts/speed/measure_store_size.py results/bench-s12/data 10000 \
        --queries 300 --out results/store-size

The data folder is a bench run's (`amem-db bench ... --out results/bench-s12` writes
`results/bench-s12/data`: passages cut by the product's chunker, their vectors). Variants,
each adding to the one before (the pieces are removed after `migrate` with REMOVE INDEX /
REMOVE EVENT, so the rest of the schema is the product's):

* rows: document and chunk rows, no vectors, no HNSW, no BM25 copy, no full-text index;
* +vectors: the rows with their embeddings (384 floats a chunk, one summary a document);
* +hnsw: the HNSW indexes, built as `maintain` builds them (REBUILD);
* +copies: the BM25 copies (`chunk_fts`, written by the `chunk_fts_sync` event);
* +fulltext: the full-text index over the copies: the bench's store before its BM25 lists;
* +lists: the BM25 champion lists (`bm25lists.refresh`, from 2,000 passages): the product.

Feeds docs/BENCHMARKS.md "Where a store's bytes go (issue 25 item 4)"."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from amem_db import bm25lists
from amem_db.connection import Target, close_quietly, open_connection
from amem_db.harness.bench.data import corpus_of
from amem_db.harness.bench.load import Reopener, bulk_load
from amem_db.harness.common import dir_size
from amem_db.migrator import Migrator

VARIANTS = ("rows", "+vectors", "+hnsw", "+copies", "+fulltext", "+lists")


def removals(variant: str) -> str:
    """The schema pieces a variant goes without (REMOVE statements after migrate)."""
    upto = VARIANTS.index(variant)
    out = []
    if upto < VARIANTS.index("+hnsw"):
        # (IF EXISTS: document_summary_embedding is gone from the schema since migrations/0027)
        out += ["REMOVE INDEX chunk_embedding ON chunk;", "REMOVE INDEX IF EXISTS document_summary_embedding ON document;"]
    if upto < VARIANTS.index("+copies"):
        out += ["REMOVE EVENT chunk_fts_sync ON chunk;"]
    if upto < VARIANTS.index("+fulltext"):
        out += ["REMOVE INDEX chunk_fts_text ON chunk_fts;"]
    return "\n".join(out)


def part_sizes(path: Path) -> dict[str, int]:
    return {p.name: dir_size(p) for p in sorted(path.iterdir()) if p.is_dir()}


async def one_variant(variant: str, rows: list[dict[str, Any]], vecs: Any, root: Path) -> dict[str, Any]:
    from amem_db.harness.bench import load as load_mod

    path = root / variant.strip("+")
    shutil.rmtree(path, ignore_errors=True)
    target = Target(url=f"surrealkv://{path.resolve()}", ns="bench", db="size")
    db = Reopener(target, await open_connection(target))
    await Migrator(db.conn).migrate({"embedding_dim": int(vecs.shape[1])})
    if removals(variant):
        await db.conn.query(removals(variant))
    # the bench's own loader (bench/load.py), with what a variant goes without taken out of it
    saved = load_mod.chunk_row, load_mod.document_rows, bm25lists.refresh, load_mod.rebuild_each
    if VARIANTS.index(variant) < VARIANTS.index("+hnsw"):
        async def no_rebuild(db: Reopener) -> dict[str, float | None]:
            return {}  # its HNSW indexes are removed (maintain's status still names them)
        load_mod.rebuild_each = no_rebuild  # type: ignore[assignment]
    if VARIANTS.index(variant) < VARIANTS.index("+vectors"):
        load_mod.chunk_row = lambda r, v: {k: x for k, x in saved[0](r, v).items() if k != "embedding"}  # type: ignore[assignment]
        load_mod.document_rows = lambda rs, vs: [{k: x for k, x in d.items() if k != "summary_embedding"} for d in saved[1](rs, vs)]  # type: ignore[assignment]
    if variant != "+lists":
        async def no_lists(conn: Any, *, auto: bool = True) -> None:
            return None
        bm25lists.refresh = no_lists  # type: ignore[assignment]
    t0 = time.perf_counter()
    try:
        await bulk_load(db, rows, vecs, batch=50)
    finally:
        load_mod.chunk_row, load_mod.document_rows, bm25lists.refresh, load_mod.rebuild_each = saved
    seconds = time.perf_counter() - t0
    (counts,) = await db.conn.query("RETURN { chunk: (SELECT count() FROM chunk GROUP ALL)[0].count,"
                                    " chunk_fts: (SELECT count() FROM chunk_fts GROUP ALL)[0].count ?? 0,"
                                    " bm25_list: (SELECT count() FROM bm25_list GROUP ALL)[0].count ?? 0 }")
    await close_quietly(db.conn)
    return {"variant": variant, "bytes": dir_size(path), "parts": part_sizes(path), "rows": counts, "seconds": round(seconds, 1)}


async def trace_growth(root: Path, vecs: Any, qtexts: list[str], qvecs: Any, queries: int) -> dict[str, Any]:
    """documents.query (hybrid, k 10, the defaults) `queries` times on the full store: bytes per trace."""
    path = root / "lists"
    target = Target(url=f"surrealkv://{path.resolve()}", ns="bench", db="size")
    conn = await open_connection(target)
    (retention,) = await conn.query("RETURN fn::amem::traces::retention()")
    await close_quietly(conn)
    before = dir_size(path)
    conn = await open_connection(target)
    for i in range(queries):
        j = i % len(qtexts)
        await conn.query("RETURN fn::amem::documents::query($q, $e, {mode: 'hybrid', k: 10})",
                         {"q": qtexts[j], "e": qvecs[j].tolist()})
    (n,) = await conn.query("RETURN (SELECT count() FROM retrieval_trace GROUP ALL)[0].count")
    await close_quietly(conn)
    after = dir_size(path)
    return {"queries": queries, "traces": n, "bytes_before": before, "bytes_after": after,
            "bytes_per_query": (after - before) / max(1, queries), "retention": retention}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_dir", type=Path)
    ap.add_argument("n", type=int)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--out", type=Path, default=Path("results/store-size"))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    rows, vecs, qtexts, qvecs, _ = corpus_of(args.data_dir, args.n)
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for variant in args.variants.split(","):
        res = await one_variant(variant, rows, vecs, args.out)
        results.append(res)
        print(json.dumps(res), flush=True)
    if "+lists" in args.variants.split(",") and args.queries > 0:
        growth = await trace_growth(args.out, vecs, qtexts, qvecs, args.queries)
        results.append({"variant": "traces", **growth})
        print(json.dumps(growth, default=str), flush=True)
    print("\n| variant | MB on disk | difference | sstables / vlog / wal MB | rows (chunk, chunk_fts, bm25_list) |")
    print("|---|---|---|---|---|")
    prev = None
    for r in results:
        if r["variant"] == "traces":
            continue
        mb = r["bytes"] / 1e6
        parts = " / ".join(f"{r['parts'].get(k, 0) / 1e6:.0f}" for k in ("sstables", "vlog", "wal"))
        rows_ = r["rows"]
        print(f"| {r['variant']} | {mb:.0f} | {'' if prev is None else f'{mb - prev:+.0f}'} | {parts} | "
              f"{rows_['chunk']}, {rows_['chunk_fts']}, {rows_['bm25_list']} |")
        prev = mb
    (args.out / "sizes.json").write_text(json.dumps(results, indent=1, default=str))
    os._exit(0)  # the native engine may abort at interpreter exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    asyncio.run(main())
