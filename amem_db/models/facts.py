"""Typed memory: fact writes, rows, entities, history, diff (snake_case keys, as the write request)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ._base import _Model, _Returned

__all__ = [
    "DiffRow",
    "Entity",
    "EntityDetail",
    "EntityPage",
    "FactBatch",
    "FactBatchError",
    "FactChange",
    "FactDiff",
    "FactHistory",
    "FactKey",
    "FactOutcome",
    "FactOutcomeKind",
    "FactRow",
    "FactWrite",
    "FactsPrepared",
    "PreparedText",
]


#: what reconciliation did with one triple (fn::amem::facts::apply)
FactOutcomeKind = Literal["added", "unchanged", "coexists", "superseded", "uncertain", "late", "retracted", "nothing_to_retract"]


class PreparedText(_Returned):
    """One text ``facts.prepare`` asks to embed (``id`` for entities,
    ``triple`` for attribute renderings, offsets for passages)."""

    text: str
    id: str | None = None
    triple: int | None = None
    position: int | None = None
    char_start: int | None = None
    char_end: int | None = None


class FactsPrepared(_Returned):
    entities: list[PreparedText]
    attributes: list[PreparedText]
    passages: list[PreparedText]


class FactOutcome(_Returned):
    triple: int
    outcome: FactOutcomeKind
    id: str | None = None
    supersedes: list[str] = []
    uncertain_with: list[str] = []
    retracted: list[str] = []


class FactWrite(_Returned):
    """The result of ``facts.write`` (a repeat with the same idempotency key returns it again)."""

    write: str
    scopes: list[str]
    observed_at: datetime
    triples: list[FactOutcome]
    passages: list[str]


class FactBatchError(_Model):
    """A request of ``facts.write_many`` that was not stored: nothing of it was
    written (its own transaction rolled back); ``code`` is the ``AmemError`` code."""

    index: int
    code: str
    message: str

    def exception(self) -> Exception:
        """The typed ``AmemError`` a single ``facts.write`` of this request raises."""
        from ..errors import error_for

        return error_for(self.code, self.message)


class FactBatch(_Model):
    """The result of ``facts.write_many``: ``writes[i]`` is request i's ``FactWrite``
    (a replayed idempotency key gives the stored one), None where ``errors`` names it."""

    writes: list[FactWrite | None]
    errors: list[FactBatchError] = []
    #: engine transactions the batch ran, committed or not (its groups, plus one per request of a failed group)
    transactions: int = 0
    facts: int = 0
    passages: int = 0


class FactRow(_Returned):
    """An attribute (``value``) or relation (``target``) row with its three clocks."""

    id: str
    key: str
    value: Any = None
    target: str | None = None
    text: str | None = None
    category: str
    confidence: float
    importance: float
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    observed_at: datetime | None = None
    recorded_at: datetime | None = None
    superseded_at: datetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    retracted: bool = False
    current: bool
    session_id: str | None = None
    role: str | None = None
    source: dict[str, Any] | None = None
    labels: list[str] = []
    scopes: list[str] = []


class Entity(_Returned):
    id: str
    type: str
    name: str
    name_norm: str | None = None
    category: str | None = None
    importance: float | None = None
    created_at: datetime | None = None


class EntityDetail(Entity):
    """``entities.get``: the entity with its aliases and current facts."""

    aliases: list[str] = []
    attributes: list[FactRow] = []
    relations: list[FactRow] = []


class EntityPage(_Returned):
    entities: list[Entity]
    total: int
    limit: int
    offset: int


class FactKey(_Returned):
    key: str
    multi_valued: bool
    scopes: list[str]


class FactHistory(_Returned):
    """``entities.history``: every row of one key, newest first."""

    entity: str
    key: str
    rows: list[FactRow]
    clock: dict[str, Any] = {}


class DiffRow(FactRow):
    """A fact row of ``facts.diff``, as believed at the end it belongs to."""

    entity: str
    key_norm: str


class FactChange(_Returned):
    """An entity + key (+ scopes) whose facts were replaced between the two times."""

    entity: str
    key: str
    before: list[DiffRow]
    after: list[DiffRow]


class FactDiff(_Returned):
    """``facts.diff``: what the current read showed at ``t1`` and at ``t2``, compared."""

    t1: datetime
    t2: datetime
    added: list[DiffRow]
    changed: list[FactChange]
    closed: list[DiffRow]
