"""``mem.traces``: the retrieval traces every documents.query and recall writes, read
back, explained and judged (fn::amem::traces::*, surql/470_traces).

    page = await mem.traces.list(mode="recall", limit=20)          # newest first
    why = await mem.traces.explain(page.traces[0].id, 1)           # the ledger of hit 1
    await mem.traces.feedback(page.traces[0].id, 3, "useful")      # hit 3 helped

Each method is one round trip to one stored function, with the caller's rights: a
credential (``--key``) sees only its own traces and verdicts. ``SyncMemory.traces``
is the same surface without ``await``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..models import Trace, TraceExplanation, TraceFeedback, TracePage, TraceRetention, TraceStats, TraceVerdict
from . import _call

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["Traces"]


def _read_opts(limit: int | None, mode: str | None, tier: int | None, since: datetime | str | None,
               until: datetime | str | None, caller: str | None) -> dict[str, Any]:
    return _call.clean({"limit": limit, "mode": mode, "tier": tier, "since": since, "until": until, "caller": caller})


class Traces:
    """``mem.traces``: list, get, stats, explain, feedback, retention."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    async def list(
        self, *, limit: int = 50, mode: str | None = None, tier: int | None = None,
        since: datetime | str | None = None, until: datetime | str | None = None, caller: str | None = None,
    ) -> TracePage:
        """The caller's traces, newest first (``limit`` <= 500), filtered by ``mode``
        (hybrid, vector, bm25, hybrid_graph: documents.query; recall), ``tier`` (1-4) and
        the time range [``since``, ``until``); ``page.next`` is the ``until`` of the next page."""
        opts = _read_opts(limit, mode, tier, since, until, caller)
        return await _call.call_model(self.mem.conn, TracePage, "fn::amem::traces::list", opts)

    async def get(self, id: str) -> Trace | None:
        """One stored trace, or None when it does not exist or is not the caller's."""
        return await _call.call_optional(self.mem.conn, Trace, "fn::amem::traces::get", _call.ref(id, "a trace id"))

    async def stats(
        self, *, limit: int = 1000, mode: str | None = None, tier: int | None = None,
        since: datetime | str | None = None, until: datetime | str | None = None, caller: str | None = None,
    ) -> TraceStats:
        """Counts per mode and tier, cache hit and escalation rates, latency p50 / p95 per
        mode, over the newest ``limit`` (<= 10000) traces the filters select."""
        opts = _read_opts(limit, mode, tier, since, until, caller)
        return await _call.call_model(self.mem.conn, TraceStats, "fn::amem::traces::stats", opts)

    async def explain(self, id: str, hit: int | str) -> TraceExplanation:
        """Why ``hit`` (its rank, 1-based, or its record id) of trace ``id`` ranked where it
        did: the per-signal ledger (leg ranks, scores, weights, RRF terms, graph, feedback)
        and the filter / threshold / window decisions. NotFound for an unknown trace or hit."""
        return await _call.call_model(self.mem.conn, TraceExplanation, "fn::amem::traces::explain",
                                      _call.ref(id, "a trace id"), _call.hit(hit))

    async def feedback(self, trace: str, hit: int | str, verdict: TraceVerdict) -> TraceFeedback:
        """Mark ``hit`` of ``trace`` ``useful`` or ``wrong``: later recalls and queries of
        the same caller that are similar (query cosine >= 0.85, or the same words) move it
        up or down by at most half the spread of the top fused scores; ``feedback=False`` on a read switches that off."""
        return await _call.call_model(self.mem.conn, TraceFeedback, "fn::amem::traces::feedback",
                                      _call.ref(trace, "a trace id"), _call.hit(hit), verdict)

    async def retention(self, *, max_age: str | int | None = None, max_count: int | None = None) -> TraceRetention:
        """Read (no arguments) or set how long traces are kept: ``max_age`` a duration
        such as "30d" (or seconds), ``max_count`` the most kept; 0 turns a limit off.
        A store that never set it keeps 30 days and any count. Enforced by the database on every trace write (owner only to set)."""
        opts = _call.clean({"maxAge": max_age, "maxCount": max_count})
        return await _call.call_model(self.mem.conn, TraceRetention, "fn::amem::traces::retention", opts)
