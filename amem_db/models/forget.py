"""Forget and inspect (fn::amem::forget, fn::amem::inspect)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._base import _Returned
from .facts import FactRow

__all__ = [
    "ForgetCounts",
    "ForgetResult",
    "InspectKind",
    "Inspection",
]


class ForgetCounts(_Returned):
    """Rows per table a forget changed (soft: forgotten_at set; purge: erased; dryRun: would)."""

    attribute: int = 0
    relation: int = 0
    memory_chunk: int = 0
    entity_name: int = 0
    uncertainty: int = 0
    mentions: int = 0
    attribute_fts: int = 0
    memory_chunk_fts: int = 0


class ForgetResult(_Returned):
    """``mem.forget``: the counts, whether rows were erased, and the ids the request
    named or matched (``missing``: ids that do not exist or that the caller cannot read)."""

    forgotten: ForgetCounts
    purged: bool
    dry_run: bool = Field(alias="dryRun")
    ids: list[str] = []
    missing: list[str] = []


#: what ``fn::amem::inspect`` can show
InspectKind = Literal["entity", "attribute", "relation", "memory_chunk", "chunk", "audio_chunk", "retrieval_trace"]


class Inspection(_Returned):
    """``mem.inspect``: one record (``record``, in its read shape) and what explains it;
    which of the other fields are set depends on ``kind`` (docs/MEMORY-DESIGN.md "Inspect")."""

    kind: InspectKind
    id: str
    record: dict[str, Any]
    # entity
    aliases: list[str] | None = None
    attributes: list[FactRow] | None = None
    relations: list[FactRow] | None = None
    incoming: list[FactRow] | None = None
    # attribute / relation
    entity: str | None = None
    supersedes: FactRow | None = None
    superseded_by: FactRow | None = None
    uncertainty: list[dict[str, Any]] | None = None
    # memory_chunk
    mentions: list[dict[str, Any]] | None = None
    # chunk / audio_chunk
    document: dict[str, Any] | None = None
    span: dict[str, Any] | None = None
