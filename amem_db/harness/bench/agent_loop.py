"""The ``agent-loop`` worker: the workload an agent puts on its memory (issue 24 item 5).

One LoCoMo dev conversation (the first, conv-26: 419 turns) replayed turn by turn through
the Python client on the bench's backend: each turn is remembered (``mem.facts.write``,
one request, the turn's text as a memory passage with its session, time and scope, as
``amem-db eval`` writes it), then one of the conversation's questions is recalled (hybrid,
k 10, lens = the conversation, as an agent asks), cycling through its questions. The turn
and question embeddings come from the default embedder through the disk cache (the first
run embeds them once), so the figures are the client and the engine.

p50 / p95 of each call over the whole replay, and of the recalls over the last quarter
(the memory at its largest), with recall's own stage table (trace.timings.stages) there.
Runs once per bench, at the first size: its size is the conversation's."""

from __future__ import annotations

import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from .measure import latency_summary
from .recall import recall_stages


async def worker_agent_loop(data_root: Path, db_root: Path, backend: str, embedder_spec: str | None,
                            speaker: str | None = None) -> dict[str, Any]:
    """``speaker``: how a turn is written (``harness.locomo.SPEAKER_MODES``); None = ``turn_request``'s default."""
    from amem_db.client import Memory
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.embedding import CachedEmbedder, get_embedder
    from amem_db.harness.locomo import lens_of, load_conversations, turn_request
    from amem_db.migrator import Migrator

    modes = {} if speaker is None else {"speaker": speaker}
    cs = load_conversations(data_root / "locomo", "dev")
    conversation = sorted({t.conversation for t in cs.turns})[0]
    turns = [t for t in cs.turns if t.conversation == conversation]
    questions = [q.text for q in cs.questions.values() if q.conversation == conversation]
    db_path = db_root / "agent-loop"
    shutil.rmtree(db_path, ignore_errors=True)
    url = "mem://" if backend == "mem" else f"{backend.split('+')[0]}://{db_path}"
    conn = await open_connection(Target(url=url, ns="bench", db="agent"))
    try:
        await Migrator(conn).migrate()
        embedder = CachedEmbedder(get_embedder(embedder_spec))
        # every text embedded once up front (cached on disk), so the loop times no model
        embedder.embed_documents([turn_request(t, **modes)["text"] for t in turns])
        for q in questions:
            embedder.embed_query(q)
        mem = Memory(conn, embedder=embedder)
        lens = lens_of(conversation)
        write_ms: list[float] = []
        recall_ms: list[float] = []
        late: dict[str, list[float]] = {}
        for i, turn in enumerate(turns):
            t = time.perf_counter()
            await mem.facts.write(turn_request(turn, **modes))
            write_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            resp = await mem.recall(questions[i % len(questions)], k=10, lens=lens)
            ms = (time.perf_counter() - t) * 1000
            recall_ms.append(ms)
            if i >= len(turns) * 3 // 4:
                body = resp.model_dump(by_alias=True, mode="json")
                for stage, x in recall_stages(body, ms).items():
                    late.setdefault(stage, []).append(x)
        quarter = len(turns) - len(turns) * 3 // 4
        return {"system": "agent-loop", "size": len(turns), "backend": backend, "conversation": conversation,
                "speaker": turn_request(turns[0], **modes).get("speaker") is not None,
                "turns": len(turns), "questions": len(questions),
                "write_ms": latency_summary(write_ms), "recall_ms": latency_summary(recall_ms),
                "recall_last_quarter_ms": latency_summary(recall_ms[-quarter:]),
                "stages_last_quarter_p50_ms": {k: round(statistics.median(v), 2) for k, v in late.items()}}
    finally:
        await close_quietly(conn)
