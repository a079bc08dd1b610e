"""LangChain retrievers (``pip install 'amem-db[langchain]'``): ``AmemRetriever`` over recall
(facts and passages) and ``AmemDocumentRetriever`` over documents.query.

    retriever = AmemRetriever(memory=mem, k=5, options={"include": ["facts"]})
    docs = await retriever.ainvoke("What is Alice's role?")
    docs[0].metadata["citation"]    # where the hit came from; also source, score, valid_from/until

Each call is one client call (one round trip to the stored function); ``k`` may also be
given per call (``invoke(q, k=3)``). A ``Memory`` makes the retriever async-native
(``ainvoke`` on the caller's loop); a ``SyncMemory`` serves ``invoke`` and ``ainvoke``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator

from ._hits import Found, Over, afind, check_memory, find

__all__ = ["AmemDocumentRetriever", "AmemRetriever"]


class AmemRetriever(BaseRetriever):
    """Recall (facts and passages ranked together) as LangChain ``Document``s."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    over: ClassVar[Over] = "recall"

    memory: Any = Field(description="an amem_db Memory (async) or SyncMemory")
    k: int = Field(default=10, ge=1, le=50)
    options: dict[str, Any] = Field(default_factory=dict, description="more keyword options of the client call (mode, include, lens, as_of, ...)")

    @field_validator("memory")
    @classmethod
    def _is_memory(cls, value: Any) -> Any:
        return check_memory(value)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None,
                                **options: Any) -> list[Document]:
        return [_document(f) for f in find(self.over, self.memory, query, k or self.k, {**self.options, **options})]

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None, **options: Any) -> list[Document]:
        return [_document(f) for f in await afind(self.over, self.memory, query, k or self.k, {**self.options, **options})]


class AmemDocumentRetriever(AmemRetriever):
    """documents.query (ranked passages of ingested documents) as LangChain ``Document``s."""

    over: ClassVar[Over] = "documents"


def _document(hit: Found) -> Document:
    return Document(page_content=hit.text, metadata=hit.metadata, id=hit.id)
