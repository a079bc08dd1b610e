"""The benchmark's data: passages cut by the product's chunker from the shared
collections, their vectors and the queries, cached on disk; sizes past the real
passages repeat them with fresh ids and slightly perturbed vectors."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from ..paths import datasets_root, require_collections

DEFAULT_DATASETS = ("scifact", "cranfield", "cisi")
DATA_VERSION = 1
PERTURB_NORM = 0.1

Progress = Callable[[str], None]
T = TypeVar("T")


def data_paths(data_dir: Path) -> dict[str, Path]:
    return {"meta": data_dir / "passages.json", "vectors": data_dir / "vectors.npy",
            "qvectors": data_dir / "query_vectors.npy"}


async def chunk_documents(docs: list[dict[str, Any]], progress: Progress | None) -> list[dict[str, Any]]:
    """Cut bodies with the product's chunker (fn::amem::chunk::split) on a mem:// engine."""
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.db import call, call_each
    from amem_db.migrator import Migrator

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
               data_root: Path | None = None, queries_per_dataset: int = 40,
               progress: Progress | None = None) -> dict[str, Any]:
    """Passages, their vectors and the bench queries, cached in ``data_dir``."""
    import numpy as np

    from amem_db.embedding import CachedEmbedder

    paths = data_paths(data_dir)
    if paths["meta"].exists() and paths["vectors"].exists() and paths["qvectors"].exists():
        meta: dict[str, Any] = json.loads(paths["meta"].read_text())
        if meta.get("version") == DATA_VERSION and meta.get("embedder") == embedder.name:
            return meta
    root = require_collections(data_root or datasets_root(), datasets)  # only a cold cache reads them
    data_dir.mkdir(parents=True, exist_ok=True)
    per_ds: list[list[dict[str, Any]]] = []
    queries: list[str] = []
    for name in datasets:
        ds_docs = []
        corpus = root / name / "corpus.jsonl"
        with open(corpus) as fh:
            for line in fh:
                if line.strip():
                    o = json.loads(line)
                    if (o.get("text") or "").strip():
                        ds_docs.append({"key": f"{name}-{o['_id']}", "title": o.get("title") or None,
                                        "source": f"{corpus}#{o['_id']}", "text": o["text"]})
        per_ds.append(ds_docs)
        with open(root / name / "queries.jsonl") as fh:
            qs = [json.loads(line)["text"] for line in fh if line.strip()]
        queries += qs[:queries_per_dataset]
    # interleave documents round-robin so every size holds all three collections
    docs = [d for group in roundrobin(per_ds) for d in group]
    passages = asyncio.run(chunk_documents(docs, progress))
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


def roundrobin(groups: list[list[T]]) -> Iterator[list[T]]:
    """Row i: the i-th element of every group that has one."""
    longest = max(len(g) for g in groups)
    for i in range(longest):
        yield [g[i] for g in groups if i < len(g)]


def corpus_of(data_dir: Path, n: int) -> tuple[list[dict[str, Any]], Any, list[str], Any, dict[str, Any]]:
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
