"""One LoCoMo dev run of mode hybrid through the product with given recall options (no other
mode, no exact-kNN reference): R@5 / R@10 / nDCG@10 overall (categories 1-4) and per category,
and the client p50 / p95 per recall. What docs/EVALUATION.md "LoCoMo levers (issue 26)" checks
the offline sweep's choices with.

    python scripts/quality/locomo_check.py ../shared/datasets/locomo --speaker prefix \
        --options '{"adjacent_weight": 0.3}'
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.harness import locomo
from amem_db.harness.metrics import evaluate


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--speaker", default="prefix", choices=locomo.SPEAKER_MODES)
    ap.add_argument("--options", default="{}", help="recall options as JSON (client argument names)")
    ap.add_argument("--mode", default="hybrid", choices=locomo.RECALL_MODES)
    ap.add_argument("--db-dir", default="results/.db")
    args = ap.parse_args()
    opts = json.loads(args.options)
    cs = locomo.load_conversations(args.path, "dev")
    prepared = await locomo.prepare_conversations(cs, CachedEmbedder(get_embedder("minilm")), speaker=args.speaker,
                                                  db_dir=Path(args.db_dir))
    mem = prepared.mem
    nows = {c: cs.last_session(c) for c in cs.conversations}
    judged = [q for q, x in cs.questions.items() if x.category in (1, 2, 3, 4)]
    rankings, ms = {}, []
    for q in judged:
        x = cs.questions[q]
        t0 = time.perf_counter()
        resp = await mem.recall(x.text, mode=args.mode, k=50, include=["passages"], lens=locomo.lens_of(x.conversation),
                                now=nows[x.conversation], **opts)
        ms.append((time.perf_counter() - t0) * 1000)
        rankings[q] = locomo.turn_ranking(resp.hits)
    metrics = ["recall@5", "recall@10", "ndcg@10"]
    cells = []
    for ids in [judged] + [[q for q in judged if cs.questions[q].category == c] for c in (4, 1, 2, 3)]:
        m = evaluate(cs.qrels, rankings, metrics, ids)
        cells.append(" / ".join(f"{m[k] * 100:.1f}" for k in metrics))
    ms.sort()
    print(f"| {args.speaker} {args.mode} {json.dumps(opts)} | " + " | ".join(cells)
          + f" | {statistics.median(ms):.0f} / {ms[int(len(ms) * 0.95)]:.0f} |", flush=True)
    await mem.conn.close()


if __name__ == "__main__":
    asyncio.run(main())
