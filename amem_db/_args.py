"""Argument shapes the client checks before a round trip, shared by the client
(amem_db/client/) and the read-option models (amem_db/options/).

A str is never a list of its characters: where a list belongs (``scopes``, ``lens``
clauses, ``graph_edges``, id lists) a str is a ``TypeError`` naming the argument.
Values are judged by the stored functions (typed ``amem:invalid_input`` errors), not
here: these checks only refuse what cannot be sent as meant. Standard library only,
so that every other module can import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

__all__ = ["Lens", "Location", "When"]

#: a DNF scope selector: OR of clauses, each an AND of scope paths: [["org/a"], ["org/b", "clearance/x"]]
Lens = Sequence[Sequence[str]]
When = datetime | str | None  # a time option: a datetime or an ISO 8601 string
#: a stored location: {"lat", "lng"}, (lat, lng), "LAT,LNG", or a GeoJSON Point (checked in SurrealQL)
Location = Mapping[str, Any] | tuple[float, float] | str


def strs(name: str, value: object) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes):
        raise TypeError(f"{name} must be a list of strings, not a {type(value).__name__}: {name}=[{value!r}]")
    if not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of strings, not {type(value).__name__}")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise TypeError(f"{name}[{i}] must be a str, not {type(v).__name__}")
    return list(value)


def lens(value: object) -> list[list[str]] | None:
    if value is None:
        return None
    example = 'lens=[["org/acme"]] (OR of clauses, each an AND of scope paths)'
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise TypeError(f"lens must be a list of clauses, not {type(value).__name__}: {example}")
    clauses = []
    for i, clause in enumerate(value):
        if isinstance(clause, str | bytes) or not isinstance(clause, Sequence):
            raise TypeError(f"lens[{i}] must be a clause (a list of scope paths), not {type(clause).__name__}: {example}")
        clauses.append(strs(f"lens[{i}]", clause) or [])
    return clauses


def query_filter(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f'filter must be a dict such as {{"mimeType": ["application/pdf"]}}, not {type(value).__name__}')
    out = dict(value)
    for key in ("mimeType", "documentIds"):
        if out.get(key) is not None:
            out[key] = strs(f"filter.{key}", out[key])
    return out


def location(value: object) -> str | dict[str, Any] | None:
    """A stored location as the engine takes it; (lat, lng) becomes {lat, lng}. The
    values are checked by fn::amem::geo::stored (typed errors naming the field)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        return {"lat": value[0], "lng": value[1]}
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f'location must be {{"lat": ..., "lng": ...}}, (lat, lng) or "LAT,LNG", not {type(value).__name__}')


def record_id(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"an id is a str such as 'document:01hx...', not {type(value).__name__}")
    return value


def ref(value: object, what: str) -> str:
    """A trace (or other record) id argument; ``what`` names it in the error."""
    if not isinstance(value, str):
        raise TypeError(f"{what} is an id str such as 'retrieval_trace:abc', not {type(value).__name__}")
    return value


def hit(value: object) -> int | str:
    """A trace hit: its rank (int, 1-based) or its record id."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"a hit is its rank (int, 1-based) or its record id (str), not {type(value).__name__}")
    return value


def request(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"a memory write is a dict such as {{'triples': [...], 'text': ...}}, not {type(value).__name__}")
    return dict(value)


def pair(name: str, value: object) -> list[Any] | None:
    """A (from, to) pair such as ``valid_during``: a str is not a pair."""
    if value is None:
        return None
    if isinstance(value, str | bytes):
        raise TypeError(f"{name} must be a pair (from, to), not a string")
    return list(value)  # type: ignore[call-overload, no-any-return]


def clean(opts: dict[str, Any]) -> dict[str, Any]:
    """The options that were given (None means not given)."""
    return {k: v for k, v in opts.items() if v is not None}
