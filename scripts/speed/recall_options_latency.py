"""Recall latency of settings side by side, interleaved per question on one LoCoMo dev store
(every third judged question, hybrid, k = 50): client p50 and the engine's queryMs p50 per
setting. What docs/EVALUATION.md "LoCoMo levers (issue 26)" quotes for adjacentWeight.

    python scripts/speed/recall_options_latency.py prefix-text '[{"adjacent_weight": 0}, {"adjacent_weight": 0.4}]'
"""
from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.harness import locomo


async def main(speaker: str, arms: list[dict]) -> None:
    cs = locomo.load_conversations("../shared/datasets/locomo", "dev")
    prepared = await locomo.prepare_conversations(cs, CachedEmbedder(get_embedder("minilm")), speaker=speaker,
                                                  db_dir=Path("results/.db"))
    mem = prepared.mem
    nows = {c: cs.last_session(c) for c in cs.conversations}
    qs = [q for q in cs.questions.values() if q.category in (1, 2, 3, 4)][::3]
    client: dict[int, list[float]] = {i: [] for i in range(len(arms))}
    engine: dict[int, list[float]] = {i: [] for i in range(len(arms))}
    for q in qs:
        for i, opts in enumerate(arms):
            t0 = time.perf_counter()
            r = await mem.recall(q.text, k=50, include=["passages"], lens=locomo.lens_of(q.conversation),
                                 now=nows[q.conversation], **opts)
            client[i].append((time.perf_counter() - t0) * 1000)
            engine[i].append(r.query_ms)
    for i, opts in enumerate(arms):
        print(f"{json.dumps(opts)}: client p50 {statistics.median(client[i]):.0f} ms, engine queryMs p50 "
              f"{statistics.median(engine[i]):.0f} ms (n={len(qs)})")
    await mem.conn.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
