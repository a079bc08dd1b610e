"""Passage history (issue 12): documents.query and recall under asOf / atInstant.

A database migrated with ``document_history=True`` keeps the passages of every replaced
document version (migrations/0011, surql/260_versions); a read with a time option finds
the passages stored by then and not replaced by then. Without history, a time option
still drops passages stored after it, and says what it cannot see. Real engine: mem://
(and the server of AMEM_TEST_URL), surrealkv+versioned:// for atInstant, a dev server
for the record users.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest
import pytest_asyncio
from devserver_fixture import dev_server, tenants  # noqa: F401  (fixture)
from helpers import drop, make_target
from surrealdb.errors import QueryError

from amem_db import Memory
from amem_db.connection import close_quietly, open_connection
from amem_db.db import call
from amem_db.embedding import get_embedder
from amem_db.errors import EmbeddingMismatch, InvalidInput, NotVersioned
from amem_db.migrator import Migrator

EMB = get_embedder("hash:384")


async def now(mem: Memory) -> datetime:
    (t,) = await mem.conn.query("RETURN time::now()")
    return t


async def open_mem(history: bool):
    target = make_target("hist" if history else "nohist")
    conn = await open_connection(target)
    await Migrator(conn).migrate({"document_history": history})
    return target, Memory(conn, embedder=EMB)


@pytest.fixture(scope="module")
async def hmem():
    target, mem = await open_mem(True)
    yield mem
    await drop(mem.conn, target)
    await close_quietly(mem.conn)


@pytest.fixture(scope="module")
async def plain():
    target, mem = await open_mem(False)
    yield mem
    await drop(mem.conn, target)
    await close_quietly(mem.conn)


async def two_versions(mem: Memory, source: str) -> tuple[datetime, datetime, datetime]:
    """v1 then v2 of one document; instants before v1, between, after v2."""
    t0 = await now(mem)
    await mem.documents.ingest_text(f"The {source} return window is thirty days for unopened items.", source=source, title="v1")
    t1 = await now(mem)
    r = await mem.documents.ingest_text(f"The {source} return window is sixty days, opened or not.", source=source, title="v2")
    assert r.status == "replaced"
    return t0, t1, await now(mem)


def texts(r) -> list[str]:
    return [h.chunk.text for h in r.results]


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid", "hybrid_graph"])
async def test_as_of_finds_the_replaced_version_and_only_then(hmem, mode):
    src = f"shop{mode}"
    t0, t1, t2 = await two_versions(hmem, src)
    q = f"{src} return window days"
    kw = {"mode": mode, "threshold": -1.0} if mode != "bm25" else {"mode": mode}
    current = await hmem.documents.query(q, **kw)
    assert [t for t in texts(current) if src in t] == [f"The {src} return window is sixty days, opened or not."]
    then = await hmem.documents.query(q, as_of=t1, **kw)
    hits = [h for h in then.results if src in h.chunk.text]
    assert [h.chunk.text for h in hits] == [f"The {src} return window is thirty days for unopened items."]
    # the old version says what it was: its own title, when it was stored and replaced
    assert hits[0].document.title == "v1" and hits[0].chunk.replaced_at is not None
    assert t0 < hits[0].chunk.recorded_at <= t1 < hits[0].chunk.replaced_at <= t2
    assert not any("history is off" in w for w in then.warnings)
    before = await hmem.documents.query(q, as_of=t0, **kw)
    assert [t for t in texts(before) if src in t] == []
    after = await hmem.documents.query(q, as_of=t2, **kw)
    assert [t for t in texts(after) if src in t] == [f"The {src} return window is sixty days, opened or not."]


async def test_current_reads_never_see_kept_versions(hmem):
    await two_versions(hmem, "kiosk")
    (n,) = await hmem.conn.query("RETURN count(SELECT id FROM passage_version WHERE text CONTAINS 'kiosk')")
    assert n == 1
    for mode in ("bm25", "vector", "hybrid"):
        r = await hmem.documents.query("kiosk thirty days unopened", mode=mode, threshold=-1.0 if mode != "bm25" else None, k=50)
        assert not any("thirty" in t and "kiosk" in t for t in texts(r)), mode
        assert all(h.chunk.replaced_at is None for h in r.results)


async def test_the_time_filter_composes_with_document_ids_and_keeps_k(hmem):
    t0, t1, _ = await two_versions(hmem, "depot")
    docs = await hmem.documents.list(limit=200)
    depot = [d.id for d in docs.documents if d.source == "depot"]
    r = await hmem.documents.query("depot window", mode="bm25", as_of=t1, filter={"documentIds": depot})
    assert texts(r) == ["The depot return window is thirty days for unopened items."]
    r = await hmem.documents.query("depot window", mode="vector", threshold=-1.0, as_of=t1, filter={"documentIds": depot})
    assert texts(r) == ["The depot return window is thirty days for unopened items."]
    assert r.trace["legs"]["vector"]["tables"]["passage_version"]["candidates"] == 1


async def test_versions_lists_the_current_and_the_kept_ones(hmem):
    await two_versions(hmem, "atelier")
    await hmem.documents.ingest_text("The atelier return window is ninety days.", source="atelier", title="v3")
    doc = next(d for d in (await hmem.documents.list(limit=200)).documents if d.source == "atelier")
    vs = await hmem.documents.versions(doc.id)
    assert [v.title for v in vs] == ["v3", "v2", "v1"] and [v.current for v in vs] == [True, False, False]
    assert vs[1].replaced_at == vs[0].recorded_at and vs[2].replaced_at == vs[1].recorded_at
    # raw SurrealQL gives the same
    (raw,) = await hmem.conn.query("RETURN fn::amem::versions::of($d)", {"d": doc.id})
    assert [v["title"] for v in raw] == ["v3", "v2", "v1"]


async def test_unchanged_reingest_keeps_no_version_and_delete_takes_the_history(hmem):
    _, t1, _ = await two_versions(hmem, "stall")
    r = await hmem.documents.ingest_text("The stall return window is sixty days, opened or not.", source="stall", title="v2")
    assert r.status == "unchanged"
    (n,) = await hmem.conn.query("RETURN count(SELECT id FROM passage_version WHERE source = 'stall')")
    assert n == 1
    await hmem.documents.delete(r.document.id)
    (n,) = await hmem.conn.query("RETURN count(SELECT id FROM passage_version WHERE source = 'stall')")
    assert n == 0
    gone = await hmem.documents.query("stall window", mode="bm25", as_of=t1)
    assert not any("stall" in t for t in texts(gone))


async def test_a_failed_replace_keeps_no_version_and_changes_nothing(hmem):
    await hmem.documents.ingest_text("The cellar return window is thirty days.", source="cellar", title="v1")
    count = "RETURN [count(SELECT id FROM passage_version), (SELECT VALUE text FROM chunk WHERE text CONTAINS 'cellar')]"
    (before,) = await hmem.conn.query(count)
    # refused by validation: nothing written
    with pytest.raises(EmbeddingMismatch):
        await call(hmem.conn, "fn::amem::documents::ingest", {"text": "The cellar window is gone.", "source": "cellar",
                   "mime_type": "text/plain"}, {"model": EMB.name, "chunks": [[1, 2, 3]], "audio": [], "keywords": [], "sections": []})
    # failing after the copy (the transaction aborts later; RETURN would end it early: LET): the copy goes too
    with pytest.raises(QueryError, match="failed transaction"):
        await hmem.conn.query("BEGIN; LET $r = fn::amem::documents::ingest({text: 'The cellar window is gone.', source: 'cellar', "
                              "mime_type: 'text/plain'}, NONE); THROW 'abort after ingest'; COMMIT;")
    (after,) = await hmem.conn.query(count)
    assert after == before and before[0] >= 0 and before[1] == ["The cellar return window is thirty days."]


async def test_without_history_as_of_drops_newer_passages_and_says_what_it_cannot_see(plain):
    t0, t1, t2 = await two_versions(plain, "booth")
    r = await plain.documents.query("booth window", mode="bm25", as_of=t1)
    assert not any("booth" in t for t in texts(r))
    assert any("document history is off" in w for w in r.warnings)
    r = await plain.documents.query("booth window", mode="bm25", as_of=t2)
    assert [t for t in texts(r) if "booth" in t] == ["The booth return window is sixty days, opened or not."]
    (n,) = await plain.conn.query("RETURN count(SELECT id FROM passage_version)")
    assert n == 0
    # valid time is not a document notion: reported, not applied
    (raw,) = await plain.conn.query("RETURN fn::amem::documents::query('booth window', NONE, {mode: 'bm25', validAt: $t})", {"t": t2})
    assert any("validAt: document passages have no valid time" in w for w in raw["warnings"])
    assert [h["chunk"]["text"] for h in raw["results"] if "booth" in h["chunk"]["text"]] == [
        "The booth return window is sixty days, opened or not."]


async def test_bad_time_options_are_typed_errors(plain):
    with pytest.raises(InvalidInput, match="asOf"):
        await plain.documents.query("x", mode="bm25", as_of="last tuesday")
    (versioned,) = await plain.conn.query("RETURN fn::amem::clock::versioned()")
    if not versioned:
        with pytest.raises(NotVersioned, match="surrealkv\\+versioned://"):
            await plain.documents.query("x", mode="bm25", at_instant=datetime.now() - timedelta(seconds=1))


async def test_recall_as_of_reads_the_document_as_it_was(hmem):
    _, t1, _ = await two_versions(hmem, "harbour")
    now_hits = await hmem.recall("harbour return window", mode="bm25", include=["passages"], k=20)
    then_hits = await hmem.recall("harbour return window", mode="bm25", include=["passages"], k=20, as_of=t1)
    assert [h.text for h in now_hits.hits if "harbour" in h.text] == ["The harbour return window is sixty days, opened or not."]
    old = [h for h in then_hits.hits if "harbour" in h.text]
    assert [h.text for h in old] == ["The harbour return window is thirty days for unopened items."]
    assert old[0].source == "passage_version" and old[0].citation["replacedAt"] is not None


async def test_random_version_timelines_match_a_plain_model(hmem):
    """Several documents, each replaced a random number of times in a random order; at
    every instant between writes, a BM25 read of the documents' shared token returns
    exactly the versions current then (the model: the last write of each source by t)."""
    rng = random.Random(12)
    sources = [f"orchard{i}" for i in range(4)]
    written: list[tuple[datetime, str, str]] = []  # (recorded after, source, version token)
    instants = [await now(hmem)]
    for n in range(14):
        src = rng.choice(sources)
        token = f"vtok{n}"
        await hmem.documents.ingest_text(f"Orchard ledger zzorchard {src} version {token}.", source=src)
        written.append((await now(hmem), src, token))
        instants.append(written[-1][0])
    for t in instants:
        expected = {}
        for at, src, token in written:
            if at <= t:
                expected[src] = token
        r = await hmem.documents.query("zzorchard", mode="bm25", as_of=t, k=50)
        got = sorted(h.chunk.text.split()[-1].rstrip(".") for h in r.results if "zzorchard" in h.chunk.text)
        assert got == sorted(expected.values()), (t, got, expected)


# --- atInstant on versioned storage ---------------------------------------------------------
async def test_at_instant_and_as_of_on_versioned_storage(tmp_path):
    mem = await Memory.open(f"surrealkv+versioned://{tmp_path / 'db'}", embedder=EMB)
    try:
        await mem.migrate(document_history=True)
        _, t1, _ = await two_versions(mem, "quay")
        r = await mem.documents.query("quay window", mode="bm25", at_instant=t1)
        assert texts(r) == ["The quay return window is thirty days for unopened items."]
        assert texts(await mem.documents.query("quay window", mode="bm25", as_of=t1)) == texts(r)
        assert texts(await mem.documents.query("quay window", mode="bm25")) == ["The quay return window is sixty days, opened or not."]
        assert r.results[0].chunk.replaced_at is not None
        (raw,) = await mem.conn.query("RETURN fn::amem::documents::query('quay window', NONE, {mode: 'bm25', atInstant: $t})", {"t": t1})
        assert [h["chunk"]["text"] for h in raw["results"]] == texts(r)
        assert raw["trace"]["options"]["clock"] == {"atInstant": t1}
    finally:
        await mem.close()


# --- record users: history rows stay in their scope ---------------------------------------
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def hist_tenants(dev_server):
    grants = {"hist-a": dict(read=[], write=["org/a"]), "hist-b": dict(read=[], write=["org/b"])}
    async with tenants(dev_server, "hist", grants) as t:
        await Migrator(t.root).migrate({"document_history": True})
        yield t


async def test_record_users_see_only_their_own_history(hist_tenants):
    t = hist_tenants
    mem_a, mem_b = Memory(t.conns["hist-a"], embedder=EMB), Memory(t.conns["hist-b"], embedder=EMB)
    await mem_b.documents.ingest_text("Ledger bsecret first draft.", source="ledger-b", scopes=["org/b"])
    t1 = await now(mem_b)
    await mem_b.documents.ingest_text("Ledger bsecret final.", source="ledger-b", scopes=["org/b"])
    await mem_a.documents.ingest_text("Ledger a first draft.", source="ledger-a", scopes=["org/a"])
    await mem_a.documents.ingest_text("Ledger a final.", source="ledger-a", scopes=["org/a"])
    r = await mem_a.documents.query("ledger bsecret draft", mode="bm25", as_of=t1, k=50)
    assert "bsecret" not in str(texts(r))
    (rows,) = await t.conns["hist-a"].query("SELECT text FROM passage_version")
    assert [x["text"] for x in rows] == ["Ledger a first draft."]
    (n,) = await t.root.query("RETURN count(SELECT id FROM passage_version)")
    assert n == 2


# --- the CLI ---------------------------------------------------------------------------------
def test_cli_document_history(tmp_path):
    import json

    from typer.testing import CliRunner

    from amem_db.cli import app

    def cli(*args: str):
        return CliRunner().invoke(app, ["--url", f"surrealkv://{tmp_path / 'db'}", "--embedder", "hash:384", *args], prog_name="amem-db")

    assert cli("migrate", "--document-history").exit_code == 0
    page = tmp_path / "policy.md"
    page.write_text("# Policy\n\nRefunds within thirty days.\n")
    assert cli("ingest", str(page)).exit_code == 0
    between = datetime.now().astimezone().isoformat()
    page.write_text("# Policy\n\nRefunds within sixty days.\n")
    assert cli("ingest", str(page)).exit_code == 0
    now_r = json.loads(cli("query", "refunds days", "--mode", "bm25", "--json").stdout)
    then_r = json.loads(cli("query", "refunds days", "--mode", "bm25", "--as-of", between, "--json").stdout)
    assert [r["chunk"]["text"] for r in now_r["results"]] == ["# Policy\n\nRefunds within sixty days."]
    assert [r["chunk"]["text"] for r in then_r["results"]] == ["# Policy\n\nRefunds within thirty days."]
    shown = cli("query", "refunds days", "--mode", "bm25", "--as-of", between)
    assert shown.exit_code == 0 and "(replaced" in shown.stdout
    doc = then_r["results"][0]["document"]["id"]
    versions = json.loads(cli("documents", "versions", doc, "--json").stdout)
    assert [v["current"] for v in versions] == [True, False]
    # the setting is recorded: a later migrate without the flag keeps it
    assert cli("migrate").exit_code == 0
    page.write_text("# Policy\n\nRefunds within ninety days.\n")
    assert cli("ingest", str(page)).exit_code == 0
    assert len(json.loads(cli("documents", "versions", doc, "--json").stdout)) == 3
