"""Forget and inspect on the real engine (issue 11, MEMORY.md section 1 "Forget"
and "Reads"): fn::amem::forget (soft / dryRun / purge, by ids and by query),
the forget grant of record users (over the dev server: one engine session per
connection), fn::amem::inspect for every reference kind, and the README's
Forget / Inspect examples as printed.

Every test names its own entities; every table is counted (or dumped) before
and after, so a change anywhere else fails the test."""

from __future__ import annotations

import itertools
import json
from functools import partial

import helpers
import pytest
import pytest_asyncio
from devserver_fixture import ROOT_PASSWORD, ROOT_USER, dev_server, tenants, unique_name  # noqa: F401
from helpers import attr, mem  # noqa: F401  (a fixture)
from test_readme import blocks, run_script, statements

from amem_db import InvalidInput, NotFound, PermissionDenied
from amem_db import access as access_api
from amem_db.db import call
from amem_db.models import ForgetResult, Inspection

TABLES = ["entity", "entity_name", "attribute", "attribute_fts", "relation", "memory_chunk", "memory_chunk_fts",
          "uncertainty", "fact_key", "memory_write", "mentions", "retrieval_trace", "chunk", "document"]
_n = itertools.count()


def name(prefix: str = "Person") -> str:
    return f"{prefix} F{next(_n)}"


def ent(who: str, type: str = "person") -> dict:
    return {"type": type, "name": who}


# relations here point at organisations (the assertions spell entity:organisation/...)
rel = partial(helpers.rel, ttype="organisation")


async def counts(conn) -> dict[str, int]:
    out = {}
    for t in TABLES:
        (rows,) = await conn.query(f"SELECT count() FROM {t} GROUP ALL")
        out[t] = rows[0]["count"] if rows else 0
    return out


async def dump(conn, tables=TABLES) -> str:
    parts = []
    for t in tables:
        (rows,) = await conn.query(f"SELECT * FROM {t} ORDER BY id")
        parts.append(json.dumps(rows, default=str, sort_keys=True))
    return "\n".join(parts)


def delta(before: dict, after: dict) -> dict:
    return {t: after[t] - before[t] for t in before if after[t] != before[t]}


async def write(mem, *triples, **request):
    return await mem.facts.write({"triples": list(triples), **request})


# --- soft forget --------------------------------------------------------------------------
async def test_soft_forget_of_an_entity_hides_it_from_every_read_and_keeps_the_rows(mem, db):
    who, org = name(), name("Org")
    w1 = await write(mem, attr(who, "role", "engineer"), rel(who, "works_at", org),
                     {"entity": {**ent(who), "aliases": [f"{who} alias"]}, "key": "team", "value": "search"})
    other = name()
    incoming = await write(mem, {"entity": ent(other), "key": "manages", "target": ent(who)})
    assert (await mem.entities.get("person", who)).attributes
    before = await counts(db)
    res = await mem.forget(query={"entity": ent(who)})
    assert isinstance(res, ForgetResult) and not res.purged and not res.dry_run
    # two attributes, its edge and the edge pointing to it, its canonical name and the alias
    assert res.forgotten.model_dump() == {"attribute": 2, "relation": 2, "memory_chunk": 0, "entity_name": 2, "uncertainty": 0,
                                          "mentions": 0, "attribute_fts": 0, "memory_chunk_fts": 0}
    assert set(res.ids) == {w1.triples[0].id, w1.triples[1].id, w1.triples[2].id, incoming.triples[0].id, f"entity:person/{who.lower()}"}
    assert await counts(db) == before  # soft: nothing erased
    # gone from get / list / history / inspect, and from the other entity's relations
    assert await mem.entities.get("person", who) is None
    assert await mem.inspect(ent(who)) is None and await mem.inspect(w1.triples[0].id) is None
    assert who not in [e.name for e in (await mem.entities.list(limit=500)).entities]
    with pytest.raises(NotFound, match=r"^no entity person "):
        await mem.entities.history("person", who, "role")
    assert (await mem.entities.get("person", other)).relations == []
    # kept for audit: the owner's raw query sees every row, stamped
    (rows,) = await db.query("SELECT VALUE forgotten_at FROM attribute WHERE entity = type::record('entity', $id)",
                             {"id": f"person/{who.lower()}"})
    assert len(rows) == 2 and all(r is not None for r in rows)
    (fts,) = await db.query("SELECT VALUE current FROM attribute_fts WHERE entity = type::record('entity', $id)", {"id": f"person/{who.lower()}"})
    assert fts == [False, False]  # the BM25 copy says not current (recall skips it)
    (node,) = await db.query("SELECT VALUE scopes FROM ONLY type::record('entity', $id)", {"id": f"person/{who.lower()}"})
    assert node == []  # no live name: the node leaves every scope
    # a second soft forget changes nothing more
    again = await mem.forget(query={"entity": ent(who)})
    assert sum(again.forgotten.model_dump().values()) == 0
    # naming it again brings the entity back with the new fact only
    await write(mem, attr(who, "role", "architect"))
    got = await mem.entities.get("person", who)
    assert [a.value for a in got.attributes] == ["architect"] and got.aliases == []


async def test_soft_forget_of_one_key_and_of_a_passage(mem, db):
    who = name()
    w = await write(mem, attr(who, "role", "cto"), attr(who, "city", "Oslo"), text="A note about the role.", session_id=name("s"))
    res = await mem.forget(query={"entity": ent(who), "key": "ROLE"})
    assert res.forgotten.attribute == 1 and res.forgotten.entity_name == 0 and res.ids == [w.triples[0].id]
    assert [a.key for a in (await mem.entities.get("person", who)).attributes] == ["city"]
    assert (await mem.entities.history("person", who, "role")).rows == []
    res = await mem.forget([w.passages[0]])
    assert res.forgotten.memory_chunk == 1
    (fts,) = await db.query("SELECT VALUE forgotten_at FROM ONLY type::record('memory_chunk_fts', $k)", {"k": w.passages[0].split(":", 1)[1]})
    assert fts is not None  # the BM25 copy carries the stamp (recall filters on it)
    assert await mem.inspect(w.passages[0]) is None


# --- dry run ---------------------------------------------------------------------------------
async def test_dry_run_counts_exactly_what_the_forget_then_does_and_changes_nothing(mem, db):
    who = name()
    await write(mem, attr(who, "role", "a", confidence=0.9))
    await write(mem, attr(who, "role", "b", confidence=0.5))  # uncertain beside a
    await write(mem, attr(who, "role", "c"), rel(who, "works_at", name("Org")), text="passage", session_id=name("s"))
    for purge in (False, True):
        snapshot = await dump(db)
        dry = await mem.forget(query={"entity": ent(who)}, dry_run=True, purge=purge)
        assert dry.dry_run and not dry.purged
        assert await dump(db) == snapshot  # nothing changed, not even the fts copies
        assert dry.forgotten.attribute == 3 and dry.forgotten.relation == 1 and dry.forgotten.entity_name == 1
        assert dry.forgotten.uncertainty == (1 if purge else 0) and dry.forgotten.attribute_fts == (3 if purge else 0)
    real = await mem.forget(query={"entity": ent(who)}, purge=True)
    assert real.forgotten == dry.forgotten and real.purged and real.ids == dry.ids


# --- purge ----------------------------------------------------------------------------------
async def test_purge_erases_rows_history_uncertainty_fts_edges_and_passages(mem, db):
    who, org, boss = name(), name("Org"), name()
    w1 = await write(mem, attr(who, "role", "engineer", confidence=0.8), rel(who, "works_at", org),
                     text="First passage about the engineer.", session_id="purge-s")
    w2 = await write(mem, attr(who, "role", "lead", confidence=0.9))        # supersedes engineer
    w3 = await write(mem, attr(who, "role", "intern", confidence=0.4))      # uncertain beside lead
    w4 = await write(mem, {"entity": ent(boss), "key": "manages", "target": ent(who)})
    # a mentions edge from the passage to the entity (the mention matcher links them)
    passage = w1.passages[0]
    await db.query("RELATE (type::record($p))->mentions->(type::record('entity', $e)) SET scopes = []",
                   {"p": passage, "e": f"person/{who.lower()}"})
    before = await counts(db)
    res = await mem.forget(query={"entity": ent(who)}, purge=True)
    assert res.purged
    # attributes: engineer, lead, intern; relations: works_at and the incoming manages;
    # names: the canonical one; the uncertainty record; the mentions edge; 3 fts copies
    assert res.forgotten.model_dump() == {"attribute": 3, "relation": 2, "memory_chunk": 0, "entity_name": 1, "uncertainty": 1,
                                          "mentions": 1, "attribute_fts": 3, "memory_chunk_fts": 0}
    after = await counts(db)
    assert delta(before, after) == {"entity": -1, "entity_name": -1, "attribute": -3, "attribute_fts": -3, "relation": -2,
                                    "uncertainty": -1, "mentions": -1}
    # the node went (nothing names or uses it); the target and the boss stay
    (nodes,) = await db.query("SELECT VALUE record::id(id) FROM entity WHERE id IN [type::record('entity', $a), type::record('entity', $b), type::record('entity', $c)]",
                              {"a": f"person/{who.lower()}", "b": f"organisation/{org.lower()}", "c": f"person/{boss.lower()}"})
    assert sorted(nodes) == sorted([f"organisation/{org.lower()}", f"person/{boss.lower()}"])
    assert all(t.id in res.ids for t in (w1.triples[0], w2.triples[0], w3.triples[0], w4.triples[0]))
    # the passage itself is forgotten by its session (with its fts copy)
    before = await counts(db)
    res = await mem.forget(query={"session_id": "purge-s"}, purge=True)
    assert res.forgotten.memory_chunk == 1 and res.forgotten.memory_chunk_fts == 1
    assert delta(before, await counts(db)) == {"memory_chunk": -1, "memory_chunk_fts": -1}


async def test_purge_by_id_takes_the_older_chain_only_and_keeps_a_node_in_use(mem, db):
    who = name()
    a = await write(mem, attr(who, "role", "one"))
    b = await write(mem, attr(who, "role", "two"))
    c = await write(mem, attr(who, "role", "three"))
    keep = await write(mem, attr(who, "city", "Rome"))
    before = await counts(db)
    res = await mem.forget([b.triples[0].id], purge=True)  # two, and the one it superseded
    assert res.forgotten.attribute == 2 and res.ids == [b.triples[0].id]
    assert delta(before, await counts(db)) == {"attribute": -2, "attribute_fts": -2}
    h = await mem.entities.history("person", who, "role")
    assert [r.id for r in h.rows] == [c.triples[0].id]
    assert a.triples[0].id not in [r.id for r in h.rows]
    # the entity keeps its name and its other facts
    assert [x.value for x in (await mem.entities.get("person", who)).attributes] == ["Rome", "three"]
    assert keep.triples[0].outcome == "added"


async def test_purge_keeps_a_node_another_scope_still_names(mem, db):
    who = name()
    await write(mem, attr(who, "role", "x"), scopes=["org/one"])
    await write(mem, attr(who, "role", "y"), scopes=["org/two"])
    res = await mem.forget(query={"entity": ent(who)}, scopes=["org/one"], purge=True)
    assert res.forgotten.attribute == 1 and res.forgotten.entity_name == 1
    (node,) = await db.query("SELECT VALUE scopes FROM ONLY type::record('entity', $id)", {"id": f"person/{who.lower()}"})
    assert node == ["org/two"]
    assert [x.value for x in (await mem.entities.get("person", who)).attributes] == ["y"]


# --- by query -----------------------------------------------------------------------------------
async def test_forget_by_write_session_labels_and_combined(mem, db):
    who, sess = name(), name("sess")
    w1 = await write(mem, attr(who, "a", "1"), text="one", session_id=sess, labels=["x", "y"])
    w2 = await write(mem, attr(who, "b", "2"), text="two", session_id=sess, labels=["x"])
    w3 = await write(mem, attr(who, "c", "3"), text="three", labels=["y"])
    res = await mem.forget(query={"write": w1.write}, dry_run=True)
    assert set(res.ids) == {w1.triples[0].id, *w1.passages}
    res = await mem.forget(query={"labels": ["x", "y"]}, dry_run=True)
    assert set(res.ids) == {w1.triples[0].id, *w1.passages}
    res = await mem.forget(query={"session_id": sess, "labels": ["x"]}, dry_run=True)
    assert set(res.ids) == {w1.triples[0].id, w2.triples[0].id, *w1.passages, *w2.passages}
    res = await mem.forget(query={"entity": ent(who), "write": w3.write})
    assert res.ids == [w3.triples[0].id] and res.forgotten.attribute == 1 and res.forgotten.entity_name == 0
    assert sorted(x.key for x in (await mem.entities.get("person", who)).attributes) == ["a", "b"]
    # ids and a query together: the union, each row once
    res = await mem.forget([w1.triples[0].id, "attribute:does-not-exist"], query={"write": w1.write})
    assert res.forgotten.attribute == 1 and res.forgotten.memory_chunk == 1 and res.missing == ["attribute:does-not-exist"]


# --- bad input -----------------------------------------------------------------------------------
BAD = [
    ({}, "ids"), ({"ids": []}, "ids"), ({"ids": "attribute:x"}, "ids"), ({"ids": [42]}, "ids[0]"),
    ({"ids": ["no-colon"]}, "ids[0]"), ({"ids": ["document:x"]}, "ids[0]: table document"), ({"ids": [":x"]}, "ids[0]"),
    ({"ids": ["attribute:x"], "dryrun": True}, "unknown option dryrun"), ({"ids": ["attribute:x"], "purge": "yes"}, "purge"),
    ({"ids": ["attribute:x"], "dryRun": 1}, "dryRun"), ({"query": {}}, "query needs"), ({"query": "alice"}, "query must be"),
    ({"query": {"text": "alice"}}, "unknown option text"), ({"query": {"key": "role"}}, "query.key needs"),
    ({"query": {"entity": {"type": "person"}}}, "query.entity.name"), ({"query": {"entity": {"name": "A", "kind": "x"}}}, "unknown option kind"),
    ({"query": {"write": ""}}, "query.write"), ({"query": {"labels": []}}, "query.labels"), ({"query": {"labels": [1]}}, "query.labels"),
    ({"query": {"session_id": 5}}, "query.session_id"), ({"ids": ["attribute:x"], "scopes": []}, "scopes"),
    ({"ids": ["attribute:x"], "scopes": ["bad path!"]}, "scopes"), ({"ids": ["attribute:x"] * 1001}, "ids"), ("forget it", "a forget is an object"),
]


@pytest.mark.parametrize(("request_", "field"), BAD)
async def test_bad_input_names_the_field_and_changes_nothing(mem, db, request_, field):
    who = name()
    await write(mem, attr(who, "role", "kept"))
    snapshot = await dump(db)
    with pytest.raises(InvalidInput, match=field.replace("[", r"\[").replace("]", r"\]")):
        await call(db, "fn::amem::forget", request_)
    assert await dump(db) == snapshot


async def test_a_bad_id_after_good_ones_undoes_everything(mem, db):
    w = await write(mem, attr(name(), "role", "kept"))
    snapshot = await dump(db)
    with pytest.raises(InvalidInput, match=r"ids\[1\]"):
        await call(db, "fn::amem::forget", {"ids": [w.triples[0].id, "chunk:x"], "purge": True})
    assert await dump(db) == snapshot
    with pytest.raises(TypeError):
        await mem.forget("attribute:x")  # a str is not a list of ids


# --- inspect ----------------------------------------------------------------------------------------
async def test_inspect_every_kind(mem, db):
    who, org, boss = name(), name("Org"), name()
    w1 = await write(mem, attr(who, "role", "engineer", confidence=0.8), rel(who, "works_at", org),
                     text="Passage for inspect.", source={"kind": "turn", "ref": "chat-42", "span": {"start": 0, "end": 20}},
                     scopes=["org/acme"])
    w2 = await write(mem, attr(who, "role", "lead", confidence=0.9), {"entity": {**ent(who), "aliases": ["Ali"]}, "key": "x", "value": 1},
                     scopes=["org/acme"])
    w3 = await write(mem, attr(who, "role", "intern", confidence=0.3), scopes=["org/acme"])
    w4 = await write(mem, {"entity": ent(boss), "key": "manages", "target": ent(who)}, scopes=["org/acme"])
    await db.query("RELATE (type::record($p))->mentions->(type::record('entity', $e)) SET char_start = 0, char_end = 7, scopes = ['org/acme']",
                   {"p": w1.passages[0], "e": f"person/{who.lower()}"})
    # entity: node, aliases, current facts, incoming relations
    e = await mem.inspect(ent(who))
    assert isinstance(e, Inspection) and e.kind == "entity" and e.record["name"] == who and e.aliases == ["Ali"]
    assert sorted(str(a.value) for a in e.attributes) == ["1", "intern", "lead"]
    assert [r.target for r in e.relations] == [f"entity:organisation/{org.lower()}"]
    assert [r.id for r in e.incoming] == [w4.triples[0].id] and e.incoming[0].model_extra["subject"] == f"entity:person/{boss.lower()}"
    assert (await mem.inspect(e.id)).model_dump() == e.model_dump()  # by id == by {type, name}
    # attribute: both clocks, history neighbours, uncertainty
    lead = await mem.inspect(w2.triples[0].id)
    assert lead.kind == "attribute" and lead.record["value"] == "lead" and lead.record["write"] == w2.write
    assert lead.record["recorded_at"] is not None and lead.record["valid_from"] is not None and lead.record["created_at"] is not None
    assert lead.supersedes.id == w1.triples[0].id and lead.superseded_by is None
    assert [(u["a"], u["b"]) for u in lead.uncertainty] == [(w2.triples[0].id, w3.triples[0].id)]
    old = await mem.inspect(w1.triples[0].id)
    assert old.superseded_by.id == w2.triples[0].id and old.record["current"] is False and old.record["superseded_at"] is not None
    # relation
    r = await mem.inspect(w1.triples[1].id)
    assert r.kind == "relation" and r.record["target"] == f"entity:organisation/{org.lower()}" and r.entity == e.id
    # memory passage: text, write, citation, mentions
    p = await mem.inspect(w1.passages[0])
    assert p.kind == "memory_chunk" and p.record["text"] == "Passage for inspect." and p.record["write"] == w1.write
    assert p.record["source"] == {"kind": "turn", "ref": "chat-42", "span": {"start": 0, "end": 20}}
    assert [(m["entity"], m["name"], m["char_end"]) for m in p.mentions] == [(e.id, who, 7)]
    # chunk: document and span; trace: the stored row
    await mem.documents.ingest_text("Inspectable document text about refunds.", source="inspect-doc", scopes=["org/acme"])
    response = await mem.documents.query("refunds", mode="bm25", k=1)
    chunk = await mem.inspect(response.results[0].chunk.id)
    assert chunk.kind == "chunk" and chunk.document["source"] == "inspect-doc"
    assert chunk.span == {"char_start": 0, "char_end": len("Inspectable document text about refunds.")}
    trace = await mem.inspect(response.trace["id"])
    assert trace.kind == "retrieval_trace" and trace.record["query"] == "refunds"
    # lens-gated like entities.get; absent, unreadable and forgotten are all None
    for ref in (ent(who), w2.triples[0].id, w1.triples[1].id, w1.passages[0], chunk.id):
        assert await mem.inspect(ref, lens=[["org/acme"]]) is not None
        assert await mem.inspect(ref, lens=[["org/other"]]) is None, ref
    assert await mem.inspect("attribute:nothing-here") is None and await mem.inspect(ent(name())) is None
    for bad, field in (("document:x", "table document"), ("nocolon", "ref"), (5, "ref"), ({"type": "person"}, "ref.name"),
                       ({"type": "person", "name": "A", "x": 1}, "unknown option x")):
        with pytest.raises(InvalidInput, match=field):
            await call(db, "fn::amem::inspect", bad, None)
    with pytest.raises(InvalidInput, match="unknown option"):
        await call(db, "fn::amem::inspect", e.id, {"lenz": []})


# --- the forget grant: record users over the dev server ------------------------------------------
class World:
    pass


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(dev_server):
    grants = {"writer": dict(read=[], write=["org/a"]),
              "forgetter": dict(read=[], write=["org/a"], forget=["org/a/team"]),
              "tenant-b": dict(read=[], write=["org/b"], forget=["org/b"])}
    async with tenants(dev_server, "forget", grants) as t:
        yield await _world(t)


async def _world(t) -> World:
    w = World()
    w.ns, w.url, w.root, w.conns = t.ns, t.url, t.root, t.conns
    shared = ent("Shared Person")
    w.team = await call(w.conns["writer"], "fn::amem::facts::write", {
        "triples": [attr("Shared Person", "role", "team-role"), rel("Shared Person", "works_at", "Team Org")],
        "text": "team passage", "scopes": ["org/a/team"]}, None)
    w.wide = await call(w.conns["writer"], "fn::amem::facts::write", {
        "triples": [attr("Shared Person", "city", "a-city")], "scopes": ["org/a"]}, None)
    w.b = await call(w.conns["tenant-b"], "fn::amem::facts::write", {
        "triples": [{"entity": shared, "key": "role", "value": "bsecret-role"}], "text": "bsecret passage"}, None)
    return w


async def test_a_writer_without_a_forget_grant_cannot_forget_by_function_or_raw_surrealql(world):
    w = world
    c = w.conns["writer"]
    snapshot = await dump(w.root)
    with pytest.raises(PermissionDenied, match="no forget grants"):
        await call(c, "fn::amem::forget", {"ids": [w.team["triples"][0]["id"]]})
    for sql in ["UPDATE attribute SET forgotten_at = time::now()", "UPDATE relation SET forgotten_at = time::now()",
                "UPDATE memory_chunk SET forgotten_at = time::now()", "UPDATE entity_name SET forgotten_at = time::now()",
                "DELETE attribute", "DELETE relation", "DELETE memory_chunk", "DELETE entity_name", "DELETE uncertainty",
                "UPDATE amem_principal SET forget = ['org']"]:
        try:
            await c.query(sql)
        except Exception:  # refused outright is fine too
            pass
    assert await dump(w.root) == snapshot
    (me,) = await c.query("SELECT name, forget FROM amem_principal")
    assert me == [{"name": "writer", "forget": []}]  # its own row only, unchanged


async def test_a_forgetter_forgets_inside_its_grant_only(world):
    w = world
    c = w.conns["forgetter"]
    snapshot = await dump(w.root)
    # a readable row outside the forget grant: refused, naming its scope, nothing changed
    with pytest.raises(PermissionDenied, match="scope org/a is outside the forget region"):
        await call(c, "fn::amem::forget", {"query": {"entity": ent("Shared Person")}})
    with pytest.raises(PermissionDenied, match="org/a "):
        await call(c, "fn::amem::forget", {"ids": [w.wide["triples"][0]["id"]], "dryRun": True})
    # raw SurrealQL outside the grant changes nothing either (field rule / delete rule)
    await c.query(f"UPDATE {w.wide['triples'][0]['id']} SET forgotten_at = time::now()")
    await c.query(f"DELETE {w.wide['triples'][0]['id']}")
    assert await dump(w.root) == snapshot
    # B's row is not readable: exactly like an id that does not exist
    b_id, ghost = w.b["triples"][0]["id"], "attribute:01NOTTHEREATALL_0"
    seen_b = await call(c, "fn::amem::forget", {"ids": [b_id], "purge": True})
    seen_ghost = await call(c, "fn::amem::forget", {"ids": [ghost], "purge": True})
    assert seen_b["missing"] == [b_id] and seen_ghost["missing"] == [ghost]
    assert {k: v for k, v in seen_b.items() if k != "missing"} == {k: v for k, v in seen_ghost.items() if k != "missing"}
    assert await dump(w.root) == snapshot
    # inside the grant: the entity's rows in org/a/team, purged; B's view and A's wide row stay
    res = await call(c, "fn::amem::forget", {"query": {"entity": ent("Shared Person")}, "scopes": ["org/a/team"], "purge": True})
    assert res["forgotten"]["attribute"] == 1 and res["forgotten"]["relation"] == 1 and res["forgotten"]["entity_name"] == 1
    assert "bsecret" not in json.dumps(res)
    passage = await call(c, "fn::amem::forget", {"ids": w.team["passages"], "purge": True})
    assert passage["forgotten"]["memory_chunk"] == 1 and passage["forgotten"]["memory_chunk_fts"] == 1
    (node,) = await w.root.query("SELECT VALUE scopes FROM ONLY entity:⟨person/shared person⟩")
    assert node == ["org/a", "org/b"]  # other scopes still name it: never deleted
    b_view = await call(w.conns["tenant-b"], "fn::amem::entities::get", "person", "shared person", None)
    assert [a["value"] for a in b_view["attributes"]] == ["bsecret-role"]
    a_view = await call(w.conns["writer"], "fn::amem::entities::get", "person", "shared person", None)
    assert [a["value"] for a in a_view["attributes"]] == ["a-city"] and a_view["relations"] == []
    # an entity only the team names: its purge by a credential deletes the node too (the
    # event runs with owner rights), and the response does not say so
    await call(w.conns["writer"], "fn::amem::facts::write", {"triples": [attr("Team Only", "k", "v")], "scopes": ["org/a/team"]}, None)
    res = await call(c, "fn::amem::forget", {"ids": ["entity:person/team only"], "purge": True})
    assert res["forgotten"]["attribute"] == 1 and "entity" not in res["forgotten"]
    (left,) = await w.root.query("SELECT VALUE id FROM entity:⟨person/team only⟩")
    assert left == []


async def test_soft_forget_by_a_record_user_hides_the_node_in_its_scope_only(world):
    w = world
    b = w.conns["tenant-b"]
    res = await call(b, "fn::amem::forget", {"query": {"entity": ent("Shared Person")}})
    assert res["forgotten"]["attribute"] == 1 and res["forgotten"]["entity_name"] == 1
    assert await call(b, "fn::amem::entities::get", "person", "shared person", None) is None
    (nodes,) = await b.query("SELECT * FROM entity")
    assert nodes == [] or all("shared person" not in json.dumps(n, default=str) for n in nodes)
    assert await call(w.conns["writer"], "fn::amem::entities::get", "person", "shared person", None) is not None
    # a record user cannot see other principals' grants, nor change its own
    (rows,) = await b.query("SELECT name, forget FROM amem_principal")
    assert rows == [{"name": "tenant-b", "forget": ["org/b"]}]
    # purging what it soft-forgot: still found (its rows are readable, the node is not)
    res = await call(b, "fn::amem::forget", {"ids": ["entity:person/shared person"], "purge": True})
    assert res["missing"] == [] and res["forgotten"]["attribute"] == 1 and res["forgotten"]["entity_name"] == 1


async def test_grant_refuses_a_forget_grant_outside_the_write_grants(world):
    with pytest.raises(InvalidInput, match="forget grant org/x must lie within a write grant"):
        await access_api.grant(world.root, "bad-forgetter", read=[], write=["org/a"], forget=["org/x"])
    listed = {k["name"]: k for k in await access_api.list_keys(world.root)}
    assert listed["forgetter"]["forget"] == ["org/a/team"] and listed["writer"]["forget"] == []


# --- the README's examples, as printed --------------------------------------------------------------
def test_readme_forget_python_example(tmp_path):
    (example,) = blocks("Forget", "python")
    assert run_script(tmp_path, example).splitlines() == ["would forget 1 1", "forgotten 1 None", "purged True 1 1"]


def test_readme_inspect_python_example(tmp_path):
    (example,) = blocks("Inspect", "python")
    assert run_script(tmp_path, example).splitlines() == ["attribute team lead supersedes engineer", "entity Carol Diaz ['team lead']"]


async def test_readme_surrealql_examples(db):
    (forget_sql,) = blocks("Forget", "sql")
    outs = [(await db.query(s))[-1] for s in statements(forget_sql)]
    assert outs[0]["triples"][0]["outcome"] == "added"
    assert outs[1]["dryRun"] and outs[1]["forgotten"]["attribute"] == 1
    assert outs[2]["purged"] and outs[2]["forgotten"]["attribute"] == 1
    (inspect_sql,) = blocks("Inspect", "sql")
    outs = [(await db.query(s))[-1] for s in statements(inspect_sql)]
    assert outs[1]["kind"] == "entity" and [a["value"] for a in outs[1]["attributes"]] == ["search"]
    assert outs[2] is None  # outside the lens: the same as absent


# --- the CLI --------------------------------------------------------------------------------------------
def test_cli_forget_inspect_and_grant(tmp_path):
    from typer.testing import CliRunner

    from amem_db.cli import app

    def cli(*args: str):
        return CliRunner().invoke(app, ["--url", f"surrealkv://{tmp_path / 'db'}", "--embedder", "hash:384", *args], prog_name="amem-db")

    assert cli("migrate").exit_code == 0
    done = cli("remember", "Erin's note.", "--fact", "person:Erin Cho role=CTO", "--fact", "person:Erin Cho city=Lima", "--json")
    assert done.exit_code == 0, done.output
    write_id = json.loads(done.stdout)["write"]
    shown = cli("inspect", "person:Erin Cho", "--entity", "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["kind"] == "entity"
    text = cli("inspect", "entity:person/erin cho")
    assert text.exit_code == 0 and "entity entity:person/erin cho" in text.stdout and "attributes: 2" in text.stdout
    dry = cli("forget", "--entity", "person:Erin Cho", "--fact-key", "role", "--dry-run", "--json")
    assert dry.exit_code == 0 and json.loads(dry.stdout)["forgotten"]["attribute"] == 1 and json.loads(dry.stdout)["dryRun"]
    soft = cli("forget", "--entity", "person:Erin Cho", "--fact-key", "role")
    assert soft.exit_code == 0 and "1 rows forgotten (soft)" in soft.stdout
    purged = cli("forget", "--write", write_id, "--purge", "--json")
    assert purged.exit_code == 0 and json.loads(purged.stdout)["forgotten"] == {
        "attribute": 2, "relation": 0, "memory_chunk": 1, "entity_name": 0, "uncertainty": 0, "mentions": 0,
        "attribute_fts": 2, "memory_chunk_fts": 1}
    gone = cli("inspect", "attribute:nothing")
    assert gone.exit_code == 1 and "not_found" in gone.stderr
    bad = cli("forget", "document:x")
    assert bad.exit_code == 1 and "invalid_input" in bad.stderr and "table document" in bad.stderr
    assert cli("forget").exit_code == 1  # nothing to forget
    assert cli("forget", "--entity", "Erin").exit_code == 1  # not TYPE:NAME
    granted = cli("grant", "privacy-bot", "--write", "org/a", "--forget", "org/a/team", "--json")
    assert granted.exit_code == 0 and json.loads(granted.stdout)["principal"]["forget"] == ["org/a/team"]
    refused = cli("grant", "bad-bot", "--write", "org/a", "--forget", "org/b")
    assert refused.exit_code == 1 and "must lie within a write grant" in refused.stderr
    listed = cli("keys", "list", "--json")
    assert [k["forget"] for k in json.loads(listed.stdout)] == [["org/a/team"]]


async def test_soft_forgotten_rows_leave_recall(mem):
    who = name("Gustav")
    w = await write(mem, attr(who, "hobby", "sailing"), rel(who, "works_at", name("Harbour")),
                    text=f"{who} talked about sailing.", session_id="recall-forget")
    mine = {t.id for t in w.triples} | set(w.passages)
    found = set()
    for mode in ("bm25", "graph"):
        found |= {h.id for h in (await mem.recall(f"{who} sailing", mode=mode, k=50)).hits}
    assert found & mine  # recall sees them before the forget: the test is not vacuous
    await mem.forget(query={"entity": ent(who)})
    await mem.forget(query={"session_id": "recall-forget"})
    for mode in ("bm25", "graph", "hybrid"):
        hits = {h.id for h in (await mem.recall(f"{who} sailing", mode=mode, k=50)).hits}
        assert not hits & (mine | {f"entity:person/{who.lower()}"}), (mode, hits & mine)
