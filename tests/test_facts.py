"""The typed-memory write path on the real engine (issue 11, MEMORY.md section 1):
fn::amem::facts::prepare / write and the entity reads. Every reconciliation
rule, idempotency, each read, every bad input with all memory tables counted
before and after, one-transaction-or-nothing, a realistic scenario, raw
SurrealQL = Python, and a hypothesis property over the request shape.
Record-user scope tests live in tests/test_security.py (they need sign-in).

One migrated database for the module: each test names its own entities."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from helpers import attr, hash_memory, mem, own_db, rel  # noqa: F401  (mem, own_db: fixtures)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem_db import IdempotencyConflict, InvalidInput
from amem_db.db import call
from amem_db.errors import EmbeddingMismatch
from amem_db.models import EntityDetail, FactHistory, FactWrite

MEMORY_TABLES = ["entity", "entity_name", "attribute", "attribute_fts", "relation", "memory_chunk", "memory_chunk_fts",
                 "uncertainty", "fact_key", "memory_write", "mentions", "amem_setting"]
_n = itertools.count()


def name(prefix: str = "Person") -> str:
    return f"{prefix} {next(_n)}"


async def counts(db) -> dict[str, int]:
    out = {}
    for t in MEMORY_TABLES:
        (rows,) = await db.query(f"SELECT count() FROM {t} GROUP ALL")
        out[t] = rows[0]["count"] if rows else 0
    return out


async def write(mem, *triples, **request) -> FactWrite:
    return await mem.facts.write({"triples": list(triples), **request})


def at(days: int) -> str:
    return (datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=days)).isoformat()


# --- reconciliation ------------------------------------------------------------------
async def test_supersede_links_both_ways_and_closes_valid_time(mem):
    who = name()
    first = await write(mem, attr(who, "role", "engineer", confidence=0.8))
    second = await write(mem, attr(who, "role", "CTO", confidence=0.9))
    assert [t.outcome for t in first.triples + second.triples] == ["added", "superseded"]
    old, new = first.triples[0].id, second.triples[0].id
    assert second.triples[0].supersedes == [old]
    h = await mem.entities.history("person", who, "role")
    assert [r.id for r in h.rows] == [new, old]  # newest first
    assert h.rows[0].supersedes == old and h.rows[1].superseded_by == new
    assert h.rows[1].superseded_at is not None and h.rows[1].valid_until == h.rows[0].valid_from
    assert h.rows[0].current and not h.rows[1].current
    # the same value again changes nothing
    again = await write(mem, attr(who, "role", "CTO"))
    assert again.triples[0].outcome == "unchanged" and again.triples[0].id == new


async def test_low_confidence_keeps_both_current_with_an_uncertainty_record(mem, db):
    who = name()
    a = await write(mem, attr(who, "employer_city", "Paris", confidence=0.9))
    b = await write(mem, attr(who, "employer_city", "Lyon", confidence=0.6))  # under the floor
    assert b.triples[0].outcome == "uncertain" and b.triples[0].uncertain_with == [a.triples[0].id]
    # at the floor: beats Lyon (0.6), not Paris (0.9): per row, supersedes one, uncertain with the other
    c = await write(mem, attr(who, "employer_city", "Nice", confidence=0.8))
    assert c.triples[0].outcome == "superseded"
    assert c.triples[0].supersedes == [b.triples[0].id] and c.triples[0].uncertain_with == [a.triples[0].id]
    got = await mem.entities.get("person", who)
    assert sorted(r.value for r in got.attributes) == ["Nice", "Paris"]
    (unc,) = await db.query("SELECT VALUE [record::id(a), record::id(b), resolved_at != NONE] FROM uncertainty "
                            "WHERE entity = type::record('entity', $id) ORDER BY recorded_at",
                            {"id": f"person/{who.lower()}"})
    ids = [x.triples[0].id.split(":", 1)[1] for x in (a, b, c)]
    assert unc == [[ids[0], ids[1], True], [ids[0], ids[2], False]]  # Lyon was superseded: its record is resolved
    # a confident write supersedes every current value and resolves the records
    d = await write(mem, attr(who, "employer_city", "Berlin", confidence=0.95))
    assert d.triples[0].outcome == "superseded" and len(d.triples[0].supersedes) == 2
    (open_,) = await db.query("SELECT count() FROM uncertainty WHERE entity = type::record('entity', $id) AND resolved_at = NONE GROUP ALL",
                              {"id": f"person/{who.lower()}"})
    assert open_ in ([], [{"count": 0}])
    assert [r.value for r in (await mem.entities.get("person", who)).attributes] == ["Berlin"]


async def test_values_in_different_scopes_coexist(mem):
    who = name()
    await write(mem, attr(who, "role", "lead"), scopes=["org/x"])
    other = await write(mem, attr(who, "role", "intern"), scopes=["org/y"])
    assert other.triples[0].outcome == "added"  # no conflict across scopes
    got = await mem.entities.get("person", who)
    assert sorted((r.value, tuple(r.scopes)) for r in got.attributes) == [("intern", ("org/y",)), ("lead", ("org/x",))]
    x = await mem.entities.get("person", who, lens=[["org/x"]])
    assert [r.value for r in x.attributes] == ["lead"]
    assert await mem.entities.get("person", who, lens=[["org/z"]]) is None


async def test_declared_multi_valued_keys_keep_every_value(own_db):
    # a database of its own: the declaration is database-wide and would change what other tests' writes supersede
    mem = hash_memory(own_db)
    who = name()
    declared = await mem.facts.declare_key("Speaks")
    assert declared.key == "speaks" and declared.multi_valued
    r = await write(mem, attr(who, "speaks", "French"), attr(who, "speaks", "German"))
    r2 = await write(mem, attr(who, "speaks", "Italian"), attr(who, "speaks", "French"))
    assert [t.outcome for t in r.triples + r2.triples] == ["added", "coexists", "coexists", "unchanged"]
    got = await mem.entities.get("person", who)
    assert sorted(a.value for a in got.attributes) == ["French", "German", "Italian"]


async def test_late_arriving_fact_enters_history_without_superseding(mem):
    who = name()
    now = await write(mem, attr(who, "city", "Oslo"), valid_from=at(300))
    late = await write(mem, attr(who, "city", "Bergen"), valid_from=at(10))
    assert late.triples[0].outcome == "late" and late.triples[0].supersedes == []
    got = await mem.entities.get("person", who)
    assert [a.value for a in got.attributes] == ["Oslo"]
    rows = {r.value: r for r in (await mem.entities.history("person", who, "city")).rows}
    assert rows["Bergen"].valid_until == rows["Oslo"].valid_from and rows["Bergen"].superseded_at is None
    assert rows["Oslo"].id == now.triples[0].id and rows["Oslo"].superseded_by is None


async def test_a_repeated_statement_adds_no_second_history_row(mem):
    # a retry without an idempotency key: the superseded value, restated as it was, is known already
    who = name()
    old = await write(mem, attr(who, "role", "VP"), valid_from=at(10))
    await write(mem, attr(who, "role", "CTO"), valid_from=at(300))
    again = await write(mem, attr(who, "role", "VP"), valid_from=at(10))
    assert again.triples[0].outcome == "unchanged" and again.triples[0].id == old.triples[0].id
    late = await write(mem, attr(who, "role", "intern"), valid_from=at(5))
    assert late.triples[0].outcome == "late"
    assert (await write(mem, attr(who, "role", "intern"), valid_from=at(5))).triples[0].outcome == "unchanged"
    rows = (await mem.entities.history("person", who, "role")).rows
    assert sorted(r.value for r in rows) == ["CTO", "VP", "intern"]
    # the same value from another time is a new statement (it held again later)
    back = await write(mem, attr(who, "role", "VP"), valid_from=at(600))
    assert back.triples[0].outcome == "superseded"


async def test_retraction_closes_valid_time(mem):
    who = name()
    await write(mem, attr(who, "title", "Dr"), rel(who, "works_at", "Initech"))
    r = await write(mem, {"entity": {"type": "person", "name": who}, "key": "title", "retract": True},
                    {"entity": {"type": "person", "name": who}, "key": "works_at", "target": {"type": "company", "name": "Initech"},
                     "retract": True})
    assert [t.outcome for t in r.triples] == ["retracted", "retracted"]
    got = await mem.entities.get("person", who)
    assert got.attributes == [] and got.relations == []
    (row,) = (await mem.entities.history("person", who, "title")).rows
    assert row.retracted and row.valid_until is not None and not row.current
    again = await write(mem, {"entity": {"type": "person", "name": who}, "key": "title", "retract": True})
    assert again.triples[0].outcome == "nothing_to_retract"


async def test_relations_supersede_and_placeholder_targets(mem):
    who = name()
    await write(mem, rel(who, "works_at", "Acme Corp"))
    r = await write(mem, rel(who, "works_at", "Globex", ttype="org"))
    assert r.triples[0].outcome == "superseded"
    got = await mem.entities.get("person", who)
    assert [x.target for x in got.relations] == ["entity:organisation/globex"]
    target = await mem.entities.get("organisation", "GLOBEX")
    assert target is not None and target.type == "organisation" and target.attributes == []
    unknown = await write(mem, rel(who, "likes", "Spaghetti", ttype="dish"))
    assert (await mem.entities.get("other", "spaghetti")) is not None and unknown.triples[0].outcome == "added"


# --- identity, importance, passages --------------------------------------------------------
async def test_identity_types_aliases_importance_and_passages(mem, db):
    who = name("  Ada   LOVELACE")
    r = await mem.facts.write({"triples": [{"entity": {"type": "People", "name": who, "aliases": ["Countess", "the countess", "COUNTESS", who]},
                                            "key": "Born", "value": 1815, "category": "identity"}],
                               "text": "Ada wrote the first program. " * 80, "session_id": "s1", "role": "user", "labels": ["bio", "bio", "history"],
                               "source": {"kind": "turn", "ref": "turn-7", "span": {"start": 0, "end": 27}}})
    norm = " ".join(who.split()).lower()
    got = await mem.entities.get("PERSON", norm.upper())
    assert got.id == f"entity:person/{norm}" and got.name == " ".join(who.split())
    assert got.aliases == ["Countess", "the countess"]  # two normalised names; the canonical name is never an alias
    (a,) = got.attributes
    assert a.key == "Born" and a.value == 1815 and a.category == "identity" and a.importance == 1.0
    assert a.text == f"{' '.join(who.split())}: Born = 1815" and a.session_id == "s1" and a.source["span"] == {"start": 0, "end": 27}
    assert a.labels == ["bio", "history"]
    assert len(r.passages) > 1  # long text is split
    (chunks,) = await db.query("SELECT text, position, char_start, char_end, category, importance, role, labels FROM memory_chunk WHERE write = $w ORDER BY position",
                               {"w": r.write})
    text = "Ada wrote the first program. " * 80
    assert all(text[c["char_start"]:c["char_end"]] == c["text"] for c in chunks)
    assert {(c["category"], c["importance"], c["role"], tuple(c["labels"])) for c in chunks} == {("context", 0.5, "user", ("bio", "history"))}
    (fts,) = await db.query("SELECT count() FROM memory_chunk_fts WHERE text @@ 'program' GROUP ALL")
    assert fts[0]["count"] >= len(chunks)
    (vec,) = await db.query("SELECT VALUE array::len(embedding) FROM memory_chunk WHERE write = $w", {"w": r.write})
    assert set(vec) == {384}


async def test_prepare_returns_exactly_what_write_embeds(mem):
    who = name()
    req = {"triples": [attr(who, "role", "CTO"), rel(who, "works_at", "Hooli"), attr(who, "role", "x", retract=None)], "text": "hello there"}
    req["triples"][2] = {"entity": {"type": "person", "name": who}, "key": "nick", "retract": True}
    p = await mem.facts.prepare(req)
    assert [e.text for e in p.entities] == [who, "Hooli"]
    assert [(a.triple, a.text) for a in p.attributes] == [(0, f"{who}: role = CTO")]
    assert [x.text for x in p.passages] == ["hello there"]
    with pytest.raises(InvalidInput, match="vectors.attributes must hold 1"):
        await call(mem.conn, "fn::amem::facts::write", req, {"model": "hash-384", "entities": [[0.1] * 384] * 2,
                                                             "attributes": [], "passages": [[0.1] * 384]})
    with pytest.raises(EmbeddingMismatch, match="dimension 3"):
        await call(mem.conn, "fn::amem::facts::write", req, {"model": "hash-384", "entities": [[0.1] * 384] * 2,
                                                             "attributes": [[0.1] * 3], "passages": [[0.1] * 384]})


# --- idempotency ---------------------------------------------------------------------------
async def test_idempotency_key_returns_the_stored_response_and_refuses_a_different_body(mem, db):
    who = name()
    req = {"triples": [attr(who, "role", "CFO")], "idempotency_key": f"k-{who}"}
    first = await mem.facts.write(req)
    before = await counts(db)
    again = await mem.facts.write(req)
    assert again.model_dump() == first.model_dump() and await counts(db) == before
    with pytest.raises(IdempotencyConflict, match="idempotency_key"):
        await mem.facts.write({**req, "triples": [attr(who, "role", "CEO")]})
    assert await counts(db) == before
    # older than 24 h: ignored and replaced
    await db.query("UPDATE memory_write SET created_at = time::now() - 25h WHERE key = $k", {"k": req["idempotency_key"]})
    third = await mem.facts.write({**req, "triples": [attr(who, "role", "CEO")]})
    assert third.write != first.write and third.triples[0].outcome == "superseded"


# --- bad input: a typed error naming the field, nothing written --------------------------------
def _t(**kw) -> dict:
    return {**attr("Bad Input", "role", "x"), **kw}


BAD = [
    ("not an object", "a memory write is an object"),
    ({}, "needs triples or text"),
    ({"triples": [_t(category="gossip")]}, r"triples\[0\].category must be identity"),
    ({"triples": [_t(key="  ")]}, r"triples\[0\].key must be a non-empty"),
    ({"triples": [_t(entity={"type": "person", "name": ""})]}, r"triples\[0\].entity.name must be a non-empty"),
    ({"triples": [_t(value="v" * 2001)]}, "at most 2000 characters"),
    ({"triples": [_t(value={"nested": 1})]}, r"triples\[0\].value must be a string, a finite number or a boolean"),
    ({"triples": [{"entity": {"type": "person", "name": "x"}, "key": "k"}]}, "needs a value"),
    ({"triples": [_t(target={"type": "company", "name": "y"})]}, "value and target are exclusive"),
    ({"triples": [_t(retract=True)]}, "a retraction carries no value"),
    ({"triples": [_t(colour="red")]}, r"triples\[0\]: unknown option colour"),
    ({"triples": [_t()], "colour": "red"}, "request: unknown option colour"),
    ({"triples": [_t(confidence=1.5)]}, r"triples\[0\].confidence must be a number in 0..1"),
    ({"triples": [_t()], "role": "boss"}, "role must be user"),
    ({"triples": [_t()], "observed_at": "yesterday"}, "observed_at must be a datetime"),
    ({"triples": [_t()], "valid_from": at(5), "valid_until": at(1)}, "valid_until must be after valid_from"),
    ({"triples": [_t()], "source": {"kind": "rumour"}}, "source.kind must be turn"),
    ({"triples": [_t()], "source": {"kind": "turn", "span": {"start": 5, "end": 2}}}, "source.span"),
    ({"triples": [_t()], "scopes": ["bad path/"]}, "is not a scope path"),
    ({"triples": [_t(entity={"type": "person", "name": "x", "aliases": "Al"})]}, "aliases must be a list"),
    ({"triples": [_t()] * 101}, "at most 100 triples"),
    ({"triples": [_t()], "labels": "bio"}, "labels must be a list"),
]


@pytest.mark.parametrize(("request_", "message"), BAD, ids=[m for _, m in BAD])
async def test_bad_input_is_a_typed_error_and_changes_nothing(mem, db, request_, message):
    before = await counts(db)
    for fn in ("fn::amem::facts::prepare", "fn::amem::facts::write"):
        args = (request_,) if fn.endswith("prepare") else (request_, None)
        with pytest.raises(InvalidInput, match=message):
            await call(db, fn, *args)
    assert await counts(db) == before


async def test_one_failing_triple_leaves_nothing(mem, db):
    who = name()
    await write(mem, attr(who, "role", "CTO"))
    before = await counts(db)
    with pytest.raises(InvalidInput, match=r"triples\[2\]"):
        await mem.facts.write({"triples": [attr(who, "role", "CEO"), rel(who, "works_at", "Vandelay"), attr(who, "", "x")],
                               "text": "a note that must not be stored", "idempotency_key": f"fail-{who}"})
    assert await counts(db) == before
    # a failure after validation (a vector of the wrong size for the last part) rolls back the stored rows too
    req = {"triples": [attr(who, "role", "CEO"), rel(who, "works_at", "Vandelay")], "text": "also not stored"}
    with pytest.raises(EmbeddingMismatch):
        await call(db, "fn::amem::facts::write", req, {"model": "hash-384", "entities": [[0.1] * 384] * 2,
                                                      "attributes": [[0.1] * 384], "passages": [[0.1] * 5]})
    assert await counts(db) == before
    assert [a.value for a in (await mem.entities.get("person", who)).attributes] == ["CTO"]


# --- reads ------------------------------------------------------------------------------------
async def test_reads_list_get_history(mem):
    tag = name("Zed")
    await write(mem, attr(f"{tag} a", "role", "x"), rel(f"{tag} b", "knows", f"{tag} c", ttype="person"), scopes=["org/read"])
    page = await mem.entities.list(lens=[["org/read"]], limit=500)
    assert [e.name for e in page.entities] == [f"{tag} a", f"{tag} b", f"{tag} c"] and page.total == 3
    assert (await mem.entities.list(type="people", lens=[["org/read"]], limit=2, offset=1)).model_dump()["entities"][0]["name"] == f"{tag} b"
    assert (await mem.entities.list(lens=[["org/none"]])).total == 0
    assert await mem.entities.get("person", "nobody at all") is None
    got = await mem.entities.get("person", f"{tag} b")
    assert isinstance(got, EntityDetail) and got.relations[0].key == "knows" and got.relations[0].target == f"entity:person/{tag.lower()} c"
    assert isinstance(await mem.entities.history("person", f"{tag} a", "ROLE"), FactHistory)
    with pytest.raises(InvalidInput, match="limit"):
        await mem.entities.list(limit=501)
    with pytest.raises(InvalidInput, match="unknown option"):
        await call(mem.conn, "fn::amem::entities::get", "person", "x", {"lenz": []})
    from amem_db import NotFound
    with pytest.raises(NotFound):
        await mem.entities.history("person", "nobody at all", "role")


# --- a realistic scenario -------------------------------------------------------------------
async def test_scenario_role_and_employer_change_over_several_writes(mem):
    who = "Maria Garcia " + name("x")
    await write(mem, attr(who, "role", "analyst"), rel(who, "works_at", "Northwind"), valid_from=at(0), observed_at=at(1))
    await write(mem, attr(who, "role", "senior analyst"), valid_from=at(200), observed_at=at(201))
    await write(mem, attr(who, "role", "head of data"), rel(who, "works_at", "Contoso"), valid_from=at(400), observed_at=at(402))
    await write(mem, attr(who, "role", "data scientist", confidence=0.5), observed_at=at(403))  # hearsay: uncertain
    got = await mem.entities.get("person", who)
    assert sorted(a.value for a in got.attributes) == ["data scientist", "head of data"]
    assert [r.target for r in got.relations] == ["entity:organisation/contoso"]
    h = (await mem.entities.history("person", who, "role")).rows
    assert [r.value for r in h] == ["data scientist", "head of data", "senior analyst", "analyst"]
    chain = {r.value: r for r in h}
    assert chain["head of data"].supersedes == chain["senior analyst"].id
    assert chain["senior analyst"].supersedes == chain["analyst"].id
    # valid time: when it held in the world; known time: when the source said it / we replaced it
    assert chain["analyst"].valid_until == chain["senior analyst"].valid_from == datetime.fromisoformat(at(200))
    assert chain["senior analyst"].recorded_at == datetime.fromisoformat(at(201))
    # superseded in known time when the superseding statement was recorded (its observed_at), not at the
    # wall-clock instant of the write: an asOf read between the two sees the old value (issue 12)
    assert chain["analyst"].superseded_at == chain["senior analyst"].recorded_at
    jobs = (await mem.entities.history("person", who, "works_at")).rows
    assert [r.target for r in jobs] == ["entity:organisation/contoso", "entity:organisation/northwind"]


# --- raw SurrealQL = Python -------------------------------------------------------------------
async def test_raw_surrealql_gives_the_same_result_as_python(mem, db):
    who = name()
    req = {"triples": [attr(who, "role", "CTO")], "observed_at": at(3)}
    (raw,) = await db.query("RETURN fn::amem::facts::write($r, NONE)", {"r": req})
    py = await mem.facts.write({**req, "triples": [attr(who + " twin", "role", "CTO")]}, embed=False)
    assert set(raw) == set(py.model_dump()) and raw["triples"][0]["outcome"] == py.triples[0].outcome == "added"
    (raw_get,) = await db.query("RETURN fn::amem::entities::get('person', $n, NONE)", {"n": who})
    assert raw_get["attributes"][0]["value"] == (await mem.entities.get("person", who)).attributes[0].value


def test_sync_client_writes_and_reads():
    from amem_db import SyncMemory

    with SyncMemory.open(url="mem://", embedder="hash:384", migrate=True) as sm:
        out = sm.facts.write({"triples": [attr("Sync Person", "role", "CTO")], "text": "hello"})
        assert isinstance(out, FactWrite) and out.triples[0].outcome == "added" and len(out.passages) == 1
        assert sm.entities.get("person", "sync person").attributes[0].value == "CTO"
        assert sm.entities.list().total == 1 and len(sm.entities.history("person", "Sync Person", "role").rows) == 1
        assert [e.text for e in sm.facts.prepare({"triples": [attr("Sync Person", "role", "CEO")]}).entities] == ["Sync Person"]
        assert sm.facts.declare_key("speaks").multi_valued


# --- hypothesis over the request shape ------------------------------------------------------------
_names = st.text(st.characters(whitelist_categories=("L", "N", "Zs")), min_size=0, max_size=12)
_values = st.one_of(st.text(st.characters(whitelist_categories=("L", "N", "Zs")), max_size=20), st.integers(-5, 5), st.booleans(), st.none(), st.just({"x": 1}))
_triple = st.fixed_dictionaries(
    {"entity": st.fixed_dictionaries({"type": st.sampled_from(["person", "company", "widget"]), "name": _names}),
     "key": st.sampled_from(["role", "", "city"])},
    optional={"value": _values, "target": st.fixed_dictionaries({"type": st.just("org"), "name": _names}),
              "category": st.sampled_from(["identity", "knowledge", "context", "rumour"]),
              "confidence": st.sampled_from([0.2, 0.9, 1.0, 2.0]), "retract": st.booleans()})


def _valid(t: dict) -> bool:
    """The pure-Python reading of the rules facts::check_triple enforces."""
    has_v, has_t, retract = t.get("value") is not None, "target" in t, t.get("retract", False)
    value_ok = not has_v or (isinstance(t["value"], (int, bool)) or (isinstance(t["value"], str) and t["value"].strip() != ""))
    return (t["entity"]["name"].strip() != "" and t["key"] != "" and t.get("category", "knowledge") != "rumour"
            and t.get("confidence", 1.0) <= 1 and value_ok and not (has_v and has_t) and not (retract and has_v)
            and (retract or has_v or has_t) and (not has_t or t["target"]["name"].strip() != ""))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(triples=st.lists(_triple, min_size=1, max_size=3))
async def test_property_valid_requests_write_invalid_ones_change_nothing(mem, db, triples):
    before = await counts(db)
    req = {"triples": triples, "scopes": ["org/prop"]}
    if all(_valid(t) for t in triples):
        out = await call(db, "fn::amem::facts::write", req, None)
        assert len(out["triples"]) == len(triples)
    else:
        with pytest.raises(InvalidInput):
            await call(db, "fn::amem::facts::write", req, None)
        assert await counts(db) == before
