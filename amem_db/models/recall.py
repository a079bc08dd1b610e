"""Unified recall and its tier 2 answers (fn::amem::recall, fn::amem::answers::*; camelCase keys)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ._base import RecallTier, Tier, _Camel
from .query import ContextHit

__all__ = [
    "QueryWindow",
    "RecallHit",
    "RecallInclude",
    "RecallMode",
    "RecallResponse",
    "RecallSource",
    "ReusedAnswer",
    "SeedEntity",
    "StoredAnswer",
]


#: the modes of fn::amem::recall (MEMORY.md section 2)
RecallMode = Literal["hybrid", "vector", "bm25", "graph"]


#: what a recall response keeps (retrieval and reinforcement see both)
RecallInclude = Literal["facts", "passages"]


#: the record a recall hit is
RecallSource = Literal["entity", "attribute", "relation", "memory_chunk", "chunk", "audio_chunk", "section", "passage_version"]


class RecallHit(_Camel):
    """One ranked fact or passage. ``citation`` says where it came from: for a fact
    ``{fact, entity, key, value, target, write, confidence, recordedAt, source}``,
    for a memory passage ``{memoryPassage, write, charStart, charEnd, sessionId,
    role, source}`` (``source`` is the write's ``{kind, ref, span}``), for a document
    passage ``{document, title, chunk, section, charStart, charEnd}``, for an entity
    ``{entity, type, name}``."""

    id: str
    text: str
    source: RecallSource
    score: float
    occurred_at: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    importance: float | None = None
    citation: dict[str, Any] = {}


class SeedEntity(_Camel):
    """An entity the query names (by name or alias): the graph leg starts there."""

    id: str
    name: str
    type: str
    named: list[str] = []
    # tier 1: the keys of this entity whose current rows recall read by key
    keys: list[str] = []


class QueryWindow(_Camel):
    """The time window recall read from the query's words (surql/460): ``from_``
    inclusive, ``to`` exclusive, UTC; None on a side = open ("since 2021")."""

    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None
    phrase: str


class ReusedAnswer(_Camel):
    """The answer a tier-2 recall reused: its text, the query it was made for, the ids
    it cited (each still current) and the cosine of the two queries."""

    id: str
    query: str
    text: str
    cited: list[str]
    created_at: datetime
    similarity: float


class RecallResponse(_Camel):
    """``fn::amem::recall``: one ranked ``hits`` list over facts and passages,
    ``context_hits`` (section siblings of document hits, outside k),
    ``seed_entities``, ``classification_kind``, ``query_window`` (None when the
    query has no time words or it is off), ``tier`` / ``tier_reason``,
    ``query_ms``, ``warnings`` and the ``trace`` (per hit, per signal)."""

    hits: list[RecallHit]
    context_hits: list[ContextHit] = []
    seed_entities: list[SeedEntity] = []
    classification_kind: Literal["direct_lookup", "hybrid", "full_context"] = "hybrid"
    clock: dict[str, Any] = {}
    query_window: QueryWindow | None = None
    # the tier ladder (surql/455_tiers): Tier.FUSED (3), ESCALATED (4) or CACHE (2, "cache" on
    # the wire and in the dump); ``tiers``: what each tier did and why
    tier: RecallTier = Tier.FUSED
    tier_reason: str | None = None
    escalated: bool = False
    tiers: dict[str, Any] = {}
    # tier 2 only: the stored answer reused (``mem.answers.remember``)
    reused_from: str | None = None
    answer: ReusedAnswer | None = None
    query_ms: float = 0.0
    warnings: list[str] = []
    trace: dict[str, Any] | None = None
    # stable pagination (``page_size`` / ``cursor``): the next page's cursor (None: last),
    # how many hits the frozen set holds, the page size
    cursor: str | None = None
    candidates: int | None = None
    page_size: int | None = None


class StoredAnswer(_Camel):
    """``mem.answers.remember``: the stored answer's id, when, and the ids it cites."""

    id: str
    created_at: datetime
    cited: list[str]
