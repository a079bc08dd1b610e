"""Recall latency beside documents.query, in the ``amem`` worker's database:
after its chunks are loaded and timed, N memory passages and min(N, 10,000) facts are
written through ``mem.facts.write_many`` (the product's batched write path: one prepare
round trip, the embedder, then ``fn::amem::facts::write_many`` per group of its default
weight (FACTS_GROUP_WEIGHT), FACTS_IN_FLIGHT independent groups at once; the embedder looks up real vectors,
the bench passages' own, so nothing is embedded), then
``fn::amem::recall`` (hybrid, include facts and passages) and
``fn::amem::documents::query`` (hybrid) are timed on the same queries, one
round trip each, precomputed query vectors. The ratio recall / documents.query
is the figure: both run on the same engine, rows and machine state."""

from __future__ import annotations

import statistics
import time
import zlib
from collections.abc import Callable
from typing import Any

from .load import Reopener, rebuild_each
from .measure import latency_summary

MAX_FACTS = 10_000  # the "+ 10k facts", at every size
# 100k: ~25 min of writes on 2 cores (100k passages at ~75/s, 10k facts); not yet run
RECALL_SIZES = (1_000, 10_000, 100_000)


class BenchVectors:
    """The bench's embedder for memory writes: the vector of bench passage i for its text,
    for the entity ``topic <i>`` and for that entity's fact text (``topic <i>: summary = ...``).
    A lookup, so the write rates leave the model out, as the ingest rows do. A text it does
    not know (a piece of a passage the write split) borrows a passage's vector: ``borrowed``."""

    def __init__(self, rows: list[dict[str, Any]], vecs: Any, model: str, facts: int) -> None:
        self.name, self.dimension, self.vecs = model, int(vecs.shape[1]), vecs
        self.by_text = {r["text"]: i for i, r in enumerate(rows)}
        self.by_text.update({f"topic {i}": i for i in range(facts)})
        self.borrowed = 0

    def _index(self, text: str) -> int:
        i = self.by_text.get(text.split(":", 1)[0] if text.startswith("topic ") else text)
        if i is None:
            self.borrowed += 1
            return zlib.crc32(text.encode()) % len(self.vecs)
        return i

    def embed_documents(self, texts: list[str]) -> list[Any]:
        return [self.vecs[self._index(t)].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        raise NotImplementedError("the bench's memory writes embed documents only")


WRITE_CALL = 512  # requests a mem.facts.write_many call (the WAL is checked between calls)


async def write_memory(db: Reopener, rows: list[dict[str, Any]], vecs: Any, model: str,
                       phase: Callable[[str], None] | None = None) -> dict[str, Any]:
    """``len(rows)`` memory passages (one request each, the passage's text) and
    ``min(len(rows), MAX_FACTS)`` facts (one request each: entity ``topic/<i>``, key ``summary``,
    value = the first 200 characters of a passage), through ``mem.facts.write_many`` in calls
    of WRITE_CALL requests, every vector a real one; then the
    HNSW graphs rebuilt (as after the bulk load), so recall is timed on graphs, not on
    the pending queue. ``db`` is reopened when its write-ahead log is full (bench/load.py)."""
    from amem_db.client import Memory

    n = len(rows)
    nf = min(n, MAX_FACTS)
    embedder = BenchVectors(rows, vecs, model, nf)

    async def write(requests: list[dict[str, Any]]) -> list[float]:
        """the rate of each call, requests/s (a reopen counts in the call after it)"""
        rates = []
        for at in range(0, len(requests), WRITE_CALL):
            t = time.perf_counter()
            result = await Memory(await db.if_wal_full(), embedder=embedder).facts.write_many(
                requests[at: at + WRITE_CALL])
            if result.errors:
                raise RuntimeError(f"bench memory write refused: {result.errors[0]}")
            rates.append(round(len(requests[at: at + WRITE_CALL]) / (time.perf_counter() - t), 1))
        return rates

    t0 = time.perf_counter()
    passage_rates = await write([{"text": rows[i]["text"], "scopes": [], "category": "knowledge", "source": {"kind": "document", "ref": f"bench-{i}"}}
                 for i in range(n)])
    passage_s = time.perf_counter() - t0
    if phase:
        phase("passages written")
    t0 = time.perf_counter()
    # one triple a request (a fact of its own entity), as a chat import writes them
    fact_rates = await write([{"triples": [{"entity": {"type": "topic", "name": f"topic {i}"}, "key": "summary", "value": rows[i]["text"][:200]}],
                  "category": "knowledge"} for i in range(nf)])
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
            "fact_seconds": round(fact_s, 2), "facts_per_s": round(nf / fact_s, 1), "vectors": f"real (the bench passages' own; {embedder.borrowed} split pieces borrowed one)",
            "rates_by_call": {"passages": passage_rates, "facts": fact_rates}, "reopens_so_far": db.reopens}


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
