"""Quality against the candidate pool (issue 24 item 4): nDCG@10 per mode at pool 256 / 128 / 64.

The pool (candidates per leg and table, `candidate_pool`) is a schema setting rendered into
the KNN literals (docs/ENGINE-ISSUES.md #2), and the vector legs' EF follows it
(`SchemaSettings.hnsw_ef`). On the dataset's cached eval database (built by ``amem-db eval``,
built here when missing) each pool is applied with the migrator (only the stored functions
change: the rows and indexes stay), every judged query runs in each mode, and the database is
migrated back to its pool at the end. Per pool and mode: the mean metric and the paired
difference against pool 256 (scripts/quality/title_ab.py ``paired``).

A conversation collection (LoCoMo) goes through ``mem.recall`` as ``amem-db eval`` does
(questions of categories 1-4, lens = the conversation): Recall@10 and nDCG@10.

    python scripts/quality/pool_sweep.py ../shared/datasets/cranfield --out results/pool/cranfield.json
    python scripts/quality/pool_sweep.py ../shared/datasets/locomo --modes hybrid
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from title_ab import paired, per_query_ndcg, write_json


async def per_query_documents(mem: Any, ds: Any, mode: str) -> dict[str, list[str]]:
    from amem_db.harness.metrics import document_ranking

    out = {}
    for qid, text in ds.queries.items():
        resp = await mem.documents.query(text, mode=mode, k=50)
        out[qid] = document_ranking(resp.model_dump(by_alias=True, mode="json")["results"])
    await mem.conn.query("DELETE retrieval_trace")
    return out


async def per_query_conversations(mem: Any, cs: Any, mode: str) -> dict[str, list[str]]:
    from amem_db.harness.locomo import run_recall_mode

    run = await run_recall_mode(mem, cs, mode)
    await mem.conn.query("DELETE retrieval_trace")
    judged = {q for c in (1, 2, 3, 4) for q in cs.by_category().get(c, [])}
    return {q: r for q, r in run.rankings.items() if q in judged}


def recall_at(qrels: dict[str, dict[str, int]], rankings: dict[str, list[str]], k: int) -> dict[str, float]:
    out = {}
    for q, ranking in rankings.items():
        rel = {d for d, g in qrels.get(q, {}).items() if g > 0}
        out[q] = len(rel & set(ranking[:k])) / len(rel) if rel else 0.0
    return out


async def main() -> int:
    from amem_db.connection import close_quietly
    from amem_db.embedding import get_embedder
    from amem_db.harness.locomo import is_conversation_collection, load_conversations, prepare_conversations
    from amem_db.migrator import Migrator

    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--split")
    ap.add_argument("--modes", default="vector,hybrid")
    ap.add_argument("--pools", default="256,128,64")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--out")
    a = ap.parse_args()
    embedder = get_embedder()
    conversations = is_conversation_collection(a.dataset)
    if conversations:
        data = load_conversations(a.dataset, a.split, limit_queries=a.limit)
        mem = (await prepare_conversations(data, embedder)).mem
        qrels = data.qrels
    else:
        from amem_db.harness.database import prepare_database
        from amem_db.harness.datasets import load_dataset

        data = load_dataset(a.dataset, a.split, limit_queries=a.limit)
        mem = (await prepare_database(data, embedder)).mem
        qrels = data.qrels
    conn = mem.conn
    pools = [int(p) for p in a.pools.split(",")]
    modes = a.modes.split(",")
    original = await conn.query("RETURN (SELECT VALUE candidate_pool FROM ONLY amem_setting:schema) ?? 256")
    original = int(original[0] if isinstance(original, list) else original)
    runs: dict[int, dict[str, dict[str, list[str]]]] = {}
    try:
        for pool in pools:
            await Migrator(conn).migrate({"candidate_pool": pool, "embedding_dim": embedder.dimension})
            runs[pool] = {}
            for mode in modes:
                run = per_query_conversations if conversations else per_query_documents
                runs[pool][mode] = await run(mem, data, mode)
                print(f"pool {pool} {mode}: done", file=sys.stderr)
                # the rankings so far: a failure later loses nothing measured
                write_json(a.out and a.out + ".rankings", runs)
    finally:
        await Migrator(conn).migrate({"candidate_pool": original, "embedding_dim": embedder.dimension})
        await close_quietly(conn)
    base = pools[0]
    res: dict[str, Any] = {"dataset": a.dataset, "baseline_pool": base, "pools": {}}
    for pool in pools:
        res["pools"][pool] = {}
        for mode in modes:
            judged = {q: g for q, g in qrels.items() if q in runs[base][mode]}
            row = {"ndcg@10": paired(per_query_ndcg(judged, runs[pool][mode]), per_query_ndcg(judged, runs[base][mode]))}
            if conversations:
                row["recall@10"] = paired(recall_at(qrels, runs[pool][mode], 10), recall_at(qrels, runs[base][mode], 10))
            res["pools"][pool][mode] = row
            print(f"pool {pool:4d} {mode:8s} " + "  ".join(f"{m} {v['on']:.4f} ({v['delta']:+.4f} +- {v['se']:.4f})" for m, v in row.items()))
    write_json(a.out, res)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
