"""The options both read pipelines share (documents.query and recall): ranking,
lens, context, space, feedback, paging, HyDE, and the three clocks."""

from __future__ import annotations

from typing import Any

from ._base import LensValue, Wire, option
from .geo import GeoOptions
from .time import TimeOptions

__all__ = ["ReadOptions"]


class ReadOptions(TimeOptions):
    """Shared by ``QueryOptions`` and ``RecallOptions`` (each adds its own; both stored
    functions refuse any other key: ``amem:invalid_input: unknown ... option``)."""

    mode: Wire[str | None] = option("the legs that run")
    k: Wire[int | None] = option("hits returned")
    threshold: Wire[float | None] = option("minimum cosine of the vector leg")
    vector_weight: Wire[float | None] = option("the vector leg's share of the fusion, 0..1")
    rrf_k: Wire[float | None] = option("RRF smoothing constant")
    lens: LensValue = option("OR of clauses, each an AND of scope paths", cli="--lens")
    expand_context: Wire[bool | None] = option("same-section context hits", cli="--no-context")
    location: Wire[GeoOptions | dict[str, Any] | None] = option("near / within / nearest", cli="--near")
    feedback: Wire[bool | None] = option("use the verdicts of traces.feedback (default on)", cli=False)
    page_size: Wire[int | None] = option("freeze the candidates, return the first page")
    cursor: Wire[str | None] = option("the next page of a frozen set")
    use_hyde: Wire[bool | None] = option("HyDE asked for (the client fills hydeEmbedding)", internal=True)
    hyde_embedding: Wire[list[float] | None] = option("the embedding of an LLM's hypothetical answer", internal=True)
    # set by the client or the server, not by the caller
    caller: Wire[str | None] = option("who asks (the trace's caller)", internal=True)
    embedding_model: Wire[str | None] = option("the model that embedded the query", internal=True)
    skipped: Wire[dict[str, Any] | None] = option("why a rewrite did not run", internal=True)
