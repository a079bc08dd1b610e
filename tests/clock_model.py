"""A plain-Python model of MEMORY.md sections 1 (reconciliation) and 3 (the three
clocks), the oracle of tests/test_clocks.py. It knows nothing of SurrealDB: it keeps
rows as dataclasses and answers reads by the rules written in docs/MEMORY-DESIGN.md
("Time"). Single-valued keys, knowledge facts, one entity per timeline.

Known time: a row is known from recorded_at (= its write's observed_at). A
supersession or retraction closes it at closed_at = max(its recorded_at, the closing
write's observed_at); before closed_at a read sees its stated valid_until.
Valid time: validAt (contains), validDuring (overlaps [a, b)), validFrom (starts at or
after), validUntil (ended by); none given = valid at the read's known time, except the
history read, which keeps every interval. Forgotten rows are never visible."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

FLOOR = 0.7  # facts::limits().confidence_floor: a weaker statement cannot supersede


@dataclass
class Row:
    id: str
    key: str
    value: str
    scopes: tuple[str, ...]
    confidence: float
    valid_from: datetime
    valid_until: datetime | None  # as stored now (closed by a later write, or stated)
    stated_until: datetime | None  # as its own write stated it
    recorded_at: datetime
    closed_at: datetime | None = None
    superseded: bool = False
    retracted: bool = False
    forgotten: bool = False

    def until_at(self, known: datetime) -> datetime | None:
        """valid_until as believed at known time ``known``."""
        return self.valid_until if self.closed_at is not None and self.closed_at <= known else self.stated_until


@dataclass
class Clock:
    known: datetime
    valid_at: datetime | None = None
    during: tuple[datetime, datetime] | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None


@dataclass
class Timeline:
    rows: list[Row] = field(default_factory=list)
    named: datetime | None = None  # the known time of the first write that named the entity

    # --- writes (MEMORY.md section 1) ---------------------------------------------------------
    def _open(self, key: str, scopes: tuple[str, ...], now: datetime) -> list[Row]:
        return [r for r in self.rows if r.key == key and r.scopes == scopes and not r.superseded and not r.forgotten
                and not r.retracted and (r.valid_until is None or r.valid_until > now)]

    def _close(self, rows: list[Row], observed: datetime, valid_until: datetime) -> None:
        for r in rows:
            r.closed_at = max(r.recorded_at, observed)
            r.valid_until = valid_until

    def write(self, new_id: str | None, key: str, value: str | None, scopes: tuple[str, ...], confidence: float,
              valid_from: datetime, valid_until: datetime | None, observed: datetime, now: datetime) -> tuple[str, str | None]:
        """Apply one triple; returns (outcome, id of the row the engine reports)."""
        current = self._open(key, scopes, now)
        if value is None:  # a retraction
            self._close(current, observed, valid_from)
            for r in current:
                r.retracted = True
            return ("retracted" if current else "nothing_to_retract"), None
        same = [r for r in current if r.value == value]
        known = same or [r for r in self.rows if r.key == key and r.scopes == scopes and r.value == value
                         and r.valid_from == valid_from and not r.retracted and not r.forgotten]
        if known:
            return "unchanged", known[0].id
        assert new_id is not None
        later = [r for r in current if r.valid_from > valid_from]
        rivals = [] if later else current
        wins = [r for r in rivals if confidence >= FLOOR and confidence >= r.confidence]
        until = min(r.valid_from for r in later) if later else valid_until
        self.rows.append(Row(new_id, key, value, scopes, confidence, valid_from, until, until, observed))
        self._close(wins, observed, valid_from)
        for r in wins:
            r.superseded = True
        outcome = ("late" if later else "superseded" if wins else "uncertain" if len(wins) < len(rivals)
                   else "coexists" if current else "added")
        return outcome, new_id

    def forget(self, row_id: str) -> None:
        for r in self.rows:
            if r.id == row_id:
                r.forgotten = True

    # --- reads (MEMORY.md section 3) ----------------------------------------------------------
    def visible(self, r: Row, c: Clock, *, history: bool, lens: list[list[str]] | None) -> bool:
        if r.forgotten or r.recorded_at > c.known or not lens_matches(r.scopes, lens):
            return False
        until = r.until_at(c.known)
        filtered = c.valid_at or c.during or c.valid_from or c.valid_until
        at = c.valid_at if filtered or history else c.known
        if at is not None and not (r.valid_from <= at and (until is None or until > at)):
            return False
        if c.during is not None and not (r.valid_from < c.during[1] and (until is None or until > c.during[0])):
            return False
        if c.valid_from is not None and not r.valid_from >= c.valid_from:
            return False
        return not (c.valid_until is not None and not (until is not None and until <= c.valid_until))

    def get(self, c: Clock, lens: list[list[str]] | None = None) -> set[str]:
        return {r.id for r in self.rows if self.visible(r, c, history=False, lens=lens)}

    def history(self, key: str, c: Clock, lens: list[list[str]] | None = None) -> dict[str, bool]:
        """id -> current (visible to the current read at the clock's known time)."""
        now = Clock(known=c.known)
        return {r.id: self.visible(r, now, history=False, lens=lens) for r in self.rows
                if r.key == key and self.visible(r, c, history=True, lens=lens)}

    def diff(self, t1: datetime, t2: datetime) -> tuple[set[str], set[str], set[tuple[str, tuple[str, ...]]]]:
        """(added ids, closed ids, changed (key, scopes) groups) between known times t1 < t2."""
        before, after = self.get(Clock(known=t1)), self.get(Clock(known=t2))
        gone = [r for r in self.rows if r.id in before - after]
        new = [r for r in self.rows if r.id in after - before]
        both = {(r.key, r.scopes) for r in gone} & {(r.key, r.scopes) for r in new}
        return ({r.id for r in new if (r.key, r.scopes) not in both},
                {r.id for r in gone if (r.key, r.scopes) not in both}, both)


def closure(scopes: tuple[str, ...]) -> set[str]:
    """Every prefix of every scope path (fn::amem::scope::closure)."""
    return {"/".join(p.split("/")[:i]) for p in scopes for i in range(1, len(p.split("/")) + 1)}


def lens_matches(scopes: tuple[str, ...], lens: list[list[str]] | None) -> bool:
    return lens is None or any(set(clause) <= closure(scopes) for clause in lens)
