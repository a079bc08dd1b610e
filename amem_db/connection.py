"""Where the database is, and opening it.

One place resolves the target: explicit options, else ``AMEM_*`` environment
variables, else the embedded default in a project-local folder, so a newcomer
needs no server at all. Every failure to open becomes one typed error whose
message says what to do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from surrealdb import AsyncSurreal

from .errors import (
    AuthenticationFailed,
    ConnectionFailed,
    DatabaseInUse,
    EngineTooOld,
    UnknownUrlScheme,
)

# Embedded engines run in-process; remote ones go through the same SDK.
EMBEDDED_SCHEMES = ("mem", "memory", "surrealkv", "surrealkv+versioned", "file")
REMOTE_SCHEMES = ("ws", "wss", "http", "https")

DEFAULT_DATA_DIR = Path(".amem") / "data"
# Chosen by the soak test (docs/BACKENDS.md): file:// is surrealkv under another
# name and rocksdb is not in this build; versioned surrealkv (time travel) costs
# ~35% more disk, so it is opt-in: --url surrealkv+versioned://PATH.
DEFAULT_SCHEME = "surrealkv"

# surrealkv on 3.2.4 hangs once ~1.7 GB of write-ahead log accumulates in one
# open (docs/BACKENDS.md, docs/ENGINE-ISSUES.md #8); closing flushes it. Bulk
# ingest and the bench's loads reopen the engine when the WAL passes this size.
# The engine also flushes no memtable while open, so everything written since the
# open stays in memory (~13 KB a vector row, ~27 KB a row with a full-text entry;
# ENGINE-ISSUES #37, not settable from Python): AMEM_WAL_REOPEN_MB=128 cut the 10k
# bench load's peak RSS 1,044 -> 733 MB, but each reopen leaves one more SSTable and
# hybrid queries then read ~11% slower (83/87 -> 95/95 ms p50 at 10k, docs/BENCHMARKS.md
# "Peak RSS (session 13)"), so the default keeps the hang's margin and reads first.
WAL_REOPEN_BYTES = int(os.environ.get("AMEM_WAL_REOPEN_MB") or 700) * 1024 * 1024
DEFAULT_NS = "amem"
DEFAULT_DB = "main"

# How often an on-disk embedded store syncs its write-ahead log to disk: the engine's own
# default, every commit, unless the URL (`?sync=every|never|<duration>`) or AMEM_SYNC says
# otherwise (the URL wins). A new full-text row commits and fsyncs a transaction of its own
# (docs/ENGINE-ISSUES.md #41), which holds back batched writes: `1s` took them 205 -> 279
# facts/s at 10k, but made the vector leg ~2x and the engine's KNN ~4x slower at 100k chunks
# (hybrid 92 -> 167 ms p50), so it is not the default (docs/BENCHMARKS.md
# "Syncing the write-ahead log"). Every commit reaches the log file before it returns in every mode: a
# killed process loses nothing it acknowledged (tests/test_facts_batch.py).
ON_DISK_SCHEMES = ("surrealkv", "surrealkv+versioned", "file")

# Oldest engine we support: 3.0 brought FULLTEXT ... BM25, search::rrf, closures
# that see outer variables, ORDER BY with GROUP BY (all relied on).
MIN_ENGINE = (3, 0, 0)


@dataclass(frozen=True)
class Target:
    url: str
    ns: str = DEFAULT_NS
    db: str = DEFAULT_DB
    user: str | None = None
    password: str | None = None
    # NAME:SECRET from `amem-db grant`: sign in as that record user of the
    # `amem` record access (scoped reads/writes enforced by the database)
    key: str | None = field(default=None, repr=False)

    @property
    def scheme(self) -> str:
        return self.url.split("://", 1)[0].lower() if "://" in self.url else self.url

    @property
    def embedded(self) -> bool:
        return self.scheme in EMBEDDED_SCHEMES

    def describe(self) -> str:
        return f"{self.url} (ns={self.ns}, db={self.db})"

    def with_database(self, ns: str, db: str) -> Target:
        return replace(self, ns=ns, db=db)


def default_url(cwd: Path | None = None) -> str:
    path = ((cwd or Path.cwd()) / DEFAULT_DATA_DIR).resolve()
    return f"{DEFAULT_SCHEME}://{path}"


def resolve_target(
    url: str | None = None,
    ns: str | None = None,
    db: str | None = None,
    user: str | None = None,
    password: str | None = None,
    key: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Target:
    """Options win over ``AMEM_URL/NS/DB/USER/PASS/KEY``, which win over defaults."""
    env = os.environ if env is None else env
    target = Target(
        url=url or env.get("AMEM_URL") or default_url(cwd),
        ns=ns or env.get("AMEM_NS") or DEFAULT_NS,
        db=db or env.get("AMEM_DB") or DEFAULT_DB,
        user=user or env.get("AMEM_USER") or None,
        password=password or env.get("AMEM_PASS") or None,
        key=key or env.get("AMEM_KEY") or None,
    )
    check_scheme(target.url)
    return target


def engine_url(url: str, env: Mapping[str, str] | None = None) -> str:
    """The URL the engine opens: an on-disk embedded store gets ``sync=$AMEM_SYNC`` when that
    is set and the URL names no sync of its own; otherwise the URL as given."""
    env = os.environ if env is None else env
    scheme, _, rest = url.partition("://")
    query = rest.partition("?")[2]
    sync = env.get("AMEM_SYNC")
    if not sync or scheme.lower() not in ON_DISK_SCHEMES or any(p.split("=")[0] == "sync" for p in query.split("&") if p):
        return url
    return f"{url}{'&' if query else ('' if url.endswith('?') else '?')}sync={sync}"


def check_scheme(url: str) -> None:
    scheme = url.split("://", 1)[0].lower() if "://" in url else url
    if scheme not in EMBEDDED_SCHEMES + REMOTE_SCHEMES:
        raise UnknownUrlScheme(
            f"unknown database URL scheme {scheme!r} in {url!r}: use one of "
            "mem://, surrealkv://PATH, surrealkv+versioned://PATH, file://PATH "
            "(embedded) or ws://, wss://, http://, https:// (a SurrealDB server)"
        )


def parse_engine_version(text: str) -> tuple[int, int, int]:
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    if not m:
        raise EngineTooOld(f"could not read the engine version from {text!r}")
    return int(m[1]), int(m[2]), int(m[3])


def check_engine_version(text: str) -> tuple[int, int, int]:
    version = parse_engine_version(text)
    if version < MIN_ENGINE:
        need = ".".join(map(str, MIN_ENGINE))
        raise EngineTooOld(
            f"SurrealDB {text} is older than the supported range (>= {need}): "
            "upgrade the server, or for the embedded engine reinstall amem-db "
            "so that surrealdb-embedded 3.x is used"
        )
    return version


def _ensure_data_dir(url: str) -> None:
    path = data_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)


def data_path(url: str) -> Path | None:
    """The folder of an on-disk embedded database, else None."""
    scheme, _, rest = url.partition("://")
    if scheme not in ("surrealkv", "surrealkv+versioned", "file") or not rest:
        return None
    return Path(rest.split("?")[0])


def wal_bytes(url: str) -> int:
    path = data_path(url)
    if path is None or not (path / "wal").is_dir():
        return 0
    return sum(f.stat().st_size for f in (path / "wal").iterdir() if f.is_file())


def _holder_pid(url: str) -> str:
    path = data_path(url)
    try:
        pid = (path / "LOCK").read_text().strip() if path else ""
    except OSError:
        pid = ""
    return f" (pid {pid})" if pid.isdigit() else ""


def _open_error(target: Target, exc: BaseException) -> Exception:
    text = str(exc)
    low = text.lower()
    if "already locked" in low or ("lock" in low and "locked" in low):
        return DatabaseInUse(
            f"the embedded database {target.url} is in use by another process{_holder_pid(target.url)}: "
            "stop that process, or run a server (`surreal start`) and connect "
            "both through it with --url ws://..."
        )
    if target.embedded:
        return ConnectionFailed(f"could not open the embedded database {target.url}: {text}")
    return ConnectionFailed(
        f"could not reach SurrealDB at {target.url}: {text.splitlines()[0] if text else type(exc).__name__}. "
        "Is the server running? Check --url / AMEM_URL."
    )


async def open_connection(target: Target) -> Any:
    """Open, sign in (remote), select ns/db and check the engine version.

    Returns the SDK connection. The caller owns it and must ``await close()``.
    """
    check_scheme(target.url)
    if target.embedded:
        _ensure_data_dir(target.url)
    try:
        conn = AsyncSurreal(engine_url(target.url))
        await conn.connect()
    except Exception as exc:  # the SDK raises many transport types; one message each
        raise _open_error(target, exc) from exc
    try:
        if target.key:
            await _signin_key(conn, target)
        elif not target.embedded and target.user:
            try:
                await conn.signin({"username": target.user, "password": target.password or ""})
            except Exception as exc:
                raise AuthenticationFailed(
                    f"signing in to {target.url} as {target.user!r} failed ({str(exc).splitlines()[0]}): "
                    "check --user/--pass or AMEM_USER/AMEM_PASS"
                ) from exc
        await conn.use(target.ns, target.db)
        check_engine_version(await conn.version())
    except BaseException:
        await close_quietly(conn)
        raise
    return conn


async def _signin_key(conn: Any, target: Target) -> None:
    """Sign in as a record user of the `amem` access: every read and write of
    this connection is then limited by the table PERMISSIONS (surql/050)."""
    name, sep, secret = (target.key or "").partition(":")
    if not sep or not name or not secret:
        raise AuthenticationFailed("a key is NAME:SECRET as printed by `amem-db grant` (--key or AMEM_KEY)")
    try:
        await conn.signin({"access": "amem", "namespace": target.ns, "database": target.db,
                           "variables": {"name": name, "key": secret}})
    except Exception as exc:
        raise AuthenticationFailed(
            f"signing in to {target.describe()} with key {name!r} failed ({str(exc).splitlines()[0]}): "
            "the key is wrong or revoked, or the database is not migrated (amem-db migrate)"
        ) from exc


async def close_quietly(conn: Any) -> None:
    # trimmed before the close too: the close flushes the memtable into an SSTable, and
    # what the process freed earlier would otherwise lie under that peak
    release_freed_memory()
    try:
        await conn.close()
    except Exception:
        pass
    release_freed_memory()


def release_freed_memory() -> bool:
    """Hand memory the process has freed back to the OS (glibc's ``malloc_trim``); False
    where there is no glibc. The embedded engine allocates through the C allocator, and
    what it frees at a close (its memtable, every row written since the open, and its
    caches: docs/ENGINE-ISSUES.md #37) stays in glibc's per-thread arenas, so a bulk load's
    RSS stayed at its high-water mark across the reopens meant to bound it: a closed
    19k-document store held 283 MB, 84 MB after the trim (issue 25)."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc.malloc_trim  # noqa: B018 (glibc only: musl and macOS have none)
        except (OSError, AttributeError):
            _libc = False
    if _libc is False:
        return False
    _libc.malloc_trim(0)
    return True


_libc: Any = None  # ctypes' libc once loaded, False where malloc_trim is missing
