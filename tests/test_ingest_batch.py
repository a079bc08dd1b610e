"""fn::amem::ingest::batch (surql/255_ingest, amem_db/ingest_batch.py) on the real
engine: a batch stores exactly what documents::ingest one by one stores; a bad
document in a batch is reported and the others land; replace and unchanged inside a
batch; scopes per document; nothing partial after a failed batch. (kill -9 mid-batch:
tests/test_ingest.py::test_killed_process_leaves_no_partial_document.)"""

from __future__ import annotations

import pytest
from devserver_fixture import dev_server, tenants  # noqa: F401
from helpers import make_target
from test_ingest import SAMPLE, counts, orphans

from amem_db.connection import close_quietly, open_connection
from amem_db.db import call, call_each
from amem_db.embedding import get_embedder
from amem_db.errors import InvalidInput, PermissionDenied
from amem_db.ingest import Item, ingest_items, items_from_file, texts_to_embed
from amem_db.ingest_batch import ingest_batch
from amem_db.migrator import Migrator

HASH = get_embedder("hash:384")


async def fresh():
    conn = await open_connection(make_target("batch"))
    await Migrator(conn).migrate()
    return conn


def sample_items() -> list[Item]:
    items = []
    for path in sorted(SAMPLE.rglob("*")):
        if path.is_file():
            items += items_from_file(path)
    return items


def vectors_of(p: dict, d: dict) -> dict:
    parts = texts_to_embed(p, d)
    vecs = HASH.embed_documents([t for part in parts.values() for t in part])
    v, pos = {"model": HASH.name}, 0
    for key, part in parts.items():
        v[key], pos = vecs[pos:pos + len(part)], pos + len(part)
    return v


async def one_by_one(conn, items: list[Item]) -> list[tuple[bool, object]]:
    """The reference: prepare, embed, documents::ingest, one document at a time."""
    out = []
    for it in items:
        ((ok, p),) = await call_each(conn, "fn::amem::documents::prepare", [(it.doc,)])
        out += [(ok, p)] if not ok else await call_each(conn, "fn::amem::documents::ingest", [(it.doc, vectors_of(p, it.doc))])
    return out


async def in_batches(conn, items: list[Item], size: int = 16) -> list[dict]:
    """fn::amem::ingest::batch itself (raises if a batch fails: no fallback here)."""
    out = []
    for i in range(0, len(items), size):
        batch = items[i:i + size]
        prepared = await call_each(conn, "fn::amem::documents::prepare", [(it.doc,) for it in batch])
        assert all(ok for ok, _ in prepared)
        out += await call(conn, "fn::amem::ingest::batch", [
            {"doc": it.doc, "keywords": p["keywords"], "vectors": vectors_of(p, it.doc), "chunks": p["chunks"], "seal": p["seal"]}
            for it, (_ok, p) in zip(batch, prepared)])
    return out


SNAPSHOT = """
SELECT source, title, source_id, mime_type, content_hash, text, summary, summary_embedding, status, chunk_count,
       embedding_model, metadata, scopes, geometry, structure FROM document ORDER BY source;
SELECT document.source AS doc, position, text, char_start, char_end, section_heading, section.heading AS sh,
       embedding, mime_type, scopes, geometry FROM chunk ORDER BY doc, position;
SELECT document.source AS doc, position, text, char_start, char_end, start_s, end_s, embedding, scopes FROM audio_chunk ORDER BY doc, position;
SELECT document.source AS doc, position, heading, heading_path, level, char_start, char_end, heading_embedding, scopes FROM section ORDER BY doc, position;
SELECT id, text, normalised, embedding, scopes FROM keyword ORDER BY id;
SELECT in.source AS doc, out AS kw, score, scopes FROM knowledge_has_keyword ORDER BY doc, kw;
SELECT document.source AS doc, text, passage_start, mime_type, scopes, geometry, recorded_at != NONE AS dated FROM chunk_fts ORDER BY doc, text;
SELECT in.source AS a, out.source AS b, href, anchor, scopes FROM document_link ORDER BY a, b, href, anchor;
SELECT index, count() AS n FROM amem_index_write GROUP BY index ORDER BY index;
RETURN { fts_ids: count(SELECT id FROM chunk_fts WHERE type::record('chunk', record::id(id)).id = NONE),
         mentions: count(SELECT id FROM mentions) };
"""
TABLES = ["document", "chunk", "audio_chunk", "section", "keyword", "knowledge_has_keyword", "chunk_fts",
          "document_link", "amem_index_write", "checks"]


async def snapshot(conn) -> dict:
    return dict(zip(TABLES, await conn.query(SNAPSHOT)))


def assert_same(a: dict, b: dict) -> None:
    for table in TABLES:
        assert a[table] == b[table], table


async def test_batch_stores_what_one_by_one_stores():
    """Every row, keyword, edge, full-text copy, link and index-log entry equal (ids of
    documents and children are fresh ULIDs on both sides: compared by source)."""
    items = sample_items()
    assert len(items) > 20
    single, batched = await fresh(), await fresh()
    try:
        ref = await one_by_one(single, items)
        assert all(ok for ok, _ in ref)
        answers = await in_batches(batched, items)
        a, b = await snapshot(single), await snapshot(batched)
        assert len(a["document"]) == len(items) and len(a["knowledge_has_keyword"]) > 50 and a["document_link"]
        assert a["audio_chunk"] and a["section"]
        assert_same(a, b)
        assert b["checks"] == {"fts_ids": 0, "mentions": 0}
        # the answer names each document with its keywords, as documents::get would
        for (_ok, one), out in zip(ref, answers):
            assert out["status"] == one["status"] == "added"
            got = await call(batched, "fn::amem::documents::get", out["document"]["id"])
            assert out["document"]["chunk_count"] == got["chunk_count"] == one["document"]["chunk_count"]
            assert [k["normalised"] for k in out["document"]["keywords"]] == [k["normalised"] for k in got["keywords"]]
    finally:
        await close_quietly(single)
        await close_quietly(batched)


async def test_groups_stored_in_two_lanes_store_what_one_by_one_stores():
    """amem_db.ingest_batch.ingest_batch sends its groups in two round trips at once
    (INGEST_LANES); each lane's transactions may create the same new keyword as the
    other's (the loser is stored again alone). The rows are those of one by one, but for
    which document's display form a keyword node keeps (the first to commit wins)."""
    items = sample_items()
    single, laned = await fresh(), await fresh()
    try:
        ref = await one_by_one(single, items)
        prepared = await call_each(laned, "fn::amem::documents::prepare", [(it.doc,) for it in items])
        batch = [(it.doc, p["keywords"], vectors_of(p, it.doc), {"chunks": p["chunks"], "seal": p["seal"]})
                 for it, (_ok, p) in zip(items, prepared)]
        out = await ingest_batch(laned, batch, per_transaction=1, lanes=2)
        assert [ok for ok, _ in out] == [ok for ok, _ in ref] == [True] * len(items)
        a, b = await snapshot(single), await snapshot(laned)
        for snap in (a, b):  # the display form: the same words, any writer's case
            snap["keyword"] = [k | {"text": " ".join(k["text"].lower().split())} for k in snap["keyword"]]
        assert_same(a, b)
    finally:
        await close_quietly(single)
        await close_quietly(laned)


def doc(text: str, source: str, **extra) -> Item:
    return Item(source, {"text": text, "mime_type": "text/plain", "source": source} | extra)


async def test_replace_and_unchanged_inside_a_batch():
    first = [doc(f"Warranty claims for model {i} need the receipt and the serial number.", f"w{i}") for i in range(4)]
    first[1] = doc("Zebra crossings near depot seven close for repainting overnight.", "w1")  # keywords of its own
    second = [doc("Warranty claims for model 0 need the receipt and the serial number.", "w0"),  # unchanged
              doc("Refunds for model 1 are paid within thirty days of the return.", "w1"),  # replaced
              doc("Shipping rates for heavy parcels depend on the destination zone.", "w9")]  # new
    single, batched = await fresh(), await fresh()
    try:
        await one_by_one(single, first)
        await one_by_one(single, second)
        await in_batches(batched, first)
        report = await in_batches(batched, second)
        assert [r["status"] for r in report] == ["unchanged", "replaced", "added"]
        assert_same(await snapshot(single), await snapshot(batched))
        assert await orphans(batched) == {"chunks": 0, "sections": 0, "audio": 0, "keywords": 0, "wrong_counts": 0}
        (gone,) = await batched.query("RETURN count(SELECT id FROM keyword WHERE normalised CONTAINS 'zebra')")
        assert gone == 0  # the replaced version's own keywords went with it
    finally:
        await close_quietly(single)
        await close_quietly(batched)


async def test_scoped_batches_give_keywords_the_scopes_of_their_edges():
    """keyword.scopes = the union of its edges' scopes, whether the batch creates its new
    nodes with its documents' scopes (one scope set in the batch, a root session: the
    keyword_scope_sync event then has nothing to do) or the event sets them (mixed scopes),
    and a later batch in other scopes adds to a shared keyword: equal to one by one."""
    text = "Warranty claims need the original receipt and the serial number of the device."
    batches = [[doc(text, "a1", scopes=["org/a/x"]), doc("Zebra crossings near depot seven close overnight.", "a2", scopes=["org/a/x"])],
               [doc(text + " Claims are answered within ten days.", "b1", scopes=["org/b"]),
                doc(text + " Returns need the box.", "c1", scopes=["org/c", "team/q"])],
               [doc(text + " Unscoped copy.", "n1")]]
    single, batched = await fresh(), await fresh()
    try:
        for group in batches:
            assert all(ok for ok, _ in await one_by_one(single, group))
            await in_batches(batched, group)
        a, b = await snapshot(single), await snapshot(batched)
        for snap in (a, b):  # a node's scopes are a set: their order follows the edge ids, random on both sides
            snap["keyword"] = [r | {"scopes": sorted(r["scopes"])} for r in snap["keyword"]]
        assert_same(a, b)
        # a keyword of every document (the shared sentence's)
        (shared,) = await batched.query("SELECT VALUE out FROM (SELECT out, count() AS n FROM knowledge_has_keyword GROUP BY out) WHERE n = 4")
        assert shared
        (got,) = await batched.query("SELECT VALUE [scopes, scope_keys] FROM ONLY $k", {"k": shared[0]})
        assert sorted(got[0]) == ["org/a/x", "org/b", "org/c", "team/q"]
        assert sorted(got[1]) == ["org", "org/a", "org/a/x", "org/b", "org/c", "team", "team/q"]
        (zebra,) = await batched.query("SELECT VALUE scopes FROM keyword WHERE normalised CONTAINS 'zebra'")
        assert zebra and all(s == ["org/a/x"] for s in zebra)
        # every node holds exactly the union of its edges' scopes
        (bad,) = await batched.query("SELECT VALUE id FROM keyword WHERE array::sort(scopes) != "
                                     "array::sort(array::distinct(array::flatten(SELECT VALUE scopes FROM knowledge_has_keyword WHERE out = $parent.id)))")
        assert bad == []
    finally:
        await close_quietly(single)
        await close_quietly(batched)


async def test_a_bad_document_in_a_batch_is_reported_and_the_others_land(db):
    before = await counts(db)
    items = [doc("Returns of unopened items are free within thirty days.", "ok1"),
             doc("Gift cards cannot be exchanged for cash at any store.", "bad", title=5),  # a bad title
             doc("Store credit expires two years after it was issued.", "ok2")]
    report = await ingest_items(db, HASH, items)
    assert [r.status for r in report.results] == ["added", "failed", "added"]
    assert report.results[1].error_code == "invalid_input" and "title" in report.results[1].error
    after = await counts(db)
    assert after["documents"] == before["documents"] + 2
    assert await orphans(db) == {"chunks": 0, "sections": 0, "audio": 0, "keywords": 0, "wrong_counts": 0}


async def test_a_document_failing_inside_a_group_is_retried_alone(db):
    """A document that passes prepare but fails in the batch (here: a vector of the wrong
    dimension) fails its whole group; the client then ingests the group one by one: that
    document is reported with its own error, the others land, nothing partial remains."""
    before = await counts(db)
    items = [doc(f"Parcel lockers at station {n} open at six in the morning.", f"locker{n}") for n in range(3)]
    prepared = await call_each(db, "fn::amem::documents::prepare", [(it.doc,) for it in items])
    batch = [(it.doc, p["keywords"], vectors_of(p, it.doc)) for it, (_ok, p) in zip(items, prepared)]
    batch[1][2]["chunks"] = [[0.5] * 7 for _ in batch[1][2]["chunks"]]
    out = await ingest_batch(db, batch, per_transaction=4)
    assert [ok for ok, _ in out] == [True, False, True]
    assert "embedding_mismatch" in out[1][1]
    after = await counts(db)
    assert after["documents"] == before["documents"] + 2 and after["chunks"] > before["chunks"]
    assert await orphans(db) == {"chunks": 0, "sections": 0, "audio": 0, "keywords": 0, "wrong_counts": 0}


async def test_a_failed_batch_writes_nothing(db):
    """The batch itself is one transaction: a bad item (here: keywords that are not the
    text's, or two items with one source) leaves no row of any item behind."""
    good = {"doc": {"text": "Loyalty points are added after delivery.", "source": "lp"}, "keywords": [], "vectors": None}
    forged = {"doc": {"text": "Loyalty points expire after a year.", "source": "lp2"},
              "keywords": [{"text": "FREE MONEY", "normalised": "free money", "score": 4.0}], "vectors": None}
    before = await counts(db)
    with pytest.raises(InvalidInput, match="keywords must be"):
        await call(db, "fn::amem::ingest::batch", [good, forged])
    with pytest.raises(InvalidInput, match="same source"):
        await call(db, "fn::amem::ingest::batch", [good, good])
    assert await counts(db) == before
    # and the good one alone goes through, with no keywords since it brought none
    (out,) = await call(db, "fn::amem::ingest::batch", [good])
    assert out["status"] == "added" and out["document"]["keywords"] == []


async def test_scopes_per_document_inside_one_batch(dev_server):
    """A credential that writes org/a only: in one batch, the org/b document is refused
    (nothing of it written), the org/a ones land."""
    async with tenants(dev_server, "bscope", {"writer-a": dict(read=["org/a"], write=["org/a"])}) as t:
        conn = t.conns["writer-a"]
        items = [doc("Ticket triage happens every morning at nine.", "a1", scopes=["org/a"]),
                 doc("Payroll runs on the last Friday of the month.", "b1", scopes=["org/b"]),
                 doc("Escalations go to the on-call engineer first.", "a2", scopes=["org/a"])]
        report = await ingest_items(conn, HASH, items)
        assert [r.status for r in report.results] == ["added", "failed", "added"]
        assert report.results[1].error_code == "permission_denied"
        (rows,) = await t.root.query("SELECT VALUE source FROM document ORDER BY source")
        assert rows == ["a1", "a2"]
        (chunks,) = await t.root.query("SELECT VALUE scopes FROM chunk")
        assert chunks and all(s == ["org/a"] for s in chunks)
        # raw SurrealQL: the mixed batch as one call is refused whole
        with pytest.raises(PermissionDenied, match="scope org/b is outside the write region"):
            await call(conn, "fn::amem::ingest::batch", [
                {"doc": items[2].doc | {"source": "a3"}, "keywords": [], "vectors": None},
                {"doc": items[1].doc, "keywords": [], "vectors": None}])
        (n,) = await t.root.query("RETURN count(SELECT id FROM document WHERE source = 'a3')")
        assert n == 0


LONG = " ".join(f"Sentence {i} of the returns policy explains how refunds for damaged parcels are handled." for i in range(30))


async def forged_item(conn, source: str) -> tuple[dict, dict]:
    """A document of several chunks, and an item bringing back only its first chunk, with
    one vector, sealed by root for that forged list (fn::amem::ingest::seal)."""
    d = {"text": LONG, "mime_type": "text/plain", "source": source}
    ((_ok, p),) = await call_each(conn, "fn::amem::documents::prepare", [(d,)])
    assert len(p["chunks"]) > 2
    forged = p["chunks"][:1]
    v = vectors_of({**p, "chunks": forged}, d)
    item = {"doc": d, "keywords": p["keywords"], "vectors": v, "chunks": forged, "seal": p["seal"]}
    return p, item


async def test_sealed_chunks_are_taken_back_only_as_prepare_made_them(db):
    """ingest::batch takes prepare's chunks back instead of chunking again only when the
    seal matches them (issue 25): chunks that are not prepare's, under prepare's seal, are
    chunked again, so vectors made for the forged list are refused (one to one); the list
    prepare made, with its seal, stores exactly prepare's chunks."""
    p, item = await forged_item(db, "sealed")
    with pytest.raises(InvalidInput, match=f"vectors.chunks must hold {len(p['chunks'])} vectors"):
        await call(db, "fn::amem::ingest::batch", [item])
    good = item | {"chunks": p["chunks"], "vectors": vectors_of(p, item["doc"])}
    (out,) = await call(db, "fn::amem::ingest::batch", [good])
    assert out["document"]["chunk_count"] == len(p["chunks"])
    (rows,) = await db.query("SELECT text, position, char_start, char_end FROM chunk WHERE document.source = 'sealed' ORDER BY position")
    assert rows == [{k: c[k] for k in ("text", "position", "char_start", "char_end")} for c in p["chunks"]]
    assert all(r["text"] == LONG[r["char_start"]:r["char_end"]] for r in rows)


async def test_a_record_user_gets_no_say_over_the_chunks(dev_server):
    """Only root and system sessions are trusted with sealed chunks: a record user's item
    is chunked again even when its seal matches its chunks (computed by root), so its
    forged chunk list is never stored and vectors made for it are refused."""
    async with tenants(dev_server, "bseal", {"writer": dict(read=["org/a"], write=["org/a"])}) as t:
        conn = t.conns["writer"]
        p, item = await forged_item(conn, "sealed-ru")
        item["doc"]["scopes"] = ["org/a"]
        (seal,) = await t.root.query("RETURN fn::amem::ingest::seal(fn::amem::documents::check($doc), crypto::sha256($doc.text), $c, $k)",
                                     {"doc": item["doc"], "c": item["chunks"], "k": item["keywords"]})
        root_item = item | {"seal": seal, "doc": item["doc"] | {"source": "root-forged", "scopes": []}}
        (ok,) = await call(t.root, "fn::amem::ingest::batch", [root_item])
        assert ok["document"]["chunk_count"] == 1  # root may: it could write any chunk row anyway
        with pytest.raises(InvalidInput, match=f"vectors.chunks must hold {len(p['chunks'])} vectors"):
            await call(conn, "fn::amem::ingest::batch", [item | {"seal": seal}])
        (n,) = await t.root.query("RETURN count(SELECT id FROM document WHERE source = 'sealed-ru')")
        assert n == 0
