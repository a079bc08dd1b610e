"""SyncMemory: the same surface as Memory for scripts and notebooks, run on a
private event loop in a background thread (the native engine is opened and
closed on that loop)."""

from __future__ import annotations

import inspect
import threading

import pytest

from amem_db import InvalidInput, Memory, NotMigrated, SyncMemory
from amem_db.client import Answers, Documents, Entities, Facts, Keywords, Traces
from amem_db.models import Document, IngestResult, KeywordPage, QueryResponse
from amem_db.sync import SyncAnswers, SyncDocuments, SyncEntities, SyncFacts, SyncKeywords, SyncTraces

HASH = "hash:384"
PAIRS = [(Memory, SyncMemory), (Documents, SyncDocuments), (Keywords, SyncKeywords), (Facts, SyncFacts), (Entities, SyncEntities),
         (Traces, SyncTraces), (Answers, SyncAnswers)]


def _public_coroutines(cls: type) -> dict[str, object]:
    return {name: fn for name, fn in inspect.getmembers(cls)
            if not name.startswith("_") and inspect.iscoroutinefunction(fn)}


@pytest.mark.parametrize(("async_cls", "sync_cls"), PAIRS)
def test_every_async_method_has_a_sync_twin_with_the_same_signature(async_cls, sync_cls):
    coroutines = _public_coroutines(async_cls)
    assert coroutines, async_cls
    for name, fn in coroutines.items():
        twin = getattr(sync_cls, name, None)
        assert twin is not None, f"{sync_cls.__name__}.{name} is missing"
        assert not inspect.iscoroutinefunction(twin), name
        if name == "open":  # returns the sync client, otherwise identical
            a, s = inspect.signature(fn), inspect.signature(twin)
            assert list(a.parameters.values()) == list(s.parameters.values())
        else:
            assert inspect.signature(twin) == inspect.signature(fn), name
        assert twin.__doc__ == fn.__doc__, name
    # and nothing extra: the sync surface is the async one
    sync_public = {n for n, v in vars(sync_cls).items() if not n.startswith("_") and callable(v)}
    assert sync_public - set(coroutines) <= {"open", "close"}


def test_every_namespace_of_memory_has_a_sync_facade():
    """A namespace added to Memory (an attribute holding an object with public coroutines)
    must be in PAIRS above and on SyncMemory under the same name."""
    mem = Memory(None, embedder=HASH)
    paired = {a for a, _ in PAIRS}
    seen: dict[str, type] = {}
    visited = {id(mem)}
    stack = [mem]
    while stack:
        obj = stack.pop()
        for name, value in vars(obj).items():
            if name.startswith("_") or id(value) in visited or not _public_coroutines(type(value)):
                continue
            assert type(value) in paired, f"{type(value).__name__} ({name}) has no sync twin in PAIRS"
            seen[name] = type(value)
            visited.add(id(value))
            stack.append(value)
    assert {"documents", "keywords", "facts", "entities", "traces", "answers"} <= set(seen)
    sync_attrs = {"documents", "facts", "entities", "traces", "answers"}
    init = inspect.getsource(SyncMemory.__init__)
    assert all(f"self.{n} = " in init for n in sync_attrs)


def test_end_to_end_on_an_in_memory_database():
    mem = SyncMemory.open(url="mem://", embedder=HASH)
    try:
        assert isinstance(mem.documents, SyncDocuments) and isinstance(mem.documents.keywords, SyncKeywords)
        with pytest.raises(NotMigrated, match="migrate"):
            mem.documents.ingest_text("Unopened items may be returned within 30 days.")
        assert mem.migrate().pending  # the first run applies everything
        result = mem.documents.ingest_text("Unopened items may be returned within 30 days of delivery.",
                                           source="returns", scopes=["org/acme"], title="Returns")
        assert isinstance(result, IngestResult) and result.status == "added"
        assert isinstance(mem.documents.get(result.document.id), Document)
        response = mem.documents.query("return window unopened", mode="hybrid", k=3, threshold=-1)
        assert isinstance(response, QueryResponse)
        assert response.results[0].document.title == "Returns"
        assert isinstance(mem.documents.keywords.list(), KeywordPage)
        with pytest.raises(TypeError, match="scopes"):
            mem.documents.ingest_text("x", scopes="org")
        with pytest.raises(InvalidInput):
            mem.documents.query("x", mode="fuzzy")
        loop_thread = mem._runner.thread
        assert loop_thread.is_alive() and loop_thread is not threading.current_thread()
    finally:
        mem.close()
    assert not loop_thread.is_alive()
    mem.close()  # idempotent


def test_context_manager_and_open_migrate():
    with SyncMemory.open(url="mem://", embedder=HASH, migrate=True) as mem:
        assert mem.documents.list().total == 0
        runner = mem._runner
    assert not runner.thread.is_alive()


async def test_usable_while_an_event_loop_runs():
    # a notebook cell runs inside a live loop: the sync client must not need it
    with SyncMemory.open(url="mem://", embedder=HASH, migrate=True) as mem:
        mem.documents.ingest_text("Refunds take five days.", source="r")
        assert mem.documents.list().total == 1


def test_calls_after_close_are_refused():
    mem = SyncMemory.open(url="mem://", embedder=HASH)
    mem.close()
    with pytest.raises(RuntimeError, match="closed"):
        mem.documents.list()
