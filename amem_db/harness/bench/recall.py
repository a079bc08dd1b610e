"""Recall latency beside documents.query, in the ``amem`` worker's database:
after its chunks are loaded and timed, N memory passages and min(N, 10,000) facts are
written through ``fn::amem::facts::write_many`` (the product's batched write path: each
request as ``fn::amem::facts::write``, FACTS_PER_TRANSACTION requests a transaction, with
real vectors: the bench passages' own, so nothing is embedded), then
``fn::amem::recall`` (hybrid, include facts and passages) and
``fn::amem::documents::query`` (hybrid) are timed on the same queries, one
round trip each, precomputed query vectors. The ratio recall / documents.query
is the figure: both run on the same engine, rows and machine state."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from amem_db.constants import FACTS_PER_TRANSACTION
from amem_db.wire import Vector

from .load import Reopener, rebuild_each
from .measure import latency_summary

MAX_FACTS = 10_000  # the "+ 10k facts", at every size
# 100k: ~25 min of writes on 2 cores (100k passages at ~75/s, 10k facts); not yet run
RECALL_SIZES = (1_000, 10_000, 100_000)


async def write_memory(db: Reopener, rows: list[dict[str, Any]], vecs: Any, model: str,
                       phase: Callable[[str], None] | None = None) -> dict[str, Any]:
    """``len(rows)`` memory passages (one request each, the passage's text) and
    ``min(len(rows), MAX_FACTS)`` facts (one request each: entity ``topic/<i>``, key ``summary``,
    value = the first 200 characters of a passage), FACTS_PER_TRANSACTION requests a
    write_many call, every vector a real one; then the
    HNSW graphs rebuilt (as after the bulk load), so recall is timed on graphs, not on
    the pending queue. ``db`` is reopened when its write-ahead log is full (bench/load.py)."""
    from amem_db.db import call

    n = len(rows)
    per = FACTS_PER_TRANSACTION
    t0 = time.perf_counter()
    for at in range(0, n, per):
        part = range(at, min(at + per, n))
        await call(await db.if_wal_full(), "fn::amem::facts::write_many",
                   [{"text": rows[i]["text"], "scopes": [], "category": "knowledge", "source": {"kind": "document", "ref": f"bench-{i}"}}
                    for i in part],
                   [{"model": model, "entities": [], "attributes": [], "passages": [Vector(vecs[i].tolist())]} for i in part])
    passage_s = time.perf_counter() - t0
    if phase:
        phase("passages written")
    t0 = time.perf_counter()
    nf = min(n, MAX_FACTS)
    for at in range(0, nf, per):  # one triple a request (a fact of its own entity), as a chat import writes them
        part = range(at, min(at + per, nf))
        await call(await db.if_wal_full(), "fn::amem::facts::write_many",
                   [{"triples": [{"entity": {"type": "topic", "name": f"topic {i}"}, "key": "summary", "value": rows[i]["text"][:200]}],
                     "category": "knowledge"} for i in part],
                   [{"model": model, "entities": [Vector(vecs[i].tolist())], "attributes": [Vector(vecs[i].tolist())], "passages": []} for i in part])
    fact_s = time.perf_counter() - t0
    if phase:
        phase("facts written")
    t0 = time.perf_counter()
    rebuilt = await rebuild_each(db)
    if phase:
        phase("memory indexes rebuilt")
    if db.on_disk:
        await db.reopen()
    return {"rebuild": rebuilt, "rebuild_seconds": round(time.perf_counter() - t0, 2),"passages": n, "facts": nf, "passage_seconds": round(passage_s, 2), "passages_per_s": round(n / passage_s, 1),
            "fact_seconds": round(fact_s, 2), "facts_per_s": round(nf / fact_s, 1), "vectors": "real (the bench passages' own)"}


async def time_recall(conn: Any, qtexts: list[str], qvecs: Any, reps: int, model: str) -> dict[str, Any]:
    """p50/p95 of recall (hybrid, facts + passages, k 10) and documents.query (hybrid, k 10) on the same queries."""
    from amem_db.db import call

    calls = {
        "recall": ("fn::amem::recall", {"mode": "hybrid", "k": 10, "include": ["facts", "passages"], "embeddingModel": model}),
        "documents.query": ("fn::amem::documents::query", {"mode": "hybrid", "k": 10}),
    }
    lat: dict[str, list[float]] = {name: [] for name in calls}
    hits: dict[str, int] = {name: 0 for name in calls}
    stages: dict[str, list[float]] = {}
    for name, (fn, opts) in calls.items():
        for qi, (text, v) in enumerate([(qtexts[0], qvecs[0])] * reps + list(zip(qtexts, qvecs))):
            t = time.perf_counter()
            res = await call(conn, fn, text, v.tolist(), opts)
            ms = (time.perf_counter() - t) * 1000
            if qi >= reps:
                lat[name].append(ms)
                hits[name] += len(res.get("hits") or res.get("results") or [])
                if name == "recall":
                    for stage, x in recall_stages(res, ms).items():
                        stages.setdefault(stage, []).append(x)
    out = {name: latency_summary(v) for name, v in lat.items()}
    p50 = {name: out[name].get("p50") for name in calls}
    return {"latency_ms": out, "hits": hits, "stages_p50_ms": {k: round(statistics.median(v), 2) for k, v in stages.items()},
            "ratio_p50": (p50["recall"] / p50["documents.query"]) if p50["recall"] and p50["documents.query"] else None}


def recall_stages(res: dict[str, Any], round_trip_ms: float) -> dict[str, float]:
    """One recall's stage table (its trace.timings.stages, the per-table ms inside both legs)
    and what lies outside the stored function's clock: the round trip less queryMs."""
    tr = res.get("trace") or {}
    out = {"round trip": round_trip_ms, "in database (queryMs)": float(res.get("queryMs") or 0),
           "outside (round trip - queryMs)": round_trip_ms - float(res.get("queryMs") or 0)}
    out |= {k: float(v) for k, v in ((tr.get("timings") or {}).get("stages") or {}).items()}
    legs = tr.get("legs") or {}
    out |= {f"vector.{t}": float(row["ms"]) for t, row in ((legs.get("vector") or {}).get("tables") or {}).items()
            if isinstance(row, dict) and "ms" in row}
    out |= {f"bm25.{t}": float(ms) for t, ms in ((legs.get("bm25") or {}).get("ms") or {}).items()}
    return out
