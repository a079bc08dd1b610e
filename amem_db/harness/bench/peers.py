"""The peers on the same data and embeddings: LanceDB (native FTS, flat vector
search, RRFReranker) and the pure-compute floor (bm25s, numpy exact cosine,
hnswlib, RRF in Python). They run without SurrealDB."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any

from amem_db.constants import QUERY_STOPWORDS

from ..common import dir_size
from .data import corpus_of
from .measure import exact_topk, latency_summary, peak_rss_mb, recall_at

_STOPWORDS = frozenset(QUERY_STOPWORDS)


def query_terms(text: str) -> str:
    """The words the product's BM25 leg sends, for the peers that run without
    SurrealDB (LanceDB, bm25s): a mirror of fn::amem::query::terms (letters
    and digits, English stop words dropped, all kept if nothing is left);
    tests/test_evaluation.py checks that the two agree."""
    words = [w for w in re.split(r"[^\w]+|_", text) if w]
    content = list(dict.fromkeys(w for w in words if w.lower() not in _STOPWORDS))
    use = content or list(dict.fromkeys(words))
    return " ".join(use[:64])


def worker_lancedb(n: int, data_dir: Path, db_root: Path, queries: int, reps: int, ann: bool = False) -> dict[str, Any]:
    """LanceDB on the same rows: its native FTS index and, by default, flat (exact) vector search,
    LanceDB's behaviour until an index is created. ``ann``: the system ``lancedb-ann``, the same
    table with an IVF_HNSW_SQ vector index (cosine), what a LanceDB user would build at 100k rows;
    queries at LanceDB's defaults (nprobes, ef), no refine step."""
    import lancedb
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    rows, vecs, qtexts, qvecs, meta = corpus_of(data_dir, n)
    qtexts, qvecs = qtexts[:queries], qvecs[:queries]
    system = "lancedb-ann" if ann else "lancedb"
    path = db_root / f"{system}-{n}"
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
    vector_index_s = 0.0
    if ann:
        t0 = time.perf_counter()
        # every other index parameter at LanceDB's default (partitions, m 20, ef_construction 300)
        tbl.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ")
        vector_index_s = time.perf_counter() - t0
    truth = exact_topk(vecs, qvecs, 10)
    lat: dict[str, list[float]] = {"bm25": [], "vector": [], "hybrid": []}
    found = []
    reranker = RRFReranker()
    for qi, (text, v) in enumerate([(qtexts[0], qvecs[0])] * reps + list(zip(qtexts, qvecs))):
        terms = query_terms(text)
        for mode in lat:
            t = time.perf_counter()
            if mode == "bm25":
                res = tbl.search(terms, query_type="fts").limit(10).select(["id"]).to_list()
            elif mode == "vector":
                vq: Any = tbl.search(v, query_type="vector")  # .metric: not in lancedb 0.40's stubs
                res = vq.metric("cosine").limit(10).select(["id"]).to_list()
            else:
                hq: Any = tbl.search(query_type="hybrid").vector(v).text(terms)
                res = (hq.metric("cosine")
                       .rerank(reranker).limit(10).select(["id"]).to_list())
            ms = (time.perf_counter() - t) * 1000
            if qi >= reps:
                lat[mode].append(ms)
                if mode == "vector":
                    found.append([r["id"] for r in res])
    return {"system": system, "size": n,
            "ingest": {"chunks": n, "add_seconds": round(add_s, 3), "fts_index_seconds": round(fts_s, 3),
                       "vector_index_seconds": round(vector_index_s, 3),
                       "chunks_per_s": n / (add_s + fts_s + vector_index_s), "embedding_seconds": 0.0,
                       "note": ("IVF_HNSW_SQ vector index (cosine)" if ann else "no vector index (flat, exact search)") + "; native FTS index"},
            "latency_ms": {m: latency_summary(v) for m, v in lat.items()},
            "recall@10": {"vector": recall_at(found, truth, 10)},
            "size_bytes": dir_size(path), "peak_rss_mb": peak_rss_mb()}


def worker_python(n: int, data_dir: Path, queries: int, reps: int, hnsw_m: int = 12, hnsw_efc: int = 150,
                  hnsw_ef: int = 256, pool: int = 256) -> dict[str, Any]:
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
    lat: dict[str, list[float]] = {"bm25s": [], "numpy_exact": [], "hnswlib": [], "hybrid_rrf": []}
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
