"""Recall latency beside documents.query, in the ``amem`` worker's database:
after its chunks are loaded and timed, N memory passages and min(N, 10,000) facts are
written through ``fn::amem::facts::write`` (the product's write path, with
real vectors: the bench passages' own, so nothing is embedded), then
``fn::amem::recall`` (hybrid, include facts and passages) and
``fn::amem::documents::query`` (hybrid) are timed on the same queries, one
round trip each, precomputed query vectors. The ratio recall / documents.query
is the figure: both run on the same engine, rows and machine state."""

from __future__ import annotations

import time
from typing import Any

from .load import Reopener, rebuild_each
from .measure import latency_summary

FACTS_PER_WRITE = 100  # facts::limits(): at most 100 triples per write
MAX_FACTS = 10_000  # the "+ 10k facts", at every size
# 100k: ~25 min of writes on 2 cores (100k passages at ~75/s, 10k facts); not yet run
RECALL_SIZES = (1_000, 10_000, 100_000)


async def write_memory(db: Reopener, rows: list[dict[str, Any]], vecs: Any, model: str) -> dict[str, Any]:
    """``len(rows)`` memory passages (one write each, the passage's text) and
    ``min(len(rows), MAX_FACTS)`` facts (100 per write: entity ``topic/<i>``, key ``summary``,
    value = the first 200 characters of a passage), every vector a real one; then the
    HNSW graphs rebuilt (as after the bulk load), so recall is timed on graphs, not on
    the pending queue. ``db`` is reopened when its write-ahead log is full (bench/load.py)."""
    from amem_db.db import call

    n = len(rows)
    t0 = time.perf_counter()
    for i, r in enumerate(rows):
        conn = await db.if_wal_full() if i % 500 == 0 else db.conn
        await call(conn, "fn::amem::facts::write",
                   {"text": r["text"], "scopes": [], "category": "knowledge", "source": {"kind": "document", "ref": f"bench-{i}"}},
                   {"model": model, "entities": [], "attributes": [], "passages": [vecs[i].tolist()]})
    passage_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    nf = min(n, MAX_FACTS)
    for at in range(0, nf, FACTS_PER_WRITE):
        part = range(at, min(at + FACTS_PER_WRITE, nf))
        triples = [{"entity": {"type": "topic", "name": f"topic {i}"}, "key": "summary", "value": rows[i]["text"][:200]}
                   for i in part]
        vectors = [vecs[i].tolist() for i in part]
        await call(await db.if_wal_full(), "fn::amem::facts::write", {"triples": triples, "category": "knowledge"},
                   {"model": model, "entities": vectors, "attributes": vectors, "passages": []})
    fact_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    rebuilt = await rebuild_each(db)
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
    for name, (fn, opts) in calls.items():
        for qi, (text, v) in enumerate([(qtexts[0], qvecs[0])] * reps + list(zip(qtexts, qvecs))):
            t = time.perf_counter()
            res = await call(conn, fn, text, v.tolist(), opts)
            ms = (time.perf_counter() - t) * 1000
            if qi >= reps:
                lat[name].append(ms)
                hits[name] += len(res.get("hits") or res.get("results") or [])
    out = {name: latency_summary(v) for name, v in lat.items()}
    p50 = {name: out[name].get("p50") for name in calls}
    return {"latency_ms": out, "hits": hits,
            "ratio_p50": (p50["recall"] / p50["documents.query"]) if p50["recall"] and p50["documents.query"] else None}
