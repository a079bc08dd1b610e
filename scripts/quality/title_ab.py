"""Titles in the BM25 copy on / off, paired per query (issue 16, migrations/0015).

On an eval database whose chunk_fts copies hold titles (a fresh ingest or one
migrated past 0015), every judged query runs in each mode with the titles (as
stored), then the copies are stripped back to the passage alone (the state before
0015) and every query runs again, then the titles are put back with the migration's
own rule. Per mode: nDCG@10 on / off, the mean per-query difference with its
standard error, a bootstrap 95% interval (10,000 resamples of the queries, seed 16),
and how many queries gain / lose. A difference whose interval spans 0 is noise.

    python scripts/quality/title_ab.py ../shared/datasets/cisi --url surrealkv://$PWD/results/.db-chunking/cisi-<key16> \\
        --out results/titles/cisi.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

STRIP = ("UPDATE chunk_fts SET text = string::slice(text, passage_start ?? 0), passage_start = 0 "
         "WHERE passage_start > 0 RETURN NONE")
# migrations/0015's rule (fn::amem::titles::bm25_copy)
PUT_BACK = ("UPDATE chunk_fts SET passage_start = string::len(document.title ?? '') + 2, text = (document.title ?? '') + \"\\n\\n\" + text "
            "WHERE document.title != NONE AND string::trim(document.title) != '' AND passage_start = 0 RETURN NONE")


def per_query_ndcg(qrels: dict[str, dict[str, int]], rankings: dict[str, list[str]]) -> dict[str, float]:
    from amem_db.harness.metrics import evaluate

    return {q: evaluate(qrels, rankings, ["ndcg@10"], [q]).get("ndcg@10", 0.0) for q in qrels
            if any(s > 0 for s in qrels[q].values())}


def write_json(out: str | None, obj: Any) -> None:
    """The report as JSON at ``out`` (its folder made), when one was asked for."""
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(obj, indent=1))


def paired(on: dict[str, float], off: dict[str, float]) -> dict[str, Any]:
    qs = sorted(on)
    d = [on[q] - off[q] for q in qs]
    rng = random.Random(16)
    boots = sorted(statistics.fmean(rng.choices(d, k=len(d))) for _ in range(10000))
    return {"n": len(d), "on": statistics.fmean(on[q] for q in qs), "off": statistics.fmean(off[q] for q in qs),
            "delta": statistics.fmean(d), "se": statistics.stdev(d) / len(d) ** 0.5,
            "ci95": [boots[249], boots[9749]], "gain": sum(x > 1e-9 for x in d), "lose": sum(x < -1e-9 for x in d)}


async def main() -> int:
    from amem_db.connection import close_quietly
    from amem_db.harness.database import open_eval_url
    from amem_db.harness.datasets import load_dataset
    from amem_db.harness.metrics import document_ranking

    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--url", required=True)
    ap.add_argument("--modes", default="bm25,hybrid")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--out")
    a = ap.parse_args()
    ds = load_dataset(a.dataset, limit_queries=a.limit)
    mem = await open_eval_url(a.url)
    conn = mem.conn

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
        await conn.query(STRIP)
        for m in modes:
            off[m] = await run(m)
    finally:
        await conn.query(PUT_BACK)
        await close_quietly(conn)
    res = {"dataset": ds.name, "queries": len(ds.queries),
           "modes": {m: paired(per_query_ndcg(ds.qrels, on[m]), per_query_ndcg(ds.qrels, off[m])) for m in modes}}
    print(json.dumps(res, indent=1))
    write_json(a.out, res)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
