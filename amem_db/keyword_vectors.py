"""Keyword vectors on request (issue 25; docs/RAKE.md "Keyword vectors").

Ingest stores keyword nodes without vectors by default: the vectors served only
semantic keyword search (``keywords.search``) and the hybrid_graph keyword KNN seeds
(off by default, docs/GRAPH.md), and cost ~8 ms of engine time a chunk plus most of
the embedding work. ``embed_keywords`` gives every keyword that has none its vector:
one text per distinct keyword (repeats across documents are one node), the pages
read by key (``fn::amem::keywords::unembedded``), the vectors written by
``fn::amem::keywords::set_vectors`` (root or an admin principal), then the keyword
HNSW index rebuilt when due. ``amem-db keywords embed`` and ``amem-db ingest
--keyword-vectors`` call it."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from .db import call
from .maintain import maintain

PAGE = 500  # keywords read per call
WRITE = 100  # vectors written per call


@dataclass
class KeywordVectorsReport:
    embedded: int = 0  # keywords given a vector by this pass
    seconds: float = 0.0
    embed_seconds: float = 0.0


async def embed_keywords(conn: Any, embedder: Any, *, page: int = PAGE, rebuild: bool = True) -> KeywordVectorsReport:
    """Embed the keywords stored without a vector. ``rebuild``: afterwards rebuild the
    keyword HNSW index if its unbuilt share is past the maintain threshold."""
    report = KeywordVectorsReport()
    started = time.perf_counter()
    after: str | None = None
    while True:
        out = await call(conn, "fn::amem::keywords::unembedded", after, page)
        missing = out["keywords"]
        if missing:
            t0 = time.perf_counter()
            vectors = await asyncio.to_thread(embedder.embed_documents, [k["text"] for k in missing])
            report.embed_seconds += time.perf_counter() - t0
            for i in range(0, len(missing), WRITE):
                rows = [{"normalised": k["normalised"], "embedding": list(v)}
                        for k, v in zip(missing[i:i + WRITE], vectors[i:i + WRITE])]
                await call(conn, "fn::amem::keywords::set_vectors", embedder.name, rows)
            report.embedded += len(missing)
        after = out["next"]
        if after is None:
            break
    if rebuild and report.embedded:
        await maintain(conn, auto=True, indexes=["keyword_embedding"])
    report.seconds = time.perf_counter() - started
    return report
