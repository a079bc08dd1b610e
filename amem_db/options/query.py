"""``documents.query``'s options (fn::amem::documents::query, surql/400)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import PlainValidator

from .. import _args
from ._base import Wire, option, strs_of
from .read import ReadOptions

__all__ = ["QueryOptions"]


class QueryOptions(ReadOptions):
    """Add a field here and it is a documents.query option everywhere: the SurrealQL
    known-keys check renders ``wire_keys()``, the fuzzer sends it, and
    tests/test_options.py asks for the client argument and the CLI flag (or ``cli=False``)."""

    function = "fn::amem::documents::query"
    # document passages have no valid time: the query warns and reads as now (surql/260)
    not_arguments: ClassVar[frozenset[str]] = frozenset({"valid_at", "valid_during", "valid_from", "valid_until"})

    filter: Annotated[dict[str, Any] | None, PlainValidator(_args.query_filter)] = option("{mimeType, documentIds}", cli="--mime-type")
    fusion: Wire[str | None] = option("rrf | zscore | minmax")
    identifier_vector_weight: Wire[float | None] = option("vectorWeight for identifier-like queries", cli=False)
    bm25_max_df: Wire[float | bool | None] = option("drop query words in more than this share of passages", cli=False)
    # hybrid_graph only (elsewhere: a warning)
    graph_alpha: Wire[float | None] = option("hybrid_graph: weight of the graph score")
    graph_depth: Wire[int | None] = option("hybrid_graph: hops")
    graph_edges: Annotated[list[str] | None, strs_of("graph_edges")] = option("hybrid_graph: signals", cli="--graph-edges")
    expand_graph: Wire[bool | None] = option("hybrid_graph: include matched keywords / entities")
    # the second stage and the rewrites
    use_hyde: Wire[bool | None] = option("HyDE (= hyde)", cli="--hyde")
    decompose_query: Wire[bool | None] = option("split the query with the LLM (= decompose)", cli="--decompose")
    use_reranker: Wire[bool | None] = option("a second stage over the fused candidates", cli="--rerank")
    rerank_depth: Wire[int | None] = option("candidates reranked", cli=False)
    rerank_mix: Wire[float | None] = option("the rescore's cosine share", cli=False)
    reranked_in_client: Wire[str | None] = option('"client": the client reranks after the round trip', internal=True, alias="reranker")
    sub_queries: Wire[list[str] | None] = option("the decomposition's sub-questions", internal=True)
    hyde_embedding: Wire[list[float] | None] = option("the embedding of an LLM's hypothetical answer", internal=True)
