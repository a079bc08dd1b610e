"""Typed results of the stored functions (pydantic). Field names follow the
stored functions' output; ids are plain strings such as ``document:01hx...``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Keyword(_Model):
    text: str
    normalised: str
    score: float


class Document(_Model):
    id: str
    title: str | None = None
    source: str | None = None
    source_id: str | None = None
    mime_type: str
    content_hash: str | None = None
    status: str
    chunk_count: int = 0
    embedding_model: str | None = None
    summary: str | None = None
    metadata: dict[str, Any] | None = None
    scopes: list[str] = []
    created_at: datetime | None = None
    updated_at: datetime | None = None
    keywords: list[Keyword] = []


class IngestResult(_Model):
    """One document's outcome: added / replaced / unchanged, or failed with an error."""

    status: str
    name: str
    document: Document | None = None
    error: str | None = None
    error_code: str | None = None


class DocumentPage(_Model):
    documents: list[dict[str, Any]]
    total: int
    limit: int
    offset: int


class Chunk(_Model):
    id: str
    text: str
    position: int
    section: str | None = None
    charStart: int
    charEnd: int
    startS: float | None = None
    endS: float | None = None


class ChunkPage(_Model):
    document: str
    chunks: list[Chunk]
    total: int
    limit: int
    offset: int


class DocumentKeywords(_Model):
    document: str
    keywords: list[Keyword]


class KeywordCount(_Model):
    text: str
    normalised: str
    document_count: int


class KeywordPage(_Model):
    keywords: list[KeywordCount]
    total: int
    limit: int
    offset: int


class KeywordDocument(_Model):
    id: str
    title: str | None = None
    score: float


class KeywordDetail(_Model):
    text: str
    normalised: str
    document_count: int
    documents: list[KeywordDocument]


class KeywordMatch(_Model):
    text: str
    normalised: str
    score: float


class KeywordSearch(_Model):
    results: list[KeywordMatch]


class Hit(_Model):
    """A ranked passage: chunk {id, document, text, section, position, charStart, charEnd[, startS, endS]},
    score in [0, 1], document {id, title, source}."""

    chunk: dict[str, Any]
    score: float
    document: dict[str, Any]
    graphEvidence: list[dict[str, Any]] | None = None


class ContextHit(_Model):
    """A same-section sibling of a ranked hit (not counted against k)."""

    chunk: dict[str, Any]
    document: dict[str, Any]
    expands: str


class QueryResponse(_Model):
    results: list[Hit]
    contextHits: list[ContextHit] = []
    queryMs: float = 0.0
    trace: dict[str, Any] | None = None
    warnings: list[str] = []
