"""`mem.facts`: the typed-memory write path (fn::amem::facts::*)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..constants import FACTS_BATCH_MAX, FACTS_PER_TRANSACTION
from ..db import call, call_each
from ..errors import AmemError, InvalidInput, NotMigrated, TransportError, server_error
from ..geometry import with_polygons
from ..models import FactBatch, FactBatchError, FactDiff, FactKey, FactsPrepared, FactWrite
from ..wire import vectors as packed
from . import _call
from ._call import Lens

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["Facts"]


class Facts:
    """``mem.facts``: the typed-memory write path (fn::amem::facts::*). A request
    is the stored function's object: ``{triples: [{entity: {type, name,
    aliases?}, key, value? | target?: {type, name}, retract?, category?,
    confidence?, valid_from?, valid_until?}], text?, scopes?, observed_at?,
    valid_from?, valid_until?, session_id?, role?, source?, category?,
    confidence?, labels?, idempotency_key?}`` (docs/MEMORY-DESIGN.md)."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    async def prepare(self, request: Mapping[str, Any]) -> FactsPrepared:
        """Validate a write and return the texts ``write`` embeds (no writes)."""
        return _call.validated(FactsPrepared, await call(self.mem.conn, "fn::amem::facts::prepare", _call.request(request)))

    async def write(self, request: Mapping[str, Any], *, embed: bool = True) -> FactWrite:
        """Store a memory write in one transaction: prepare, embed the prepared
        texts with ``mem.embedder`` (unless ``embed=False``), then ``facts::write``."""
        body = with_polygons(_call.request(request))
        vectors: dict[str, Any] | None = None
        if embed:
            p = await call(self.mem.conn, "fn::amem::facts::prepare", body)
            parts = {part: [x["text"] for x in p[part]] for part in ("entities", "attributes", "passages")}
            flat = [t for texts in parts.values() for t in texts]
            embedded = await asyncio.to_thread(self.mem.embedder.embed_documents, flat) if flat else []
            vectors, at = {"model": self.mem.embedder.name}, 0  # in prepare's order, one list per part
            for part, texts in parts.items():
                vectors[part], at = packed(embedded[at: at + len(texts)]), at + len(texts)
        return _call.validated(FactWrite, await call(self.mem.conn, "fn::amem::facts::write", body, vectors))

    async def write_many(
        self, requests: Sequence[Mapping[str, Any]], *, embed: bool = True, per_transaction: int = FACTS_PER_TRANSACTION,
        atomic: bool = False, progress: Callable[[int, int], None] | None = None,
    ) -> FactBatch:
        """Store many memory writes, in order, each exactly as ``write`` stores it (a later
        request reconciles against an earlier one's rows). One ``prepare`` round trip for
        all, one embedder call for every text, then ``fn::amem::facts::write_many`` per
        group of ``per_transaction`` requests: one transaction per group. A group that
        fails is written again one request per transaction, so a bad request is reported
        in ``errors`` (nothing of it stored) and the others land. ``atomic=True``: the
        whole batch in one transaction (at most FACTS_BATCH_MAX requests); any error
        is raised and nothing is stored. ``progress(done, total)`` after each group."""
        if isinstance(requests, Mapping | str | bytes):
            raise TypeError("requests must be a list of memory writes (dicts), not a single one")
        bodies = [with_polygons(_call.request(r)) for r in requests]
        if atomic and len(bodies) > FACTS_BATCH_MAX:
            raise InvalidInput(f"an atomic batch holds at most {FACTS_BATCH_MAX} requests, got {len(bodies)}")
        failed: dict[int, AmemError] = {}
        vectors: list[dict[str, Any] | None] = [None] * len(bodies)
        if embed and bodies:
            plans = await self._prepare_all(bodies)
            failed = {i: server_error(p) for i, (ok, p) in enumerate(plans) if not ok}
            if atomic and failed:
                raise failed[min(failed)]
            vectors = await self._embed_plans([p if ok else None for ok, p in plans])
        todo = [i for i in range(len(bodies)) if i not in failed]
        size = len(todo) if atomic else max(1, min(per_transaction, FACTS_BATCH_MAX))
        writes: list[Any] = [None] * len(bodies)
        transactions, refused = 0, len(bodies) - len(todo)  # refused: by prepare, before any write
        for at in range(0, len(todo), max(size, 1)):
            group = todo[at: at + size]
            transactions += 1
            try:
                answers = await call(self.mem.conn, "fn::amem::facts::write_many", [bodies[i] for i in group], [vectors[i] for i in group])
                for i, a in zip(group, answers):
                    writes[i] = a
            except (TransportError, NotMigrated):
                raise
            except AmemError:
                if atomic:
                    raise
                # nothing of the group was stored: its requests one by one, before the next group
                singles = await call_each(self.mem.conn, "fn::amem::facts::write", [(bodies[i], vectors[i]) for i in group])
                transactions += len(group)
                for i, (ok, a) in zip(group, singles):
                    if ok:
                        writes[i] = a
                    else:
                        failed[i] = server_error(a)
            if progress:
                progress(refused + at + len(group), len(bodies))
        results = [None if w is None else _call.validated(FactWrite, w) for w in writes]
        return FactBatch(
            writes=results, transactions=transactions,
            errors=[FactBatchError(index=i, code=e.code, message=e.message) for i, e in sorted(failed.items())],
            facts=sum(len(w.triples) for w in results if w is not None),
            passages=sum(len(w.passages) for w in results if w is not None))

    async def _prepare_all(self, bodies: Sequence[Any]) -> list[tuple[bool, Any]]:
        """``[(ok, plan or error text)]`` for every request: ``facts::prepare_many`` in
        groups of FACTS_BATCH_MAX (one statement each); a group with a bad request is
        prepared again one request per statement, so that each bad one gets its own error."""
        out: list[tuple[bool, Any]] = []
        for at in range(0, len(bodies), FACTS_BATCH_MAX):
            group = list(bodies[at: at + FACTS_BATCH_MAX])
            try:
                out += [(True, p) for p in await call(self.mem.conn, "fn::amem::facts::prepare_many", group)]
            except (TransportError, NotMigrated):
                raise
            except AmemError:
                out += await call_each(self.mem.conn, "fn::amem::facts::prepare", [(b,) for b in group])
        return out

    async def _embed_plans(self, plans: Sequence[Mapping[str, Any] | None]) -> list[dict[str, Any] | None]:
        """The ``vectors`` argument of each prepared write (None for a failed plan), from
        one embedder call over every text of every plan, in prepare's order."""
        parts = ("entities", "attributes", "passages")
        flat = [x["text"] for p in plans if p is not None for part in parts for x in p[part]]
        embedded = await asyncio.to_thread(self.mem.embedder.embed_documents, flat) if flat else []
        out: list[dict[str, Any] | None] = []
        at = 0
        for p in plans:
            if p is None:
                out.append(None)
                continue
            v: dict[str, Any] = {"model": self.mem.embedder.name}
            for part in parts:
                v[part], at = packed(embedded[at: at + len(p[part])]), at + len(p[part])
            out.append(v)
        return out

    async def diff(
        self, t1: datetime | str, t2: datetime | str, *, lens: Lens | None = None,
        entity: tuple[str, str] | None = None, key: str | None = None,
    ) -> FactDiff:
        """Facts added, changed and closed between known times ``t1 < t2``: the current
        read at each compared; ``entity=(type, name)`` and ``key`` narrow it."""
        ent = {"type": entity[0], "name": entity[1]} if entity is not None else None
        opts = _call.clean({"lens": _call.lens(lens), "entity": ent, "key": key})
        return _call.validated(FactDiff, await call(self.mem.conn, "fn::amem::facts::diff", t1, t2, opts))

    async def declare_key(self, key: str, *, multi_valued: bool = True, scopes: Sequence[str] | None = None) -> FactKey:
        """Declare ``key`` multi-valued (several current values) or, with False, single-valued."""
        opts = _call.clean({"multi_valued": multi_valued, "scopes": _call.strs("scopes", scopes)})
        return _call.validated(FactKey, await call(self.mem.conn, "fn::amem::facts::declare_key", key, opts))


