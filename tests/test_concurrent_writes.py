"""Concurrent writers (issue 27 item 3): N writers x M memory writes at once, on one
single-valued key and on a key per writer, over ws (the loopback dev server, one
connection per writer) and embedded (one connection, N requests in flight).

The engine aborts one of two transactions that write the same records at once
("Transaction conflict: Write conflict ... can be retried"); the client maps that to
``WriteConflict`` (retryable) and retries it with bounded, jittered backoff
(amem_db/db.py). What must hold under load, whatever the interleaving:

* every write either applied exactly once (its value is in exactly one attribute row,
  and repeating it with its idempotency key changes nothing) or failed with a typed
  ``AmemError`` (and left no row);
* exactly one current value per single-valued (entity, key);
* the supersession chain of each (entity, key) is intact: ``superseded_by`` and
  ``supersedes`` mirror each other, and walking ``supersedes`` from the current row
  visits every row once.

The default suite runs the short form (8 writers x 3 writes); ``AMEM_TEST_WRITES=M``
sets M, and with ``AMEM_TEST_LONG=1`` the ``slow`` test runs 8 x 25 (figures in docs/SECURITY.md)."""

from __future__ import annotations

import asyncio
import collections
import os

import pytest
from devserver_fixture import ROOT_PASSWORD, ROOT_USER, dev_server, unique_name  # noqa: F401

from amem_db import AmemError, Memory
from amem_db.connection import Target, close_quietly, open_connection
from amem_db.db import plain
from amem_db.embedding import get_embedder
from amem_db.errors import WriteConflict, from_engine_text
from amem_db.migrator import Migrator

WRITERS = 8
WRITES = int(os.environ.get("AMEM_TEST_WRITES", "3"))
EMBEDDER = get_embedder("hash:384")


def test_the_engine_conflict_text_is_a_retryable_typed_error():
    text = ("There was a problem with the key-value store: Transaction conflict: Write conflict, "
            "retry the transaction. This transaction can be retried")
    typed = from_engine_text(text)
    assert isinstance(typed, WriteConflict) and typed.retryable and typed.code == "write_conflict"


async def storm(conns: list, *, shared_key: bool, writes: int) -> dict:
    """WRITERS writers, each `writes` writes in sequence, all writers at once."""
    outcome: dict[str, object] = {}

    async def writer(i: int) -> None:
        mem = Memory(conns[i % len(conns)], embedder=EMBEDDER)
        for j in range(writes):
            name = "Ada" if shared_key else f"Ada {i}"
            body = {"triples": [{"entity": {"type": "person", "name": name}, "key": "city", "value": f"w{i}-{j}"}],
                    "idempotency_key": f"k-{shared_key}-{i}-{j}"}
            try:
                outcome[f"w{i}-{j}"] = (body, await mem.facts.write(body))
            except AmemError as exc:  # typed: allowed, and must leave nothing
                outcome[f"w{i}-{j}"] = (body, exc)

    await asyncio.gather(*(writer(i) for i in range(WRITERS)))
    return outcome


async def check(root, outcome: dict, *, shared_key: bool) -> collections.Counter:
    tally: collections.Counter = collections.Counter()
    (rows,) = await root.query("SELECT id, value, entity, supersedes, superseded_by, retracted FROM attribute "
                               "WHERE key_norm = 'city' AND string::starts_with(value, 'w')")
    rows = plain(rows)
    by_value = collections.Counter(r["value"] for r in rows)
    for value, (_body, result) in outcome.items():
        if isinstance(result, Exception):
            assert isinstance(result, AmemError), result
            assert by_value[value] == 0, (value, result)  # a failed write left nothing
            tally[type(result).__name__] += 1
        else:
            assert by_value[value] == 1, value  # applied exactly once
            tally["applied"] += 1
    # one current value per single-valued key, and an intact chain
    by_entity: dict[str, list[dict]] = collections.defaultdict(list)
    for r in rows:
        by_entity[r["entity"]].append(r)
    assert len(by_entity) == (1 if shared_key else WRITERS) or tally["applied"] == 0
    for entity, chain in by_entity.items():
        ids = {r["id"]: r for r in chain}
        current = [r for r in chain if r["superseded_by"] is None and not r["retracted"]]
        assert len(current) == 1, (entity, current)
        for r in chain:
            if r["superseded_by"] is not None:
                assert ids[r["superseded_by"]]["supersedes"] == r["id"], (entity, r)
        seen, at = [], current[0]
        while at is not None:
            seen.append(at["id"])
            at = ids.get(at["supersedes"]) if at["supersedes"] else None
        assert sorted(seen) == sorted(ids), (entity, len(seen), len(ids))  # every row once, no fork
    return tally


async def replay_changes_nothing(conns: list, outcome: dict) -> None:
    (before,) = await conns[0].query("SELECT count() FROM attribute GROUP ALL")
    mem = Memory(conns[0], embedder=EMBEDDER)
    for body, result in list(outcome.values())[:WRITERS]:
        if not isinstance(result, Exception):
            again = await mem.facts.write(body)
            assert again.write == result.write
    (after,) = await conns[0].query("SELECT count() FROM attribute GROUP ALL")
    assert after == before


async def run(conns: list, root, *, writes: int) -> dict[str, collections.Counter]:
    await Memory(root).facts.declare_key("city", multi_valued=False)
    tallies = {}
    for shared in (True, False):
        outcome = await storm(conns, shared_key=shared, writes=writes)
        tallies["one key" if shared else "many keys"] = await check(root, outcome, shared_key=shared)
        await replay_changes_nothing(conns, outcome)
        await root.query("DELETE attribute WHERE key_norm = 'city'; DELETE memory_write")
    return tallies


async def embedded(writes: int) -> dict:
    target = Target(url="mem://", ns=unique_name("cw"), db="test")
    conn = await open_connection(target)
    try:
        await Migrator(conn).migrate()
        return await run([conn], conn, writes=writes)
    finally:
        await close_quietly(conn)


async def over_ws(server, writes: int) -> dict:
    target = Target(url=server.ws_url, ns=unique_name("cw"), db="test", user=ROOT_USER, password=ROOT_PASSWORD)
    root = await open_connection(target)
    conns = []
    try:
        await Migrator(root).migrate()
        conns = [await open_connection(target) for _ in range(WRITERS)]
        return await run(conns, root, writes=writes)
    finally:
        for c in [*conns, root]:
            await close_quietly(c)


def report(label: str, tallies: dict, writes: int) -> None:
    for what, t in tallies.items():
        print(f"{label} {what}: {WRITERS} writers x {writes} writes: {dict(t)}")
        assert set(t) <= {"applied", "WriteConflict"}, t  # a conflict is the only failure, and a typed, retryable one
        assert sum(t.values()) == WRITERS * writes, t
        # the client retried: without it most writes on one key fail (issue 27: 36 of 40)
        assert t["applied"] >= 0.75 * WRITERS * writes, t


async def test_concurrent_writers_embedded():
    report("embedded", await embedded(WRITES), WRITES)


@pytest.mark.asyncio(loop_scope="module")
async def test_concurrent_writers_over_ws(dev_server):
    report("ws", await over_ws(dev_server, WRITES), WRITES)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("AMEM_TEST_LONG"), reason="the long form (~2.5 min) runs with AMEM_TEST_LONG=1; CI runs the short form (issue 27)")
@pytest.mark.asyncio(loop_scope="module")
async def test_concurrent_writers_long_form(dev_server):
    # the long form: 8 writers x 25 writes, both transports (docs/SECURITY.md "Concurrent writers")
    report("embedded", await embedded(25), 25)
    report("ws", await over_ws(dev_server, 25), 25)
