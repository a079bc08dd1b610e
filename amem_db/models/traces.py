"""Retrieval traces read back (fn::amem::traces::*, surql/470_traces)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ._base import Tier, TierValue, _Camel

__all__ = [
    "LatencyStats",
    "LedgerRow",
    "ModeStats",
    "Trace",
    "TraceExplanation",
    "TraceFeedback",
    "TracePage",
    "TraceRetention",
    "TraceStats",
    "TraceSummary",
    "TraceVerdict",
]


#: a verdict on a trace hit (fn::amem::traces::feedback)
TraceVerdict = Literal["useful", "wrong"]


class TraceSummary(_Camel):
    """One row of ``mem.traces.list``: what a query or recall asked, how it ran, what came first."""

    id: str
    query: str
    mode: str
    created_at: datetime = Field(alias="created_at")
    caller: str | None = None
    tier: TierValue = Tier.FUSED
    escalated: bool = False
    cache_hit: bool = False
    k: int | None = None
    hits: int = 0
    top_hit: str | None = None
    top_score: float | None = None
    total_ms: float | None = None
    feedback: int = 0


class TracePage(_Camel):
    """``mem.traces.list``: newest first; ``next`` is the ``until`` of the next page (None: last page)."""

    traces: list[TraceSummary]
    next: datetime | None = None


class Trace(_Camel):
    """``mem.traces.get``: the stored trace (options, legs, per-hit signals, timings) with
    its tier, ``escalated`` and ``cache_hit`` read from it (absent = tier 3)."""

    id: str
    query: str
    mode: str
    options: dict[str, Any] = {}
    legs: dict[str, Any] = {}
    hits: list[dict[str, Any]] = []
    timings: dict[str, Any] = {}
    caller: str | None = None
    scopes: list[str] = []
    created_at: datetime = Field(alias="created_at")
    tier: TierValue = Tier.FUSED
    escalated: bool = False
    cache_hit: bool = False


class LatencyStats(_Camel):
    p50_ms: float | None = Field(default=None, alias="p50Ms")
    p95_ms: float | None = Field(default=None, alias="p95Ms")
    max_ms: float | None = None


class ModeStats(LatencyStats):
    count: int


class TraceStats(_Camel):
    """``mem.traces.stats`` over the newest traces selected (``truncated``: older ones left out)."""

    traces: int
    truncated: bool
    since: datetime
    until: datetime
    modes: dict[str, ModeStats] = {}
    tiers: dict[str, int] = {}
    cache_hit_rate: float | None = None
    escalation_rate: float | None = None
    latency: LatencyStats


class LedgerRow(_Camel):
    """One signal's part in a hit's rank: its rank in that signal, the raw measure, weight, RRF contribution."""

    signal: str
    rank: int | None = None
    measure: str
    value: float | None = None
    weight: float | None = None
    contribution: float | None = None
    note: str | None = None


class TraceExplanation(_Camel):
    """``mem.traces.explain``: why one hit of a trace ranked where it did."""

    trace: str
    query: str
    mode: str
    tier: TierValue = Tier.FUSED
    hit: dict[str, Any]
    rrf_k: float | None = None
    ledger: list[LedgerRow]
    decisions: list[str] = []
    # a reranked hit: {method, model, mix, before {rank, score}, after {rank, score}, rankDelta, scoreDelta, ...}
    rerank: dict[str, Any] | None = None


class TraceFeedback(_Camel):
    """``mem.traces.feedback``: the verdict stored for one hit of one trace."""

    id: str
    trace: str
    hit: str
    verdict: Literal["useful", "wrong"]
    rank: int | None = None
    caller: str | None = None
    created_at: datetime = Field(alias="created_at")


class TraceRetention(_Camel):
    """``mem.traces.retention``: the limits enforced on every trace write (None = no limit)."""

    max_age: str | None = None
    max_count: int | None = None
    per_write: int
