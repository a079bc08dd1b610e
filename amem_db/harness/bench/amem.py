"""The product's workers: ``amem`` (the stored-function query per mode next to
the raw engine floor, on a bulk-loaded corpus) and ``amem-ingest`` (the
prepare -> embed -> ingest path)."""

from __future__ import annotations

import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from ..common import dir_size
from .data import corpus_of, roundrobin
from .load import Reopener, bulk_load, chunk_key
from .measure import exact_topk, latency_summary, peak_rss_mb, recall_at
from .recall import RECALL_SIZES, time_recall, write_memory

AMEM_MODES = ("bm25", "vector", "hybrid", "hybrid_graph", "hybrid_graph_depth2")
# bench labels that are not plain modes: the query options they stand for
MODE_OPTIONS = {"hybrid_graph_depth2": {"mode": "hybrid_graph", "graphDepth": 2}}
FLOOR_DEPTHS = (256, 50)


async def worker_amem(n: int, data_dir: Path, db_root: Path, backend: str, queries: int, batch: int, reps: int,
                      recall_sizes: tuple[int, ...] | None = None) -> dict[str, Any]:
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.db import plain
    from amem_db.errors import NotImplementedMode, from_engine_error
    from amem_db.migrator import Migrator

    rows, vecs, all_qtexts, all_qvecs, meta = corpus_of(data_dir, n)
    qtexts, qvecs = all_qtexts[:queries], all_qvecs[:queries]
    db_path = db_root / f"amem-{n}"
    shutil.rmtree(db_path, ignore_errors=True)
    url = "mem://" if backend == "mem" else f"{backend}://{db_path}"
    target = Target(url=url, ns="bench", db="b")
    db = Reopener(target, await open_connection(target))
    result: dict[str, Any] = {"system": "amem", "size": n, "backend": backend, "batch": batch}
    try:
        conn = db.conn
        await Migrator(conn).migrate({"embedding_dim": int(vecs.shape[1])})
        result["engine"] = await conn.version()
        (settings,) = await conn.query("SELECT * OMIT id FROM ONLY amem_setting:schema")
        result["settings"] = plain(settings)
        result["ingest"] = await bulk_load(db, rows, vecs, batch)
        conn = db.conn
        index_of = {f"{r['doc']}_{r['position']}": j for j, r in enumerate(rows)}
        result["size_bytes_loaded"] = dir_size(db_path)

        def chunk_index(cid: Any) -> int | None:
            return index_of.get(chunk_key(cid))

        truth = exact_topk(vecs, qvecs, 10)
        q_sql = "RETURN fn::amem::documents::query($q, $e, $o);"
        lat: dict[str, list[float]] = {}
        engine_ms: dict[str, list[float]] = {}
        unavailable = {}
        found_vec: list[list[int | None]] = []
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
        # vector recall@10 over every query, not only the timed ones (a 20-query sample
        # moved the 10k figure by 0.01: docs/BENCHMARKS.md); the rest run untimed
        for text, v in zip(all_qtexts[len(qvecs):], all_qvecs[len(qvecs):]):
            (res,) = await conn.query(q_sql, {"q": text, "e": v.tolist(), "o": {"mode": "vector", "k": 10, "threshold": -1}})
            found_vec.append([chunk_index(h["chunk"]["id"]) for h in res["results"]])
        result["recall@10"] = {"vector": recall_at(found_vec, exact_topk(vecs, all_qvecs, 10), 10),
                               "vector_timed": recall_at(found_vec[:len(qvecs)], truth, 10), "vector_queries": len(found_vec)}

        # the raw engine floor, same data, one round trip each
        ef = max(int(result["settings"].get("candidate_pool", 256)), 64) if isinstance(result["settings"], dict) else 256
        floors = {}
        found_knn: list[list[int | None]] = []
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
        if n in (RECALL_SIZES if recall_sizes is None else recall_sizes):
            # recall beside documents.query, after the memory is written (bench/recall.py)
            model = str(meta.get("embedder") or "bench")
            written = await write_memory(db, rows, vecs, model)
            result["recall"] = written | await time_recall(db.conn, qtexts, qvecs, reps, model)
    finally:
        await close_quietly(db.conn)
    result["size_bytes"] = dir_size(db_path)
    result["peak_rss_mb"] = peak_rss_mb()
    return result


async def worker_amem_ingest(n: int, data_root: Path, datasets: tuple[str, ...], db_root: Path, backend: str,
                             embedder_spec: str | None) -> dict[str, Any]:
    """The product path: whole documents through prepare -> embed -> ingest until n chunks."""
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.embedding import CachedEmbedder, get_embedder
    from amem_db.ingest import IngestReport, ingest_items, items_from_file
    from amem_db.migrator import Migrator

    embedder = CachedEmbedder(get_embedder(embedder_spec))
    per_ds = [items_from_file((data_root / name / "corpus.jsonl").resolve()) for name in datasets]
    items = [it for group in roundrobin(per_ds) for it in group]
    db_path = db_root / f"amem-ingest-{n}"
    shutil.rmtree(db_path, ignore_errors=True)
    url = "mem://" if backend == "mem" else f"{backend}://{db_path}"
    conn = await open_connection(Target(url=url, ns="bench", db="i"))
    try:
        await Migrator(conn).migrate({"embedding_dim": embedder.dimension})
        report = IngestReport()
        pos = 0
        batch = 16
        # 8 batches a call: ingest_items overlaps a batch's store with the next one's
        # prepare and embedding, which a call of one batch cannot (the last call may
        # pass n by up to 8 batches' chunks; rates are per chunk)
        while report.chunks < n and pos < len(items):
            await ingest_items(conn, embedder, items[pos:pos + 8 * batch], batch_size=batch, report=report)
            pos += 8 * batch
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
