"""What both retriever adapters share: one call of recall or documents.query on a
``Memory`` or ``SyncMemory``, and each hit as (id, text, score, metadata)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..client import Memory
from ..sync import SyncMemory

Over = Literal["recall", "documents"]
SYNC_ON_ASYNC = ("this retriever wraps an async Memory, so it is async only (ainvoke / aretrieve): "
                 "pass a SyncMemory for the blocking calls")


@dataclass(frozen=True)
class Found:
    id: str
    text: str
    score: float
    metadata: dict[str, Any]


def check_memory(memory: object) -> Memory | SyncMemory:
    if not isinstance(memory, Memory | SyncMemory):
        raise TypeError(f"memory is an amem_db Memory or SyncMemory, not {type(memory).__name__}")
    return memory


def _call(over: Over, memory: Any, query: str, k: int, options: Mapping[str, Any]) -> Any:
    """The client call (a coroutine for a Memory, the result for a SyncMemory)."""
    if over == "recall":
        return memory.recall(query, k=k, **options)
    return memory.documents.query(query, k=k, **options)


async def afind(over: Over, memory: Memory | SyncMemory, query: str, k: int, options: Mapping[str, Any]) -> list[Found]:
    if isinstance(memory, SyncMemory):  # its own loop runs the call; this loop is not blocked
        response = await asyncio.to_thread(_call, over, memory, query, k, options)
    else:
        response = await _call(over, memory, query, k, options)
    return found(over, response)


def find(over: Over, memory: Memory | SyncMemory, query: str, k: int, options: Mapping[str, Any]) -> list[Found]:
    if not isinstance(memory, SyncMemory):
        raise TypeError(SYNC_ON_ASYNC)
    return found(over, _call(over, memory, query, k, options))


def found(over: Over, response: Any) -> list[Found]:
    """Hits with source, score, validity and citation (recall) or document and passage (documents.query)."""
    data = response.model_dump(by_alias=True, mode="json")
    trace = (data.get("trace") or {}).get("id")
    if over == "recall":
        return [Found(h["id"], h["text"], h["score"], {
            "id": h["id"], "source": h["source"], "score": h["score"], "valid_from": h.get("validFrom"),
            "valid_until": h.get("validUntil"), "occurred_at": h.get("occurredAt"), "citation": h.get("citation") or {},
            "trace": trace}) for h in data["hits"]]
    return [Found(h["chunk"]["id"], h["chunk"]["text"], h["score"], {
        "id": h["chunk"]["id"], "source": "chunk", "score": h["score"], "document": h["document"]["id"],
        "title": h["document"].get("title"), "document_source": h["document"].get("source"),
        "section": h["chunk"].get("section"), "char_start": h["chunk"]["charStart"], "char_end": h["chunk"]["charEnd"],
        "citation": {"document": h["document"]["id"], "chunk": h["chunk"]["id"], "charStart": h["chunk"]["charStart"],
                     "charEnd": h["chunk"]["charEnd"]}, "trace": trace}) for h in data["results"]]
