"""Tier 2 of recall, response reuse (surql/440_answers, migrations/0013) on the real
engine: a hit, a miss below cosine 0.92, invalidation by supersession, by forget and by
document replacement (decided at read time; the supersession and forget events also
drop the stale rows), expiry after the freshness window, lens and labels, bad input
leaving nothing behind, and the same read grants or nothing (record users over the
dev server, raw SurrealQL included).

The hash embedder keeps vectors deterministic; the boundary tests pass vectors of a
known cosine through raw SurrealQL."""

from __future__ import annotations

import inspect
import itertools
import json
import math

import pytest
import pytest_asyncio
from devserver_fixture import dev_server, tenants  # noqa: F401
from helpers import mem  # noqa: F401  (a fixture)

from amem_db import InvalidInput, PermissionDenied
from amem_db.answers import Answers
from amem_db.db import call
from amem_db.embedding import get_embedder
from amem_db.sync import SyncAnswers

_n = itertools.count()
DIM = 384


def who(prefix: str = "Reuse") -> str:
    return f"{prefix} P{next(_n)}"


def unit(cos: float) -> list[float]:
    """A unit vector whose cosine to e0 (``unit(1.0)``) is ``cos``."""
    v = [0.0] * DIM
    v[0], v[1] = cos, math.sqrt(max(0.0, 1 - cos * cos))
    return v


async def answers(db) -> int:
    (rows,) = await db.query("SELECT count() FROM answer GROUP ALL")
    return rows[0]["count"] if rows else 0


async def role_fact(mem, name: str, value: str) -> str:
    """Write name's role and return the attribute id recall finds for it."""
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": name}, "key": "role", "value": value}]})
    r = await mem.recall(f"What is {name}'s role?", include=["facts"])
    return next(h.id for h in r.hits if h.source == "attribute" and value in h.text)


async def test_a_stored_answer_is_reused_for_the_same_question(mem):
    name = who()
    fact = await role_fact(mem, name, "chief rocket officer")
    q = f"What is {name}'s role?"
    miss = await mem.recall(q, reuse=True)
    assert miss.tier in (3, 4) and miss.reused_from is None
    assert miss.tiers["cache"]["reason"].startswith("miss")
    stored = await mem.answers.remember(q, f"{name} is the chief rocket officer.", [fact])
    assert stored.cited == [fact]
    hit = await mem.recall(q, reuse=True)
    assert hit.tier == "cache" and hit.reused_from == stored.id
    assert hit.answer is not None and hit.answer.text == f"{name} is the chief rocket officer." and hit.answer.similarity >= 0.92
    assert [h.id for h in hit.hits] == [fact]  # the cited records, still current
    assert hit.trace["tier"] == "cache" and hit.trace["escalated"] is False
    assert hit.trace["tiers"]["cache"]["reusedFrom"] == stored.id
    # off unless asked
    plain = await mem.recall(q)
    assert plain.tier in (3, 4) and plain.answer is None and plain.tiers["cache"]["ran"] is False


async def test_reuse_needs_cosine_0_92(mem, db):
    name = who("Cosine")
    fact = await role_fact(mem, name, "deck hand")
    q = f"What is {name}'s role?"
    await call(db, "fn::amem::answers::remember", q, unit(1.0), "a deck hand", [fact], {})
    for cos, reused in ((0.93, True), (0.921, True), (0.919, False), (0.5, False)):
        r = await call(db, "fn::amem::recall", q, unit(cos), {"reuse": True})
        assert (r["tier"] == "cache") is reused, (cos, r["tiers"]["cache"])
        if not reused:
            assert "< 0.92" in r["tiers"]["cache"]["reason"]


async def test_superseding_a_cited_fact_invalidates_and_drops_the_answer(mem, db):
    name = who("Super")
    fact = await role_fact(mem, name, "intern")
    q = f"What is {name}'s role?"
    await mem.answers.remember(q, "an intern", [fact])
    assert (await mem.recall(q, reuse=True)).tier == "cache"
    before = await answers(db)
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": name}, "key": "role", "value": "manager"}]})
    assert await answers(db) == before - 1  # the answers_stale event removed it
    r = await mem.recall(q, reuse=True)
    assert r.tier != "cache" and any("manager" in h.text for h in r.hits)


async def test_read_time_check_catches_what_no_event_removed(mem, db):
    # the event is a clean-up; the rule is the read-time check: a row the event did not
    # delete (here: superseded by hand, as an owner migration might) is still refused
    name = who("ReadTime")
    fact = await role_fact(mem, name, "pilot")
    q = f"What is {name}'s role?"
    stored = await mem.answers.remember(q, "a pilot", [fact])
    await db.query("REMOVE EVENT answers_stale ON attribute")
    try:
        await db.query("UPDATE type::record($id) SET superseded_at = time::now()", {"id": fact})
    finally:
        from amem_db.migrator import Migrator

        await db.query("DELETE amem_migration WHERE key = '440_answers'")
        await Migrator(db).migrate()  # puts the event back
    (left,) = await db.query("SELECT VALUE id FROM type::record($id)", {"id": stored.id})
    assert left, "the answer row must still exist for this test"
    r = await mem.recall(q, reuse=True)
    assert r.tier != "cache"
    assert "invalidated" in r.tiers["cache"]["reason"] and fact in r.tiers["cache"]["reason"]


async def test_forgetting_a_cited_fact_invalidates(mem, db):
    name = who("Forget")
    fact = await role_fact(mem, name, "welder")
    q = f"What is {name}'s role?"
    await mem.answers.remember(q, "a welder", [fact])
    assert (await mem.recall(q, reuse=True)).tier == "cache"
    await mem.forget([fact])
    r = await mem.recall(q, reuse=True)
    assert r.tier != "cache" and r.reused_from is None


async def test_replacing_a_cited_document_invalidates(mem, db):
    src = f"manual-{next(_n)}.md"
    await mem.documents.ingest_text("The Quuxblat pump runs at forty bar.", source=src, title="pump")
    q = "At what pressure does the Quuxblat pump run?"
    r = await mem.recall(q, include=["passages"])
    chunk = next(h.id for h in r.hits if h.source == "chunk" and "Quuxblat" in h.text)
    await mem.answers.remember(q, "forty bar", [chunk])
    assert (await mem.recall(q, reuse=True)).tier == "cache"
    rows = await answers(db)
    await mem.documents.ingest_text("The Quuxblat pump runs at sixty bar.", source=src, title="pump")
    assert await answers(db) == rows  # no event for documents: the read decides
    r = await mem.recall(q, reuse=True)
    assert r.tier != "cache" and "invalidated" in r.tiers["cache"]["reason"]


async def test_citing_the_document_itself_is_invalidated_by_a_new_version(mem, db):
    src = f"doc-{next(_n)}.md"
    res = await mem.documents.ingest_text("Glorp valves close at dusk.", source=src)
    q = "When do Glorp valves close?"
    await mem.answers.remember(q, "at dusk", [res.document.id])
    assert (await mem.recall(q, reuse=True)).tier == "cache"
    await mem.documents.ingest_text("Glorp valves close at dawn.", source=src)
    r = await mem.recall(q, reuse=True)
    assert r.tier != "cache" and "was replaced" in r.tiers["cache"]["reason"]


async def test_an_answer_expires_after_the_window(mem, db):
    name = who("Expire")
    fact = await role_fact(mem, name, "baker")
    q = f"What is {name}'s role?"
    stored = await mem.answers.remember(q, "a baker", [fact])
    assert (await mem.recall(q, reuse=True)).tier == "cache"
    await db.query("UPDATE type::record($id) SET created_at = time::now() - 2h", {"id": stored.id})
    assert (await mem.recall(q, reuse=True)).tier != "cache"  # 3600 s by default
    assert (await mem.recall(q, reuse=True, reuse_max_age=3 * 3600)).tier == "cache"
    assert (await mem.recall(q, reuse=True, reuse_max_age=3600)).tier != "cache"


async def test_lens_and_labels_are_part_of_the_view(mem):
    name = who("View")
    fact = await role_fact(mem, name, "cook")
    q = f"What is {name}'s role?"
    # the owner's fact has no scopes: a lens hides it, so it cannot be cited under one
    with pytest.raises(InvalidInput, match="under the lens"):
        await mem.answers.remember(q, "a cook", [fact], lens=[["org"]])
    await mem.answers.remember(q, "a cook", [fact], labels=["x"])
    assert (await mem.recall(q, reuse=True)).tier != "cache"  # made under labels, asked without
    r = await call(mem.conn, "fn::amem::recall", q, await mem.embed_query(q), {"reuse": True, "labels": ["x"]})
    assert r["tier"] == "cache" and r["answer"]["text"] == "a cook"
    r = await call(mem.conn, "fn::amem::recall", q, await mem.embed_query(q), {"reuse": True, "labels": ["x", "y"]})
    assert r["tier"] != "cache"


async def test_a_time_option_never_reuses(mem):
    name = who("Clock")
    fact = await role_fact(mem, name, "tailor")
    q = f"What is {name}'s role?"
    await mem.answers.remember(q, "a tailor", [fact])
    r = await mem.recall(q, reuse=True, valid_at="2020-01-01T00:00:00Z")
    assert r.tier != "cache" and "time option" in r.tiers["cache"]["reason"]


@pytest.mark.parametrize(("args", "match"), [
    ((" ", "a", ["$fact"]), "query"),
    (("q", "", ["$fact"]), "answer"),
    (("q", "a", []), "cited"),
    (("q", "a", ["attribute:does_not_exist"]), "no longer current"),
    (("q", "a", ["keyword:x"]), "table keyword"),
    (("q", "a", ["$fact"], {"colour": 1}), "colour"),
    (("q", "a", ["$fact"], {"scopes": ["../x"]}), "scope path"),
])
async def test_bad_remember_is_an_error_and_stores_nothing(mem, db, args, match):
    fact = await role_fact(mem, who("Bad"), "glazier")
    q, a, cited, *opts = args
    before = await answers(db)
    with pytest.raises(InvalidInput, match=match):
        await call(db, "fn::amem::answers::remember", q, unit(1.0), a, [fact if c == "$fact" else c for c in cited],
                   opts[0] if opts else None)
    assert await answers(db) == before


async def test_a_superseded_fact_cannot_be_cited(mem, db):
    name = who("Old")
    fact = await role_fact(mem, name, "clerk")
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": name}, "key": "role", "value": "judge"}]})
    before = await answers(db)
    with pytest.raises(InvalidInput, match="no longer current"):
        await mem.answers.remember("q", "a clerk", [fact])
    assert await answers(db) == before


@pytest.mark.parametrize("opts", [{"reuse": "yes"}, {"reuseMaxAge": 0}, {"reuseMaxAge": "1h"}])
async def test_bad_reuse_options_are_errors(mem, opts):
    with pytest.raises(InvalidInput):
        await call(mem.conn, "fn::amem::recall", "q", unit(1.0), opts)


def test_the_sync_twin_matches():
    fn, twin = Answers.remember, SyncAnswers.remember
    assert inspect.signature(twin) == inspect.signature(fn) and twin.__doc__ == fn.__doc__


# --- record users: the same read grants or nothing -------------------------------------
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(dev_server):
    grants = {"a-writer": dict(read=[], write=["org/a"]), "a-twin": dict(read=["org/a"], write=[]),
              "a-wider": dict(read=["org/a", "org/c"], write=[]), "b-writer": dict(read=[], write=["org/b"])}
    async with tenants(dev_server, "ans", grants) as t:
        yield t


@pytest.mark.asyncio(loop_scope="module")
async def test_only_callers_with_the_same_read_grants_see_an_answer(world):
    emb = get_embedder("hash:384")
    A, twin, wider, B = (world.conns[n] for n in ("a-writer", "a-twin", "a-wider", "b-writer"))
    q = "What is Scoped Person's role?"
    e = emb.embed_query(q)
    await call(A, "fn::amem::facts::write", {"triples": [{"entity": {"type": "person", "name": "Scoped Person"}, "key": "role",
                                                           "value": "asecretrole"}]}, None)
    ((fact,),) = await world.root.query("SELECT VALUE <string> id FROM attribute WHERE value = 'asecretrole'")
    stored = await call(A, "fn::amem::answers::remember", q, e, "asecretanswer", [fact], {})
    # the maker and a principal reading exactly org/a reuse it
    for conn in (A, twin):
        r = await call(conn, "fn::amem::recall", q, e, {"reuse": True})
        assert r["tier"] == "cache" and r["answer"]["text"] == "asecretanswer"
    # another scope, and a reader of org/a that also reads org/c, never see it: not by recall, not raw
    for conn in (B, wider):
        r = await call(conn, "fn::amem::recall", q, e, {"reuse": True})
        assert r["tier"] != "cache" and "asecretanswer" not in str(r)
        (rows,) = await conn.query("SELECT * FROM answer")
        assert rows == []
        (rows,) = await conn.query("SELECT * FROM type::record($id)", {"id": str(stored["id"])})
        assert rows == []
    # nobody's credential can change an answer or forge its reader, its age or its maker's grants
    (before,) = await world.root.query("SELECT answer, reader, created_at FROM type::record($id)", {"id": str(stored["id"])})
    for conn in (A, twin, B):
        await conn.query("UPDATE type::record($id) SET answer = 'forged', created_at = d'2100-01-01'", {"id": str(stored["id"])})
    (after,) = await world.root.query("SELECT answer, reader, created_at FROM type::record($id)", {"id": str(stored["id"])})
    assert after == before
    # a raw CREATE claiming another reader key gets the creator's own key
    await B.query("CREATE answer CONTENT {query: 'x', embedding: $e, answer: 'planted', cited: [], reader: 'owner', "
                  "scopes: ['org/b']}", {"e": e})
    (planted,) = await world.root.query("SELECT VALUE reader FROM answer WHERE answer = 'planted'")
    assert planted and planted[0] not in ("owner", before[0]["reader"])
    # B can cite only what it reads, and store only in its own region
    with pytest.raises(InvalidInput, match="not readable"):
        await call(B, "fn::amem::answers::remember", q, e, "x", [fact], {})
    with pytest.raises(PermissionDenied, match="outside the write region"):
        await call(A, "fn::amem::answers::remember", q, e, "x", [fact], {"scopes": ["org/b"]})


def test_cli_recall_reuse_prints_the_reused_answer(tmp_path):
    from typer.testing import CliRunner

    from amem_db import SyncMemory
    from amem_db.cli import app

    url = f"surrealkv://{tmp_path / 'db'}"

    def run(*a: str):
        return CliRunner().invoke(app, ["--url", url, "--embedder", "hash:384", *a], prog_name="amem-db")

    assert run("migrate").exit_code == 0
    assert run("remember", "--fact", "person:Cli Person role=ferryman").exit_code == 0
    q = "What is Cli Person's role?"
    fact = json.loads(run("recall", q, "--json").stdout)["hits"][0]["id"]
    with SyncMemory.open(url=url, embedder="hash:384") as m:
        m.answers.remember(q, "a ferryman", [fact])
    reused = run("recall", q, "--reuse")
    assert reused.exit_code == 0, reused.output
    assert "reused answer answer:" in reused.stdout and "a ferryman" in reused.stdout and "\ntier 2: hit" in reused.stdout
    assert "tier cache:" not in reused.stdout  # the reason says its tier once
    plain = run("recall", q)
    assert "reused answer" not in plain.stdout and ("tier 3:" in plain.stdout or "tier 4:" in plain.stdout)
    assert "tier 3: tier 3:" not in plain.stdout and "tier 4: tier 4:" not in plain.stdout
    assert "confidenceFloor must be in [0, 1]" in run("recall", q, "--confidence-floor", "2").stderr
