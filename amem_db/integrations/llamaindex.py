"""LlamaIndex retrievers (``pip install 'amem-db[llamaindex]'``): ``AmemRetriever`` over recall
(facts and passages) and ``AmemDocumentRetriever`` over documents.query, returning
``NodeWithScore`` (a ``TextNode`` whose id is the hit's record id, metadata with source,
score, validity and citation).

    retriever = AmemRetriever(mem, k=5)
    nodes = await retriever.aretrieve("What is Alice's role?")

A ``Memory`` makes it async-native (``aretrieve``); a ``SyncMemory`` serves both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ..client import Memory
from ..sync import SyncMemory
from ._hits import Found, Over, afind, check_memory, find

__all__ = ["AmemDocumentRetriever", "AmemRetriever"]


class AmemRetriever(BaseRetriever):
    """Recall as LlamaIndex nodes."""

    over: ClassVar[Over] = "recall"

    def __init__(self, memory: Memory | SyncMemory, *, k: int = 10, options: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.memory = check_memory(memory)
        self.k = k
        self.options = dict(options or {})
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(f) for f in find(self.over, self.memory, query_bundle.query_str, self.k, self.options)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(f) for f in await afind(self.over, self.memory, query_bundle.query_str, self.k, self.options)]


class AmemDocumentRetriever(AmemRetriever):
    """documents.query as LlamaIndex nodes."""

    over: ClassVar[Over] = "documents"


def _node(hit: Found) -> NodeWithScore:
    # the metadata describes the hit; it is not text to embed or to show the LLM twice
    node = TextNode(id_=hit.id, text=hit.text, metadata=hit.metadata,
                    excluded_embed_metadata_keys=list(hit.metadata), excluded_llm_metadata_keys=["citation", "trace"])
    return NodeWithScore(node=node, score=hit.score)
