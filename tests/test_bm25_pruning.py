"""BM25 leg pruning by document frequency (issue 14 item 3; surql/310_termstats,
amem_db/termstats.py, migrations/0016) on the real engine.

A small corpus where the document frequency of each word is known by construction:
"apple" in every note, "banana" in 15, "kiwi" in one, the identifier "ZX81" in every note,
and one product note holding the spec's MLWK3LL/A. The statistics are counted by
``maintain`` (not by the writing transaction), so the tests also check when they are
stale and that a count brings them back to what the full-text index itself says.
"""

from __future__ import annotations

import pytest
import pytest_asyncio
from devserver_fixture import dev_server, tenants  # noqa: F401
from helpers import hash_memory

from amem_db import termstats
from amem_db.client import Memory
from amem_db.constants import DEFAULT_BM25_MAX_DF
from amem_db.db import call
from amem_db.embedding import get_embedder
from amem_db.errors import InvalidInput, PermissionDenied
from amem_db.maintain import maintain

NOTES = 20
FILLER = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
          "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform"]
PRODUCT = "The MLWK3LL/A laptop ships with a 70W charger and a braided cable."


def note(i: int, kiwi: bool = False) -> str:
    return (f"Note {FILLER[i]}: apple orchard report. Part ZX81 inside. " + ("Banana split. " if i < 15 else "")
            + ("Kiwi harvest." if kiwi else "")).strip()


async def bm25(mem: Memory, q: str, **opts) -> dict:
    return await call(mem.conn, "fn::amem::documents::query", q, None, {"mode": "bm25", "k": 50, **opts})


def pruned(resp: dict) -> dict | None:
    return resp["trace"]["legs"]["bm25"].get("pruned")


async def word_df(mem: Memory, word: str) -> int:
    return await call(mem.conn, "fn::amem::termstats::word_df", word)


async def index_df(mem: Memory, word: str) -> int:
    """The reference: how many copies the full-text index itself matches for a one-token word."""
    (n,) = await mem.conn.query("RETURN (SELECT count() FROM chunk_fts WHERE text @1@ $w GROUP ALL)[0].count ?? 0", {"w": word})
    return n


@pytest.fixture(scope="module")
async def mem(db):
    m = hash_memory(db)
    for i in range(NOTES):
        await m.documents.ingest_text(note(i, kiwi=i == 3), source=f"note-{i}", embed=False)
    await m.documents.ingest_text(PRODUCT, source="product", embed=False)
    # before any count: nothing to prune with, and the trace says why
    m.before_count = pruned(await bm25(m, "apple kiwi", bm25MaxDf=0.5))
    m.first_maintain = await maintain(db)
    return m


async def test_no_statistics_yet_prunes_nothing_and_says_why(mem):
    assert mem.before_count["dropped"] == [] and "amem-db maintain" in mem.before_count["reason"]
    # an ingest leaves the counting to maintain; the first maintain counted every copy
    assert mem.first_maintain.term_stats["rows"]["chunk_fts"] == NOTES + 1


async def test_a_common_word_is_dropped_and_the_trace_says_so(mem):
    resp = await bm25(mem, "apple kiwi", bm25MaxDf=0.5)
    p = pruned(resp)
    assert p["dropped"] == [{"term": "apple", "df": NOTES}] and p["passages"] == NOTES + 1 and p["maxDf"] == 0.5
    assert resp["trace"]["legs"]["bm25"]["terms"] == ["apple", "kiwi"]  # what the query asked for
    assert [h["chunk"]["text"] for h in resp["results"]] == [note(3, kiwi=True)]  # only kiwi was searched
    off = await bm25(mem, "apple kiwi", bm25MaxDf=False)
    assert pruned(off) is None and len(off["results"]) == NOTES  # every apple note
    assert off["results"][0]["chunk"]["text"] == note(3, kiwi=True)


async def test_the_rarest_word_stays_when_every_word_is_common(mem):
    p = pruned(await bm25(mem, "apple banana", bm25MaxDf=0.5))
    assert p["dropped"] == [{"term": "apple", "df": NOTES}]  # banana (15 of 21) > 0.5 too, but the rarest
    resp = await bm25(mem, "apple banana orchard", bm25MaxDf=0.01)
    assert {d["term"] for d in pruned(resp)["dropped"]} == {"apple", "orchard"}
    assert len(resp["results"]) == 15 and all("Banana" in h["chunk"]["text"] for h in resp["results"])
    # a one-word query is never pruned, however common
    assert pruned(await bm25(mem, "apple", bm25MaxDf=0.01)) is None


async def test_identifier_words_are_never_dropped(mem):
    p = pruned(await bm25(mem, "ZX81 kiwi", bm25MaxDf=0.5))
    assert p["dropped"] == []  # ZX81 is in every note, and an identifier
    resp = await bm25(mem, "MLWK3LL/A apple", bm25MaxDf=0.01)
    assert pruned(resp)["dropped"] == [{"term": "apple", "df": NOTES}]
    assert [h["chunk"]["text"] for h in resp["results"]] == [PRODUCT]


async def test_the_off_switch_and_bad_values(mem):
    for off in (False, 1.0, 1):
        resp = await bm25(mem, "apple kiwi", bm25MaxDf=off)
        assert pruned(resp) is None and len(resp["results"]) == NOTES
    default = pruned(await bm25(mem, "apple kiwi"))
    assert (default is None) == (DEFAULT_BM25_MAX_DF >= 1)
    assert (await mem.documents.query("apple kiwi", mode="bm25", bm25_max_df=0.5)).results[0].chunk.text == note(3, kiwi=True)
    for bad in (0, -0.1, 1.5, "0.5", True, [0.5]):
        with pytest.raises(InvalidInput, match="bm25MaxDf"):
            await bm25(mem, "apple kiwi", bm25MaxDf=bad)


async def test_statistics_follow_ingest_replace_and_delete_after_maintain(mem):
    for w in ("apple", "banana", "kiwi", "orchard", "laptop"):
        assert await word_df(mem, w) == await index_df(mem, w), w
    assert await word_df(mem, "kiwi") == 1
    # replace note 3 without kiwi: stale until maintain counts (the documented trade-off)
    await mem.documents.ingest_text(note(3), source="note-3", embed=False)
    assert await index_df(mem, "kiwi") == 0 and await word_df(mem, "kiwi") == 1
    assert (await maintain(mem.conn)).term_stats is None  # same row count: not due
    assert (await maintain(mem.conn, auto=False)).term_stats is not None  # a full pass counts
    assert await word_df(mem, "kiwi") == 0
    # three kiwi notes more: the row count drifted past the threshold, so an auto pass counts
    for i in range(3):
        await mem.documents.ingest_text(note(i, kiwi=True) + f" extra {FILLER[i + 10]}", source=f"kiwi-{i}", embed=False)
    assert (await maintain(mem.conn)).term_stats is not None
    assert await word_df(mem, "kiwi") == 3
    doc = (await mem.documents.list(limit=100)).documents
    await mem.documents.delete(next(d.id for d in doc if d.source == "kiwi-0"))
    await maintain(mem.conn, auto=False)
    for w in ("apple", "banana", "kiwi", "orchard", "extra"):
        assert await word_df(mem, w) == await index_df(mem, w), w
    status = await termstats.status(mem.conn)
    assert status["tables"]["chunk_fts"]["rows"] == status["tables"]["chunk_fts"]["counted"] == NOTES + 3


async def test_a_count_in_small_batches_pages_through_every_row(mem):
    await termstats.count(mem.conn, batch=4)  # 23 rows: six pages, the last one short
    for w in ("apple", "banana", "kiwi", "laptop", "extra"):
        assert await word_df(mem, w) == await index_df(mem, w), w


async def test_a_count_being_written_is_invisible_until_published(mem):
    before = {w: await word_df(mem, w) for w in ("apple", "kiwi")}
    gen = (await termstats.status(mem.conn))["gen"] + 1
    await call(mem.conn, "fn::amem::termstats::store", [{"id": ["chunk_fts", termstats.token_key("kiwi")], "df": 999}], gen)
    assert {w: await word_df(mem, w) for w in ("apple", "kiwi")} == before  # readers keep the published count
    await call(mem.conn, "fn::amem::termstats::publish", gen, {"audio_chunk_fts": 0, "chunk_fts": 1000, "memory_chunk_fts": 0, "attribute_fts": 0})
    # now count gen: kiwi 999, and apple, not written in gen, counts 0
    assert await word_df(mem, "kiwi") == 999 and await word_df(mem, "apple") == 0
    await termstats.count(mem.conn)  # and a real count restores the truth
    assert {w: await word_df(mem, w) for w in ("apple", "kiwi")} == before


async def test_stored_keys_are_token_hashes_never_tokens(mem):
    (rows,) = await mem.conn.query("SELECT VALUE id FROM term_stat")
    keys = {r.id[1] for r in rows}
    assert termstats.token_key("appl") in keys  # the stem of apple, hashed the same in Python and SurrealQL
    assert not keys & {"apple", "appl", "banana", "kiwi", "orchard"}
    with pytest.raises(InvalidInput, match="term statistics rows"):
        await call(mem.conn, "fn::amem::termstats::store", [{"id": ["chunk", "x"], "df": 1}], 1)
    with pytest.raises(InvalidInput, match="publish"):
        await call(mem.conn, "fn::amem::termstats::publish", 1, {"chunk_fts": 1})


# --- record users (dev server): what a credential may read and write ------------------------------

GRANTS = {"tenant-a": dict(read=[], write=["org/a"]), "tenant-b": dict(read=[], write=["org/b"])}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(dev_server):
    async with tenants(dev_server, "prune", GRANTS) as t:
        a = Memory(t.conns["tenant-a"], embedder=get_embedder("hash:384"))
        for i in range(6):
            await a.documents.ingest_text(f"secret orchard {FILLER[i]} apple", source=f"a-{i}", scopes=["org/a"], embed=False)
        await termstats.count(t.root)
        yield t


@pytest.mark.asyncio(loop_scope="module")
async def test_a_record_user_reads_counts_of_every_scope_but_writes_nothing(world):
    b = world.conns["tenant-b"]
    b_mem = Memory(b, embedder=get_embedder("hash:384"))
    await b_mem.documents.ingest_text("apple pie recipe", source="b-0", scopes=["org/b"], embed=False)
    # B sees none of A's passages, but the statistics are per index, for all scopes together:
    # B's query prunes apple with A's counts (the same count its BM25 scores give it, finding 10)
    resp = await call(b, "fn::amem::documents::query", "apple recipe", None, {"mode": "bm25", "bm25MaxDf": 0.5})
    assert [h["chunk"]["text"] for h in resp["results"]] == ["apple pie recipe"]
    assert resp["trace"]["legs"]["bm25"]["pruned"]["dropped"] == [{"term": "apple", "df": 6}]
    (rows,) = await b.query("SELECT * FROM term_stat")
    assert rows and all(len(r["id"].id[1]) == 16 for r in rows)  # hashes, no token
    before = await world.root.query("SELECT * FROM term_stat ORDER BY id")
    for stmt in ("CREATE term_stat:x SET df = 1", "UPDATE term_stat SET df = 99", "DELETE term_stat"):
        await b.query(stmt)
    assert await world.root.query("SELECT * FROM term_stat ORDER BY id") == before
    for fn, args in (("fn::amem::termstats::store", [[], 1]), ("fn::amem::termstats::tokens_chunk_fts", [None, 10]),
                     ("fn::amem::termstats::publish", [1, {"audio_chunk_fts": 0, "chunk_fts": 0, "memory_chunk_fts": 0, "attribute_fts": 0}])):
        with pytest.raises(PermissionDenied):
            await call(b, fn, *args)
