"""Titles in the BM25 copy (issue 16, migrations/0015, surql/045_titles): a chunk's
chunk_fts.text is `title + "\\n\\n" + passage` when its document has a title, so the
BM25 leg finds a passage by a word of its title alone; the chunk (text, offsets, what a
hit returns) stays the source's; a re-ingest that changes only the title rewrites the
copies; the migration rewrites rows stored before it; mentions see the passage only."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from helpers import drop, make_target, mem, older_release  # noqa: F401  (mem is a fixture)

from amem_db.connection import close_quietly, open_connection
from amem_db.db import call
from amem_db.embedding import get_embedder
from amem_db.migrator import Migrator

HASH = get_embedder("hash:384")
_n = itertools.count()


def word() -> str:
    """A word no other document here uses (letters only)."""
    return "zq" + "".join("abcdefghij"[int(d)] for d in str(next(_n))) + "x"


async def ingest(conn, text: str, title: str | None, source: str) -> dict:
    doc = {"text": text, "mime_type": "text/plain", "source": source, "scopes": ["org/t"]}
    if title is not None:
        doc["title"] = title
    return await call(conn, "fn::amem::documents::ingest", doc, None)


async def copies(conn, source: str) -> list[dict]:
    """Each chunk of a document with its BM25 copy, in position order."""
    (rows,) = await conn.query(
        "SELECT text, char_start, char_end, position, type::record('chunk_fts', record::id(id)).text AS copy,"
        " type::record('chunk_fts', record::id(id)).passage_start AS passage_start"
        " FROM chunk WHERE document.source = $s ORDER BY position", {"s": source})
    return rows


async def bm25_sources(conn, q: str) -> list[str]:
    (rows,) = await conn.query("SELECT VALUE document.source FROM chunk_fts WHERE text @1,OR@ $q", {"q": q})
    return sorted(set(rows))


async def test_the_copy_leads_with_the_title_and_the_chunk_keeps_the_source_text(db):
    title, body_word = f"Thermal {word()} report", word()
    text = f"The {body_word} survey measured heat flux. " * 40  # several chunks
    await ingest(db, text, title, "t1")
    rows = await copies(db, "t1")
    assert len(rows) > 1
    for r in rows:
        assert r["text"] == text[r["char_start"]:r["char_end"]]  # the source's passage, untouched
        assert r["copy"] == f"{title}\n\n{r['text']}"
        assert r["passage_start"] == len(title) + 2


async def test_bm25_finds_a_passage_by_a_title_word_and_returns_the_passage_only(db, mem):
    tword = word()
    text = "Boundary layers separate at high angles of attack on a swept wing."
    await ingest(db, text, f"On {tword} wings", "t2")
    resp = await mem.documents.query(tword, mode="bm25", k=5)
    assert [h.document.source for h in resp.results] == ["t2"]
    hit = resp.results[0].chunk
    assert hit.text == text and (hit.char_start, hit.char_end) == (0, len(text))
    assert tword not in hit.text
    for c in resp.context_hits:
        assert tword not in c.chunk.text


async def test_no_title_or_a_blank_title_leaves_the_copy_equal_to_the_passage(db):
    for source, title in (("t3", None), ("t4", "   ")):
        await ingest(db, f"A plain {word()} passage.", title, source)
        (r,) = await copies(db, source)
        assert r["copy"] == r["text"] and r["passage_start"] == 0


async def test_a_reingest_that_changes_only_the_title_rewrites_the_copies(db):
    old, new = word(), word()
    text = f"Lift and drag of a {word()} aerofoil in a wind tunnel. " * 30
    await ingest(db, text, f"The {old} study", "t5")
    before = await copies(db, "t5")
    assert await bm25_sources(db, old) == ["t5"]
    out = await ingest(db, text, f"The {new} study", "t5")
    assert out["status"] == "unchanged" and out["document"]["title"] == f"The {new} study"
    after = await copies(db, "t5")
    assert [(r["text"], r["char_start"], r["char_end"]) for r in after] == \
        [(r["text"], r["char_start"], r["char_end"]) for r in before]  # the same chunks, untouched
    assert all(r["copy"] == f"The {new} study\n\n{r['text']}" for r in after)
    assert await bm25_sources(db, old) == [] and await bm25_sources(db, new) == ["t5"]
    # and a title taken away leaves the passage alone in the copy
    doc = {"text": text, "mime_type": "text/plain", "source": "t5", "scopes": ["org/t"], "title": None}
    await call(db, "fn::amem::documents::ingest", doc, None)
    assert all(r["copy"] == r["text"] and r["passage_start"] == 0 for r in await copies(db, "t5"))
    assert await bm25_sources(db, new) == []


async def test_mentions_see_the_passage_not_the_title(db):
    who = f"Ada {word()}"
    await call(db, "fn::amem::facts::write", {"triples": [{"entity": {"type": "person", "name": who}, "key": "k", "value": "v"}],
                                               "scopes": ["org/t"]}, None)
    # direction 1 (passages written after the name): the name in the title only makes no edge;
    # in the passage, the edge's span is the passage's own characters
    await ingest(db, "Nothing about anyone here.", f"Letters of {who}", "t6")
    text = f"Minutes: {who} opened the meeting."
    await ingest(db, text, f"Board {who} minutes", "t7")
    # direction 2 (a name written after the passages): the same two cases
    who2 = f"Bea {word()}"
    await ingest(db, "Nothing about anyone here either.", f"Papers of {who2}", "t8")
    text2 = f"Later {who2} closed it."
    await ingest(db, text2, f"On {who2}", "t9")
    await call(db, "fn::amem::facts::write", {"triples": [{"entity": {"type": "person", "name": who2}, "key": "k", "value": "v"}],
                                               "scopes": ["org/t"]}, None)
    for name, src, body in ((who, "t7", text), (who2, "t9", text2)):
        (rows,) = await db.query(
            "SELECT in.document.source AS source, in.text AS text, char_start, char_end FROM mentions"
            " WHERE out = type::record('entity', $id) AND record::tb(in) = 'chunk'",
            {"id": "person/" + name.lower()})
        assert [(r["source"], r["text"][r["char_start"]:r["char_end"]]) for r in rows] == [(src, name)]
        assert rows[0]["text"] == body


# --- the operator's path: `amem-db migrate` on a database stored before 0015 --------------
@pytest.fixture
def old_release(tmp_path: Path):
    """migrations/ and surql/ as they were before titles reached the BM25 copy."""
    mig, surql = older_release(tmp_path, "0015")  # a migration after 0015 cannot be in the older release
    (surql / "045_titles.surql.j2").unlink()
    sync = surql / "040_fulltext_sync.surql.j2"
    src = sync.read_text()
    assert src.count('t == "chunk"') == 3
    sync.write_text(src.replace('t == "chunk"', "false"))  # the copy = the passage, as before
    return mig, surql


async def test_migrating_an_older_database_rewrites_the_copies(old_release):
    mig, surql = old_release
    target = make_target("titles")
    conn = await open_connection(target)
    try:
        await Migrator(conn, migrations_dir=mig, surql_dir=surql).migrate()
        tword = word()
        text = f"Heat transfer in a {word()} duct. " * 30
        await ingest(conn, text, f"The {tword} duct", "old1")
        await ingest(conn, "An untitled passage.", None, "old2")
        assert all(r["copy"] == r["text"] for r in await copies(conn, "old1"))
        assert await bm25_sources(conn, tword) == []
        plan = await Migrator(conn).migrate()  # the current release
        assert "0015_titles_in_bm25" in [s.key for s in plan.pending]
        rows = await copies(conn, "old1")
        assert len(rows) > 1
        assert all(r["copy"] == f"The {tword} duct\n\n{r['text']}" and r["passage_start"] == len(f"The {tword} duct") + 2
                   for r in rows)
        (plain,) = await copies(conn, "old2")
        assert plain["copy"] == plain["text"] and plain["passage_start"] == 0
        assert await bm25_sources(conn, tword) == ["old1"]
        # the migration and a fresh write agree (fn::amem::titles::bm25_copy)
        await ingest(conn, text, f"The {tword} duct", "new1")
        assert [r["copy"] for r in await copies(conn, "new1")] == [r["copy"] for r in rows]
    finally:
        await drop(conn, target)
        await close_quietly(conn)


async def test_the_batch_path_stores_a_new_title_of_unchanged_text_too(db):
    """fn::amem::ingest::batch (what the client's ingest sends) agrees with documents::ingest."""
    old, new = word(), word()
    text = f"Pressure drop along a {word()} pipe bend. " * 30

    async def batch(title: str) -> dict:
        doc = {"text": text, "mime_type": "text/plain", "source": "batch-t1", "scopes": ["org/t"], "title": title}
        prepared = await call(db, "fn::amem::documents::prepare", doc)
        (out,) = await call(db, "fn::amem::ingest::batch", [{"doc": doc, "keywords": prepared["keywords"]}])
        return out

    assert (await batch(f"The {old} bend"))["status"] == "added"
    out = await batch(f"The {new} bend")
    assert out["status"] == "unchanged" and out["document"]["title"] == f"The {new} bend"
    assert all(r["copy"] == f"The {new} bend\n\n{r['text']}" for r in await copies(db, "batch-t1"))
    assert await bm25_sources(db, old) == [] and await bm25_sources(db, new) == ["batch-t1"]
