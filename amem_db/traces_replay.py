"""Replay stored trace feedback as a judged query set (``amem-db eval --from-traces``).

Every verdict a caller recorded with ``mem.traces.feedback`` names a query (its text and
embedding, kept in the ``trace_feedback`` row) and a record: ``useful`` = relevant (gain
1), ``wrong`` = judged not relevant (gain 0). Each judged query is run again, once with
every signal and then with each signal switched off in turn (the ablation that lived in
scripts), always with ``feedback: false`` except in the ``+feedback`` variant (the
verdicts would otherwise grade their own boost). nDCG@k and Recall@k are binary-gain,
over the queries that have at least one useful record.

A replayed query is a real read: it writes its own trace (and a recall reinforces what
it returns), with the caller's rights, so a credential replays only its own verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .db import call, plain

# variant name -> option overrides; which apply depends on the read (query or recall)
QUERY_VARIANTS: dict[str, dict[str, Any]] = {
    "all signals": {}, "no vector": {"vectorWeight": 0.0}, "no bm25": {"vectorWeight": 1.0}, "+feedback": {"feedback": True},
}
RECALL_VARIANTS: dict[str, dict[str, Any]] = {
    "all signals": {}, "no vector": {"vectorWeight": 0.0}, "no bm25": {"vectorWeight": 1.0}, "no graph": {"graphWeight": 0.0},
    "no window": {"queryWindow": False}, "+feedback": {"feedback": True},
}
RECALL_TABLES = {"entity", "attribute", "relation", "memory_chunk"}


@dataclass
class JudgedQuery:
    """One query with its verdicts: the read it came from and the options it ran with."""

    query: str
    embedding: list[float] | None
    read: str  # "query" (documents.query) or "recall"
    options: dict[str, Any]
    useful: set[str] = field(default_factory=set)
    wrong: set[str] = field(default_factory=set)


def ndcg(ranked: list[str], relevant: set[str], k: int) -> float:
    """Binary-gain nDCG@k (log2 discount)."""
    dcg = sum(1.0 / math.log2(i + 2) for i, r in enumerate(ranked[:k]) if r in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: list[str], relevant: set[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def _options(trace: dict[str, Any] | None, read: str, k: int) -> dict[str, Any]:
    """The options a judged query is replayed with: its trace's mode and lens when the trace
    still exists (retention may have removed it), else hybrid."""
    o = (trace or {}).get("options") or {}
    mode = o.get("mode") or ((trace or {}).get("mode") if read == "query" else None) or "hybrid"
    opts: dict[str, Any] = {"mode": mode, "k": k, "feedback": False}
    if o.get("lens"):
        opts["lens"] = o["lens"]
    if read == "query":
        opts["threshold"] = o.get("threshold", 0.5)
    return opts


async def judged_queries(conn: Any, k: int) -> list[JudgedQuery]:
    """The caller's verdicts grouped by query (normalised text), newest trace options first."""
    (rows,) = await conn.query("SELECT trace, hit, verdict, query, query_norm, query_embedding, created_at FROM trace_feedback "
                               "ORDER BY created_at DESC LIMIT 10000")
    out: dict[str, JudgedQuery] = {}
    for r in rows:
        hit = plain(r["hit"])
        key = r["query_norm"]
        if key not in out:
            read = "recall" if hit.split(":", 1)[0] in RECALL_TABLES else "query"
            trace = await call(conn, "fn::amem::traces::get", r["trace"])
            read = "recall" if (trace or {}).get("mode") == "recall" else read
            out[key] = JudgedQuery(r["query"], r.get("query_embedding"), read, _options(trace, read, k))
        q = out[key]
        if hit not in q.useful | q.wrong:  # the newest verdict on a record wins
            (q.useful if r["verdict"] == "useful" else q.wrong).add(hit)
    return list(out.values())


async def _ranked(conn: Any, q: JudgedQuery, overrides: dict[str, Any]) -> list[str]:
    opts = {**q.options, **overrides}
    emb = q.embedding if opts.get("mode") not in ("bm25", "graph") else None
    if emb is None and opts.get("mode") not in ("bm25", "graph"):
        opts["mode"] = "bm25"  # no stored embedding: the text legs only
    if q.read == "recall":
        res = await call(conn, "fn::amem::recall", q.query, emb, opts)
        return [plain(h["id"]) for h in res["hits"]]
    res = await call(conn, "fn::amem::documents::query", q.query, emb, opts)
    return [plain(h["chunk"]["id"]) for h in res["results"]]


async def replay(conn: Any, *, k: int = 10, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """{queries, judged, reads: {query|recall: {variant: {ndcg@k, recall@k, queries}}}}."""
    judged = [q for q in await judged_queries(conn, k) if q.useful]
    report: dict[str, Any] = {"k": k, "queries": len(judged), "judgements": sum(len(q.useful) + len(q.wrong) for q in judged),
                              "reads": {}}
    done = 0
    for read, variants in (("query", QUERY_VARIANTS), ("recall", RECALL_VARIANTS)):
        qs = [q for q in judged if q.read == read]
        if not qs:
            continue
        table: dict[str, dict[str, float]] = {}
        for name, overrides in variants.items():
            if read == "query" and name in ("no vector", "no bm25") and any(q.options["mode"] != "hybrid" for q in qs):
                qs_v = [q for q in qs if q.options["mode"] == "hybrid"]  # weights apply to the fused mode only
            else:
                qs_v = qs
            scores = [(ndcg(r, q.useful, k), recall_at(r, q.useful, k)) for q in qs_v for r in [await _ranked(conn, q, overrides)]]
            done += len(qs_v)
            if progress is not None:
                progress(done, len(judged) * len(variants))
            n = len(scores)
            table[name] = {f"ndcg@{k}": sum(s[0] for s in scores) / n if n else float("nan"),
                           f"recall@{k}": sum(s[1] for s in scores) / n if n else float("nan"), "queries": n}
        report["reads"][read] = table
    return report
