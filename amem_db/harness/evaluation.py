"""Retrieval evaluation on BEIR-layout collections (``amem-db eval``).

What it does, per dataset directory (``corpus.jsonl``, ``queries.jsonl``,
``qrels/<split>.tsv``):

1. Ingest the corpus through the product's own pipeline (the JSONL parser:
   one document per line, ``source = f"{path}#{_id}"``; ``prepare`` ->
   embed -> ``ingest``) into a database of its own, cached between runs under
   ``results/.db/<dataset>-<key>`` where ``key`` hashes the corpus bytes, the
   embedder name, the title handling and the checksum of the SurrealQL that
   decides which rows are stored (migrations and ``surql/1xx-2xx``). Indexes
   and read paths (``surql/0xx``, ``3xx`` and up) are not in the key: a cached
   database is migrated on every run, so a changed index or query function
   is evaluated without re-ingesting.
2. Run every judged query in every requested mode through the public client
   call ``mem.documents.query(text, mode=..., k=...)``, map each hit to its
   corpus id through the document's ``source`` (``...#<_id>``), and keep each
   document at its best rank.
3. Score with ranx (nDCG@10, Recall@10, Recall@k, MRR@10), overall and per
   query type (``query_types.tag_query``), and write ``report.json``, ``report.md``
   and ``report.png``.

Depth: the public query returns at most 50 passages (spec: k max 50), so
Recall@100 cannot be measured through it; we report Recall@k (default k = 50
passages, deduplicated to at most 50 documents). See docs/EVALUATION.md.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amem_db.constants import MAX_K

from .common import dir_size, percentile
from .database import DEFAULT_DB_DIR, Progress, prepare_database
from .datasets import Dataset
from .metrics import document_ranking, evaluate, metric_names
from .query_types import OVERLAP_BUCKETS, QUERY_TYPES, tag_queries, tag_table

ALL_MODES = ("bm25", "vector", "hybrid", "hybrid_graph")
DEFAULT_MODES = ALL_MODES
#: a mode with the second stage on (use_reranker, the in-database rescore; docs/EVALUATION.md "Reranking")
RERANK_MODES = tuple(f"{m}+rerank" for m in ALL_MODES)


@dataclass
class ModeRun:
    mode: str
    available: bool = True
    error: str | None = None
    rankings: dict[str, list[str]] = field(default_factory=dict)
    latency_ms: list[float] = field(default_factory=list)  # client wall clock (embedding + round trip)
    engine_ms: list[float] = field(default_factory=list)  # queryMs reported by the stored function
    empty: int = 0
    vector_leg_empty: int = 0  # the vector leg ran and returned no candidate at all
    top_scores: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

async def run_mode(mem: Any, ds: Dataset, mode: str, *, k: int = MAX_K, threshold: float | None = None,
                   filter: dict[str, Any] | None = None, progress: Progress | None = None) -> ModeRun:
    """Every query of the dataset in one mode; a mode the engine does not
    implement yet (amem:not_implemented) is reported, not raised."""
    from amem_db.errors import NotImplementedMode

    run = ModeRun(mode)
    started = time.perf_counter()
    for i, (qid, text) in enumerate(ds.queries.items()):
        t0 = time.perf_counter()
        try:
            base, _, rerank = mode.partition("+")
            resp = await mem.documents.query(text, mode=base, k=k, threshold=threshold, filter=filter,
                                             use_reranker=bool(rerank) or None)
        except NotImplementedMode as exc:
            run.available, run.error = False, str(exc)
            break
        run.latency_ms.append((time.perf_counter() - t0) * 1000)
        # the spec's wire shape (camelCase keys), whatever the client's model classes
        response = resp.model_dump(by_alias=True, mode="json")
        results = response["results"]
        run.engine_ms.append(float(response["queryMs"]))
        run.rankings[qid] = document_ranking(results)
        run.top_scores[qid] = float(results[0]["score"]) if results else 0.0
        if not results:
            run.empty += 1
        vleg = ((response.get("trace") or {}).get("legs") or {}).get("vector") or {}
        if vleg.get("ran") and not vleg.get("candidates"):
            run.vector_leg_empty += 1
        if progress:
            progress("query", {"mode": mode, "done": i + 1, "total": len(ds.queries)})
    run.seconds = time.perf_counter() - started
    return run

def mode_summary(ds: Dataset, run: ModeRun, tags: dict[str, dict[str, Any]], metrics: list[str]) -> dict[str, Any]:
    if not run.available:
        return {"available": False, "reason": run.error}
    by_type = {}
    for group in QUERY_TYPES + OVERLAP_BUCKETS:
        ids = [q for q, t in tags.items() if group in (t["type"], t["overlap_bucket"])]
        if group == "no-answer":
            # nothing to find: report how confident the top hit looked instead
            tops = [run.top_scores.get(q, 0.0) for q in ids]
            by_type[group] = {"n": len(ids), "mean_top_score": statistics.fmean(tops) if tops else None}
        else:
            by_type[group] = {"n": len(ids), **(evaluate(ds.qrels, run.rankings, metrics, ids) if ids else {})}
    lat = run.latency_ms
    return {
        "available": True,
        "metrics": evaluate(ds.qrels, run.rankings, metrics),
        "by_type": by_type,
        "queries": len(run.rankings),
        "empty_results": run.empty,
        "vector_leg_no_candidates": run.vector_leg_empty,
        "latency_ms": {"p50": percentile(lat, 50), "p95": percentile(lat, 95), "p99": percentile(lat, 99),
                       "mean": statistics.fmean(lat) if lat else float("nan")},
        "engine_ms": {"p50": percentile(run.engine_ms, 50), "p95": percentile(run.engine_ms, 95)},
        "seconds": round(run.seconds, 2),
    }

def engine_info() -> dict[str, Any]:
    import platform

    from amem_db import __version__

    info = {"amem_db": __version__, "python": platform.python_version(), "machine": platform.machine(),
            "processor": platform.processor() or "", "cpus": _cpus()}
    try:
        from importlib.metadata import version

        info["surrealdb_embedded"] = version("surrealdb-embedded")
        info["ranx"] = version("ranx")
    except Exception:
        pass
    return info

def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)

def check_run(k: int, max_k: int, api: str, modes: list[str], known: Sequence[str]) -> None:
    """The k and modes of one evaluation run (document collections and conversations alike)."""
    if not 1 <= k <= max_k:
        raise ValueError(f"k must be between 1 and {max_k} ({api}'s maximum)")
    bad = [m for m in modes if m not in known]
    if bad:
        raise ValueError(f"unknown mode {bad[0]!r}; modes: {', '.join(known)}")


async def evaluate_dataset(ds: Dataset, embedder: Any, *, modes: list[str], k: int = MAX_K,
                           threshold: float | None = None, filter: dict[str, Any] | None = None, title_mode: str = "separate", url: str | None = None,
                           db_dir: Path = DEFAULT_DB_DIR, fresh: bool = False,
                           progress: Progress | None = None) -> dict[str, Any]:
    """Ingest (or reuse), run every mode, return the report dict."""
    from amem_db.connection import close_quietly

    check_run(k, MAX_K, "the query API", modes, ALL_MODES + RERANK_MODES)
    metrics = metric_names(k)
    started = time.perf_counter()
    prepared = await prepare_database(ds, embedder, title_mode=title_mode, url=url, db_dir=db_dir, fresh=fresh,
                                      progress=progress)
    prepare_seconds = time.perf_counter() - started
    try:
        version = await prepared.mem.conn.version()
        tags = tag_queries(ds)
        summaries = {}
        for mode in modes:
            if progress:
                progress("mode", {"mode": mode, "total": len(ds.queries)})
            run = await run_mode(prepared.mem, ds, mode, k=k, threshold=threshold, filter=filter, progress=progress)
            summaries[mode] = mode_summary(ds, run, tags, metrics)
        embedder_name = prepared.mem.embedder.name
    finally:
        await close_quietly(prepared.mem.conn)
    total = time.perf_counter() - started
    return {
        "dataset": ds.name,
        "split": ds.split,
        "path": str(ds.path),
        "corpus_documents": ds.corpus_docs,
        "queries": len(ds.queries),
        "metrics": metrics,
        "k": k,
        "threshold": threshold,
        "filter": filter,
        "title_mode": title_mode,
        "embedder": embedder_name,
        "database": {"url": prepared.url, "key": prepared.key, "cached": prepared.cached,
                     "size_bytes": dir_size(prepared.db_path) if prepared.db_path else None},
        "ingest": prepared.ingest,
        "timings": {"prepare_seconds": round(prepare_seconds, 2), "total_seconds": round(total, 2),
                    "query_seconds": {m: s.get("seconds") for m, s in summaries.items()}},
        "query_types": tag_table(tags),
        "tags": tags,
        "modes": summaries,
        "engine": {"version": version, **engine_info()},
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
