"""Batched memory writes (issue 25 item 3): fn::amem::facts::write_many and
mem.facts.write_many on the real engine. A batch stores exactly what the same
requests written one by one store (rows, supersession links, uncertainty,
idempotency, mentions), in one transaction per group; a failed group is written
again one request at a time, so a bad request fails alone with its typed error
and the others land; an atomic batch, or a process killed in the middle of one,
leaves no partial request; a replayed batch changes nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from amem_db import IdempotencyConflict, InvalidInput, Memory
from amem_db.cli import app
from amem_db.connection import close_quietly, open_connection
from amem_db.constants import FACTS_BATCH_MAX
from amem_db.db import call
from amem_db.embedding import get_embedder
from amem_db.errors import EmbeddingMismatch
from amem_db.migrator import Migrator
from amem_db.models import FactBatch
from tests.conftest import drop, make_target

ROOT = Path(__file__).resolve().parent.parent
TABLES = ["entity", "entity_name", "attribute", "attribute_fts", "relation", "memory_chunk", "memory_chunk_fts",
          "uncertainty", "fact_key", "memory_write", "mentions"]


def at(day: int) -> str:
    return f"2024-01-{day:02d}T09:00:00Z"


def attr(who: str, key: str, value, **kw) -> dict:
    return {"entity": {"type": kw.pop("type", "person"), "name": who, **kw.pop("entity", {})}, "key": key, "value": value, **kw}


def rel(who: str, key: str, target: str, **kw) -> dict:
    return {"entity": {"type": "person", "name": who}, "key": key, "target": {"type": "organisation", "name": target}, **kw}


# every reconciliation rule, in an order where later requests depend on earlier ones
SCENARIO = [
    {"triples": [attr("Alice Smith", "role", "CTO", entity={"aliases": ["Al"]}), rel("Alice Smith", "works_at", "Acme")],
     "text": "Alice Smith joined Acme as CTO.", "observed_at": at(1), "idempotency_key": "first"},
    {"triples": [attr("Alice Smith", "role", "CEO")], "observed_at": at(2)},                           # superseded
    {"triples": [attr("Alice Smith", "role", "Chair", confidence=0.5)], "observed_at": at(3)},         # uncertain
    {"triples": [attr("Alice Smith", "speaks", "English"), attr("Alice Smith", "speaks", "French")],
     "observed_at": at(4)},                                                                            # coexists (multi-valued)
    {"triples": [{"entity": {"type": "person", "name": "Alice Smith"}, "key": "works_at", "retract": True}],
     "observed_at": at(5)},                                                                            # retracted
    {"triples": [attr("Bob Jones", "role", "engineer", valid_from=at(20))], "observed_at": at(6)},
    {"triples": [attr("Bob Jones", "role", "intern", valid_from=at(2))], "observed_at": at(7)},       # late
    {"triples": [attr("Alice Smith", "role", "CTO", entity={"aliases": ["Al"]}), rel("Alice Smith", "works_at", "Acme")],
     "text": "Alice Smith joined Acme as CTO.", "observed_at": at(1), "idempotency_key": "first"},     # replayed
    {"triples": [attr("Alice Smith", "role", "CEO")], "observed_at": at(2)},                           # unchanged (known)
    {"text": "Bob Jones and Al met at the Acme offsite.", "session_id": "s1", "role": "user", "observed_at": at(8)},
    {"triples": [attr("Alice Smith", "role", "advisor")], "scopes": ["org/acme"], "observed_at": at(9)},  # other scope
    {"triples": [rel("Bob Jones", "works_at", "Initech")], "text": "Bob moved to Initech.", "observed_at": at(10),
     "location": {"lat": 52.37, "lng": 4.9}},
]


async def migrated():
    target = make_target("batch")
    conn = await open_connection(target)
    await Migrator(conn).migrate()
    mem = Memory(conn, embedder=get_embedder("hash:384"))
    await mem.facts.declare_key("speaks")
    return target, mem


@pytest.fixture
async def fresh():
    """A migrated database of this test's own (a comparison needs identical starts)."""
    opened = []

    async def make() -> Memory:
        target, mem = await migrated()
        opened.append((target, mem))
        return mem

    yield make
    for target, mem in opened:
        await drop(mem.conn, target)
        await close_quietly(mem.conn)


@pytest.fixture(scope="module")
async def mem(db):
    return Memory(db, embedder=get_embedder("hash:384"))


async def counts(conn) -> dict[str, int]:
    out = {}
    for t in TABLES:
        (rows,) = await conn.query(f"SELECT count() FROM {t} GROUP ALL")
        out[t] = rows[0]["count"] if rows else 0
    return out


def canonical(value, writes: dict[str, int]):
    """Ids and values with each write's ULID replaced by its request index (the only
    thing two equal stores may differ in), recursively."""
    if isinstance(value, dict):
        return {k: canonical(v, writes) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(v, writes) for v in value]
    text = str(value) if value is not None and not isinstance(value, bool | int | float) else value
    if isinstance(text, str):
        for ulid, i in writes.items():
            text = text.replace(ulid, f"<w{i}>")
    return text


# what differs between two equal stores besides the write ULIDs: the engine's clocks
# (DEFAULT time::now()), random ids, and ids hashed from a passage id (which holds its ULID)
VOLATILE = {"entity": ["recorded_at"], "uncertainty": ["id", "recorded_at", "resolved_at"], "mentions": ["id"]}


async def snapshot(mem: Memory, write_ids: list[str | None]) -> dict:
    """Every stored row of the memory tables, write ULIDs canonical, without VOLATILE."""
    writes = {w: i for i, w in enumerate(write_ids) if w is not None}
    out = {}
    for t in TABLES:
        (rows,) = await mem.conn.query(f"SELECT * OMIT {', '.join(['created_at', 'embedding', *VOLATILE.get(t, [])])} FROM {t}")
        out[t] = sorted((canonical(r, writes) for r in rows), key=lambda r: json.dumps(r, sort_keys=True, default=str))
    (vectors,) = await mem.conn.query("SELECT VALUE [<string> id, embedding] FROM attribute")
    out["vectors"] = sorted(canonical(vectors, writes), key=str)
    return out


async def one_by_one(mem: Memory, requests: list[dict]) -> list[dict]:
    return [(await mem.facts.write(r)).model_dump() for r in requests]


# --- a batch equals the same requests one by one ------------------------------------------
@pytest.mark.parametrize("how", ["groups of 4", "one transaction", "raw SurrealQL"])
async def test_a_batch_stores_exactly_what_one_by_one_writes_store(fresh, how):
    single, batched = await fresh(), await fresh()
    expected = await one_by_one(single, SCENARIO)
    if how == "raw SurrealQL":
        # the stored function itself, vectors given (write's prepare + embed done per request here)
        vectors = []
        for r in SCENARIO:
            p = await batched.facts.prepare(r)
            texts = {part: [x.text for x in getattr(p, part)] for part in ("entities", "attributes", "passages")}
            vectors.append({"model": batched.embedder.name} | {k: batched.embedder.embed_documents(v) for k, v in texts.items()})
        from amem_db.geometry import with_polygons
        raw = await call(batched.conn, "fn::amem::facts::write_many", [with_polygons(r) for r in SCENARIO], vectors)
        got = [FactBatch(writes=raw).writes[i].model_dump() for i in range(len(SCENARIO))]
    else:
        result = await batched.facts.write_many(SCENARIO, per_transaction=4, atomic=how == "one transaction")
        assert result.errors == [] and result.transactions == (3 if how == "groups of 4" else 1)
        got = [w.model_dump() for w in result.writes]
    ids_single = [w["write"] for w in expected]
    ids_batched = [w["write"] for w in got]
    # every outcome, with the ids it names, is the one-by-one outcome
    assert canonical(got, {w: i for i, w in enumerate(ids_batched)}) == canonical(expected, {w: i for i, w in enumerate(ids_single)})
    outcomes = [[t["outcome"] for t in w["triples"]] for w in got]
    assert outcomes == [["added", "added"], ["superseded"], ["uncertain"], ["added", "coexists"], ["retracted"],
                        ["added"], ["late"], ["added", "added"], ["unchanged"], [], ["added"], ["added"]]
    assert got[7] == got[0]  # the replayed idempotency key returned the first response
    # and every row, link and vector stored is the same
    assert await snapshot(batched, ids_batched) == await snapshot(single, ids_single)


# requests that do not depend on each other (no shared idempotency key, no entity + key
# twice), reconciled against rows stored before the batch: write_many's set-based path
BEFORE = [
    {"triples": [attr("Alice Smith", "role", "CTO", entity={"aliases": ["Al"]}), rel("Alice Smith", "works_at", "Acme")],
     "text": "Alice Smith joined Acme as CTO.", "observed_at": at(1), "idempotency_key": "first"},
    {"triples": [attr("Bob Jones", "role", "engineer", valid_from=at(20))], "observed_at": at(1)},
    {"triples": [attr("Carol King", "role", "lead"), attr("Jack Reed", "role", "coach")], "observed_at": at(3)},
    {"triples": [attr("Alice Smith", "speaks", "English"), rel("Dan Brown", "works_at", "Initech")], "observed_at": at(3)},
    {"text": "Erin Walker met Frank at the fair.", "session_id": "s0", "observed_at": at(3)},
]
INDEPENDENT = [
    BEFORE[0],                                                                                        # replayed
    {"triples": [attr("Alice Smith", "role", "CEO")], "observed_at": at(4)},                           # superseded
    {"triples": [attr("Bob Jones", "role", "intern", valid_from=at(2))], "observed_at": at(4)},        # late
    {"triples": [attr("Carol King", "role", "Chair", confidence=0.5)], "observed_at": at(4)},          # uncertain
    {"triples": [attr("Alice Smith", "speaks", "French"),                                             # coexists
                 {"entity": {"type": "person", "name": "Dan Brown"}, "key": "works_at", "retract": True}],  # retracted
     "observed_at": at(5), "idempotency_key": "second"},
    {"triples": [attr("Erin Walker", "role", "designer", entity={"aliases": ["Erin W"]})],             # added, new entity
     "text": "Erin Walker and Gina Park talked about Acme.", "speaker": "Gina Park", "observed_at": at(5)},
    {"triples": [attr("Gina Park", "hobby", "chess")], "text": "Gina mentioned Helen Hunt to Al.",     # a name written later
     "session_id": "s1", "role": "user", "observed_at": at(6)},
    {"triples": [attr("Helen Hunt", "role", "pilot")], "observed_at": at(6)},
    {"triples": [attr("Helen Hunt", "role", "captain")], "scopes": ["org/acme"], "observed_at": at(6)},  # other scope
    {"triples": [attr("Jack Reed", "role", "coach")], "observed_at": at(3)},                           # unchanged (known)
    {"triples": [rel("Kate Moss", "works_at", "Acme"), attr("Kate Moss", "city", "Amsterdam")],
     "location": {"lat": 52.37, "lng": 4.9}, "observed_at": at(7)},
    {"triples": [{"entity": {"type": "person", "name": "Liam Neeson"}, "key": "role", "retract": True}], "observed_at": at(8)},
    {"text": "A note without names.", "labels": ["b", "a"], "category": "knowledge", "observed_at": at(8), "valid_until": at(28)},
]


@pytest.mark.parametrize("how", ["groups", "one transaction"])
async def test_independent_requests_take_the_set_path_and_store_what_one_by_one_stores(fresh, how):
    single, batched = await fresh(), await fresh()
    pre_single = [w["write"] for w in await one_by_one(single, BEFORE)]
    pre_batched = [w["write"] for w in await one_by_one(batched, BEFORE)]
    expected = await one_by_one(single, INDEPENDENT)
    # the batch's requests are independent: write_many stores them with its set-based steps
    from amem_db.geometry import with_polygons
    (staged,) = await batched.conn.query(
        "RETURN fn::amem::facts::entangled(SELECT VALUE fn::amem::facts::stage($this, NONE) FROM $r)",
        {"r": [with_polygons(r) for r in INDEPENDENT]})
    assert staged is False
    result = await batched.facts.write_many(INDEPENDENT, per_transaction=5 if how == "groups" else 64, atomic=how != "groups")
    assert result.errors == [] and result.transactions == (3 if how == "groups" else 1)
    got = [w.model_dump() for w in result.writes]
    outcomes = [[t["outcome"] for t in w["triples"]] for w in got]
    assert outcomes == [["added", "added"], ["superseded"], ["late"], ["uncertain"], ["coexists", "retracted"], ["added"],
                        ["added"], ["added"], ["added"], ["unchanged"], ["added", "added"], ["nothing_to_retract"], []]
    # the ids of the earlier writes canonical too (the replay and the reconciliation name them)
    ids_single, ids_batched = [*[w["write"] for w in expected], *pre_single], [*[w["write"] for w in got], *pre_batched]
    assert canonical(got, {w: i for i, w in enumerate(ids_batched)}) == canonical(expected, {w: i for i, w in enumerate(ids_single)})
    # every row, link, mentions edge and vector: the stores are equal
    assert await snapshot(batched, ids_batched) == await snapshot(single, ids_single)
    # the mentions both ways: the earlier passage names Erin Walker (written in the batch),
    # the batch's passage names Helen Hunt (written by a later request of the batch) and Al
    (edges,) = await batched.conn.query("SELECT VALUE record::id(out) FROM mentions WHERE char_start != NONE")
    assert {"person/erin walker", "person/helen hunt", "person/alice smith", "person/gina park"} <= set(edges)


# --- groups written at once --------------------------------------------------------------------
# one request a group: each next to one it may run beside and one it must wait for
OVERLAPPING = [
    {"triples": [attr("Olga Alpha", "role", "CTO")], "observed_at": at(1)},
    {"triples": [attr("Pete Beta", "role", "engineer")], "observed_at": at(1)},              # apart from Olga: beside her
    {"triples": [attr("Olga Alpha", "role", "CEO")], "observed_at": at(2)},                  # Olga again: waits, supersedes
    {"triples": [attr("Quinn Gamma", "role", "lead")], "observed_at": at(2)},
    {"text": "Quinn Gamma met Pete Beta.", "session_id": "s1", "observed_at": at(3)},        # a passage beside names: waits
    {"text": "Pete Beta left early.", "session_id": "s1", "observed_at": at(3)},             # same session: waits
    {"text": "Rosa arrived late.", "session_id": "s2", "observed_at": at(3)},                # another session: beside it
    {"triples": [attr("Sam Delta", "role", "chair")], "idempotency_key": "sam", "observed_at": at(4)},
    {"triples": [attr("Sam Delta", "role", "chair")], "idempotency_key": "sam", "observed_at": at(4)},  # replays
    {"triples": [attr("Tina Eps", "hobby", "chess")], "text": "Tina talked to Rosa.", "speaker": "Tina Eps",
     "session_id": "s2", "observed_at": at(5)},
]


async def test_groups_written_at_once_store_what_one_by_one_stores(fresh):
    """mem.facts.write_many writes independent groups at the same time (FACTS_IN_FLIGHT):
    a group that shares an entity, an idempotency key or a session with one in flight,
    or brings passages beside its names, waits for it; the store equals one by one."""
    single, batched = await fresh(), await fresh()
    expected = await one_by_one(single, OVERLAPPING)
    result = await batched.facts.write_many(OVERLAPPING, per_transaction=1, in_flight=2)
    assert result.errors == [] and result.transactions == len(OVERLAPPING)
    got = [w.model_dump() for w in result.writes]
    assert [[t["outcome"] for t in w["triples"]] for w in got] == [
        ["added"], ["added"], ["superseded"], ["added"], [], [], [], ["added"], ["added"], ["added"]]
    assert got[8] == got[7]
    ids_single, ids_batched = [w["write"] for w in expected], [w["write"] for w in got]
    assert canonical(got, {w: i for i, w in enumerate(ids_batched)}) == canonical(expected, {w: i for i, w in enumerate(ids_single)})
    assert await snapshot(batched, ids_batched) == await snapshot(single, ids_single)
    (placed,) = await batched.conn.query("SELECT VALUE [session_id, session_pos, text] FROM memory_chunk ORDER BY session_id, session_pos")
    assert [p[:2] for p in placed] == [["s1", 0], ["s1", 1], ["s2", 0], ["s2", 1]]


def test_the_group_scheduler_overlaps_only_independent_groups():
    """amem_db.concurrent.run_apart on timed jobs (Facts.write_many's scheduler): which groups ran beside which."""
    import asyncio

    from amem_db.client.facts import _Footprint
    from amem_db.concurrent import run_apart

    def foot(entities=(), keys=(), sessions=(), passages=False):
        return _Footprint(frozenset(entities), frozenset(keys), frozenset(sessions), bool(entities), passages)

    feet = [foot(["a"]), foot(["b"]), foot(["a"]), foot(["c"]), foot(passages=True, sessions=["s"]),
            foot(passages=True, sessions=["s"]), foot(passages=True, sessions=["t"]), foot(["d"], keys=["k"]),
            foot(["e"], keys=["k"]), None, foot(["f"])]
    live: set[int] = set()
    beside: set[tuple[int, int]] = set()

    async def job(i: int) -> None:
        beside.update((j, i) for j in live)
        live.add(i)
        for _ in range(3):  # a few turns of the event loop: the same interleaving every run
            await asyncio.sleep(0)
        live.discard(i)

    asyncio.run(run_apart([(job(i), f) for i, f in enumerate(feet)], 2))
    # 1 ran beside 0; 2 (entity a) waited for 0; 3 beside 2; 4 (passages) waited for the
    # names of 3; 5 (session s) for 4; 6 (session t) beside 5; 8 (key k) waited for 7;
    # 9 (no footprint) ran alone; 10 after it
    assert beside == {(0, 1), (2, 3), (5, 6)}
    with __import__("pytest").raises(RuntimeError, match="boom"):
        async def bad() -> None:
            raise RuntimeError("boom")
        asyncio.run(run_apart([(bad(), foot(["x"])), (job(99), foot(["y"])), (job(100), foot(["z"]))], 2))


async def test_default_groups_weigh_triples_and_passages(fresh):
    """Without per_transaction a group holds FACTS_GROUP_WEIGHT: 32 one-fact requests, 16
    one-passage ones (a passage weighs 2), fewer when a request brings more."""
    mem = await fresh()
    facts = [{"triples": [attr(f"Wren {i}", "role", "x")]} for i in range(40)]
    notes = [{"text": f"Wren note {i}."} for i in range(20)]
    both = [{"triples": [attr(f"Yara {i}", "role", "x"), attr(f"Yara {i}", "city", "y")], "text": f"Yara {i} note."} for i in range(10)]
    got = [(await mem.facts.write_many(r)).transactions for r in (facts, notes, both)]
    assert got == [2, 2, 2]  # 32 + 8; 16 + 4; 8 (weight 4 each) + 2


# --- a bad request fails alone ---------------------------------------------------------------
async def test_a_bad_request_fails_alone_with_its_typed_error_and_the_others_land(mem, db):
    before = await counts(db)
    requests = [
        {"triples": [attr("Carol Batch", "role", "CFO")], "idempotency_key": "carol"},
        {"triples": [attr("Dan Batch", "", "x")]},                                    # refused by prepare
        {"triples": [attr("Carol Batch", "role", "CEO")], "idempotency_key": "carol"},  # refused inside the group
        {"triples": [attr("Erin Batch", "role", "COO")], "text": "Erin runs operations."},
    ]
    result = await mem.facts.write_many(requests, per_transaction=8)
    assert [(e.index, e.code) for e in result.errors] == [(1, "invalid_input"), (2, "idempotency_conflict")]
    assert "triples[0].key must be a non-empty string" in result.errors[0].message
    assert isinstance(result.errors[0].exception(), InvalidInput)
    assert isinstance(result.errors[1].exception(), IdempotencyConflict)
    assert [w is not None for w in result.writes] == [True, False, False, True]
    # the group of three failed as a whole, then each went alone
    assert result.transactions == 1 + 3 and (result.facts, result.passages) == (2, 1)
    assert [a.value for a in (await mem.entities.get("person", "Carol Batch")).attributes] == ["CFO"]
    assert await mem.entities.get("person", "Dan Batch") is None
    assert [a.value for a in (await mem.entities.get("person", "Erin Batch")).attributes] == ["COO"]
    after = await counts(db)
    assert (after["attribute"] - before["attribute"], after["memory_chunk"] - before["memory_chunk"],
            after["memory_write"] - before["memory_write"]) == (2, 1, 1)


# --- nothing partial ---------------------------------------------------------------------------
async def test_an_atomic_batch_that_fails_leaves_nothing(mem, db):
    before = await counts(db)
    good = [{"triples": [attr(f"Frank {i}", "role", "x"), rel(f"Frank {i}", "works_at", "Globex")], "text": f"Frank {i} note",
             "idempotency_key": f"frank-{i}"} for i in range(3)]
    with pytest.raises(IdempotencyConflict):
        await mem.facts.write_many([*good, {**good[0], "text": "a different body"}], atomic=True)
    with pytest.raises(InvalidInput, match=r"triples\[0\].key"):  # refused by prepare: nothing sent
        await mem.facts.write_many([*good, {"triples": [attr("Frank", "", "x")]}], atomic=True)
    # past validation: the last request's passage vector has the wrong size, after the
    # first requests' rows were stored in the same transaction
    vec = [0.1] * 384
    ok = {"model": "hash-384", "entities": [vec, vec], "attributes": [vec], "passages": [vec]}
    with pytest.raises(EmbeddingMismatch):
        await call(db, "fn::amem::facts::write_many", good, [ok, ok, {**ok, "passages": [[0.1] * 5]}])
    assert await counts(db) == before


async def test_a_batch_failing_after_its_rows_are_written_leaves_no_partial_request(fresh):
    """A failure in the set-based store phase (a passage refused by an event, after the
    batch's entities, names and attributes were written in the same transaction) undoes
    the whole batch; written again one by one, only the refused request is missing."""
    mem = await fresh()
    await mem.conn.query("DEFINE EVENT boom ON memory_chunk WHEN $event = 'CREATE' AND string::contains($after.text, 'boom') "
                         "THEN { THROW 'amem:invalid_input: boom refused' }")
    before = await counts(mem.conn)
    requests = [{"triples": [attr(f"Ivy {i}", "role", "lead"), rel(f"Ivy {i}", "works_at", "Acme")],
                 "text": f"Ivy {i} {'boom' if i == 2 else 'leads'}.", "idempotency_key": f"ivy-{i}"} for i in range(4)]
    with pytest.raises(InvalidInput, match="boom refused"):
        await mem.facts.write_many(requests, atomic=True)
    assert await counts(mem.conn) == before
    result = await mem.facts.write_many(requests, per_transaction=4)
    assert [(e.index, e.code) for e in result.errors] == [(2, "invalid_input")] and result.transactions == 1 + 4
    assert await mem.entities.get("person", "Ivy 2") is None
    (left,) = await mem.conn.query("SELECT VALUE key FROM memory_write")
    assert sorted(left) == ["ivy-0", "ivy-1", "ivy-3"]
    after = await counts(mem.conn)
    assert (after["attribute"] - before["attribute"], after["relation"] - before["relation"],
            after["memory_chunk"] - before["memory_chunk"]) == (3, 3, 3)


async def error_of(conn, fn: str, *args) -> tuple[str, str]:
    """(class name, message) of the typed error a call raises."""
    try:
        await call(conn, fn, *args)
    except Exception as exc:  # the typed error is what is compared
        return type(exc).__name__, str(exc)
    raise AssertionError(f"{fn} raised nothing")


# a batch's vectors are checked once for the batch (fn::amem::facts::vector_counts); each case
# must fail as the same requests written one by one, in order, fail: the first bad request's
# own typed error, and nothing stored
V = [0.1] * 384


def fact_vectors(**kw) -> dict:
    return {"model": "hash-384", "entities": [V], "attributes": [V], "passages": [], **kw}


@pytest.mark.parametrize("case", ["count", "dimension", "model", "unknown key", "count first, input after",
                                  "input first, dimension after"])
async def test_a_batch_fails_on_its_vectors_as_one_by_one_fails(mem, db, case):
    good = [{"triples": [attr(f"Vic {case} {i}", "role", "x")]} for i in range(4)]
    vectors = [fact_vectors() for _ in good]
    requests = list(good)
    bad_at = 2
    if case == "count":
        vectors[bad_at] = fact_vectors(attributes=[])
    elif case == "dimension":
        vectors[bad_at] = fact_vectors(attributes=[[0.1] * 5])
    elif case == "model":
        vectors[bad_at] = fact_vectors(model="another-model")
    elif case == "unknown key":
        vectors[bad_at] = fact_vectors(extra=[])
    elif case == "count first, input after":  # the count is checked in request order, with the input
        vectors[1] = fact_vectors(entities=[])
        requests[3] = {"triples": [attr("Vic", "", "x")]}
        bad_at = 1
    elif case == "input first, dimension after":  # a bad vector entry: every request checks its own, in order
        requests[1] = {"triples": [attr("Vic", "", "x")]}
        vectors[3] = fact_vectors(passages=[[0.1] * 3])
        bad_at = 1
    await mem.facts.declare_key("role")  # any write first, so the model is recorded
    await call(db, "fn::amem::facts::write", {"triples": [attr("Vic first", "role", "x")]}, fact_vectors())
    before = await counts(db)
    batched = await error_of(db, "fn::amem::facts::write_many", requests, vectors)
    assert await counts(db) == before
    alone = await error_of(db, "fn::amem::facts::write", requests[bad_at], vectors[bad_at])
    assert batched == alone and alone[0] in {"InvalidInput", "EmbeddingMismatch"}
    assert await counts(db) == before


async def test_the_first_vectors_of_a_batch_record_the_model_as_one_by_one(fresh):
    """A batch on a database with no recorded model records its model (as the first write's
    check_vectors does); two models in one batch fail as one by one (the second refused);
    vectors NONE for some requests store those without a vector."""
    mem = await fresh()
    await mem.conn.query("DELETE amem_setting:embedding")
    two = await error_of(mem.conn, "fn::amem::facts::write_many",
                         [{"text": "one"}, {"text": "two"}],
                         [{"model": "m-a", "passages": [V]}, {"model": "m-b", "passages": [V]}])
    assert two[0] == "EmbeddingMismatch" and "holds embeddings from m-a; refusing vectors from m-b" in two[1]
    (model,) = await mem.conn.query("SELECT VALUE model FROM amem_setting:embedding")
    assert model == []
    done = await call(mem.conn, "fn::amem::facts::write_many", [{"text": "one"}, {"text": "two"}, {"text": "three"}],
                      [{"model": "m-a", "passages": [V]}, None, {"model": "m-a", "passages": [V]}])
    assert len(done) == 3
    (model,) = await mem.conn.query("SELECT VALUE model FROM amem_setting:embedding")
    assert model == ["m-a"]
    (stored,) = await mem.conn.query("SELECT VALUE [text, embedding != NONE] FROM memory_chunk ORDER BY text")
    assert sorted(stored) == [["one", True], ["three", True], ["two", False]]


async def test_write_many_refuses_what_is_not_a_batch(mem, db):
    before = await counts(db)
    one = {"text": "a note"}
    for requests, vectors, message in [
        ([], None, "requests must be a list of 1 to"),
        ("not a list", None, "requests must be a list of 1 to"),
        ([one] * (FACTS_BATCH_MAX + 1), None, f"1 to {FACTS_BATCH_MAX} memory writes"),
        ([one, one], [None], r"vectors must hold one entry per request \(2\), got 1"),
    ]:
        with pytest.raises(InvalidInput, match=message):
            await call(db, "fn::amem::facts::write_many", requests, vectors)
    with pytest.raises(TypeError, match="a list of memory writes"):
        await mem.facts.write_many(one)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=f"at most {FACTS_BATCH_MAX}"):
        await mem.facts.write_many([one] * (FACTS_BATCH_MAX + 1), atomic=True)
    assert await counts(db) == before


KILLED_WRITER = """
import asyncio, os, sys
from amem_db.client import Memory
async def main():
    mem = await Memory.open(url=sys.argv[1], embedder="hash:384", migrate=True)
    n = 0
    while True:
        batch = [{"triples": [{"entity": {"type": "topic", "name": f"k {n} {i}"}, "key": "a", "value": "x"},
                              {"entity": {"type": "topic", "name": f"k {n} {i}"}, "key": "b", "value": "y"}],
                  "text": f"passage {n} {i}", "idempotency_key": f"{n}-{i}"} for i in range(25)]
        await mem.facts.write_many(batch, atomic=True)
        n += 1
        print(n, flush=True)
asyncio.run(main())
"""


async def test_a_process_killed_in_a_batch_leaves_whole_requests_and_every_acknowledged_one(tmp_path):
    url = f"surrealkv://{tmp_path / 'db'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(KILLED_WRITER), url], stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "1", "the writer did not commit a first batch"
        time.sleep(0.7)  # well inside a later batch (each takes seconds)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # every batch the writer was told was written (it printed its number after write_many
    # returned): each commit reaches the log file before it returns, whatever the store's sync
    # (AMEM_SYNC, connection.engine_url), so a killed process loses none
    acknowledged = int(([1] + [line for line in child.stdout.read().split() if line.isdigit()])[-1])
    mem = await Memory.open(url=url, embedder="hash:384")
    try:
        (per_write,) = await mem.conn.query(
            "SELECT write, count() AS n FROM attribute GROUP BY write")
        (chunks,) = await mem.conn.query("SELECT write, count() AS n FROM memory_chunk GROUP BY write")
        (keys,) = await mem.conn.query("SELECT VALUE write FROM memory_write")
    finally:
        await close_quietly(mem.conn)
    writes = {r["write"] for r in per_write}
    assert writes and all(r["n"] == 2 for r in per_write)  # each request whole: both triples ...
    assert {r["write"] for r in chunks} == writes and all(r["n"] == 1 for r in chunks)  # ... its passage ...
    assert set(keys) == writes  # ... and its idempotency row
    assert len(writes) % 25 == 0  # and whole batches: the batch was one transaction
    assert len(writes) >= 25 * acknowledged  # and nothing acknowledged lost


# --- replays -------------------------------------------------------------------------------------
async def test_a_replayed_batch_returns_the_stored_responses_and_changes_nothing(mem, db):
    requests = [{"triples": [attr(f"Gina {i}", "role", "lead")], "text": f"Gina {i} leads.", "idempotency_key": f"gina-{i}"}
                for i in range(5)]
    first = await mem.facts.write_many(requests, per_transaction=2)
    before = await counts(db)
    again = await mem.facts.write_many(requests, per_transaction=3)
    assert again.model_dump() | {"transactions": 0} == first.model_dump() | {"transactions": 0}
    assert await counts(db) == before
    # without keys a repeat is known too: same rows, outcome unchanged, no second history row
    plain = [{"triples": [attr(f"Hank {i}", "role", "lead")], "observed_at": at(3)} for i in range(3)]
    await mem.facts.write_many(plain)
    before = await counts(db)
    repeat = await mem.facts.write_many(plain)
    assert [w.triples[0].outcome for w in repeat.writes] == ["unchanged"] * 3
    assert (await counts(db))["attribute"] == before["attribute"]


def test_the_sync_client_writes_a_batch():
    from amem_db import SyncMemory

    with SyncMemory.open(url="mem://", embedder="hash:384", migrate=True) as mem:
        done = []
        result = mem.facts.write_many([{"text": f"note {i}"} for i in range(5)], per_transaction=2,
                                      progress=lambda n, total: done.append((n, total)))
        # groups of 2, 2 and 1 passages, written two at a time (nothing in one touches the
        # other): progress counts the requests done, in the order the groups finish
        assert (result.passages, result.transactions) == (5, 3) and done[-1] == (5, 5)
        assert sorted(b - a for a, b in zip([0] + [n for n, _ in done], [n for n, _ in done])) == [1, 2, 2]


# --- amem-db remember --batch -------------------------------------------------------------------
def test_remember_batch_writes_a_jsonl_file_and_names_the_failed_lines(tmp_path):
    args = ("--url", f"surrealkv://{tmp_path / 'db'}", "--embedder", "hash:384")
    runner = CliRunner()
    assert runner.invoke(app, [*args, "migrate"]).exit_code == 0
    lines = [json.dumps({"text": "Ivy Chen joined Acme.", "triples": [attr("Ivy Chen", "role", "analyst")]}), "",
             json.dumps({"triples": [attr("Ivy Chen", "role", "manager")]}),
             json.dumps({"triples": [attr("Ivy Chen", "", "x")]})]
    path = tmp_path / "turns.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = runner.invoke(app, [*args, "remember", "--batch", str(path), "--json"])
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert {k: summary[k] for k in ("requests", "written", "failed", "facts", "passages")} == {
        "requests": 3, "written": 2, "failed": 1, "facts": 2, "passages": 1}
    assert summary["errors"] == [{"line": 4, "code": "invalid_input", "message": "triples[0].key must be a non-empty string"}]
    shown = runner.invoke(app, [*args, "entities", "get", "person", "Ivy Chen", "--json"])
    assert [a["value"] for a in json.loads(shown.stdout)["attributes"]] == ["manager"]
    text = runner.invoke(app, [*args, "remember", "--batch", str(path)])
    assert "2 of 3 requests written" in text.stdout and "line 4" in text.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n[1, 2]\n')
    refused = runner.invoke(app, [*args, "remember", "--batch", str(bad)])
    assert refused.exit_code == 1 and "line 2: a request is a JSON object" in refused.stderr
    mixed = runner.invoke(app, [*args, "remember", "--batch", str(path), "--scope", "org/x"])
    assert mixed.exit_code == 1 and "--batch takes every field from its lines" in mixed.stderr


# --- the short-text path of a write's passages --------------------------------------------------
_CHARS = st.sampled_from(["a", "Z", "é", "漢", "😀", " ", "  ", "\n", "\n\n", "\t", "\u00a0", "\u2003", "\u200b", ".", "-", "word"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(_CHARS, min_size=1, max_size=120).map("".join), min_size=1, max_size=20),
       size=st.sampled_from([50, 60, 800]))
async def test_facts_split_is_chunk_split(db, texts, size):
    """fn::amem::facts::split returns a short text whole without walking it: always what chunk::split returns."""
    overlap = size // 5
    (fast, slow) = await db.query("RETURN $ts.map(|$t| fn::amem::facts::split($t, $s, $o)); RETURN $ts.map(|$t| fn::amem::chunk::split($t, [], $s, $o));",
                                  {"ts": texts, "s": size, "o": overlap})
    keys = ("text", "position", "char_start", "char_end")
    assert [[{k: c[k] for k in keys} for c in cs] for cs in fast] == [[{k: c[k] for k in keys} for c in cs] for cs in slow]


def test_the_readme_batch_example_runs_as_printed(tmp_path):
    readme = (ROOT / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if ln.startswith("amem-db remember --batch examples/"))
    command, printed = (part.strip() for part in line.split("#", 1))
    args = ("--url", f"surrealkv://{tmp_path / 'db'}", "--embedder", "hash:384")
    runner = CliRunner()
    assert runner.invoke(app, [*args, "migrate"]).exit_code == 0
    done = runner.invoke(app, [*args, *command.split()[1:]])
    assert done.exit_code == 0 and done.stdout.strip() == printed, done.output
    shown = runner.invoke(app, [*args, "entities", "get", "person", "Dana Reyes", "--json"])
    assert [a["value"] for a in json.loads(shown.stdout)["attributes"]] == ["Lisbon"]  # the later line superseded Porto
