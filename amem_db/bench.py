"""Performance benchmark (``amem-db bench``): ingest throughput, query latency,
vector recall, size on disk and peak memory at 1k / 10k / 100k chunks, next
to the raw engine floor and peers on the same data and embeddings.

Systems (each size runs each system in its own subprocess, so peak RSS is
that system's alone):

* ``amem``: the product's query (``fn::amem::documents::query``, one round
  trip, precomputed query vector) per mode, AND the raw engine floor in the
  same database: a bare BM25 SELECT, a bare KNN SELECT, both in one round
  trip, with the same candidate depth as the product (``candidate_pool``,
  256) and also at depth 50 (the probe's floor). The corpus is bulk-loaded
  with plain ``INSERT INTO document/chunk`` batches (same schema, both
  indexes): loading 100k chunks through ``prepare``/``ingest`` (RAKE,
  keywords, edges) would not fit the time budget.
* ``amem-ingest``: the product ingestion path (``prepare`` -> embed ->
  ``ingest``) on whole documents until N chunks are stored: chunks/s with and
  without embedding time. Default sizes 1k and 10k (~40 chunks/s on 2 cores).
* ``lancedb``: LanceDB, its native FTS index + exact (flat) vector search +
  ``RRFReranker`` hybrid.
* ``python``: the pure-compute floor: bm25s (BM25), numpy exact cosine,
  hnswlib (HNSW with our M / EFC / EF), and their RRF in Python.

Data: passages cut by the product's own chunker (``fn::amem::chunk::split``,
800 / 120 characters) from the shared collections (SciFact, Cranfield, CISI
bodies), embedded with the configured embedder through the disk cache, so a
run after ``amem-db eval`` embeds nothing. Sizes beyond the real passages
repeat real text with fresh ids and copy real vectors plus a small random
perturbation (norm 0.1, cosine ~0.995 to the original), so every point is
distinct and exact ground truth is well defined.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .evaluation import _STOP, dir_size, percentile

DEFAULT_SIZES = (1_000, 10_000, 100_000)
DEFAULT_SYSTEMS = ("amem", "amem-ingest", "lancedb", "python")
DEFAULT_INGEST_SIZES = (1_000, 10_000)
DEFAULT_DATASETS = ("scifact", "cranfield", "cisi")
DEFAULT_DATA_ROOT = Path("/work/shared/datasets")
DEFAULT_OUT = Path("results") / "bench"
AMEM_MODES = ("bm25", "vector", "hybrid", "hybrid_graph", "hybrid_graph_depth2")
# bench labels that are not plain modes: the query options they stand for
MODE_OPTIONS = {"hybrid_graph_depth2": {"mode": "hybrid_graph", "graphDepth": 2}}
FLOOR_DEPTHS = (256, 50)
DATA_VERSION = 1
PERTURB_NORM = 0.1

Progress = Callable[[str], None]


# --------------------------------------------------------------------------- helpers
def pct(values: list[float], p: float) -> float | None:
    """evaluation.percentile, with None (JSON null) for no values."""
    return percentile(values, p) if values else None


def latency_summary(ms: list[float]) -> dict:
    return {"n": len(ms), "p50": pct(ms, 50), "p95": pct(ms, 95), "p99": pct(ms, 99),
            "mean": statistics.fmean(ms) if ms else None}


def peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine_description() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions = {}
    from importlib.metadata import PackageNotFoundError, version

    for pkg in ("surrealdb-embedded", "surrealdb", "lancedb", "bm25s", "hnswlib", "numpy"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    return {"cpu": cpu, "cpus": cpus, "memory_gb": mem_gb, "python": platform.python_version(),
            "os": f"{platform.system()} {platform.release()}", "loadavg": os.getloadavg(), "packages": versions}


def query_terms(text: str) -> str:
    """The words the product's BM25 leg sends, for the peers that run without
    SurrealDB (LanceDB, bm25s): a mirror of fn::amem::query::terms (letters
    and digits, English stop words dropped, all kept if nothing is left);
    tests/test_evaluation.py checks that the two agree."""
    import re

    words = [w for w in re.split(r"[^\w]+|_", text) if w]
    content = list(dict.fromkeys(w for w in words if w.lower() not in _STOP))
    use = content or list(dict.fromkeys(words))
    return " ".join(use[:64])


# --------------------------------------------------------------------------- data
def data_paths(data_dir: Path) -> dict[str, Path]:
    return {"meta": data_dir / "passages.json", "vectors": data_dir / "vectors.npy",
            "qvectors": data_dir / "query_vectors.npy"}


async def _chunk_documents(docs: list[dict], progress: Progress | None) -> list[dict]:
    """Cut bodies with the product's chunker (fn::amem::chunk::split) on a mem:// engine."""
    from .connection import Target, close_quietly, open_connection
    from .db import call, call_each
    from .migrator import Migrator

    conn = await open_connection(Target(url="mem://", ns="bench", db="chunk"))
    try:
        await Migrator(conn).migrate()
        defaults = await call(conn, "fn::amem::chunk::defaults")
        out = []
        batch = 64
        for i in range(0, len(docs), batch):
            part = docs[i:i + batch]
            res = await call_each(conn, "fn::amem::chunk::split",
                                  [(d["text"], [], defaults["size"], defaults["overlap"]) for d in part])
            for d, (ok, chunks) in zip(part, res):
                if not ok:
                    raise RuntimeError(f"chunking {d['key']} failed: {chunks}")
                for c in chunks:
                    out.append({"doc": d["key"], "title": d["title"], "source": d["source"], "position": c["position"],
                                "text": c["text"], "char_start": c["char_start"], "char_end": c["char_end"]})
            if progress and (i // batch) % 20 == 0:
                progress(f"chunked {i + len(part)}/{len(docs)} documents")
        return out
    finally:
        await close_quietly(conn)


def build_data(data_dir: Path, embedder: Any, *, datasets: tuple[str, ...] = DEFAULT_DATASETS,
               data_root: Path = DEFAULT_DATA_ROOT, queries_per_dataset: int = 40,
               progress: Progress | None = None) -> dict:
    """Passages, their vectors and the bench queries, cached in ``data_dir``."""
    import numpy as np

    from .embedding import CachedEmbedder

    paths = data_paths(data_dir)
    if paths["meta"].exists() and paths["vectors"].exists() and paths["qvectors"].exists():
        meta = json.loads(paths["meta"].read_text())
        if meta.get("version") == DATA_VERSION and meta.get("embedder") == embedder.name:
            return meta
    data_dir.mkdir(parents=True, exist_ok=True)
    per_ds: list[list[dict]] = []
    queries: list[str] = []
    for name in datasets:
        ds_docs = []
        corpus = data_root / name / "corpus.jsonl"
        with open(corpus) as fh:
            for line in fh:
                if line.strip():
                    o = json.loads(line)
                    if (o.get("text") or "").strip():
                        ds_docs.append({"key": f"{name}-{o['_id']}", "title": o.get("title") or None,
                                        "source": f"{corpus}#{o['_id']}", "text": o["text"]})
        per_ds.append(ds_docs)
        with open(data_root / name / "queries.jsonl") as fh:
            qs = [json.loads(line)["text"] for line in fh if line.strip()]
        queries += qs[:queries_per_dataset]
    # interleave documents round-robin so every size holds all three collections
    docs = [d for group in _roundrobin(per_ds) for d in group]
    passages = asyncio.run(_chunk_documents(docs, progress))
    cached = embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)
    if progress:
        progress(f"embedding {len(passages)} passages (cached texts are free)")
    t0 = time.perf_counter()
    vectors = []
    step = 512
    for i in range(0, len(passages), step):
        vectors += cached.embed_documents([p["text"] for p in passages[i:i + step]])
        if progress:
            progress(f"embedded {min(i + step, len(passages))}/{len(passages)} ({cached.stats.misses} computed)")
    qvecs = [cached.embed_query(q) for q in queries]
    meta = {"version": DATA_VERSION, "embedder": cached.name, "dimension": cached.dimension,
            "datasets": list(datasets), "passages": passages, "queries": queries,
            "embed_seconds": round(time.perf_counter() - t0, 1), "embedded": cached.stats.misses}
    np.save(paths["vectors"], np.asarray(vectors, dtype=np.float32))
    np.save(paths["qvectors"], np.asarray(qvecs, dtype=np.float32))
    paths["meta"].write_text(json.dumps(meta))
    return meta


def _roundrobin(groups: list[list[dict]]):
    longest = max(len(g) for g in groups)
    for i in range(longest):
        yield [g[i] for g in groups if i < len(g)]


def corpus_of(data_dir: Path, n: int):
    """The first n passages (repeated with fresh ids past the real ones) and their vectors."""
    import numpy as np

    paths = data_paths(data_dir)
    meta = json.loads(paths["meta"].read_text())
    base = meta["passages"]
    vecs = np.load(paths["vectors"])
    rows, out = [], np.empty((n, vecs.shape[1]), dtype=np.float32)
    rng = np.random.default_rng(7)
    for i in range(n):
        r, j = divmod(i, len(base))
        p = base[j]
        rows.append({**p, "doc": p["doc"] if r == 0 else f"{p['doc']}-r{r}", "copy": r})
        if r == 0:
            out[i] = vecs[j]
        else:
            noise = rng.standard_normal(vecs.shape[1]).astype(np.float32)
            v = vecs[j] + PERTURB_NORM * noise / np.linalg.norm(noise)
            out[i] = v / np.linalg.norm(v)
    qv = np.load(paths["qvectors"])
    return rows, out, meta["queries"], qv, meta


def exact_topk(vectors, qv, k: int):
    """Exact cosine top-k (numpy): ground truth for recall."""
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1)
    sims = (vectors @ qv.T) / norms[:, None] / np.linalg.norm(qv, axis=1)[None, :]
    idx = np.argpartition(-sims, kth=min(k, len(vectors) - 1), axis=0)[:k]
    out = []
    for qi in range(qv.shape[0]):
        cand = idx[:, qi]
        out.append(list(cand[np.argsort(-sims[cand, qi], kind="stable")]))
    return out


def recall_at(found: list[list[int]], truth: list[list[int]], k: int) -> float:
    vals = [len(set(f[:k]) & set(t[:k])) / k for f, t in zip(found, truth)]
    return statistics.fmean(vals) if vals else float("nan")


# --------------------------------------------------------------------------- workers
async def worker_amem(n: int, data_dir: Path, db_root: Path, backend: str, queries: int, batch: int, reps: int) -> dict:
    import numpy as np

    from .connection import Target, close_quietly, open_connection
    from .db import plain
    from .errors import NotImplementedMode, from_engine_error
    from .migrator import Migrator

    rows, vecs, qtexts, qvecs, meta = corpus_of(data_dir, n)
    qtexts, qvecs = qtexts[:queries], qvecs[:queries]
    db_path = db_root / f"amem-{n}"
    shutil.rmtree(db_path, ignore_errors=True)
    url = "mem://" if backend == "mem" else f"{backend}://{db_path}"
    conn = await open_connection(Target(url=url, ns="bench", db="b"))
    result: dict[str, Any] = {"system": "amem", "size": n, "backend": backend, "batch": batch}
    try:
        await Migrator(conn).migrate({"embedding_dim": int(vecs.shape[1])})
        result["engine"] = await conn.version()
        (settings,) = await conn.query("SELECT * OMIT id FROM ONLY amem_setting:schema")
        result["settings"] = plain(settings)
        # documents first (no vector or full-text index on document here), then chunks
        docs: dict[str, dict] = {}
        for r in rows:
            d = docs.setdefault(r["doc"], {"id": r["doc"], "title": r["title"], "source": r["source"], "n": 0})
            d["n"] += 1
        t0 = time.perf_counter()
        # the summary embedding as ingest computes it (normalised mean of the chunk
        # vectors), so hybrid_graph's document_summary signal has data to score
        sums: dict[str, Any] = {}
        for r, v in zip(rows, vecs):
            sums[r["doc"]] = sums[r["doc"]] + v if r["doc"] in sums else v.astype(np.float64)
        doc_rows = [{"id": _rid("document", d["id"]), "title": d["title"], "source": d["source"], "source_id": d["id"],
                     "mime_type": "application/jsonl", "content_hash": d["id"], "text": "", "status": "ready",
                     "chunk_count": d["n"], "scopes": [],
                     "summary_embedding": (sums[d["id"]] / np.linalg.norm(sums[d["id"]])).tolist()}
                    for d in docs.values()]
        for i in range(0, len(doc_rows), 500):
            await conn.query("INSERT INTO document $rows RETURN NONE", {"rows": doc_rows[i:i + 500]})
        doc_seconds = time.perf_counter() - t0
        index_of: dict[str, int] = {}
        t0 = time.perf_counter()
        marks = []
        for i in range(0, n, batch):
            chunk_rows = []
            for j in range(i, min(i + batch, n)):
                r = rows[j]
                # a string key: HNSW KNN on 3.2.4 returns no rows for array/object record
                # ids (docs/BENCH-ENGINE-NOTES.md), and the product's ingest uses array ids
                cid = _rid("chunk", f"{r['doc']}_{r['position']}")
                chunk_rows.append({"id": cid, "document": _rid("document", r["doc"]), "text": r["text"],
                                   "position": r["position"], "char_start": r["char_start"], "char_end": r["char_end"],
                                   "embedding": vecs[j].tolist(), "mime_type": "application/jsonl", "scopes": []})
                index_of[f"{r['doc']}_{r['position']}"] = j
            await conn.query("INSERT INTO chunk $rows RETURN NONE", {"rows": chunk_rows})
            if (i // batch) % max(1, (n // batch) // 10) == 0:
                marks.append((i + len(chunk_rows), round(time.perf_counter() - t0, 2)))
        chunk_seconds = time.perf_counter() - t0
        result["ingest"] = {"documents": len(doc_rows), "chunks": n, "document_seconds": round(doc_seconds, 2),
                            "chunk_seconds": round(chunk_seconds, 2), "chunks_per_s": n / chunk_seconds,
                            "progress": marks, "embedding_seconds": 0.0,
                            "note": "bulk INSERT of precomputed vectors: no embedding time"}
        result["size_bytes_loaded"] = dir_size(db_path)

        def chunk_index(cid: Any) -> int | None:
            key = cid.id if hasattr(cid, "id") else str(cid).split(":", 1)[-1].strip("⟨⟩`")
            return index_of.get(str(key))

        truth = exact_topk(vecs, qvecs, 10)
        q_sql = "RETURN fn::amem::documents::query($q, $e, $o);"
        lat: dict[str, list[float]] = {}
        engine_ms: dict[str, list[float]] = {}
        unavailable = {}
        found_vec: list[list[int]] = []
        stages: dict[str, dict[str, list[float]]] = {}
        for mode in AMEM_MODES:
            lat[mode], engine_ms[mode] = [], []
            try:
                for qi, (text, v) in enumerate([(qtexts[0], qvecs[0])] * reps + list(zip(qtexts, qvecs))):
                    opts = {"mode": mode, "k": 10, "threshold": -1} | MODE_OPTIONS.get(mode, {})
                    t = time.perf_counter()
                    try:
                        (res,) = await conn.query(q_sql, {"q": text, "e": None if mode == "bm25" else v.tolist(), "o": opts})
                    except Exception as exc:
                        raise from_engine_error(exc) from exc
                    ms = (time.perf_counter() - t) * 1000
                    if qi < reps:
                        continue  # warm-up
                    lat[mode].append(ms)
                    engine_ms[mode].append(float(res["queryMs"]))
                    for stage, v in (((res.get("trace") or {}).get("timings")) or {}).items():
                        stages.setdefault(mode, {}).setdefault(stage, []).append(float(v))
                    if mode == "vector":
                        found_vec.append([chunk_index(h["chunk"]["id"]) for h in res["results"]])
            except NotImplementedMode as exc:
                unavailable[mode] = str(exc)
                lat.pop(mode)
                engine_ms.pop(mode)
        result["latency_ms"] = {m: latency_summary(v) for m, v in lat.items()}
        result["engine_query_ms"] = {m: latency_summary(v) for m, v in engine_ms.items()}
        result["unavailable"] = unavailable
        # where the time goes inside the stored function (its own trace.timings), mean ms
        result["stages_ms"] = {m: {k: round(statistics.fmean(v), 2) for k, v in st.items()} for m, st in stages.items()}
        result["recall@10"] = {"vector": recall_at(found_vec, truth, 10)}

        # the raw engine floor, same data, one round trip each
        ef = max(int(result["settings"].get("candidate_pool", 256)), 64) if isinstance(result["settings"], dict) else 256
        floors = {}
        found_knn: list[list[int]] = []
        # the words the product's BM25 leg sends, from its own stored function
        terms = {}
        for text in set(qtexts):
            (t,) = await conn.query("RETURN fn::amem::query::terms($q)", {"q": text})
            terms[text] = t["text"]
        for depth in FLOOR_DEPTHS:
            e = ef if depth >= 64 else 64
            # the product's BM25 leg reads the text-only copy (migrations/0004)
            bm25 = f"SELECT id, search::score(1) AS s FROM chunk_fts WHERE text @1,OR@ $q ORDER BY s DESC LIMIT {depth};"
            knn = f"SELECT id, vector::distance::knn() AS d FROM chunk WHERE embedding <|{depth},{e}|> $v ORDER BY d;"
            for name, sql in ((f"bm25@{depth}", bm25), (f"knn@{depth}", knn), (f"both@{depth}", bm25 + "\n" + knn)):
                times = []
                for qi, (text, v) in enumerate([(qtexts[0], qvecs[0])] * reps + list(zip(qtexts, qvecs))):
                    t = time.perf_counter()
                    out = await conn.query(sql, {"q": terms[text], "v": v.tolist()})
                    ms = (time.perf_counter() - t) * 1000
                    if qi >= reps:
                        times.append(ms)
                        if name == "knn@50":
                            found_knn.append([chunk_index(r["id"]) for r in (out[0] or [])[:10]])
                floors[name] = latency_summary(times)
        result["floor_ms"] = floors
        result["recall@10"]["floor_knn"] = recall_at(found_knn, truth, 10)
        result["floor_sql"] = {"bm25": "SELECT id, search::score(1) AS s FROM chunk_fts WHERE text @1,OR@ $q ORDER BY s DESC LIMIT D",
                               "knn": "SELECT id, vector::distance::knn() AS d FROM chunk WHERE embedding <|D,EF|> $v ORDER BY d",
                               "depths": list(FLOOR_DEPTHS)}
    finally:
        await close_quietly(conn)
    result["size_bytes"] = dir_size(db_path)
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def _rid(table: str, key: Any):
    from surrealdb import RecordID

    return RecordID(table, key)


async def worker_amem_ingest(n: int, data_root: Path, datasets: tuple[str, ...], db_root: Path, backend: str,
                             embedder_spec: str | None) -> dict:
    """The product path: whole documents through prepare -> embed -> ingest until n chunks."""
    from .client import Memory
    from .connection import Target, close_quietly, open_connection
    from .embedding import CachedEmbedder, get_embedder
    from .ingest import ingest_items, items_from_file
    from .migrator import Migrator

    embedder = CachedEmbedder(get_embedder(embedder_spec))
    per_ds = [items_from_file((data_root / name / "corpus.jsonl").resolve()) for name in datasets]
    items = [it for group in _roundrobin(per_ds) for it in group]
    db_path = db_root / f"amem-ingest-{n}"
    shutil.rmtree(db_path, ignore_errors=True)
    url = "mem://" if backend == "mem" else f"{backend}://{db_path}"
    conn = await open_connection(Target(url=url, ns="bench", db="i"))
    try:
        await Migrator(conn).migrate({"embedding_dim": embedder.dimension})
        mem = Memory(conn, embedder=embedder)
        from .ingest import IngestReport

        report = IngestReport()
        pos = 0
        batch = 16
        while report.chunks < n and pos < len(items):
            await ingest_items(conn, embedder, items[pos:pos + batch], batch_size=batch, report=report)
            pos += batch
        counts = (await conn.query("SELECT count() AS n FROM chunk GROUP ALL; SELECT count() AS n FROM keyword GROUP ALL;"))
        stats = embedder.stats
        engine_s = report.engine_seconds  # prepare + ingest round trips
        return {"system": "amem-ingest", "size": n, "backend": backend, "documents": pos, "chunks": report.chunks,
                "keywords": report.keywords, "embedded_texts": report.embedded_texts,
                "seconds": round(report.seconds, 2), "embed_seconds": round(report.embed_seconds, 2),
                "engine_seconds": round(engine_s, 2),
                "chunks_per_s": report.chunks / report.seconds, "chunks_per_s_without_embedding": report.chunks / engine_s,
                "cache_hits": stats.hits, "cache_misses": stats.misses, "embedder": embedder.name,
                "rows": {"chunk": (counts[0] or [{}])[0].get("n"), "keyword": (counts[1] or [{}])[0].get("n")},
                "size_bytes": dir_size(db_path), "peak_rss_mb": peak_rss_mb()}
    finally:
        await close_quietly(conn)


def worker_lancedb(n: int, data_dir: Path, db_root: Path, queries: int, reps: int) -> dict:
    import lancedb
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    rows, vecs, qtexts, qvecs, meta = corpus_of(data_dir, n)
    qtexts, qvecs = qtexts[:queries], qvecs[:queries]
    path = db_root / f"lance-{n}"
    shutil.rmtree(path, ignore_errors=True)
    db = lancedb.connect(str(path))
    dim = vecs.shape[1]
    t0 = time.perf_counter()
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "doc": pa.array([r["doc"] for r in rows]),
        "text": pa.array([r["text"] for r in rows]),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1), pa.float32()), dim),
    })
    tbl = db.create_table("chunk", table)
    add_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tbl.create_fts_index("text")  # LanceDB's native BM25 index
    fts_s = time.perf_counter() - t0
    truth = exact_topk(vecs, qvecs, 10)
    lat = {"bm25": [], "vector": [], "hybrid": []}
    found = []
    reranker = RRFReranker()
    for qi, (text, v) in enumerate([(qtexts[0], qvecs[0])] * reps + list(zip(qtexts, qvecs))):
        terms = query_terms(text)
        for mode in lat:
            t = time.perf_counter()
            if mode == "bm25":
                res = tbl.search(terms, query_type="fts").limit(10).select(["id"]).to_list()
            elif mode == "vector":
                res = tbl.search(v, query_type="vector").metric("cosine").limit(10).select(["id"]).to_list()
            else:
                res = (tbl.search(query_type="hybrid").vector(v).text(terms).metric("cosine")
                       .rerank(reranker).limit(10).select(["id"]).to_list())
            ms = (time.perf_counter() - t) * 1000
            if qi >= reps:
                lat[mode].append(ms)
                if mode == "vector":
                    found.append([r["id"] for r in res])
    return {"system": "lancedb", "size": n,
            "ingest": {"chunks": n, "add_seconds": round(add_s, 3), "fts_index_seconds": round(fts_s, 3),
                       "chunks_per_s": n / (add_s + fts_s), "embedding_seconds": 0.0,
                       "note": "no vector index (flat, exact search); native FTS index"},
            "latency_ms": {m: latency_summary(v) for m, v in lat.items()},
            "recall@10": {"vector": recall_at(found, truth, 10)},
            "size_bytes": dir_size(path), "peak_rss_mb": peak_rss_mb()}


def worker_python(n: int, data_dir: Path, queries: int, reps: int, hnsw_m: int = 12, hnsw_efc: int = 150,
                  hnsw_ef: int = 256, pool: int = 256) -> dict:
    import bm25s
    import hnswlib
    import numpy as np

    rows, vecs, qtexts, qvecs, meta = corpus_of(data_dir, n)
    qtexts, qvecs = qtexts[:queries], qvecs[:queries]
    texts = [r["text"] for r in rows]
    t0 = time.perf_counter()
    retriever = bm25s.BM25(k1=1.2, b=0.75)
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    bm25_s = time.perf_counter() - t0
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    t0 = time.perf_counter()
    index = hnswlib.Index(space="cosine", dim=vecs.shape[1])
    index.init_index(max_elements=n, M=hnsw_m, ef_construction=hnsw_efc, random_seed=7)
    index.add_items(vecs, np.arange(n), num_threads=1)
    index.set_ef(max(hnsw_ef, 10))
    hnsw_s = time.perf_counter() - t0
    truth = exact_topk(vecs, qvecs, 10)
    lat = {"bm25s": [], "numpy_exact": [], "hnswlib": [], "hybrid_rrf": []}
    found_np, found_h = [], []
    depth = min(pool, n)
    for qi, (text, v) in enumerate([(qtexts[0], qvecs[0])] * reps + list(zip(qtexts, qvecs))):
        terms = query_terms(text)
        t = time.perf_counter()
        docs, scores = retriever.retrieve(bm25s.tokenize([terms], stopwords="en", show_progress=False), k=depth,
                                          show_progress=False, n_threads=1)
        bm = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        sims = unit @ (v / np.linalg.norm(v))
        top = np.argpartition(-sims, depth - 1)[:depth]
        top = top[np.argsort(-sims[top])]
        ex = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        labels, _ = index.knn_query(v, k=min(10, n), num_threads=1)
        hn = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        fused: dict[int, float] = {}
        for rank, d in enumerate(docs[0].tolist()):
            fused[d] = fused.get(d, 0.0) + 0.5 / (60 + rank + 1)
        for rank, d in enumerate(top.tolist()):
            fused[d] = fused.get(d, 0.0) + 0.5 / (60 + rank + 1)
        sorted(fused.items(), key=lambda x: (-x[1], x[0]))[:10]
        fu = (time.perf_counter() - t) * 1000
        if qi >= reps:
            lat["bm25s"].append(bm)
            lat["numpy_exact"].append(ex)
            lat["hnswlib"].append(hn)
            lat["hybrid_rrf"].append(bm + ex + fu)
            found_np.append(top[:10].tolist())
            found_h.append(labels[0].tolist())
    return {"system": "python", "size": n,
            "ingest": {"chunks": n, "bm25s_index_seconds": round(bm25_s, 3), "hnswlib_build_seconds": round(hnsw_s, 3),
                       "chunks_per_s": n / (bm25_s + hnsw_s), "embedding_seconds": 0.0},
            "latency_ms": {m: latency_summary(v) for m, v in lat.items()},
            "recall@10": {"numpy_exact": recall_at(found_np, truth, 10), "hnswlib": recall_at(found_h, truth, 10)},
            "params": {"hnsw_m": hnsw_m, "hnsw_efc": hnsw_efc, "hnsw_ef": hnsw_ef, "depth": depth},
            "peak_rss_mb": peak_rss_mb()}


def worker_main(argv: list[str]) -> None:
    """``python -m amem_db.bench worker '{json}'``: one system at one size; prints JSON."""
    args = json.loads(argv[0])
    system, n = args["system"], int(args["size"])
    data_dir, db_root = Path(args["data_dir"]), Path(args["db_root"])
    db_root.mkdir(parents=True, exist_ok=True)
    code = 0
    try:
        if system == "amem":
            res = asyncio.run(worker_amem(n, data_dir, db_root, args["backend"], args["queries"], args["batch"], args["reps"]))
        elif system == "amem-ingest":
            res = asyncio.run(worker_amem_ingest(n, Path(args["data_root"]), tuple(args["datasets"]), db_root,
                                                 args["backend"], args.get("embedder")))
        elif system == "lancedb":
            res = worker_lancedb(n, data_dir, db_root, args["queries"], args["reps"])
        elif system == "python":
            res = worker_python(n, data_dir, args["queries"], args["reps"])
        else:
            raise ValueError(f"unknown system {system}")
        if not args.get("keep_db"):
            for p in db_root.glob(f"*-{n}"):
                shutil.rmtree(p, ignore_errors=True)
    except Exception as exc:  # reported, the orchestrator goes on
        import traceback

        res = {"system": system, "size": n, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        code = 1
    sys.stdout.write("\n@@RESULT@@" + json.dumps(res, default=str) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the native engine may abort at interpreter exit (ENGINE-NOTES)


# --------------------------------------------------------------------------- orchestration
def run_worker(args: dict, timeout: float, log: Path | None = None) -> dict:
    cmd = [sys.executable, "-m", "amem_db.bench", "worker", json.dumps(args)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"system": args["system"], "size": args["size"], "error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    if log is not None:
        with open(log, "a") as fh:
            fh.write(f"--- {args['system']} {args['size']} rc={proc.returncode} {wall:.1f}s\n{proc.stderr[-4000:]}\n")
    marker = proc.stdout.rfind("@@RESULT@@")
    if marker < 0:
        return {"system": args["system"], "size": args["size"],
                "error": f"worker exited {proc.returncode} without a result: {proc.stderr.strip()[-500:]}"}
    res = json.loads(proc.stdout[marker + len("@@RESULT@@"):].strip().splitlines()[0])
    res["wall_seconds"] = round(wall, 1)
    return res


def run_bench(*, sizes: list[int], systems: list[str], out_dir: Path, embedder: Any, embedder_spec: str | None,
              queries: int = 20, reps: int = 2, backend: str = "mem", batch: int = 50,
              ingest_sizes: list[int] | None = None, data_root: Path = DEFAULT_DATA_ROOT,
              datasets: tuple[str, ...] = DEFAULT_DATASETS, timeout: float = 2700, keep_db: bool = False,
              progress: Progress | None = None) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    data_dir = out_dir / "data"
    db_root = out_dir / "db"
    log = out_dir / "workers.log"
    started = time.perf_counter()
    t0 = time.perf_counter()
    meta = build_data(data_dir, embedder, datasets=datasets, data_root=data_root, progress=progress)
    data_seconds = time.perf_counter() - t0
    ingest_sizes = list(DEFAULT_INGEST_SIZES if ingest_sizes is None else ingest_sizes)
    results = []
    machine = machine_description()
    for n in sizes:
        for system in systems:
            if system == "amem-ingest" and n not in ingest_sizes:
                continue
            if progress:
                progress(f"{system} at {n:,} chunks")
            args = {"system": system, "size": n, "data_dir": str(data_dir), "db_root": str(db_root),
                    "backend": backend, "queries": queries, "reps": reps, "batch": batch, "keep_db": keep_db,
                    "data_root": str(data_root), "datasets": list(datasets), "embedder": embedder_spec}
            res = run_worker(args, timeout, log)
            if progress:
                progress(f"{system} at {n:,}: " + (res.get("error") or f"done in {res.get('wall_seconds')} s"))
            results.append(res)
    report = {"machine": machine, "machine_end_loadavg": os.getloadavg(), "sizes": sizes, "systems": systems,
              "queries": queries, "warmup": reps, "backend": backend, "batch": batch,
              "data": {"passages": len(meta["passages"]), "queries": len(meta["queries"]), "embedder": meta["embedder"],
                       "dimension": meta["dimension"], "datasets": meta["datasets"], "seconds": round(data_seconds, 1)},
              "results": results, "seconds": round(time.perf_counter() - started, 1),
              "created_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    (out_dir / "bench.json").write_text(json.dumps(report, indent=2, default=str))
    (out_dir / "report.md").write_text(render_markdown(report))
    plot_latency(report, out_dir / "latency.png")
    return report


# --------------------------------------------------------------------------- report
def _get(results: list[dict], system: str, n: int) -> dict | None:
    for r in results:
        if r.get("system") == system and r.get("size") == n and "error" not in r:
            return r
    return None


def _ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 1 else f"{v:.2f}"


def _ratio(a: float | None, b: float | None) -> str:
    if not a or not b:
        return "-"
    return f"{a / b:.2f}x"


def render_markdown(report: dict) -> str:
    res = report["results"]
    sizes = report["sizes"]
    m = report["machine"]
    lines = ["# amem-db benchmark", "",
             f"Machine: {m['cpu']}, {m['cpus']} cores, {m['memory_gb']} GB RAM, {m['os']}, Python {m['python']}; "
             f"load average at start {tuple(round(x, 2) for x in m['loadavg'])}, at end "
             f"{tuple(round(x, 2) for x in report['machine_end_loadavg'])}. Packages: "
             + ", ".join(f"{k} {v}" for k, v in m["packages"].items() if v) + ".",
             f"Data: {report['data']['passages']} real passages ({', '.join(report['data']['datasets'])}), "
             f"{report['data']['embedder']} ({report['data']['dimension']}-dim); {report['queries']} queries per size "
             f"after {report['warmup']} warm-up; backend {report['backend']}; insert batch {report['batch']}. "
             f"Total {report['seconds']:.0f} s.", ""]
    errors = [r for r in res if "error" in r]
    # latency table
    lines += ["## Query latency (ms, p50 / p95 / p99), k = 10", "",
              "| system / mode | " + " | ".join(f"{n:,}" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    rows: list[tuple[str, str, str]] = []
    for mode in AMEM_MODES:
        rows.append((f"amem {mode}", "amem", ("latency_ms", mode)))
    for name in ("bm25@256", "knn@256", "both@256", "bm25@50", "knn@50", "both@50"):
        rows.append((f"engine floor {name}", "amem", ("floor_ms", name)))
    for mode in ("bm25", "vector", "hybrid"):
        rows.append((f"lancedb {mode}", "lancedb", ("latency_ms", mode)))
    for mode in ("bm25s", "numpy_exact", "hnswlib", "hybrid_rrf"):
        rows.append((f"python {mode}", "python", ("latency_ms", mode)))
    for label, system, (section, key) in rows:
        cells = []
        for n in sizes:
            r = _get(res, system, n)
            s = (r or {}).get(section, {}).get(key)
            if system == "amem" and r and key in (r.get("unavailable") or {}):
                cells.append("not available")
            else:
                cells.append(f"{_ms(s['p50'])} / {_ms(s['p95'])} / {_ms(s['p99'])}" if s else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    # ratios
    lines += ["", "## Ratios (p50)", "",
              "| ratio | " + " | ".join(f"{n:,}" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    ratio_rows = [
        ("amem bm25 / floor bm25@256", ("amem", "latency_ms", "bm25"), ("amem", "floor_ms", "bm25@256")),
        ("amem vector / floor knn@256", ("amem", "latency_ms", "vector"), ("amem", "floor_ms", "knn@256")),
        ("amem hybrid / floor both@256 (goal <= 1.3x)", ("amem", "latency_ms", "hybrid"), ("amem", "floor_ms", "both@256")),
        ("amem hybrid / floor both@50", ("amem", "latency_ms", "hybrid"), ("amem", "floor_ms", "both@50")),
        ("amem hybrid / lancedb hybrid", ("amem", "latency_ms", "hybrid"), ("lancedb", "latency_ms", "hybrid")),
        ("amem bm25 / lancedb bm25", ("amem", "latency_ms", "bm25"), ("lancedb", "latency_ms", "bm25")),
        ("amem vector / lancedb vector", ("amem", "latency_ms", "vector"), ("lancedb", "latency_ms", "vector")),
        ("amem hybrid / python hybrid_rrf", ("amem", "latency_ms", "hybrid"), ("python", "latency_ms", "hybrid_rrf")),
        ("floor bm25@256 / bm25s", ("amem", "floor_ms", "bm25@256"), ("python", "latency_ms", "bm25s")),
        ("floor knn@256 / numpy exact", ("amem", "floor_ms", "knn@256"), ("python", "latency_ms", "numpy_exact")),
    ]
    for label, (sa, seca, ka), (sb, secb, kb) in ratio_rows:
        cells = []
        for n in sizes:
            a = ((_get(res, sa, n) or {}).get(seca) or {}).get(ka) or {}
            b = ((_get(res, sb, n) or {}).get(secb) or {}).get(kb) or {}
            cells.append(_ratio(a.get("p50"), b.get("p50")))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    # where the product's time goes (its own trace timings)
    staged = [(n, r) for n in sizes if (r := _get(res, "amem", n)) and r.get("stages_ms")]
    if staged:
        stage_keys = ["optionsMs", "vectorMs", "bm25Ms", "fuseMs", "graphMs", "hydrateMs", "contextMs", "traceMs", "totalMs"]
        lines += ["", "## Inside fn::amem::documents::query (mean ms per stage, from trace.timings)", "",
                  "| size / mode | " + " | ".join(k.removesuffix("Ms") for k in stage_keys) + " | round trip p50 |",
                  "|---|" + "---|" * (len(stage_keys) + 1)]
        for n, r in staged:
            for mode, st in r["stages_ms"].items():
                rt = (r.get("latency_ms", {}).get(mode) or {}).get("p50")
                lines.append(f"| {n:,} {mode} | " + " | ".join(_ms(st.get(k)) for k in stage_keys) + f" | {_ms(rt)} |")
    # ingest
    lines += ["", "## Ingest throughput (chunks/s)", "",
              "| system | " + " | ".join(f"{n:,}" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    for label, system, fmt in (
        ("amem bulk INSERT (both indexes, vectors given)", "amem", lambda r: f"{r['ingest']['chunks_per_s']:.0f}"),
        ("amem product path, with embedding", "amem-ingest", lambda r: f"{r['chunks_per_s']:.1f}"),
        ("amem product path, without embedding time", "amem-ingest", lambda r: f"{r['chunks_per_s_without_embedding']:.1f}"),
        ("lancedb add + FTS index", "lancedb", lambda r: f"{r['ingest']['chunks_per_s']:.0f}"),
        ("python bm25s index + hnswlib build", "python", lambda r: f"{r['ingest']['chunks_per_s']:.0f}"),
    ):
        lines.append(f"| {label} | " + " | ".join(fmt(r) if (r := _get(res, system, n)) else "-" for n in sizes) + " |")
    ing = [r for r in res if r.get("system") == "amem-ingest" and "error" not in r]
    if ing:
        lines += ["", "Product path detail: " + "; ".join(
            f"{r['size']:,}: {r['documents']} documents -> {r['chunks']} chunks + {r['keywords']} keywords, "
            f"{r['embedded_texts']} texts embedded ({r['cache_misses']} computed) in {r['embed_seconds']} s, "
            f"engine {r['engine_seconds']} s" for r in ing) + "."]
    # recall, size, memory
    lines += ["", "## Vector recall@10 against exact numpy search", "",
              "| system | " + " | ".join(f"{n:,}" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    for label, system, key in (("amem vector mode (HNSW, pool 256)", "amem", "vector"),
                               ("engine floor KNN top-50 (EF 64)", "amem", "floor_knn"),
                               ("lancedb vector (flat)", "lancedb", "vector"),
                               ("hnswlib (M 12, EFC 150, EF 256)", "python", "hnswlib")):
        cells = []
        for n in sizes:
            r = _get(res, system, n)
            v = (r or {}).get("recall@10", {}).get(key)
            cells.append(f"{v:.3f}" if isinstance(v, (int, float)) and not math.isnan(v) else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "## Size on disk (MB) and peak RSS (MB)", "",
              "| system | " + " | ".join(f"{n:,}" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    for label, system in (("amem", "amem"), ("amem product path", "amem-ingest"), ("lancedb", "lancedb"), ("python (in memory)", "python")):
        cells = []
        for n in sizes:
            r = _get(res, system, n)
            if not r:
                cells.append("-")
                continue
            size = r.get("size_bytes")
            cells.append(f"{size / 1e6:.0f} / {r['peak_rss_mb']:.0f}" if size else f"- / {r['peak_rss_mb']:.0f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if errors:
        lines += ["", "## Failed runs", ""] + [f"- {r['system']} at {r['size']:,}: {r['error']}" for r in errors]
    return "\n".join(lines) + "\n"


def plot_latency(report: dict, path: Path) -> Path | None:
    """Latency (p50) vs corpus size, log-log, one line per system/mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = report["results"]
    sizes = report["sizes"]
    series = [("amem", "latency_ms", m, f"amem {m}", "-") for m in AMEM_MODES]
    series += [("amem", "floor_ms", k, f"floor {k}", ":") for k in ("bm25@256", "knn@256", "both@256")]
    series += [("lancedb", "latency_ms", m, f"lancedb {m}", "--") for m in ("bm25", "vector", "hybrid")]
    series += [("python", "latency_ms", m, f"python {m}", "-.") for m in ("bm25s", "numpy_exact", "hnswlib", "hybrid_rrf")]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    drawn = 0
    colours = plt.cm.tab20.colors
    for i, (system, section, key, label, style) in enumerate(series):
        xs, ys = [], []
        for n in sizes:
            s = ((_get(res, system, n) or {}).get(section) or {}).get(key)
            if s and s.get("p50"):
                xs.append(n)
                ys.append(s["p50"])
        if xs:
            ax.plot(xs, ys, style, marker="os^D"[i % 4], color=colours[i % len(colours)], label=label)
            drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks")
    ax.set_ylabel("p50 latency (ms)")
    ax.set_title(f"Query latency vs corpus size (k=10; {report['machine']['cpus']} cores)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "worker":
        worker_main(sys.argv[2:])
    else:
        sys.stderr.write("usage: amem-db bench (this module's `worker` entry is internal)\n")
        os._exit(2)
