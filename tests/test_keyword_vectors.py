"""Keyword vectors on request (issue 25, docs/RAKE.md "Keyword vectors"): ingest stores
keyword nodes without vectors by default, one node per normalised keyword shared by
every document that has it; amem_db/keyword_vectors.py embeds each distinct keyword
that has no vector once; semantic keyword search answers over the embedded ones."""

from __future__ import annotations

import pytest
from helpers import HASH_SPEC, mem  # noqa: F401

from amem_db.db import call
from amem_db.embedding import get_embedder
from amem_db.errors import EmbeddingMismatch, InvalidInput, NotFound
from amem_db.keyword_vectors import embed_keywords

# both texts yield "return policy" among their RAKE keywords; each has keywords of its own
A = "Customers read the return policy. Refund requests need receipts. Gift cards are final."
B = "Customers asked about the return policy and gift cards."
C = "Read the return policy. Support desk questions go by email."


class Counting:
    """The hash embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        self.inner = get_embedder(HASH_SPEC)
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += texts
        return self.inner.embed_documents(texts)


async def keyword_rows(conn) -> dict[str, bool]:
    (rows,) = await conn.query("SELECT normalised, embedding != NONE AS has FROM keyword")
    return {r["normalised"]: r["has"] for r in rows}


async def test_default_ingest_stores_shared_nodes_without_vectors_and_embeds_each_once(mem):
    a = (await mem.documents.ingest_text(A, source="a")).document
    b = (await mem.documents.ingest_text(B, source="b")).document
    shared = {k.normalised for k in a.keywords} & {k.normalised for k in b.keywords}
    assert "return policy" in shared
    rows = await keyword_rows(mem.conn)
    assert set(rows) == {k.normalised for k in a.keywords} | {k.normalised for k in b.keywords}
    assert not any(rows.values())  # no vector written at ingest
    detail = await mem.documents.keywords.get("RETURN POLICY")
    assert detail.document_count == 2  # one node, two edges
    assert (await mem.documents.keywords.search("return policy", k=5)).results == []  # nothing embedded yet

    counting = Counting()
    report = await embed_keywords(mem.conn, counting, page=2)  # pages of 2: the key-range paging walks them all
    assert report.embedded == len(rows)
    assert sorted(counting.texts) == sorted(n.upper() for n in rows)  # one text per distinct keyword
    assert all((await keyword_rows(mem.conn)).values())
    found = await mem.documents.keywords.search("RETURN POLICY", k=3)
    assert found.results[0].normalised == "return policy" and found.results[0].score == pytest.approx(1.0, abs=1e-4)
    assert (await embed_keywords(mem.conn, counting)).embedded == 0  # a second pass has nothing to do

    # a new document: only its new keywords need vectors
    c = (await mem.documents.ingest_text(C, source="c")).document
    new = {k.normalised for k in c.keywords} - set(rows)
    counting.texts.clear()
    assert (await embed_keywords(mem.conn, counting)).embedded == len(new)
    assert sorted(counting.texts) == sorted(n.upper() for n in new)

    # deleting documents keeps a keyword another document still has (with its vector), drops orphans
    await mem.documents.delete(a.id)
    after = await keyword_rows(mem.conn)
    assert after["return policy"] is True
    only_a = {k.normalised for k in a.keywords} - {k.normalised for k in b.keywords} - {k.normalised for k in c.keywords}
    assert only_a and not only_a & set(after)
    assert (await mem.documents.keywords.get("return policy")).document_count == 2
    await mem.documents.delete(b.id)
    await mem.documents.delete(c.id)
    assert await keyword_rows(mem.conn) == {}
    with pytest.raises(NotFound):
        await mem.documents.keywords.get("return policy")


async def test_set_vectors_checks_and_keeps_the_first_vector(mem):
    doc = (await mem.documents.ingest_text(A, source="sv")).document
    name = mem.embedder.name
    n = doc.keywords[0].normalised
    with pytest.raises(EmbeddingMismatch, match="not 384 finite numbers"):
        await call(mem.conn, "fn::amem::keywords::set_vectors", name, [{"normalised": n, "embedding": [0.1] * 3}])
    with pytest.raises(EmbeddingMismatch, match="refusing vectors from other-model"):
        await call(mem.conn, "fn::amem::keywords::set_vectors", "other-model", [{"normalised": n, "embedding": [0.1] * 384}])
    with pytest.raises(InvalidInput, match="each row must be"):
        await call(mem.conn, "fn::amem::keywords::set_vectors", name, [{"embedding": [0.1] * 384}])
    with pytest.raises(InvalidInput, match="limit must be"):
        await call(mem.conn, "fn::amem::keywords::unembedded", None, 0)
    assert not any((await keyword_rows(mem.conn)).values())  # a refused call wrote nothing

    first, second = [0.1] * 384, [0.2] * 384
    await call(mem.conn, "fn::amem::keywords::set_vectors", name, [{"normalised": n, "embedding": first},
                                                                   {"normalised": "no such keyword", "embedding": second}])
    await call(mem.conn, "fn::amem::keywords::set_vectors", name, [{"normalised": n, "embedding": second}])
    (stored,) = await mem.conn.query("SELECT VALUE embedding FROM ONLY type::record('keyword', $n)", {"n": n})
    assert stored == pytest.approx(first)  # first writer wins
    (gone,) = await mem.conn.query("RETURN count(SELECT id FROM keyword:⟨no such keyword⟩)")
    assert gone == 0  # set_vectors creates no keyword
    await mem.documents.delete(doc.id)


async def test_keyword_vectors_at_ingest_when_asked(mem):
    from amem_db.ingest import Item, ingest_items

    report = await ingest_items(mem.conn, mem.embedder, [Item("k", {"text": A, "source": "kv"})], keyword_vectors=True)
    (doc,) = [r.document for r in report.results]
    assert report.embedded_texts == doc.chunk_count + len(doc.keywords)
    rows = await keyword_rows(mem.conn)
    assert rows and all(rows[k.normalised] for k in doc.keywords)
    # the vectors are checked as before: one per keyword or none
    prepared = await call(mem.conn, "fn::amem::documents::prepare", {"text": B, "source": "kv2"})
    vectors = {"model": mem.embedder.name, "chunks": [[0.1] * 384 for _ in prepared["chunks"]], "audio": [], "sections": [],
               "keywords": [[0.1] * 384]}
    with pytest.raises(InvalidInput, match="vectors.keywords must hold .* or none"):
        await call(mem.conn, "fn::amem::documents::ingest", {"text": B, "source": "kv2"}, vectors)
    await mem.documents.delete(doc.id)


async def test_keyword_text_has_no_full_text_index(mem):
    # migrations/0019: nothing read it; keywords are read by key
    (info,) = await mem.conn.query("INFO FOR TABLE keyword")
    assert "keyword_text" not in info["indexes"] and "keyword_embedding" in info["indexes"]
