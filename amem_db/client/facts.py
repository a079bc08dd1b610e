"""`mem.facts`: the typed-memory write path (fn::amem::facts::*)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..concurrent import run_apart, run_many
from ..constants import FACTS_BATCH_MAX, FACTS_GROUP_WEIGHT, FACTS_IN_FLIGHT, FACTS_PER_TRANSACTION
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
        self, requests: Sequence[Mapping[str, Any]], *, embed: bool = True, per_transaction: int | None = None,
        atomic: bool = False, progress: Callable[[int, int], None] | None = None, in_flight: int = FACTS_IN_FLIGHT,
    ) -> FactBatch:
        """Store many memory writes, each exactly as ``write`` stores it, as if in order
        (a later request reconciles against an earlier one's rows). One ``prepare`` round
        trip for all, one embedder call for every text, then ``fn::amem::facts::write_many``
        per group of ``per_transaction`` requests (default: FACTS_GROUP_WEIGHT, a triple
        weighing 1 and a passage 2, so 32 one-fact requests or 16 one-passage ones, the
        sizes that wrote fastest; FACTS_PER_TRANSACTION without plans): one transaction
        per group. A group that
        fails is written again one request per transaction, so a bad request is reported
        in ``errors`` (nothing of it stored) and the others land. ``atomic=True``: the
        whole batch in one transaction (at most FACTS_BATCH_MAX requests); any error
        is raised and nothing is stored. ``progress(done, total)`` after each group.

        Up to ``in_flight`` groups are written at once (the engine runs each transaction
        on a core of its own) when nothing in one can change what another stores
        (``_Footprint``: no shared entity, idempotency key or session, and no names
        beside passages); otherwise a group waits for the ones it depends on. Without
        ``embed`` the plans are unknown and the groups go one at a time."""
        if isinstance(requests, Mapping | str | bytes):
            raise TypeError("requests must be a list of memory writes (dicts), not a single one")
        bodies = [with_polygons(_call.request(r)) for r in requests]
        if atomic and len(bodies) > FACTS_BATCH_MAX:
            raise InvalidInput(f"an atomic batch holds at most {FACTS_BATCH_MAX} requests, got {len(bodies)}")
        failed: dict[int, AmemError] = {}
        vectors: list[dict[str, Any] | None] = [None] * len(bodies)
        feet: list[_Footprint | None] = [None] * len(bodies)
        if embed and bodies:
            plans = await self._prepare_all(bodies, 1 if atomic else in_flight)
            failed = {i: server_error(p) for i, (ok, p) in enumerate(plans) if not ok}
            if atomic and failed:
                raise failed[min(failed)]
            vectors = await self._embed_plans([p if ok else None for ok, p in plans])
            feet = [_Footprint.of(b, p) if ok else None for b, (ok, p) in zip(bodies, plans)]
        todo = [i for i in range(len(bodies)) if i not in failed]
        writes: list[Any] = [None] * len(bodies)
        done = {"transactions": 0, "requests": len(bodies) - len(todo)}  # refused by prepare, before any write

        async def write_group(group: list[int]) -> None:
            done["transactions"] += 1
            try:
                answers = await call(self.mem.conn, "fn::amem::facts::write_many", [bodies[i] for i in group], [vectors[i] for i in group])
                for i, a in zip(group, answers):
                    writes[i] = a
            except (TransportError, NotMigrated):
                raise
            except AmemError:
                if atomic:
                    raise
                # nothing of the group was stored: its requests one by one, before any
                # group that depends on it starts
                singles = await call_each(self.mem.conn, "fn::amem::facts::write", [(bodies[i], vectors[i]) for i in group])
                done["transactions"] += len(group)
                for i, (ok, a) in zip(group, singles):
                    if ok:
                        writes[i] = a
                    else:
                        failed[i] = server_error(a)
            done["requests"] += len(group)
            if progress:
                progress(done["requests"], len(bodies))

        if atomic or per_transaction is not None or not embed:
            size = len(todo) if atomic else max(1, min(per_transaction or FACTS_PER_TRANSACTION, FACTS_BATCH_MAX))
            groups = [todo[at: at + size] for at in range(0, len(todo), max(size, 1))]
        else:
            groups = _weighed([(i, feet[i]) for i in todo])
        await run_apart([(write_group(g), _Footprint.union([feet[i] for i in g])) for g in groups], max(1, in_flight))
        results = [None if w is None else _call.validated(FactWrite, w) for w in writes]
        return FactBatch(
            writes=results, transactions=done["transactions"],
            errors=[FactBatchError(index=i, code=e.code, message=e.message) for i, e in sorted(failed.items())],
            facts=sum(len(w.triples) for w in results if w is not None),
            passages=sum(len(w.passages) for w in results if w is not None))

    async def _prepare_all(self, bodies: Sequence[Any], in_flight: int = 1) -> list[tuple[bool, Any]]:
        """``[(ok, plan or error text)]`` for every request: ``facts::prepare_many`` in
        groups of at most FACTS_BATCH_MAX (one statement each), ``in_flight`` groups at once
        (a prepare reads only, so any two may run together; at least 32 requests a group);
        a group with a bad request is prepared again one request per statement, so that
        each bad one gets its own error."""
        per = min(FACTS_BATCH_MAX, max(32, -(-len(bodies) // max(1, in_flight))))
        groups = [list(bodies[at: at + per]) for at in range(0, len(bodies), per)]

        async def prepare(group: list[Any]) -> list[tuple[bool, Any]]:
            try:
                return [(True, p) for p in await call(self.mem.conn, "fn::amem::facts::prepare_many", group)]
            except (TransportError, NotMigrated):
                raise
            except AmemError:
                return await call_each(self.mem.conn, "fn::amem::facts::prepare", [(b,) for b in group])

        out: list[tuple[bool, Any]] = []
        for part in await run_many(prepare, groups, max(1, in_flight)):
            if isinstance(part, Exception):
                raise part
            out += part
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


@dataclass(frozen=True)
class _Footprint:
    """What a prepared write reads or writes that another write could also touch: two
    groups of a batch may be in one transaction each at the same time only when
    neither can change what the other stores. Each write reconciles against its
    entities' rows (and upserts their nodes), replays its idempotency key, numbers its
    passages after its session's last one, and links new names to stored passages and
    new passages to stored names (snapshot isolation sees neither side's pending rows)."""

    entities: frozenset[str]
    keys: frozenset[str]
    sessions: frozenset[str]
    names: bool
    passages: bool
    weight: int = 1  # what the request costs a transaction: a triple 1, a passage 2

    @classmethod
    def of(cls, body: Mapping[str, Any], plan: Mapping[str, Any]) -> _Footprint:
        passages = bool(plan["passages"])
        key, session = body.get("idempotency_key"), body.get("session_id")
        return cls(entities=frozenset(str(e["id"]) for e in plan["entities"]),
                   keys=frozenset([str(key)] if key is not None else []),
                   sessions=frozenset([str(session)] if passages and session is not None else []),
                   names=bool(plan["entities"]), passages=passages,
                   weight=max(1, len(body.get("triples") or []) + 2 * len(plan["passages"])))

    @classmethod
    def union(cls, feet: Sequence[_Footprint | None]) -> _Footprint | None:
        """A group's footprint; None (depends on everything) when a request has none."""
        if any(f is None for f in feet):
            return None
        known = [f for f in feet if f is not None]
        return cls(entities=frozenset().union(*(f.entities for f in known)), keys=frozenset().union(*(f.keys for f in known)),
                   sessions=frozenset().union(*(f.sessions for f in known)),
                   names=any(f.names for f in known), passages=any(f.passages for f in known))

    def apart(self, other: _Footprint) -> bool:
        """True when neither write can change what the other stores."""
        return not (self.entities & other.entities or self.keys & other.keys or self.sessions & other.sessions
                    or (self.names and other.passages) or (self.passages and other.names))


def _weighed(todo: Sequence[tuple[int, _Footprint | None]]) -> list[list[int]]:
    """Consecutive requests in groups of at most FACTS_GROUP_WEIGHT (a request without a
    footprint weighs FACTS_GROUP_WEIGHT / FACTS_PER_TRANSACTION) and FACTS_BATCH_MAX
    requests. Measured (issue 25, session 15, a 10k store, two groups in flight): one-fact
    requests wrote 251/s in groups of 16, 270/s in 32, 257/s in 64; one-passage requests
    220/s in 16 and 167/s in 32 (a transaction's rows cost more the more it holds, #15)."""
    groups: list[list[int]] = []
    load = 0
    for i, foot in todo:
        w = foot.weight if foot is not None else FACTS_GROUP_WEIGHT // FACTS_PER_TRANSACTION
        if not groups or load + w > FACTS_GROUP_WEIGHT or len(groups[-1]) >= FACTS_BATCH_MAX:
            groups.append([])
            load = 0
        groups[-1].append(i)
        load += w
    return groups
