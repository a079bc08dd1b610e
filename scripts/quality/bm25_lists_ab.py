"""BM25 champion lists on / off, paired per query (issue 24 item 1's quality check).

On the dataset's eval database (built by ``amem-db eval`` and cached under results/.db;
built here when missing), the lists are built if none are published (a collection under
bm25lists.MIN_ROWS passages has none by default: they are forced here, to show what they
would do), every judged query runs in each mode with the lists, then the published build is
unset (``$amem_bm25`` NONE: every BM25 leg falls back to the engine's full-text statement,
surql/315) and every query runs again, then the build is put back. Per mode: nDCG@10 on /
off, the paired difference with its standard error and a bootstrap 95% interval
(scripts/quality/title_ab.py's ``paired``).

    python scripts/quality/bm25_lists_ab.py ../shared/datasets/scifact --out results/bm25-lists/scifact.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from title_ab import paired, per_query_ndcg, write_json


async def main() -> int:
    from amem_db import bm25lists
    from amem_db.connection import close_quietly
    from amem_db.embedding import get_embedder
    from amem_db.harness.database import prepare_database
    from amem_db.harness.datasets import load_dataset
    from amem_db.harness.metrics import document_ranking

    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--split")
    ap.add_argument("--modes", default="bm25,hybrid")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--out")
    a = ap.parse_args()
    ds = load_dataset(a.dataset, a.split, limit_queries=a.limit)
    mem = (await prepare_database(ds, get_embedder())).mem
    conn = mem.conn
    st = await bm25lists.status(conn)
    built = None
    if st["published"] is None:
        built = await bm25lists.build(conn)
        st = await bm25lists.status(conn)
    published = st["published"]

    async def run(mode: str) -> dict[str, list[str]]:
        out = {}
        for qid, text in ds.queries.items():
            resp = await mem.documents.query(text, mode=mode, k=50)
            out[qid] = document_ranking(resp.model_dump(by_alias=True, mode="json")["results"])
        await conn.query("DELETE retrieval_trace")
        return out

    modes = a.modes.split(",")
    on, off = {}, {}
    try:
        for m in modes:
            on[m] = await run(m)
        await conn.query("DEFINE PARAM OVERWRITE $amem_bm25 VALUE NONE PERMISSIONS FULL")
        for m in modes:
            off[m] = await run(m)
    finally:
        await conn.query("DEFINE PARAM OVERWRITE $amem_bm25 VALUE $v PERMISSIONS FULL", {"v": published})
        await close_quietly(conn)
    res: dict[str, Any] = {
        "dataset": ds.name, "queries": len(ds.queries), "rows": {t: st[t]["rows"] for t in bm25lists.TABLES},
        "lists_forced": built is not None, "build_seconds": built["seconds"] if built else None,
        "modes": {m: paired(per_query_ndcg(ds.qrels, on[m]), per_query_ndcg(ds.qrels, off[m])) for m in modes}}
    print(json.dumps(res, indent=1))
    write_json(a.out, res)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
