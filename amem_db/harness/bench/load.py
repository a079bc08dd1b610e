"""The bench's bulk load: plain ``INSERT INTO document`` / ``INSERT INTO chunk``
batches (same schema, both indexes), then the HNSW rebuild an ingest of files
does at its end (``amem_db.maintain``).

On ``surrealkv://`` the embedded engine hangs once ~1.7 GB of write-ahead log
accumulates in one open (docs/ENGINE-ISSUES.md #8: 90,400 rows every time); the
loader closes and reopens the engine between batches once the log passes
``WAL_REOPEN_BYTES``, as ``Memory.reopen_if_wal_full`` does for an ingest, and
reopens once more after the rebuild, so the timed queries run on a store opened
after its writes (as a deployment's would; in the process that just rebuilt,
queries were 2-3x slower: issue 14)."""

from __future__ import annotations

import time
from typing import Any

from amem_db.connection import WAL_REOPEN_BYTES, Target, close_quietly, open_connection, wal_bytes
from amem_db.wire import Vector  # vectors packed, as the product's writes send them (amem_db/wire.py)


class Reopener:
    """One embedded target's connection, reopened when its WAL is full."""

    def __init__(self, target: Target, conn: Any) -> None:
        self.target = target
        self.conn = conn
        self.reopens = 0
        self.reopen_seconds = 0.0

    @property
    def on_disk(self) -> bool:
        return self.target.embedded and not self.target.url.startswith(("mem:", "memory:"))

    async def reopen(self) -> Any:
        t = time.perf_counter()
        await close_quietly(self.conn)
        self.conn = await open_connection(self.target)
        self.reopens += 1
        self.reopen_seconds += time.perf_counter() - t
        return self.conn

    async def if_wal_full(self) -> Any:
        if self.on_disk and wal_bytes(self.target.url) > WAL_REOPEN_BYTES:
            await self.reopen()
        return self.conn


def _rid(table: str, key: Any) -> Any:
    from surrealdb import RecordID

    return RecordID(table, key)


def document_rows(rows: list[dict[str, Any]], vecs: Any) -> list[dict[str, Any]]:
    """One document per distinct ``doc``, with the summary embedding ingest computes
    (normalised mean of its chunk vectors), so hybrid_graph's document_summary signal has data.
    The vector stays a float32 array until its row is sent (``sendable``): as a list of Python
    floats it takes ~12 KB, and at 100k the 50k documents' lists were ~0.6 GB of the worker's
    peak RSS, held through the whole load (issue 25)."""
    import numpy as np

    docs: dict[str, dict[str, Any]] = {}
    sums: dict[str, Any] = {}
    for r, v in zip(rows, vecs):
        d = docs.setdefault(r["doc"], {"id": r["doc"], "title": r["title"], "source": r["source"], "n": 0})
        d["n"] += 1
        sums[r["doc"]] = sums[r["doc"]] + v if r["doc"] in sums else v.astype(np.float64)
    return [{"id": _rid("document", d["id"]), "title": d["title"], "source": d["source"], "source_id": d["id"],
             "mime_type": "application/jsonl", "content_hash": d["id"], "text": "", "status": "ready",
             "chunk_count": d["n"], "scopes": [],
             "summary_embedding": (sums[d["id"]] / np.linalg.norm(sums[d["id"]])).astype(np.float32)}
            for d in docs.values()]


def sendable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of ``document_rows`` as the engine takes them: each vector a packed ``Vector``."""
    return [{k: Vector(v.tolist()) if hasattr(v, "tolist") else v for k, v in r.items()} for r in rows]


def chunk_row(r: dict[str, Any], vec: Any) -> dict[str, Any]:
    # a string key: HNSW KNN on 3.2.4 returns no rows for array/object record ids
    # (docs/ENGINE-ISSUES.md #9), and the product's ingest uses array ids
    return {"id": _rid("chunk", f"{r['doc']}_{r['position']}"), "document": _rid("document", r["doc"]), "text": r["text"],
            "position": r["position"], "char_start": r["char_start"], "char_end": r["char_end"],
            "embedding": Vector(vec.tolist()), "mime_type": "application/jsonl", "scopes": []}


async def bulk_load(db: Reopener, rows: list[dict[str, Any]], vecs: Any, batch: int) -> dict[str, Any]:
    """Documents, then chunks in batches of ``batch``, then every HNSW index rebuilt; the ingest figures."""
    n = len(rows)
    t0 = time.perf_counter()
    doc_rows = document_rows(rows, vecs)
    for i in range(0, len(doc_rows), 500):
        await (await db.if_wal_full()).query("INSERT INTO document $rows RETURN NONE", {"rows": sendable(doc_rows[i:i + 500])})
    n_docs = len(doc_rows)
    del doc_rows
    doc_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    marks = []
    for i in range(0, n, batch):
        part = [chunk_row(rows[j], vecs[j]) for j in range(i, min(i + batch, n))]
        await (await db.if_wal_full()).query("INSERT INTO chunk $rows RETURN NONE", {"rows": part})
        if (i // batch) % max(1, (n // batch) // 10) == 0:
            marks.append((i + len(part), round(time.perf_counter() - t0, 2)))
    chunk_seconds = time.perf_counter() - t0
    # fold the loaded vectors into the HNSW graphs, as an ingest of files does at its end
    # (the embedded engine never does it by itself: docs/ENGINE-ISSUES.md #19)
    t0 = time.perf_counter()
    rebuilt = await rebuild_each(db)
    rebuild_seconds = time.perf_counter() - t0
    if db.on_disk:
        await db.reopen()
    return {"documents": n_docs, "chunks": n, "document_seconds": round(doc_seconds, 2),
            "chunk_seconds": round(chunk_seconds, 2), "chunks_per_s": n / chunk_seconds,
            "progress": marks, "embedding_seconds": 0.0,
            "rebuild": rebuilt, "rebuild_seconds": round(rebuild_seconds, 2),
            "reopens": db.reopens, "reopen_seconds": round(db.reopen_seconds, 2),
            "note": "bulk INSERT of precomputed vectors: no embedding time"}


async def rebuild_each(db: Reopener) -> dict[str, float | None]:
    """Every HNSW index with unbuilt rows rebuilt, one at a time, the WAL checked before
    each: one REBUILD of 100k vectors wrote ~650 MB of WAL on surrealkv, so two in one
    open came near the ~1.7 GB at which 3.2.4 hangs (docs/ENGINE-ISSUES.md #8). Then the
    BM25 champion lists when due, as the maintain at the end of an ingest builds them
    (amem_db/bm25lists.py: from 2,000 passages), under the key ``bm25_lists``."""
    from amem_db import bm25lists
    from amem_db.maintain import maintain as maintain_indexes
    from amem_db.maintain import status

    out: dict[str, float | None] = {}
    for s in await status(db.conn):
        if s.unbuilt > 0:
            report = await maintain_indexes(await db.if_wal_full(), auto=False, indexes=[s.index])
            out |= {r.index: r.seconds for r in report.rebuilt}
    lists = await bm25lists.refresh(await db.if_wal_full(), auto=True)
    if lists is not None:
        out["bm25_lists"] = lists["seconds"]
    return out


def chunk_key(cid: Any) -> str:
    """``chunk:⟨doc_pos⟩`` (a RecordID or its text) -> ``doc_pos``."""
    key = cid.id if hasattr(cid, "id") else str(cid).split(":", 1)[-1].strip("⟨⟩`")
    return str(key)
