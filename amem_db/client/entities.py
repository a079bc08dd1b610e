"""`mem.entities`: the entity reads (fn::amem::entities::*), lens-gated."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..db import call
from ..models import EntityDetail, EntityPage, FactHistory
from . import _call
from ._call import Lens, When

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["Entities"]


class Entities:
    """``mem.entities``: the entity reads (fn::amem::entities::*), lens-gated."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    async def list(
        self, *, type: str | None = None, lens: Lens | None = None, limit: int = 50, offset: int = 0,
        as_of: When = None, at_instant: When = None,
    ) -> EntityPage:
        """Entities reached through readable facts, by name, paged (limit <= 500), as known at ``as_of``."""
        opts = _call.clean({"type": type, "lens": _call.lens(lens), "limit": limit, "offset": offset, "asOf": as_of, "atInstant": at_instant})
        return _call.validated(EntityPage, await call(self.mem.conn, "fn::amem::entities::list", opts))

    async def get(
        self, type: str, name: str, *, lens: Lens | None = None, as_of: When = None, at_instant: When = None,
        valid_at: When = None, valid_during: Sequence[datetime | str] | None = None, valid_from: When = None,
        valid_until: When = None,
    ) -> EntityDetail | None:
        """One entity with its aliases, attributes and relations, or None. Current by
        default; the time options (datetimes or ISO strings) read what was believed
        (``as_of``), stored (``at_instant``, versioned storage only) or valid
        (``valid_at``, ``valid_during=(from, to)``, ``valid_from``, ``valid_until``)
        then: docs/MEMORY-DESIGN.md "Time"."""
        clock = _call.time_options(as_of=as_of, at_instant=at_instant, valid_at=valid_at, valid_during=valid_during,
                             valid_from=valid_from, valid_until=valid_until)
        row = await call(self.mem.conn, "fn::amem::entities::get", type, name, _call.clean({"lens": _call.lens(lens), **clock}))
        return _call.validated(EntityDetail, row) if row else None

    async def history(
        self, type: str, name: str, key: str, *, lens: Lens | None = None, as_of: When = None, at_instant: When = None,
        valid_at: When = None, valid_during: Sequence[datetime | str] | None = None, valid_from: When = None,
        valid_until: When = None,
    ) -> FactHistory:
        """Every row of one key of an entity, newest first, with both clocks; with
        ``as_of`` the history as it stood then (the time options of ``get``, except that
        no valid-time option means every interval)."""
        clock = _call.time_options(as_of=as_of, at_instant=at_instant, valid_at=valid_at, valid_during=valid_during,
                             valid_from=valid_from, valid_until=valid_until)
        opts = _call.clean({"lens": _call.lens(lens), **clock})
        return _call.validated(FactHistory, await call(self.mem.conn, "fn::amem::entities::history", type, name, key, opts))


