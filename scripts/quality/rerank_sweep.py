"""The second stage (useReranker, surql/480_rerank) on a shared collection: nDCG@10
and latency with and without it, over a few rerankMix / rerankDepth values
(docs/EVALUATION.md "Reranking").

    python scripts/quality/rerank_sweep.py ../shared/datasets/cisi --mixes 0.3,0.5,0.7 --depths 20,50 \
        --out results/rerank/cisi.json

Reuses (or builds) the eval harness's cached database (results/.db, --db-dir). Each
run sends every judged query once through mem.documents.query(k=50), as `amem-db eval`
does (nDCG@10 is over the first ten distinct documents of 50 passages; rerankDepth is
at least k); the fused run (no reranker) comes first. Reports per run nDCG@10, Recall@10, MRR@10
(document level, amem_db.harness) and p50/p95 of the engine's queryMs and of the rerank
step alone (trace legs.rerank.ms).

    python scripts/quality/rerank_sweep.py ../shared/datasets/scifact --interleave --out results/rerank/scifact.json

``--interleave`` (one mix and depth): each query runs without and with the reranker
back to back, alternating which goes first, so a loaded machine slows both sides
alike; it adds the per-query latency difference (with - without, p50 / p95) and how
often the reranked best hit's score is under the tier ladder's confidence floor (0.40).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.harness.common import percentile
from amem_db.harness.database import DEFAULT_DB_DIR, prepare_database
from amem_db.harness.datasets import load_dataset
from amem_db.harness.metrics import document_ranking, evaluate


def pct(values: list[float], p: float) -> float:
    return round(percentile(values, p), 1) if values else float("nan")


async def run(mem, ds, label: str, k: int = 50, **opts) -> dict:
    rankings, engine, step = {}, [], []
    for qid, text in ds.queries.items():
        resp = (await mem.documents.query(text, k=k, **opts)).model_dump(by_alias=True, mode="json")
        rankings[qid] = document_ranking(resp["results"])
        engine.append(float(resp["queryMs"]))
        rr = (resp.get("trace") or {}).get("legs", {}).get("rerank")
        if rr and rr.get("ms") is not None:
            step.append(float(rr["ms"]))
    scores = evaluate(ds.qrels, rankings, ["ndcg@10", "recall@10", "mrr@10"])
    row = {"run": label, **{m: round(v, 4) for m, v in scores.items()}, "queries": len(engine),
           "engine_p50_ms": pct(engine, 50), "engine_p95_ms": pct(engine, 95),
           "rerank_step_p50_ms": pct(step, 50), "rerank_step_p95_ms": pct(step, 95)}
    print(json.dumps(row), flush=True)
    return row


async def one(mem, text: str, k: int, opts: dict) -> tuple[dict, float]:
    t0 = time.perf_counter()
    resp = (await mem.documents.query(text, k=k, **opts)).model_dump(by_alias=True, mode="json")
    return resp, (time.perf_counter() - t0) * 1000


def summary(ds, label: str, rankings: dict, engine: list, wall: list, step: list) -> dict:
    scores = evaluate(ds.qrels, rankings, ["ndcg@10", "recall@10", "mrr@10"])
    return {"run": label, **{m: round(v, 4) for m, v in scores.items()}, "queries": len(engine),
            "engine_p50_ms": pct(engine, 50), "engine_p95_ms": pct(engine, 95),
            "wall_p50_ms": pct(wall, 50), "wall_p95_ms": pct(wall, 95),
            "rerank_step_p50_ms": pct(step, 50), "rerank_step_p95_ms": pct(step, 95)}


async def interleaved(mem, ds, mode: str, mix: float, depth: int, k: int = 50, floor: float = 0.4) -> list[dict]:
    """Off and on per query, alternating the order; quality of each, latency paired."""
    sides = {"off": {"mode": mode}, "on": {"mode": mode, "use_reranker": True, "rerank_mix": mix, "rerank_depth": depth}}
    acc = {s: {"rankings": {}, "engine": [], "wall": [], "step": []} for s in sides}
    diff, top_off, top_on = [], [], []
    for n, (qid, text) in enumerate(ds.queries.items()):
        order = ["off", "on"] if n % 2 == 0 else ["on", "off"]
        walls = {}
        for side in order:
            resp, ms = await one(mem, text, k, sides[side])
            a = acc[side]
            a["rankings"][qid] = document_ranking(resp["results"])
            a["engine"].append(float(resp["queryMs"]))
            a["wall"].append(ms)
            walls[side] = float(resp["queryMs"])
            rr = (resp.get("trace") or {}).get("legs", {}).get("rerank")
            if side == "on" and rr and rr.get("ms") is not None:
                a["step"].append(float(rr["ms"]))
            best = resp["results"][0]["score"] if resp["results"] else 0.0
            (top_on if side == "on" else top_off).append(float(best))
        diff.append(walls["on"] - walls["off"])
    rows = [summary(ds, f"{mode} (fused, no reranker)", **acc["off"]),
            summary(ds, f"{mode} + rescore mix {mix} depth {depth}", **acc["on"])]
    rows[1]["engine_diff_p50_ms"], rows[1]["engine_diff_p95_ms"] = pct(diff, 50), pct(diff, 95)
    for row, tops in zip(rows, (top_off, top_on)):
        row["best_score_p10_p50_p90"] = [round(percentile(tops, p), 3) for p in (10, 50, 90)]
        row["best_score_under_floor"] = sum(t < floor for t in tops)
    for row in rows:
        print(json.dumps(row), flush=True)
    return rows


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--db-dir", default=str(DEFAULT_DB_DIR))
    ap.add_argument("--limit-queries", type=int, default=None)
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--mixes", default="0.5", help="rerankMix values (the cosine share)")
    ap.add_argument("--depths", default="50", help="rerankDepth values")
    ap.add_argument("--interleave", action="store_true", help="off / on per query (the first mix and depth)")
    ap.add_argument("--out")
    a = ap.parse_args()
    ds = load_dataset(a.dataset, limit_queries=a.limit_queries)
    prepared = await prepare_database(ds, CachedEmbedder(get_embedder(None)), db_dir=Path(a.db_dir))
    mem = prepared.mem
    rows = []
    try:
        for text in list(ds.queries.values())[:3]:  # warm-up
            await mem.documents.query(text, mode=a.mode, use_reranker=True)
        if a.interleave:
            rows = await interleaved(mem, ds, a.mode, float(a.mixes.split(",")[0]), int(a.depths.split(",")[0]))
            return 0
        rows.append(await run(mem, ds, f"{a.mode} (fused, no reranker)", mode=a.mode))
        for depth in [int(x) for x in a.depths.split(",") if x]:
            for mix in [float(x) for x in a.mixes.split(",") if x]:
                rows.append(await run(mem, ds, f"{a.mode} + rescore mix {mix} depth {depth}", mode=a.mode,
                                      use_reranker=True, rerank_mix=mix, rerank_depth=depth))
    finally:
        if a.out:
            Path(a.out).parent.mkdir(parents=True, exist_ok=True)
            Path(a.out).write_text(json.dumps({"dataset": ds.name, "split": ds.split, "queries": len(ds.queries), "rows": rows}, indent=2))
        await mem.conn.close()
    return 0


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    os._exit(code)
