"""A disk cache of embeddings keyed by (model name, SHA-256 of the text).

Embedding dominates ingestion on CPU (minutes for a few thousand passages),
so re-ingesting or re-running an evaluation must not pay again. Stdlib
sqlite3, float32 blobs, WAL mode so two processes can share one file.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
import threading
import time
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from .base import Embedder, is_symmetric

_EmbedFn = Callable[[list[str]], list[list[float]]]

CACHE_DIR_ENV = "AMEM_CACHE_DIR"
CACHE_FILE = "embeddings.sqlite"
# SQLite's default cap on bound parameters is 32766 (999 before 3.32).
_LOOKUP_CHUNK = 500
# A writer waits this long for another process's write to finish.
_BUSY_TIMEOUT_MS = 30_000
# Misses go to the model and then to disk this many at a time, so a long
# ingest that is interrupted keeps what it has already paid for.
_STORE_CHUNK = 128

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embedding (
    model       TEXT NOT NULL,   -- embedder name (+ '#query' for asymmetric models)
    text_sha256 BLOB NOT NULL,   -- 32 raw bytes
    vector      BLOB NOT NULL,   -- little-endian float32
    PRIMARY KEY (model, text_sha256)
) WITHOUT ROWID
"""


def default_cache_path() -> Path:
    """``$AMEM_CACHE_DIR/embeddings.sqlite``, else ``~/.cache/amem-db/embeddings.sqlite``."""
    directory = os.environ.get(CACHE_DIR_ENV)
    base = Path(directory).expanduser() if directory else Path.home() / ".cache" / "amem-db"
    return base / CACHE_FILE


@dataclass(frozen=True)
class CacheStats:
    """Counts since the wrapper was made (or last reset). ``misses`` is the
    number of texts the model actually embedded, in ``model_seconds``."""

    hits: int = 0
    misses: int = 0
    model_seconds: float = 0.0

    @property
    def texts_per_second(self) -> float | None:
        """Model throughput on cache misses (None before any miss)."""
        if not self.misses or self.model_seconds <= 0:
            return None
        return self.misses / self.model_seconds

    @property
    def hit_rate(self) -> float | None:
        total = self.hits + self.misses
        return self.hits / total if total else None


def _text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def _to_blob(vector: list[float]) -> bytes:
    packed = array("f", vector)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def _from_blob(blob: bytes) -> list[float]:
    packed = array("f")
    packed.frombytes(blob)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tolist()


def _execute_retrying_busy(connection: sqlite3.Connection, statement: str) -> None:
    """Run a setup statement, retrying while another process holds the lock.

    SQLite returns "database is locked" at once, without calling the busy
    handler, when two processes switch a new file to WAL at the same moment
    (seen in CI: two evals starting together), so busy_timeout is not enough.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    delay = 0.01
    while True:
        try:
            connection.execute(statement)
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) and "busy" not in str(error):
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


class EmbeddingStore:
    """The SQLite file. Thread-safe (one connection behind a lock); several
    processes may use the same file at once (WAL + busy timeout)."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Autocommit mode: we open write transactions ourselves (below).
            connection = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_MS / 1000,
                isolation_level=None, check_same_thread=False)
            connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            # WAL: readers never block the writer and vice versa, so two
            # processes (CLI + server, or two evals) can share the cache.
            # A cache can lose its last write on power loss; it cannot corrupt.
            for statement in ("PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", _SCHEMA):
                _execute_retrying_busy(connection, statement)
            self._connection = connection
        return self._connection

    def get_many(self, model: str, keys: list[bytes]) -> dict[bytes, list[float]]:
        found: dict[bytes, list[float]] = {}
        with self._lock:
            connection = self._connect()
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start:start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = connection.execute(
                    f"SELECT text_sha256, vector FROM embedding "
                    f"WHERE model = ? AND text_sha256 IN ({marks})", [model, *chunk])
                found.update((key, _from_blob(blob)) for key, blob in rows)
        return found

    def put_many(self, model: str, items: list[tuple[bytes, list[float]]]) -> None:
        if not items:
            return
        with self._lock:
            connection = self._connect()
            # BEGIN IMMEDIATE takes the write lock up front, so a concurrent
            # writer waits on busy_timeout instead of failing at commit.
            connection.execute("BEGIN IMMEDIATE")
            try:
                # OR IGNORE: another process may have stored the same text
                # meanwhile; models are deterministic, so either copy is right.
                connection.executemany(
                    "INSERT OR IGNORE INTO embedding (model, text_sha256, vector) VALUES (?, ?, ?)",
                    [(model, key, _to_blob(vector)) for key, vector in items])
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise

    def count(self, model: str | None = None) -> int:
        with self._lock:
            connection = self._connect()
            if model is None:
                return int(connection.execute("SELECT count(*) FROM embedding").fetchone()[0])
            return int(connection.execute(
                "SELECT count(*) FROM embedding WHERE model = ?", [model]).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


class CachedEmbedder:
    """Wraps any Embedder; a text already embedded by the same model is read
    from disk and never reaches the model again. Same protocol as the inner
    embedder, plus ``stats``."""

    def __init__(self, inner: Embedder, path: str | os.PathLike[str] | None = None,
                 *, store: EmbeddingStore | None = None):
        self.inner = inner
        self.store = store if store is not None else EmbeddingStore(path)
        self._stats_lock = threading.Lock()
        self._stats = CacheStats()

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, path={str(self.store.path)!r})"

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def symmetric(self) -> bool:
        return is_symmetric(self.inner)

    @property
    def stats(self) -> CacheStats:
        with self._stats_lock:
            return self._stats

    def reset_stats(self) -> None:
        with self._stats_lock:
            self._stats = CacheStats()

    def close(self) -> None:
        self.store.close()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embed(list(texts), self.inner.name, self.inner.embed_documents)

    def embed_query(self, text: str) -> list[float]:
        # An asymmetric model (e5: "query: " vs "passage: ") gives a query a
        # different vector than the same text as a document: separate keys.
        model_key = self.inner.name if self.symmetric else f"{self.inner.name}#query"
        return self._embed([text], model_key, lambda one: [self.inner.embed_query(one[0])])[0]

    def _embed(self, texts: list[str], model_key: str, embed_fn: _EmbedFn) -> list[list[float]]:
        keys = [_text_key(text) for text in texts]
        cached = self.store.get_many(model_key, list(dict.fromkeys(keys)))
        missing = list(_first_text_per_missing_key(texts, keys, cached).items())
        self._count(hits=len(texts) - len(missing), misses=0)
        computed: dict[bytes, list[float]] = {}
        for start in range(0, len(missing), _STORE_CHUNK):
            chunk = missing[start:start + _STORE_CHUNK]
            fresh = self._run_model(embed_fn, [text for _, text in chunk])
            done = [(key, vector) for (key, _), vector in zip(chunk, fresh)]
            self.store.put_many(model_key, done)
            computed.update(done)
            self._count(hits=0, misses=len(chunk))
        return [cached[key] if key in cached else computed[key] for key in keys]

    def _run_model(self, embed_fn: _EmbedFn, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        started = time.perf_counter()
        vectors = embed_fn(texts)
        elapsed = time.perf_counter() - started
        if len(vectors) != len(texts):
            raise RuntimeError(f"{self.inner.name} returned {len(vectors)} vectors for {len(texts)} texts")
        with self._stats_lock:
            self._stats = replace(self._stats, model_seconds=self._stats.model_seconds + elapsed)
        # Round-trip through float32 so a miss returns exactly what a later hit will.
        return [_from_blob(_to_blob(vector)) for vector in vectors]

    def _count(self, hits: int, misses: int) -> None:
        with self._stats_lock:
            self._stats = replace(self._stats, hits=self._stats.hits + hits,
                                  misses=self._stats.misses + misses)


def _first_text_per_missing_key(texts: list[str], keys: list[bytes], cached: Mapping[bytes, object]) -> dict[bytes, str]:
    """Texts to embed: each uncached text once, even if repeated in the batch."""
    missing: dict[bytes, str] = {}
    for text, key in zip(texts, keys):
        if key not in cached and key not in missing:
            missing[key] = text
    return missing
