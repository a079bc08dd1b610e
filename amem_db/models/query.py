"""The document query's response (fn::amem::documents::query, camelCase keys)."""

from __future__ import annotations

from typing import Any, Literal

from ._base import _Camel
from .documents import Chunk, DocumentRef

__all__ = [
    "ContextHit",
    "GraphEvidence",
    "Hit",
    "QueryMode",
    "QueryResponse",
]


#: the retrieval modes of fn::amem::documents::query (spec: "Query modes")
QueryMode = Literal["hybrid", "vector", "bm25", "hybrid_graph"]


class GraphEvidence(_Camel):
    """One graph signal's part in a hybrid_graph score (``edge_kind``
    ``hybrid_graph`` is the merged evidence); ``via`` names the records."""

    edge_kind: str
    contribution: float
    signal: float | None = None
    via: list[Any] = []


class Hit(_Camel):
    """A ranked passage: its chunk, score in [0, 1], and its document."""

    chunk: Chunk
    score: float
    document: DocumentRef
    graph_evidence: list[GraphEvidence] | None = None


class ContextHit(_Camel):
    """A same-section sibling of the ranked hit ``expands`` (not counted against k)."""

    chunk: Chunk
    document: DocumentRef
    expands: str


class QueryResponse(_Camel):
    """``fn::amem::documents::query``: ranked ``results``, ``context_hits``,
    ``query_ms``, ``warnings`` (e.g. the HyDE / decomposition / reranker
    fall-backs) and the ``trace`` written to ``retrieval_trace``. A paged query
    (``page_size``) also has ``cursor`` (None: the last page) and ``candidates``
    (the size of the frozen candidate set)."""

    results: list[Hit]
    context_hits: list[ContextHit] = []
    query_ms: float = 0.0
    warnings: list[str] = []
    trace: dict[str, Any] | None = None
    cursor: str | None = None
    candidates: int | None = None
