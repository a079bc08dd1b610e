"""The evaluation's database per dataset: built once through the product's
ingest path, cached by a key over the corpus, the embedder, the title handling
and the SurrealQL that decides which rows are stored."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .datasets import Dataset

Progress = Callable[[str, dict[str, Any]], None]
TITLE_MODES = ("separate", "prepend")
DEFAULT_DB_DIR = Path("results") / ".db"
# Which rendered SurrealQL keys the cached database: migrations (tables and
# fields), surql/1xx-2xx (scope closure, chunking, RAKE, ingestion) and the
# events that write the BM25 copies (040, 045: titles), which decide what rows
# are stored. The rest of surql/0xx (analyzer and indexes) and 3xx+ (fusion,
# query, graph) is re-applied by the migrate step on every run, and the engine
# rebuilds a redefined index from the stored rows, so it is not.
_DATA_SHAPING_KEYS = ("1", "2", "040", "045")


def schema_checksum() -> str:
    """SHA-256 over the rendered SurrealQL that shapes stored data (default settings)."""
    from amem_db.migrator import bundled_dir, render_dir
    from amem_db.settings import SchemaSettings

    settings = SchemaSettings.model_validate({})  # the defaults
    scripts = render_dir(bundled_dir("migrations"), "migration", {})
    scripts += [s for s in render_dir(bundled_dir("surql"), "desired", settings.model_dump() | {"hnsw_ef": settings.hnsw_ef})
                if s.key.startswith(_DATA_SHAPING_KEYS)]
    h = hashlib.sha256()
    for s in scripts:
        h.update(f"{s.kind}/{s.key}={s.checksum}\n".encode())
    return h.hexdigest()

def corpus_key(corpus_path: Path, embedder_name: str, title_mode: str) -> str:
    h = hashlib.sha256()
    with open(corpus_path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    h.update(f"\nembedder={embedder_name}\ntitle={title_mode}\nschema={schema_checksum()}\n".encode())
    from amem_db.constants import EMBED_CONTEXT

    if EMBED_CONTEXT:  # the chunk vectors see title + heading (amem_db/ingest.py embedding_text)
        h.update(b"embed_context=1\n")
    return h.hexdigest()

@dataclass
class Prepared:
    mem: Any
    url: str
    key: str
    cached: bool
    ingest: dict[str, Any]
    db_path: Path | None = None

def corpus_items(ds: Dataset, title_mode: str) -> list[Any]:
    """The product's JSONL items (source ``path#_id``); ``prepend`` puts the title
    in front of the body (title + blank line + text) so it is chunked, embedded
    and BM25-indexed like the body."""
    from amem_db.ingest import items_from_file

    items = items_from_file(ds.corpus_path.resolve())
    if title_mode == "prepend":
        for it in items:
            doc = it.doc
            if doc.get("sections") or doc.get("segments"):
                raise ValueError("title prepend needs documents without sections (JSONL lines have none)")
            if doc.get("title"):
                doc["text"] = f"{doc['title']}\n\n{doc['text']}" if doc["text"] else doc["title"]
    return items

@dataclass
class Opened:
    """An eval database opened and migrated; ``marker`` exists once it is complete."""

    conn: Any
    target: Any
    db_path: Path | None
    marker: Path | None

    @property
    def complete(self) -> bool:
        return self.marker is not None and self.marker.exists()

async def open_eval_database(name: str, key: str, embedder: Any, *, url: str | None = None,
                             db_dir: Path = DEFAULT_DB_DIR, fresh: bool = False) -> Opened:
    """Open (creating or rebuilding when needed) and migrate the database of one
    collection, shared by both collection kinds.

    Without ``url``: ``surrealkv://<db_dir>/<name>-<key16>``, reused when its
    ``.done.json`` marker exists (written only after a complete ingest); one
    without it is deleted and rebuilt. With a ``url`` (``mem://`` in tests, or a
    server): namespace ``amem_eval``, database ``<name>_<key12>``."""
    from amem_db.connection import Target, close_quietly, open_connection

    db_path = marker = None
    if url is None:
        db_dir = Path(db_dir).resolve()
        db_path = db_dir / f"{name}-{key[:16]}"
        marker = db_dir / f"{name}-{key[:16]}.done.json"
        target = Target(url=f"surrealkv://{db_path}", ns="amem", db="eval")
        if fresh or (db_path.exists() and not marker.exists()):
            if db_path.exists():
                # an unfinished database may belong to a run still ingesting: opening it
                # raises DatabaseInUse then, rather than deleting files under that run
                await close_quietly(await open_connection(target))
            shutil.rmtree(db_path, ignore_errors=True)
            marker.unlink(missing_ok=True)
    else:
        target = Target(url=url, ns="amem_eval", db=f"{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{key[:12]}")
    conn = await open_migrated(target, {"embedding_dim": embedder.dimension})
    return Opened(conn, target, db_path, marker)

async def open_migrated(target: Any, settings: dict[str, Any] | None = None) -> Any:
    """A connection to ``target`` migrated to this release, the traces of earlier runs
    dropped (they would only grow the database and its scans); closed again on failure."""
    from amem_db.connection import close_quietly, open_connection
    from amem_db.migrator import Migrator

    conn = await open_connection(target)
    try:
        await Migrator(conn).migrate(settings)
        await conn.query("DELETE retrieval_trace")
    except BaseException:
        await close_quietly(conn)
        raise
    return conn

async def open_eval_url(url: str, embedder: Any | None = None) -> Any:
    """A Memory on an eval database named by URL (the ``--url`` of the measurement scripts:
    usually the ``surrealkv://`` path an earlier ``amem-db eval`` built), migrated to this
    release, its old traces dropped; ``embedder`` defaults to the cached default model."""
    from amem_db.client import Memory
    from amem_db.connection import Target
    from amem_db.embedding import CachedEmbedder, get_embedder

    conn = await open_migrated(Target(url=url, ns="amem", db="eval"))
    return Memory(conn, embedder=embedder or CachedEmbedder(get_embedder(None)))

async def prepare_database(ds: Dataset, embedder: Any, *, title_mode: str = "separate", url: str | None = None,
                           db_dir: Path = DEFAULT_DB_DIR, fresh: bool = False, batch_size: int = 16,
                           progress: Progress | None = None) -> Prepared:
    """Open (or build) the dataset's database and return a Memory on it
    (``open_eval_database``); with a ``url``, ingestion is idempotent there
    (unchanged documents are skipped by source + content hash)."""
    from amem_db.client import Memory
    from amem_db.connection import close_quietly
    from amem_db.embedding import CachedEmbedder
    from amem_db.errors import AmemError
    from amem_db.ingest import ingest_items
    from amem_db.maintain import maintain as maintain_indexes

    if title_mode not in TITLE_MODES:
        raise ValueError(f"title mode must be one of {', '.join(TITLE_MODES)}")
    cached_embedder = embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)
    key = corpus_key(ds.corpus_path, cached_embedder.name, title_mode)
    opened = await open_eval_database(ds.name, key, cached_embedder, url=url, db_dir=db_dir, fresh=fresh)
    conn, target, db_path, marker = opened.conn, opened.target, opened.db_path, opened.marker
    try:
        mem = Memory(conn, embedder=cached_embedder, target=target)
        if opened.complete and marker is not None:
            ingest = json.loads(marker.read_text())
            # what a deployment's maintain would have done since (a no-op when nothing is due;
            # a database cached before the eval maintained gets its HNSW graphs and BM25 lists)
            await maintain_indexes(conn, auto=True)
            return Prepared(mem, target.url, key, True, ingest, db_path)
        items = corpus_items(ds, title_mode)
        # the engine refuses an empty document (Cranfield 471 and 995 have no text):
        # it can never be retrieved, so it is left out and counted
        empty = [it.name for it in items if not (it.doc.get("text") or "").strip()]
        items = [it for it in items if (it.doc.get("text") or "").strip()]
        if progress:
            progress("documents", {"total": len(items)})
        cached_embedder.reset_stats()
        report = await ingest_items(conn, mem.embedder, items, batch_size=batch_size, progress=progress)
        # as `amem-db ingest` ends (amem_db/ingest.py ingest_paths): the HNSW rebuilds and the
        # BM25 champion lists when due, so the eval scores the product's default read path
        report.maintenance = await maintain_indexes(conn, auto=True)
        if report.failed:
            first = report.failed[0]
            raise AmemError(f"{len(report.failed)} of {len(items)} documents failed to ingest; first: {first.name}: {first.error}",
                            code="ingest_failed")
        stats = cached_embedder.stats
        ingest = {
            "documents": len(items),
            "skipped_empty": empty,
            "added": report.count("added"),
            "unchanged": report.count("unchanged"),
            "chunks": report.chunks,
            "keywords": report.keywords,
            "embedded_texts": report.embedded_texts,
            "seconds": round(report.seconds, 2),
            "embed_seconds": round(report.embed_seconds, 2),
            "engine_seconds": round(report.engine_seconds, 2),
            "embedding_cache_hits": stats.hits,
            "embedding_cache_misses": stats.misses,
            "embedder": cached_embedder.name,
            "title_mode": title_mode,
            "completed_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        if marker is not None:
            marker.write_text(json.dumps(ingest, indent=2))
        return Prepared(mem, target.url, key, False, ingest, db_path)
    except BaseException:
        await close_quietly(conn)
        raise
