"""The vector leg's recall-latency curve on a built HNSW graph (issue 14, docs/BENCHMARKS.md).

Loads the first N SciFact passages of the bench cache (`amem-db bench` writes
passages.json / vectors.npy / query_vectors.npy: the product's chunker, the MiniLM
embedder) into a mem:// table with the product's index parameters, then measures
`<|K,EF|>` for K = 10 and the pool (256) over a range of EF against exact numpy
search: once on the pending queue (index defined first, rows written after it: what
an ingest leaves, docs/ENGINE-ISSUES.md #19) and once after `REBUILD INDEX` (the
graph amem-db maintain builds). hnswlib with the same M / EFC beside it if installed.

Usage: python scripts/speed/measure_hnsw_ef.py DATA_DIR [N] [--peers-only]   (N default 10000;
--peers-only: numpy and hnswlib, not the engine)
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from surrealdb import AsyncSurreal, RecordID

from amem_db.constants import HNSW_EFC, HNSW_M

EFS = (64, 128, 256, 384, 512, 768)
KS = (10, 256)


def exact(vecs: np.ndarray, qv: np.ndarray, k: int) -> list[set[int]]:
    v = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    q = qv / np.linalg.norm(qv, axis=1, keepdims=True)
    return [set(np.argsort(-row)[:k].tolist()) for row in q @ v.T]


async def sweep(db: Any, qv: np.ndarray, truth: dict[int, list[set[int]]], label: str, efs: tuple[int, ...]) -> list[dict[str, Any]]:
    out = []
    for q in qv[:5].tolist():  # warm-up, untimed
        await db.query(f"SELECT id FROM c WHERE e <|10,{efs[0]}|> $q", {"q": q})
    for k in KS:
        for ef in efs:
            if ef < k:
                continue
            hits, times = 0, []
            for q, t in zip(qv.tolist(), truth[k]):
                s = time.perf_counter()
                (rows,) = await db.query(f"SELECT id FROM c WHERE e <|{k},{ef}|> $q", {"q": q})
                times.append((time.perf_counter() - s) * 1000)
                hits += len({int(r["id"].id[1:]) for r in rows} & t)
            row = {"graph": label, "k": k, "ef": ef, "recall": round(hits / (k * len(truth[k])), 4),
                   "p50_ms": round(statistics.median(times), 2)}
            print(json.dumps(row), flush=True)
            out.append(row)
    return out


async def main() -> None:
    data = Path(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 10000
    meta = json.loads((data / "passages.json").read_text())
    keep = [i for i, p in enumerate(meta["passages"]) if p["doc"].startswith("scifact-")][:n]
    vecs = np.load(data / "vectors.npy")[keep]
    qv = np.load(data / "query_vectors.npy")
    print(f"{len(keep)} SciFact passages, {len(qv)} queries, M {HNSW_M} EFC {HNSW_EFC}", flush=True)
    truth = {k: exact(vecs, qv, k) for k in KS}
    times = []
    vn = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    for q in qv:
        s = time.perf_counter()
        np.argsort(-(vn @ (q / np.linalg.norm(q))))[:256]
        times.append((time.perf_counter() - s) * 1000)
    print(json.dumps({"graph": "numpy exact", "p50_ms": round(statistics.median(times), 2)}), flush=True)
    try:
        import hnswlib

        for ef in EFS:
            idx = hnswlib.Index(space="cosine", dim=vecs.shape[1])
            idx.init_index(max_elements=len(vecs), ef_construction=HNSW_EFC, M=HNSW_M, random_seed=7)
            idx.add_items(vecs, np.arange(len(vecs)))
            idx.set_ef(ef)
            for k in KS:
                if ef < k:
                    continue
                s = time.perf_counter()
                labels, _ = idx.knn_query(qv, k=k)
                ms = (time.perf_counter() - s) * 1000 / len(qv)
                rec = sum(len(set(row.tolist()) & t) for row, t in zip(labels, truth[k])) / (k * len(qv))
                print(json.dumps({"graph": "hnswlib", "k": k, "ef": ef, "recall": round(rec, 4), "mean_ms": round(ms, 3)}), flush=True)
    except ImportError:
        print(json.dumps({"graph": "hnswlib", "note": "not installed"}), flush=True)
    if "--peers-only" in sys.argv:
        os._exit(0)
    db = AsyncSurreal("mem://")
    await db.connect()
    await db.use("m", "m")
    await db.query(f"DEFINE TABLE c SCHEMALESS; DEFINE INDEX ce ON c FIELDS e HNSW DIMENSION {vecs.shape[1]} "
                   f"DIST COSINE TYPE F32 EFC {HNSW_EFC} M {HNSW_M};")
    rows = [{"id": RecordID("c", f"p{i}"), "e": v} for i, v in enumerate(vecs.tolist())]
    for i in range(0, len(rows), 200):
        await db.query("INSERT INTO c $rows RETURN NONE", {"rows": rows[i:i + 200]})
    await sweep(db, qv, truth, "pending queue", (64, 512))
    s = time.perf_counter()
    await db.query("REBUILD INDEX ce ON c")
    print(json.dumps({"graph": "rebuild", "seconds": round(time.perf_counter() - s, 1)}), flush=True)
    await sweep(db, qv, truth, "built graph", EFS)
    await db.close()
    os._exit(0)  # docs/ENGINE-ISSUES.md #4


if __name__ == "__main__":
    asyncio.run(main())
