"""The client's private helpers, written once: one round trip validated into its
model (``call_model``), the argument checks (amem_db/_args.py) and ``clean``.
Every namespace module (memory, documents, keywords, facts, entities, traces,
answers) calls the database through these, so a wrong result shape is always the
typed ``ServerError`` (``amem_db.models.validated``), never a raw pydantic error."""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic

from .._args import Lens, Location, When, clean, hit, lens, location, pair, query_filter, record_id, ref, request, strs
from ..db import call
from ..models import validated
from ..options import TimeOptions

__all__ = ["Lens", "Location", "When", "call_model", "call_optional", "clean", "hit", "lens", "location", "pair",
           "query_filter", "record_id", "ref", "request", "strs", "time_options", "validated"]

_M = TypeVar("_M", bound=pydantic.BaseModel)


async def call_model(conn: Any, model: type[_M], fn: str, *args: Any) -> _M:
    """``RETURN fn(args...)`` in one round trip, as ``model``."""
    return validated(model, await call(conn, fn, *args))


async def call_optional(conn: Any, model: type[_M], fn: str, *args: Any) -> _M | None:
    """As ``call_model``, for a function that returns NONE when the record is absent or unreadable."""
    row = await call(conn, fn, *args)
    return validated(model, row) if row else None


def time_options(
    *, as_of: When = None, at_instant: When = None, valid_at: When = None,
    valid_during: Any = None, valid_from: When = None, valid_until: When = None,
) -> dict[str, Any]:
    """The time options of a read (fn::amem::clock::options) under their stored names."""
    return TimeOptions(as_of=as_of, at_instant=at_instant, valid_at=valid_at, valid_during=valid_during,
                       valid_from=valid_from, valid_until=valid_until).dump()
