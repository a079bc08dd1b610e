"""Two probes of the vector leg on a built graph, each in a scratch ``mem://``
database of its own (bare tables with the product's HNSW parameters, not the
product schema):

* ``hnsw-curve``: recall@10 and recall@256 against exact numpy search, and
  latency, over a range of search EF after a blocking ``REBUILD INDEX``, beside
  hnswlib with the same M / EFC (scripts/speed/measure_hnsw_ef.py folded into the
  bench, on the bench's own corpus at each size). All the bench's queries are
  used: recall is exact whatever the machine's load.
* ``vector-split`` (issue 14 item 4, measurement only): does decoding the vector
  inside the records the legs read still cost, once the graph is built? The same
  rows three ways: ``full`` (text, ids and the embedding, like ``chunk``),
  ``vec`` (only the embedding, keyed like ``full``) and ``text`` (``full`` without
  the embedding); both vector tables indexed and rebuilt. Timed interleaved, query
  by query: the product's KNN statement (cosine of the stored vector, pool 256) on
  ``full`` vs ``vec``, the same with ``vector::distance::knn()`` (no field read),
  and hydrating the 256 pool rows' text from ``full`` vs ``text``.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from .data import corpus_of
from .measure import exact_topk, peak_rss_mb

EFS = (64, 128, 256, 384, 512, 768)
KS = (10, 256)
SPLIT_MAX_SIZE = 10_000


async def _scratch() -> Any:
    from surrealdb import AsyncSurreal

    db = AsyncSurreal("mem://")
    await db.connect()
    await db.use("probe", "probe")
    return db


def _hnsw(table: str, dim: int) -> str:
    from amem_db.constants import HNSW_EFC, HNSW_M

    return f"DEFINE INDEX {table}_e ON {table} FIELDS embedding HNSW DIMENSION {dim} DIST COSINE TYPE F32 EFC {HNSW_EFC} M {HNSW_M};"


async def _insert(db: Any, table: str, rows: list[dict[str, Any]]) -> None:
    for i in range(0, len(rows), 200):
        await db.query(f"INSERT INTO {table} $rows RETURN NONE", {"rows": rows[i:i + 200]})


def _recall(found: list[list[int]], truth: list[list[int]], k: int) -> float:
    return round(sum(len(set(f[:k]) & set(t[:k])) for f, t in zip(found, truth)) / (k * len(truth)), 4)


async def engine_curve(db: Any, qv: Any, truth: dict[int, list[list[int]]]) -> list[dict[str, Any]]:
    out = []
    for q in qv[:3].tolist():  # warm-up
        await db.query(f"SELECT id FROM c WHERE embedding <|10,{EFS[0]}|> $q", {"q": q})
    for k in KS:
        for ef in (e for e in EFS if e >= k):
            found, times = [], []
            for q in qv.tolist():
                t = time.perf_counter()
                (rows,) = await db.query(f"SELECT id, vector::distance::knn() AS d FROM c WHERE embedding <|{k},{ef}|> $q ORDER BY d",
                                         {"q": q})
                times.append((time.perf_counter() - t) * 1000)
                found.append([int(r["id"].id) for r in rows])
            out.append({"k": k, "ef": ef, "recall": _recall(found, truth[k], k), "p50_ms": round(statistics.median(times), 2)})
    return out


def hnswlib_curve(vecs: Any, qv: Any, truth: dict[int, list[list[int]]]) -> list[dict[str, Any]]:
    import hnswlib
    import numpy as np

    from amem_db.constants import HNSW_EFC, HNSW_M

    idx = hnswlib.Index(space="cosine", dim=vecs.shape[1])
    idx.init_index(max_elements=len(vecs), ef_construction=HNSW_EFC, M=HNSW_M, random_seed=7)
    t = time.perf_counter()
    idx.add_items(vecs, np.arange(len(vecs)))
    build = time.perf_counter() - t
    out = []
    for k in KS:
        for ef in (e for e in EFS if e >= k):
            idx.set_ef(ef)
            times, found = [], []
            for q in qv:
                t = time.perf_counter()
                labels, _ = idx.knn_query(q[None, :], k=k)
                times.append((time.perf_counter() - t) * 1000)
                found.append([int(x) for x in labels[0]])
            out.append({"k": k, "ef": ef, "recall": _recall(found, truth[k], k), "p50_ms": round(statistics.median(times), 3),
                        "build_seconds": round(build, 2)})
    return out


async def worker_hnsw_curve(n: int, data_dir: Path) -> dict[str, Any]:
    from surrealdb import RecordID

    _, vecs, _, qv, _ = corpus_of(data_dir, n)
    truth = {k: exact_topk(vecs, qv, k) for k in KS}
    db = await _scratch()
    try:
        await db.query("DEFINE TABLE c SCHEMALESS;" + _hnsw("c", int(vecs.shape[1])))
        await _insert(db, "c", [{"id": RecordID("c", i), "embedding": v} for i, v in enumerate(vecs.tolist())])
        t = time.perf_counter()
        await db.query("REBUILD INDEX c_e ON c")
        rebuild = time.perf_counter() - t
        engine = await engine_curve(db, qv, truth)
    finally:
        await db.close()
    try:
        peer = hnswlib_curve(vecs, qv, truth)
    except ImportError:
        peer = []
    return {"system": "hnsw-curve", "size": n, "queries": int(qv.shape[0]), "rebuild_seconds": round(rebuild, 1),
            "engine": engine, "hnswlib": peer, "peak_rss_mb": peak_rss_mb()}


async def worker_vector_split(n: int, data_dir: Path, queries: int) -> dict[str, Any]:
    from surrealdb import RecordID

    from amem_db.settings import SchemaSettings

    rows, vecs, _, qv, _ = corpus_of(data_dir, n)
    settings = SchemaSettings()
    pool, ef = settings.candidate_pool, settings.hnsw_ef
    dim = int(vecs.shape[1])
    db = await _scratch()
    try:
        await db.query("DEFINE TABLE full SCHEMALESS; DEFINE TABLE vec SCHEMALESS; DEFINE TABLE text SCHEMALESS;"
                       + _hnsw("full", dim) + _hnsw("vec", dim))
        base = [{"key": f"{r['doc']}_{r['position']}", "text": r["text"], "document": RecordID("document", r["doc"]),
                 "position": r["position"], "char_start": r["char_start"], "char_end": r["char_end"],
                 "mime_type": "application/jsonl", "scopes": []} for r in rows]
        vl = vecs.tolist()
        await _insert(db, "full", [{**{k: v for k, v in b.items() if k != "key"}, "id": RecordID("full", b["key"]),
                                    "embedding": e} for b, e in zip(base, vl)])
        await _insert(db, "vec", [{"id": RecordID("vec", b["key"]), "embedding": e} for b, e in zip(base, vl)])
        await _insert(db, "text", [{**{k: v for k, v in b.items() if k != "key"}, "id": RecordID("text", b["key"])}
                                   for b in base])
        await db.query("REBUILD INDEX full_e ON full; REBUILD INDEX vec_e ON vec;")
        sql = {
            "knn_cosine": "SELECT id, vector::similarity::cosine(embedding, $e) AS sim FROM {t} "
                          f"WHERE embedding <|{pool},{ef}|> $e ORDER BY sim DESC, id ASC",
            "knn_distance": f"SELECT id, vector::distance::knn() AS d FROM {{t}} WHERE embedding <|{pool},{ef}|> $e ORDER BY d",
        }
        times: dict[str, list[float]] = {}
        same_ids = True
        for qi, q in enumerate(qv[:queries].tolist() * 2):  # the first pass is a warm-up
            ids: dict[str, list[str]] = {}
            for name, s in sql.items():
                for t in ("full", "vec"):
                    start = time.perf_counter()
                    (got,) = await db.query(s.format(t=t), {"e": q})
                    ms = (time.perf_counter() - start) * 1000
                    if qi >= queries:
                        times.setdefault(f"{name} {t}", []).append(ms)
                    ids[f"{name} {t}"] = [str(r["id"].id) for r in got]
            same_ids = same_ids and ids["knn_cosine full"] == ids["knn_cosine vec"]
            keys = ids["knn_cosine vec"]
            for t in ("full", "text"):
                start = time.perf_counter()
                await db.query("SELECT id, text, document, position FROM $ids", {"ids": [RecordID(t, k) for k in keys]})
                if qi >= queries:
                    times.setdefault(f"hydrate_pool {t}", []).append((time.perf_counter() - start) * 1000)
    finally:
        await db.close()
    p50 = {k: round(statistics.median(v), 2) for k, v in times.items()}
    return {"system": "vector-split", "size": n, "queries": queries, "pool": pool, "ef": ef, "p50_ms": p50,
            "same_ids": same_ids, "peak_rss_mb": peak_rss_mb()}
