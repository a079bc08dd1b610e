"""Ingestion on the real engine: formats, atomicity, idempotency, the document
and keyword read APIs. Vectors come from the hashing embedder (fast, named
explicitly); tests/test_embedding.py runs the real model."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import hash_memory

from amem_db.client import Memory
from amem_db.connection import Target, close_quietly, open_connection
from amem_db.db import call
from amem_db.embedding import get_embedder
from amem_db.errors import EmbeddingMismatch, InvalidInput, NotFound
from amem_db.harness.paths import datasets_root
from amem_db.ingest import doc_object
from amem_db.keyword_vectors import embed_keywords
from amem_db.migrator import Migrator
from amem_db.parsing import parse

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "sample-corpus"
HASH = get_embedder("hash:384")


@pytest.fixture(scope="module")
async def mem(db):
    m = hash_memory(db)
    report = await m.documents.ingest_paths([SAMPLE])
    m.sample_report = report
    # keyword nodes come without vectors (issue 25); semantic keyword search needs them
    (with_vectors,) = await db.query("RETURN count(SELECT id FROM keyword WHERE embedding != NONE)")
    assert with_vectors == 0
    assert (await embed_keywords(m.conn, m.embedder)).embedded > 60
    return m


async def counts(conn) -> dict:
    (row,) = await conn.query(
        "RETURN { documents: count(SELECT id FROM document), chunks: count(SELECT id FROM chunk),"
        " audio: count(SELECT id FROM audio_chunk), sections: count(SELECT id FROM section),"
        " keywords: count(SELECT id FROM keyword), edges: count(SELECT id FROM knowledge_has_keyword),"
        " links: count(SELECT id FROM document_link) }"
    )
    return row


async def orphans(conn) -> dict:
    (row,) = await conn.query(
        "RETURN { chunks: count(SELECT id FROM chunk WHERE document.id = NONE),"
        " sections: count(SELECT id FROM section WHERE document.id = NONE),"
        " audio: count(SELECT id FROM audio_chunk WHERE document.id = NONE),"
        " keywords: count(SELECT id FROM keyword WHERE count(<-knowledge_has_keyword) = 0),"
        " wrong_counts: count(SELECT id FROM document WHERE chunk_count !="
        "   count(SELECT id FROM chunk WHERE document = $parent.id) + count(SELECT id FROM audio_chunk WHERE document = $parent.id)) }"
    )
    return row


# --- a mixed folder --------------------------------------------------------------------
async def test_sample_folder_ingests_every_format(mem):
    report = mem.sample_report
    assert report.count("failed") == 0, report.failed
    assert report.count("added") == len(report.results) == 10 + 50  # 10 files + 50 JSONL lines
    mimes = {r.document.mime_type for r in report.results}
    assert {"text/markdown", "text/html", "application/pdf", "text/vtt", "application/x-subrip",
            "text/plain", "application/jsonl"} <= mimes
    assert report.chunks > 60 and report.keywords > 60
    assert await orphans(mem.conn) == {"chunks": 0, "sections": 0, "audio": 0, "keywords": 0, "wrong_counts": 0}


async def test_transcripts_become_timed_audio_chunks(mem):
    (vtt,) = [r for r in mem.sample_report.results if r.name.endswith(".vtt")]
    page = await mem.documents.chunks(vtt.document.id, limit=500)
    assert page.total == vtt.document.chunk_count > 0
    starts = [c.start_s for c in page.chunks]
    assert all(s is not None for s in starts) and starts == sorted(starts)
    assert all(c.end_s >= c.start_s for c in page.chunks)
    (text,) = await mem.conn.query("SELECT VALUE text FROM ONLY type::record($d)", {"d": vtt.document.id})
    assert all(text[c.char_start:c.char_end] == c.text for c in page.chunks)
    (audio_vectors,) = await mem.conn.query("SELECT VALUE array::len(embedding) FROM audio_chunk WHERE document = type::record($d)",
                                            {"d": vtt.document.id})
    assert set(audio_vectors) == {384}


async def test_chunk_text_is_the_document_slice(mem):
    (md,) = [r for r in mem.sample_report.results if r.name.endswith("returns-policy.md")]
    (rows,) = await mem.conn.query("SELECT text, char_start, char_end, section_heading FROM chunk WHERE document = type::record($d)",
                                   {"d": md.document.id})
    text = (SAMPLE / "returns-policy.md").read_text()
    assert rows and all(text[r["char_start"]:r["char_end"]] == r["text"] for r in rows)
    assert any(r["section_heading"] for r in rows)


async def test_sections_and_summary_have_embeddings(mem):
    (row,) = await mem.conn.query(
        "RETURN { sections: count(SELECT id FROM section WHERE heading_embedding != NONE),"
        " summaries: count(SELECT id FROM document WHERE summary_embedding != NONE),"
        " keywords: count(SELECT id FROM keyword WHERE embedding != NONE) }")
    assert row["sections"] > 10 and row["summaries"] == 60 and row["keywords"] > 60


async def test_links_between_documents_are_recorded(mem):
    (n,) = await mem.conn.query("RETURN count(SELECT id FROM document_link)")
    assert n > 0
    again = await mem.documents.recompute_links()
    assert again.links == n


# --- idempotency ------------------------------------------------------------------------
async def test_unchanged_reingest_is_a_no_op(mem):
    before = await counts(mem.conn)
    report = await mem.documents.ingest_paths([SAMPLE])
    assert report.count("unchanged") == 60 and report.embedded_texts == 0
    assert await counts(mem.conn) == before


async def test_changed_file_replaces_its_chunks_cleanly(mem, tmp_path):
    f = tmp_path / "policy.md"
    f.write_text("# Returns\n\nUnopened items may be returned within 30 days. Refund policy applies to all return requests.\n")
    first = await mem.documents.ingest_file(f)
    assert first.status == "added"
    f.write_text("# Warranty\n\nThe warranty covers battery defects for two years. Warranty claims need a receipt.\n")
    second = await mem.documents.ingest_file(f)
    assert second.status == "replaced" and second.document.id == first.document.id
    page = await mem.documents.chunks(first.document.id)
    assert page.chunks and all("Warranty" in c.text or "warranty" in c.text for c in page.chunks)
    assert await orphans(mem.conn) == {"chunks": 0, "sections": 0, "audio": 0, "keywords": 0, "wrong_counts": 0}
    old_keywords = {k.normalised for k in first.document.keywords} - {k.normalised for k in second.document.keywords}
    for k in old_keywords:  # a keyword only the old version had is gone with it
        with pytest.raises(NotFound):
            await mem.documents.keywords.get(k)


# --- atomicity --------------------------------------------------------------------------
async def test_wrong_vector_length_stores_nothing(db):
    before = await counts(db)
    doc = doc_object(parse(b"# A\n\nSome words about return policy and refunds.", name="a.md")[0], source="atomic-a")
    prepared = await call(db, "fn::amem::documents::prepare", doc)
    vectors = {"model": HASH.name, "chunks": [[0.1] * 383 for _ in prepared["chunks"]],
               "audio": [], "keywords": [[0.1] * 384 for _ in prepared["keywords"]], "sections": [[0.1] * 384]}
    with pytest.raises(EmbeddingMismatch, match="dimension 383"):
        await call(db, "fn::amem::documents::ingest", doc, vectors)
    vectors["chunks"] = vectors["chunks"][:-1] if len(vectors["chunks"]) > 1 else []
    with pytest.raises(InvalidInput, match="vectors.chunks must hold"):
        await call(db, "fn::amem::documents::ingest", doc, vectors)
    assert await counts(db) == before


async def test_other_model_is_refused(mem):
    other = Memory(mem.conn, embedder=get_embedder("hash:384"))
    other.embedder.name = "some-other-model"  # same dimension, different space
    with pytest.raises(EmbeddingMismatch, match="some-other-model"):
        await other.documents.ingest_text("A note about warranty claims.", source="other-model")


async def test_engine_error_mid_write_leaves_no_partial_document(db):
    # keyword_min_score of a wrong type fails inside ingest after validation started
    before = await counts(db)
    doc = {"text": "Refund policy details for unopened items.", "mime_type": "text/plain", "source": "x",
           "scopes": ["org/ok", "not a valid path!"]}
    with pytest.raises(InvalidInput, match="not a scope path"):
        await call(db, "fn::amem::documents::ingest", doc, None)
    assert await counts(db) == before


@pytest.mark.parametrize("bad", [
    {"text": ""}, {"text": 42}, "just a string", {"text": "x", "mime_type": "not a mime"},
    {"text": "x", "title": 5}, {"text": "x", "segments": [{"start_s": 2, "end_s": 1, "char_start": 0, "char_end": 1}]},
])
async def test_bad_documents_are_refused_clearly(db, bad):
    with pytest.raises(InvalidInput):
        await call(db, "fn::amem::documents::ingest", bad, None)


KILL_SCRIPT = textwrap.dedent("""
    import asyncio, os, sys
    sys.path.insert(0, {root!r})
    from amem_db.connection import Target, open_connection
    from amem_db.embedding import get_embedder
    from amem_db.ingest import Item, ingest_items
    async def main():
        conn = await open_connection(Target({url!r}, "k", "k"))
        emb = get_embedder("hash:384")
        words = open({corpus!r}).read().split()
        for i in range(0, 10_000, 3):  # three documents a batch: one transaction (surql/255_ingest)
            print("ingesting", i, i + 1, i + 2, flush=True)
            await ingest_items(conn, emb, [Item(f"doc{{j}}", {{"text": " ".join(words[(j * 997) % 5000:][:6000]),
                                                             "mime_type": "text/plain", "source": f"doc{{j}}"}})
                                           for j in range(i, i + 3)], batch_size=3)
    asyncio.run(main())
""")


@pytest.mark.parametrize("kills", [pytest.param(3, id="3"), pytest.param(10, id="10", marks=pytest.mark.slow)])
async def test_killed_process_leaves_no_partial_document(tmp_path, kills):
    """kill -9 of an ingesting process, `kills` times (issue 15: >= 10 per full run): after
    each, the batch in flight (three documents, one transaction) is whole or absent, no child row or full-text copy
    is orphaned and every chunk_count is right."""
    url = f"surrealkv://{tmp_path / 'killed'}"
    conn = await open_connection(Target(url, "k", "k"))
    await Migrator(conn).migrate()
    await close_quietly(conn)
    corpus = datasets_root() / "cranfield" / "corpus.jsonl"
    if not corpus.exists():
        corpus = SAMPLE / "scifact-sample.jsonl"
    script = KILL_SCRIPT.format(root=str(ROOT), url=url, corpus=str(corpus))
    rng = random.Random(7)
    in_flight_absent = 0
    for attempt in range(kills):
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        # let a few documents commit (or be found unchanged), then kill mid-way
        seen = [proc.stdout.readline() for _ in range(2 + attempt)]
        time.sleep(rng.uniform(0.05, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        last = [line for line in seen + proc.stdout.read().splitlines() if line.startswith("ingesting")]
        proc.stdout.close()
        conn = await open_connection(Target(url, "k", "k"))
        try:
            c = await counts(conn)
            assert c["documents"] >= 1 and c["chunks"] > 0, attempt  # the documents before the one in flight are there
            assert await orphans(conn) == {"chunks": 0, "sections": 0, "audio": 0, "keywords": 0, "wrong_counts": 0}, attempt
            (fts,) = await conn.query("RETURN count(SELECT id FROM chunk_fts) = count(SELECT id FROM chunk)")
            assert fts, attempt
            if last:  # the batch being ingested when the process died: all of it or none of it
                (n,) = await conn.query("RETURN count(SELECT id FROM document WHERE source IN $s)",
                                        {"s": [f"doc{j}" for j in last[-1].split()[1:]]})
                assert n in (0, 3), (attempt, n)
                in_flight_absent += n == 0
        finally:
            await close_quietly(conn)
    print(f"\nkill -9 mid-ingest: {kills} kills, {in_flight_absent} inside a document's transaction, 0 partial documents "
          f"({c['documents']} documents stored)")
    assert in_flight_absent >= 1  # some kill did land inside a document: the test is not vacuous


# --- the read API ------------------------------------------------------------------------
async def test_get_list_and_filters(mem):
    page = await mem.documents.list(limit=5)
    assert page.total >= 60 and len(page.documents) == 5
    second = await mem.documents.list(limit=5, offset=5)
    assert not {d.id for d in page.documents} & {d.id for d in second.documents}
    pdfs = await mem.documents.list(mime_type="application/pdf")
    assert pdfs.total == 1 and pdfs.documents[0].mime_type == "application/pdf"
    assert (await mem.documents.list(status="failed")).total == 0
    doc = await mem.documents.get(pdfs.documents[0].id)
    assert doc.title and doc.chunk_count > 0 and doc.keywords
    assert await mem.documents.get("document:nope") is None
    with pytest.raises(InvalidInput, match="status must be one of"):
        await mem.documents.list(status="done")
    with pytest.raises(InvalidInput, match="limit"):
        await mem.documents.list(limit=10_000)


async def test_chunks_are_paged_in_order(mem):
    (jsonl_doc,) = [r for r in mem.sample_report.results if r.name.endswith("returns-policy.md")]
    full = await mem.documents.chunks(jsonl_doc.document.id, limit=500)
    assert [c.position for c in full.chunks] == list(range(full.total))
    part = await mem.documents.chunks(jsonl_doc.document.id, limit=2, offset=1)
    assert [c.id for c in part.chunks] == [c.id for c in full.chunks[1:3]]
    with pytest.raises(NotFound):
        await mem.documents.chunks("document:missing")


async def test_delete_removes_everything_of_a_document(mem):
    result = await mem.documents.ingest_text("Exchange policy: exchanges of opened items need the original receipt and box.",
                                             source="to-delete")
    doc_id = result.document.id
    done = await mem.documents.delete(doc_id)
    assert done.chunks == result.document.chunk_count
    assert await mem.documents.get(doc_id) is None
    assert await orphans(mem.conn) == {"chunks": 0, "sections": 0, "audio": 0, "keywords": 0, "wrong_counts": 0}
    with pytest.raises(NotFound):
        await mem.documents.delete(doc_id)


async def test_reprocess_rebuilds_from_stored_text(mem):
    (md,) = [r for r in mem.sample_report.results if r.name.endswith("warranty.md")]
    before = await mem.documents.chunks(md.document.id, limit=500)
    result = await mem.documents.reprocess(md.document.id)
    assert result.status == "replaced"
    after = await mem.documents.chunks(md.document.id, limit=500)
    assert [(c.text, c.char_start) for c in after.chunks] == [(c.text, c.char_start) for c in before.chunks]


async def test_unsupported_and_corrupt_files_are_reported_and_the_rest_goes_on(mem, tmp_path):
    (tmp_path / "good.md").write_text("# Good\n\nA perfectly good note about refund windows.")
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.7 truncated")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    report = await mem.documents.ingest_paths([tmp_path])
    by_name = {Path(r.name).name: r for r in report.results}
    assert by_name["good.md"].status == "added"
    assert by_name["bad.pdf"].status == "failed" and "bad.pdf" in by_name["bad.pdf"].error
    assert by_name["image.png"].status == "failed" and "image" in by_name["image.png"].error.lower()


# --- keywords -----------------------------------------------------------------------------
async def test_keywords_for_a_document_carry_edge_scores(mem):
    (md,) = [r for r in mem.sample_report.results if r.name.endswith("returns-policy.md")]
    result = await mem.documents.keywords.for_document(md.document.id)
    assert 0 < len(result.keywords) <= 5
    scores = [k.score for k in result.keywords]
    assert scores == sorted(scores, reverse=True) and min(scores) >= 0.8


async def test_keyword_list_counts_documents_and_sorts(mem):
    page = await mem.documents.keywords.list(min_document_count=1, sort="-document_count", limit=500)
    counts_ = [k.document_count for k in page.keywords]
    assert counts_ == sorted(counts_, reverse=True)
    (edges,) = await mem.conn.query("SELECT out.normalised AS n, count() AS c FROM knowledge_has_keyword GROUP BY n")
    expected = {r["n"]: r["c"] for r in edges}
    assert {k.normalised: k.document_count for k in page.keywords} == expected
    multi = await mem.documents.keywords.list(min_document_count=2)
    assert all(k.document_count >= 2 for k in multi.keywords)
    by_text = await mem.documents.keywords.list(sort="text", limit=20)
    assert [k.normalised for k in by_text.keywords] == sorted(k.normalised for k in by_text.keywords)
    with pytest.raises(InvalidInput, match="sort must be one of"):
        await mem.documents.keywords.list(sort="score")


async def test_keyword_get_by_normalised_form(mem):
    page = await mem.documents.keywords.list(limit=1)
    top = page.keywords[0]
    detail = await mem.documents.keywords.get(top.text.upper())
    assert detail.normalised == top.normalised and detail.document_count == top.document_count
    assert len(detail.documents) == detail.document_count
    assert all(d.score >= 0.8 and d.id.startswith("document:") for d in detail.documents)
    with pytest.raises(NotFound):
        await mem.documents.keywords.get("no such keyword at all")


async def test_keyword_search_returns_nearest_keywords(mem):
    page = await mem.documents.keywords.list(limit=1, sort="text")
    target = page.keywords[0].text
    found = await mem.documents.keywords.search(target, k=3)
    assert found.results[0].normalised == page.keywords[0].normalised
    assert found.results[0].score == pytest.approx(1.0, abs=1e-4)
    assert len(found.results) == 3


async def test_bulk_ingest_reopens_surrealkv_before_its_wal_hangs(tmp_path, monkeypatch):
    # surrealkv 3.2.4 hangs at ~1.7 GB of WAL in one open (docs/ENGINE-ISSUES.md #8):
    # with the threshold at 0 every batch reopens, and nothing is lost.
    import amem_db.client.memory as client_module

    monkeypatch.setattr(client_module, "WAL_REOPEN_BYTES", 0)
    target = Target(f"surrealkv://{tmp_path / 'wal'}", "w", "w")
    mem = Memory(await open_connection(target), embedder=HASH, target=target)
    try:
        await Migrator(mem.conn).migrate()
        first = mem.conn
        report = await mem.documents.ingest_paths([SAMPLE / "scifact-sample.jsonl"], batch_size=10)
        assert report.count("added") == 50 and mem.conn is not first
        assert (await counts(mem.conn))["documents"] == 50
    finally:
        await mem.close()


async def test_ingested_chunks_are_found_by_the_hnsw_leg(mem):
    # HNSW skips array/object record ids (docs/ENGINE-ISSUES.md #9): ingested ids must be strings
    (md,) = [r for r in mem.sample_report.results if r.name.endswith("returns-policy.md")]
    page = await mem.documents.chunks(md.document.id, limit=1)
    response = await mem.documents.query(page.chunks[0].text, mode="vector", k=3, threshold=-1)
    assert response.trace["legs"]["vector"]["tables"]["chunk"]["strategy"] == "hnsw"
    assert response.results and response.results[0].chunk.id == page.chunks[0].id


async def test_links_match_in_both_directions_through_the_key_indexes(fresh_db, tmp_path):
    # document.source_key / link_keys (migrations/0003) with indexes: a link is
    # found whichever document arrives first, and replacing a document drops
    # only its own outgoing links (docs/ENGINE-ISSUES.md #11)
    await Migrator(fresh_db).migrate({"embedding_dim": 384})
    m = Memory(fresh_db, embedder=HASH)
    a, b, c = tmp_path / "a.md", tmp_path / "sub" / "b.md", tmp_path / "c.md"
    b.parent.mkdir()
    a.write_text("# A\n\nSee [the b page](sub/b.md#part) for shipping rates.\n")
    b.write_text("# B\n\nBack to [a](../a.md). Shipping rates are flat.\n")
    c.write_text("# C\n\nNothing links here; [external](https://example.com/other.html).\n")

    async def edges() -> set[tuple[str, str]]:
        (rows,) = await fresh_db.query("SELECT in.source AS i, out.source AS o FROM document_link")
        return {(Path(r["i"]).name, Path(r["o"]).name) for r in rows}

    await m.documents.ingest_file(a)
    assert await edges() == set()  # b is not there yet
    await m.documents.ingest_file(c)
    await m.documents.ingest_file(b)
    assert await edges() == {("a.md", "b.md"), ("b.md", "a.md")}
    (keys,) = await fresh_db.query("SELECT source_key, link_keys FROM ONLY document WHERE source_key = 'a.md'")
    assert keys == {"source_key": "a.md", "link_keys": ["b.md"]}
    (plan,) = await fresh_db.query("SELECT id FROM document WHERE link_keys CONTAINS 'b.md' EXPLAIN")
    assert "document_link_keys" in json.dumps(plan, default=str)

    a.write_text("# A\n\nNo links any more.\n")
    await m.documents.ingest_file(a)
    assert await edges() == {("b.md", "a.md")}
    assert (await m.documents.recompute_links()).links == 1


async def test_fulltext_copies_follow_every_write(fresh_db, tmp_path):
    # chunk_fts / audio_chunk_fts (migrations/0004) are what the BM25 leg reads;
    # the surql/040 events keep them equal to chunk / audio_chunk in the writing
    # transaction: ingest, replacement, deletion.
    await Migrator(fresh_db).migrate({"embedding_dim": 384})
    m = Memory(fresh_db, embedder=HASH)

    async def mirrored() -> int:
        (rows,) = await fresh_db.query(
            "RETURN { src: (SELECT record::id(id) AS k, text, document, mime_type, scopes FROM chunk ORDER BY k),"
            # a chunk's copy leads with its document title (tests/test_titles.py): the passage follows it
            " fts: (SELECT record::id(id) AS k, string::slice(text, passage_start) AS text, document, mime_type, scopes FROM chunk_fts ORDER BY k),"
            " asrc: (SELECT record::id(id) AS k, text FROM audio_chunk ORDER BY k),"
            " afts: (SELECT record::id(id) AS k, text FROM audio_chunk_fts ORDER BY k) }")
        assert rows["src"] == rows["fts"] and rows["asrc"] == rows["afts"]
        return len(rows["src"]) + len(rows["asrc"])

    # fresh_db is per module: the links test's documents are here too, so the
    # counts are relative (the mirror check covers every row)
    base = await mirrored()
    a, b = tmp_path / "a.md", tmp_path / "b.vtt"
    a.write_text("# Returns\n\n" + "Unopened items may be returned within 30 days. " * 40)
    b.write_text("WEBVTT\n\n00:00:01.000 --> 00:00:04.000\nRefunds take five days.\n")
    doc_a = (await m.documents.ingest_file(a)).document
    await m.documents.ingest_file(b)
    assert await mirrored() > base + 3
    a.write_text("# Returns\n\nA shorter policy: returns within 14 days.\n")
    replaced = await m.documents.ingest_file(a)
    assert replaced.status == "replaced", replaced
    assert await mirrored() == base + 2
    await m.documents.delete(doc_a.id)
    assert await mirrored() == base + 1
    # and the rows stored before the migration: its backfill statement copies them
    await fresh_db.query("DELETE chunk_fts; DELETE audio_chunk_fts;")
    rendered = (ROOT / "migrations" / "0004_fulltext_tables.surql.j2").read_text()
    for table in ("chunk", "audio_chunk"):
        backfill = next(line for line in rendered.splitlines() if line.startswith("INSERT INTO {{ t }}_fts"))
        await fresh_db.query(backfill.replace("{{ t }}", table))
    assert await mirrored() == base + 1


async def test_report_times_the_engine_apart_from_embedding(mem):
    # the engine time is measured around the prepare/ingest round trips, not
    # derived as total minus embedding: the two overlap (the next batch is
    # embedded while the engine stores the previous one)
    report = mem.sample_report
    assert report.engine_seconds > 0 and report.embed_seconds > 0
    assert report.engine_seconds <= report.seconds
    assert report.embed_seconds <= report.seconds


async def test_a_source_in_two_pipelined_batches_is_prepared_after_its_store(fresh_db):
    # ingest_items prepares batch N+1 while batch N is stored; a source in both must wait,
    # or prepare reads the store before batch N's version lands: here A, then B, then A
    # again of one source, one document a batch. The third prepare, run beside the store
    # of B, would find A stored (batch 1), call it unchanged and embed nothing, and the
    # batch would then replace B with A's chunks without vectors.
    from amem_db.ingest import Item, ingest_items

    await Migrator(fresh_db).migrate({"embedding_dim": 384})
    text_a = "Unopened items may be returned within 30 days of delivery. " * 30
    text_b = "Refunds are paid within five working days to the original card. " * 30
    items = [Item(name=f"v{i}", doc={"text": t, "source": "policy.md", "title": "Policy"})
             for i, t in enumerate((text_a, text_b, text_a))]
    report = await ingest_items(fresh_db, HASH, items, batch_size=1)
    assert [r.status for r in report.results] == ["added", "replaced", "replaced"]
    (rows,) = await fresh_db.query("SELECT text, embedding != NONE AS vec FROM chunk WHERE document.source = 'policy.md'")
    assert rows and all(r["vec"] for r in rows)
    assert all(r["text"] in text_a for r in rows)
