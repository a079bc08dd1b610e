"""Recall's stage table over one LoCoMo conversation (issue 24 item 2; docs/BENCHMARKS.md).

  python scripts/speed/profile_recall_stages.py [CONVERSATION] [QUESTIONS]

Writes the turns of one dev conversation through the product's memory path (the default
embedder, cached), then recalls its questions as an agent does (hybrid, k 10, lens = the
conversation) and prints the p50 of each stage of ``trace.timings.stages``, of each leg's
tables, and of the round trip. Datasets: ``AMEM_DATASETS`` or ``../shared/datasets``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections import defaultdict

from amem_db.client import Memory
from amem_db.connection import Target, open_connection
from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.harness.locomo import lens_of, load_conversations, turn_request, write_turns
from amem_db.harness.paths import datasets_root
from amem_db.migrator import Migrator

DATA = datasets_root()


def p50(xs: list[float]) -> float:
    return round(statistics.median(xs), 2) if xs else float("nan")


async def main(conversation: str | None, limit: int) -> None:
    cs = load_conversations(DATA / "locomo", "dev")
    conversation = conversation or sorted({t.conversation for t in cs.turns})[0]
    turns = [t for t in cs.turns if t.conversation == conversation]
    questions = [q for q in cs.questions.values() if q.conversation == conversation][:limit]
    conn = await open_connection(Target(url="mem://", ns="p", db="recall"))
    await Migrator(conn).migrate()
    mem = Memory(conn, embedder=CachedEmbedder(get_embedder()))
    wrote = await write_turns(mem, [turn_request(t) for t in turns])
    print(f"conversation {conversation}: {len(turns)} turns written in {wrote['seconds']} s; {len(questions)} questions")
    for q in questions[:3]:  # warm-up: the question embeddings into the cache
        await mem.recall(q.text, k=10, lens=lens_of(conversation))
    stages: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        t = time.perf_counter()
        resp = await mem.recall(q.text, k=10, lens=lens_of(conversation))
        stages["round trip (client)"].append((time.perf_counter() - t) * 1000)
        tr = resp.trace if isinstance(resp.trace, dict) else resp.trace.model_dump(by_alias=True)
        stages["queryMs (in database)"].append(resp.query_ms)
        for k, v in (tr["timings"].get("stages") or {}).items():
            stages[k].append(v)
        for leg in ("vector", "bm25"):
            legt = tr["legs"].get(leg) or {}
            if leg == "vector":
                for table, row in (legt.get("tables") or {}).items():
                    if isinstance(row, dict) and "ms" in row:
                        stages[f"vector.{table}"].append(row["ms"])
            else:
                for table, ms in (legt.get("ms") or {}).items():
                    stages[f"bm25.{table}"].append(ms)
    for k, v in stages.items():
        print(f"{k:28s} {p50(v):8.2f} ms")
    await conn.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else None, int(sys.argv[2]) if len(sys.argv) > 2 else 40))
    os._exit(0)  # docs/ENGINE-ISSUES.md #4
