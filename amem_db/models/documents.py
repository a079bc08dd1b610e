"""Documents, their passages and ingest results (snake_case document keys; camelCase passages)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ._base import _Camel, _Model, _Returned

__all__ = [
    "Chunk",
    "ChunkPage",
    "Deleted",
    "Document",
    "DocumentPage",
    "DocumentRef",
    "DocumentStatus",
    "DocumentVersion",
    "IngestResult",
    "IngestStatus",
    "Keyword",
    "LinkCounts",
]


DocumentStatus = Literal["processing", "ready", "failed"]


IngestStatus = Literal["added", "replaced", "unchanged", "failed"]


class Keyword(_Returned):
    text: str
    normalised: str
    score: float


class Document(_Returned):
    """A document without its text (``documents.get``); ``documents.list``
    returns the listing fields only."""

    id: str
    title: str | None = None
    source: str | None = None
    source_id: str | None = None
    mime_type: str
    content_hash: str | None = None
    status: DocumentStatus
    chunk_count: int = 0
    embedding_model: str | None = None
    summary: str | None = None
    metadata: dict[str, Any] | None = None
    scopes: list[str] = []
    created_at: datetime | None = None
    updated_at: datetime | None = None
    keywords: list[Keyword] = []


class DocumentPage(_Returned):
    documents: list[Document]
    total: int
    limit: int
    offset: int


class Deleted(_Returned):
    """``documents.delete``: the id deleted and how many chunks went with it."""

    deleted: str
    chunks: int


class LinkCounts(_Returned):
    """``documents.recompute_links``: links rebuilt across how many documents."""

    links: int
    documents: int


class IngestResult(_Model):
    """One document's outcome: added / replaced / unchanged, or failed with an error."""

    status: IngestStatus
    name: str
    document: Document | None = None
    error: str | None = None
    error_code: str | None = None


class Chunk(_Camel):
    """A passage: a text chunk, or a transcript passage with ``start_s``/``end_s``
    seconds. ``text == document.text[char_start:char_end]``. In a hit it names
    its ``document``; in a ``ChunkPage`` the page does."""

    id: str
    document: str | None = None
    text: str
    section: str | None = None
    position: int
    char_start: int
    char_end: int
    start_s: float | None = None
    end_s: float | None = None
    # a kept passage of a replaced document version (an asOf / atInstant read with
    # document history): when it was stored and when its document was replaced
    recorded_at: datetime | None = None
    replaced_at: datetime | None = None


class DocumentVersion(_Camel):
    """One version of a document (``documents.versions``): the current one, or a
    replaced one kept by document history (``replaced_at`` set)."""

    content_hash: str
    title: str | None = None
    recorded_at: datetime | None = None
    replaced_at: datetime | None = None
    passages: int = 0
    current: bool = False


class ChunkPage(_Camel):
    document: str
    chunks: list[Chunk]
    total: int
    limit: int
    offset: int


class DocumentRef(_Camel):
    """A hit's provenance: the document's id, title and source."""

    id: str
    title: str | None = None
    source: str | None = None
