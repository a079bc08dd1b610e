"""``SyncMemory``: the async client's surface without ``await``, for scripts
and notebooks (as LanceDB and the SurrealDB SDK offer both).

    from amem_db import SyncMemory

    with SyncMemory.open(url="mem://", migrate=True) as mem:
        mem.documents.ingest_text("Unopened items may be returned within 30 days.", source="faq")
        for hit in mem.documents.query("return window").results:
            print(hit.score, hit.chunk.text)

Each SyncMemory owns a private event loop in a background thread; every call
runs the async method there and waits for it. So it works where a loop is
already running (a notebook cell), and the native engine is opened, used and
closed on one loop, as it requires. The methods are the async ones wrapped
(``_twin``): same names, arguments, docstrings and return types, and
tests/test_sync.py fails when an async method has no twin.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from .client import Answers, Documents, Entities, Facts, Keywords, Memory, Traces
from .embedding.base import Embedder

__all__ = ["SyncAnswers", "SyncDocuments", "SyncEntities", "SyncFacts", "SyncKeywords", "SyncMemory", "SyncTraces"]

P = ParamSpec("P")
R = TypeVar("R")


class _Runner:
    """A private event loop running in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="amem-db-sync", daemon=True)
        self.closed = False
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, R]) -> R:
        if self.closed:
            coro.close()
            raise RuntimeError("this SyncMemory is closed")
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("a SyncMemory method was called from its own event loop (a progress callback?)")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class _Facade:
    """A sync view of one async object: its coroutines run on the runner."""

    def __init__(self, target: Any, runner: _Runner) -> None:
        self._async = target
        self._runner = runner


def _twin(fn: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]) -> Callable[Concatenate[_Facade, P], R]:
    """The sync twin of an async method: same signature and docstring; runs
    the async method of the wrapped object on the private loop."""
    name = fn.__name__

    @functools.wraps(fn)
    def method(self: _Facade, /, *args: P.args, **kwargs: P.kwargs) -> R:
        coro: Coroutine[Any, Any, R] = getattr(self._async, name)(*args, **kwargs)
        return self._runner.run(coro)

    return method


class SyncKeywords(_Facade):
    """``mem.documents.keywords`` of a SyncMemory."""

    for_document = _twin(Keywords.for_document)
    list = _twin(Keywords.list)
    get = _twin(Keywords.get)
    search = _twin(Keywords.search)


class SyncDocuments(_Facade):
    """``mem.documents`` of a SyncMemory."""

    def __init__(self, target: Documents, runner: _Runner) -> None:
        super().__init__(target, runner)
        self.keywords = SyncKeywords(target.keywords, runner)

    ingest_file = _twin(Documents.ingest_file)
    ingest_text = _twin(Documents.ingest_text)
    ingest_paths = _twin(Documents.ingest_paths)
    get = _twin(Documents.get)
    list = _twin(Documents.list)
    chunks = _twin(Documents.chunks)
    delete = _twin(Documents.delete)
    reprocess = _twin(Documents.reprocess)
    query = _twin(Documents.query)
    query_many = _twin(Documents.query_many)
    versions = _twin(Documents.versions)
    recompute_links = _twin(Documents.recompute_links)


class SyncFacts(_Facade):
    """``mem.facts`` of a SyncMemory."""

    prepare = _twin(Facts.prepare)
    write = _twin(Facts.write)
    write_many = _twin(Facts.write_many)
    diff = _twin(Facts.diff)
    declare_key = _twin(Facts.declare_key)


class SyncEntities(_Facade):
    """``mem.entities`` of a SyncMemory."""

    list = _twin(Entities.list)
    get = _twin(Entities.get)
    history = _twin(Entities.history)


class SyncTraces(_Facade):
    """``mem.traces`` of a SyncMemory."""

    list = _twin(Traces.list)
    get = _twin(Traces.get)
    stats = _twin(Traces.stats)
    explain = _twin(Traces.explain)
    feedback = _twin(Traces.feedback)
    retention = _twin(Traces.retention)


class SyncAnswers(_Facade):
    """``mem.answers`` of a SyncMemory."""

    remember = _twin(Answers.remember)


class SyncMemory(_Facade):
    """The blocking client: ``SyncMemory.open(...)`` takes Memory.open's arguments."""

    _async: Memory

    def __init__(self, mem: Memory, runner: _Runner) -> None:
        super().__init__(mem, runner)
        self.documents = SyncDocuments(mem.documents, runner)
        self.facts = SyncFacts(mem.facts, runner)
        self.entities = SyncEntities(mem.entities, runner)
        self.traces = SyncTraces(mem.traces, runner)
        self.answers = SyncAnswers(mem.answers, runner)

    @classmethod
    def open(
        cls,
        url: str | None = None,
        ns: str | None = None,
        db: str | None = None,
        user: str | None = None,
        password: str | None = None,
        *,
        key: str | None = None,
        embedder: Embedder | str | None = None,
        migrate: bool = False,
    ) -> SyncMemory:
        runner = _Runner()
        try:
            mem = runner.run(Memory.open(url, ns, db, user, password, key=key, embedder=embedder, migrate=migrate))
        except BaseException:
            runner.stop()
            raise
        return cls(mem, runner)

    migrate = _twin(Memory.migrate)
    embed_query = _twin(Memory.embed_query)
    recall = _twin(Memory.recall)
    remember = _twin(Memory.remember)
    reopen_if_wal_full = _twin(Memory.reopen_if_wal_full)
    # forget and inspect
    forget = _twin(Memory.forget)
    inspect = _twin(Memory.inspect)
    maintain = _twin(Memory.maintain)
    index_status = _twin(Memory.index_status)

    def close(self) -> None:
        """Close the connection (an embedded engine is released)."""
        if self._runner.closed:
            return
        try:
            self._runner.run(self._async.close())
        finally:
            self._runner.stop()

    @property
    def memory(self) -> Memory:
        """The async client underneath (use it only on this object's loop)."""
        return self._async

    @property
    def embedder(self) -> Embedder:
        return self._async.embedder

    @property
    def conn(self) -> Any:
        return self._async.conn

    def __enter__(self) -> SyncMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        target = self._async.target
        where = target.describe() if target is not None else "a connection"
        return f"SyncMemory({where}{', closed' if self._runner.closed else ''})"


# open's parameters are written out above (a classmethod returning the sync
# client); its docstring is Memory.open's, like every twin's
vars(SyncMemory)["open"].__func__.__doc__ = Memory.open.__doc__
