"""The rrfK x vectorWeight sweep behind recall's defaults (docs/EVALUATION.md "LoCoMo"),
on the LoCoMo dev split only.

    python scripts/quality/locomo_fusion_sweep.py ../shared/datasets/locomo --k 1,2,3,5,10,60 --vw 0.3,0.35,0.4,0.5

Each judged question is recalled once per single mode (bm25, vector; k = 50, include
passages, the question's conversation as lens) through `mem.recall`, then weighted
RRF over the two turn rankings is recomputed here for every setting and scored with
the harness's metrics (ranx). RRF over the top-50 of each leg approximates the
product's (which fuses pools of 256): at rrfK 60 / vectorWeight 0.5 it reproduced the
product's hybrid R@5 / R@10 / nDCG@10 to 0.1 point. The written database is cached in
--db-dir like `amem-db eval`'s.
"""
from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from amem_db.embedding import get_embedder
from amem_db.harness import locomo
from amem_db.harness.evaluation import ModeRun


def fuse(lists: list[list[str]], weights: list[float], k: float) -> list[str]:
    scores: dict[str, float] = {}
    for ranking, w in zip(lists, weights):
        for rank, doc in enumerate(ranking, 1):
            scores[doc] = scores.get(doc, 0.0) + w / (k + rank)
    return [d for d, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--k", default="1,2,3,5,10,60", help="rrfK values")
    ap.add_argument("--vw", default="0.3,0.35,0.4,0.5", help="vectorWeight values")
    ap.add_argument("--db-dir", default="results/.db")
    args = ap.parse_args()
    cs = locomo.load_conversations(args.path, "dev")
    prepared = await locomo.prepare_conversations(cs, get_embedder("minilm"), db_dir=Path(args.db_dir))
    legs = {m: (await locomo.run_recall_mode(prepared.mem, cs, m, k=50)).rankings for m in ("bm25", "vector")}
    metrics = locomo.metric_names(50)

    def row(name: str, rankings: dict[str, list[str]]) -> None:
        run = ModeRun(name)
        run.rankings = rankings
        m = locomo.recall_summary(cs, run, metrics)["metrics"]
        print(f"| {name} | " + " | ".join(f"{m[x] * 100:.1f}" for x in metrics) + " |", flush=True)

    print("| setting | " + " | ".join(metrics) + " |\n|---|" + "---|" * len(metrics))
    row("bm25", legs["bm25"])
    row("vector", legs["vector"])
    for k in (float(x) for x in args.k.split(",")):
        for vw in (float(x) for x in args.vw.split(",")):
            row(f"rrfK {k:g} / vectorWeight {vw:g}",
                {q: fuse([legs["vector"][q], legs["bm25"][q]], [vw, 1 - vw], k) for q in legs["bm25"]})


if __name__ == "__main__":
    asyncio.run(main())
