"""Recall's stage table (issue 24 items 2-3; docs/BENCHMARKS.md "Recall stages (issue 24)").

  python scripts/speed/profile_recall_stages.py [--speaker S] [--mode M] [CONVERSATION] [QUESTIONS]
  python scripts/speed/profile_recall_stages.py --store PATH [--data DIR] [QUESTIONS]

The first form writes the turns of one LoCoMo dev conversation through the product's memory
path (the default embedder, cached; ``--speaker``: as ``amem-db eval`` writes a turn, default
prefix-text, ``prefix`` with the speaker entities) into a fresh ``mem://`` database, then
recalls its questions as an agent does (``--mode``, default hybrid; k 10, lens = the
conversation).

The second form profiles a database kept on disk (``surrealkv://PATH``, namespace ``bench``,
database ``b``: what ``amem-db bench`` writes for recall, N chunks + N memory passages +
min(N, 10k) facts) with the bench's own queries and vectors (``--data``: the bench's data
directory, default ``PATH/../data``) and the bench's recall options (hybrid, k 10, facts and
passages, no lens).

Both print the p50 of each row of the bench's stage table (``recall_stages``: the round trip,
``queryMs``, each stage of ``trace.timings.stages``, each leg's tables) and the rest of
``queryMs`` that no stage covers (the trace write, its reinforcement event, the response).
Datasets: ``AMEM_DATASETS`` or ``../shared/datasets``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from amem_db.connection import Target, open_connection
from amem_db.db import call
from amem_db.harness.bench.recall import recall_stages

STAGES = ("optionsMs", "setupMs", "vectorMs", "bm25Ms", "seedsMs", "graphMs", "fuseMs", "escalateMs", "contextMs")


def p50(xs: list[float]) -> float:
    return round(statistics.median(xs), 2) if xs else float("nan")


async def locomo(conversation: str | None, limit: int, speaker: str, mode: str) -> tuple[Any, list[tuple[str, list[float]]], dict[str, Any]]:
    from amem_db.client import Memory
    from amem_db.embedding import CachedEmbedder, get_embedder
    from amem_db.harness.locomo import lens_of, load_conversations, turn_request, write_turns
    from amem_db.harness.paths import datasets_root
    from amem_db.migrator import Migrator

    cs = load_conversations(datasets_root() / "locomo", "dev")
    conversation = conversation or sorted({t.conversation for t in cs.turns})[0]
    turns = [t for t in cs.turns if t.conversation == conversation]
    questions = [q for q in cs.questions.values() if q.conversation == conversation][:limit]
    conn = await open_connection(Target(url="mem://", ns="p", db="recall"))
    await Migrator(conn).migrate()
    mem = Memory(conn, embedder=CachedEmbedder(get_embedder()))
    wrote = await write_turns(mem, [turn_request(t, speaker=speaker) for t in turns])
    print(f"conversation {conversation}: {len(turns)} turns written in {wrote['seconds']} s; {len(questions)} questions")
    queries = [(q.text, await mem.embed_query(q.text)) for q in questions]
    return conn, queries, {"mode": mode, "k": 10, "lens": lens_of(conversation), "embeddingModel": mem.embedder.name}


async def stored(path: Path, data: Path, limit: int) -> tuple[Any, list[tuple[str, list[float]]], dict[str, Any]]:
    from amem_db.harness.bench.data import corpus_of

    _, _, texts, vecs, meta = corpus_of(data, 1)
    conn = await open_connection(Target(url=f"surrealkv://{path}", ns="bench", db="b"))
    print(f"store {path}: {len(texts[:limit])} bench queries")
    return conn, [(t, v.tolist()) for t, v in list(zip(texts, vecs))[:limit]], {
        "mode": "hybrid", "k": 10, "include": ["facts", "passages"], "embeddingModel": str(meta.get("embedder") or "bench")}


FLAGS = ("--store", "--data", "--speaker", "--mode")


async def main(argv: list[str]) -> None:
    flag = {f: argv[argv.index(f) + 1] for f in FLAGS if f in argv}
    rest = [a for i, a in enumerate(argv) if a not in FLAGS and (i == 0 or argv[i - 1] not in FLAGS)]
    if "--store" in flag:
        path = Path(flag["--store"])
        data = Path(flag["--data"]) if "--data" in flag else path.parent / "data"
        conn, queries, opts = await stored(path, data, int(rest[0]) if rest else 40)
    else:
        conn, queries, opts = await locomo(rest[0] if rest else None, int(rest[1]) if len(rest) > 1 else 40,
                                           flag.get("--speaker", "prefix-text"), flag.get("--mode", "hybrid"))
    for text, e in queries[:3]:  # warm-up
        await call(conn, "fn::amem::recall", text, e, opts)
    rows: dict[str, list[float]] = defaultdict(list)
    for text, e in queries:
        t = time.perf_counter()
        res = await call(conn, "fn::amem::recall", text, e, opts)
        st = recall_stages(res, (time.perf_counter() - t) * 1000)
        st["rest of queryMs (trace write, reinforcement, response)"] = st["in database (queryMs)"] - sum(st.get(s, 0.0) for s in STAGES)
        for k, v in st.items():
            rows[k].append(v)
    for k, v in rows.items():
        print(f"{k:58s} {p50(v):9.2f} ms")
    print(f"load average {os.getloadavg()}")
    await conn.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
    os._exit(0)  # docs/ENGINE-ISSUES.md #4
