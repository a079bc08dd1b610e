"""The BM25 champion lists over the memory copies (issue 24 item 1; surql/315_bm25_lists,
migrations/0021) on the real engine: recall's BM25 over memory passages and attribute
renderings reads the lists once a build covers them.

The reference is the engine's own statement (`fn::amem::bm25::engine_<table>`, what recall
ran before any build). Where the lists are complete the leg ranks and scores as it does,
with and without a lens; rows written since are found; a forgotten passage or a superseded
value stops counting; `forget --purge` leaves no list entry behind.
"""

from __future__ import annotations

import pytest
from helpers import attr, hash_memory, own_db  # noqa: F401 (a fixture)

from amem_db import bm25lists
from amem_db.db import call

WORDS = ["kayak", "paddle", "river", "rapids", "canoe", "portage", "eddy", "current", "helmet", "spray"]
QUERIES = ["kayak river", "rapids eddy canoe", "portage helmet spray paddle", "current", "kayak kayak rapids", "zebra nothing"]


def note(i: int) -> str:
    chosen = [w for j, w in enumerate(WORDS) if (i + j) % (j + 2) == 0]
    extra = " ".join(WORDS[i % len(WORDS)] for _ in range(i % 3))
    return f"Trip note {i}: " + " ".join(chosen) + (". " + extra if extra else ".") + " The day was calm."


async def candidates(conn, table: str, q: str, *, lists: bool, lens=None) -> list[tuple[str, float]]:
    """Recall's BM25 candidates of one memory table for the query: (copy text, raw BM25), best first."""
    fn = f"fn::amem::bm25::leg_{table}($t, $o.f, $amem_bm25, 256)" if lists else f"fn::amem::bm25::engine_{table}($t, $o.f, 256)"
    rows = (await conn.query(
        "LET $t = fn::amem::query::terms($q).text; LET $o = fn::amem::recall::options($q, NONE, $opts);"
        f"RETURN ({fn}).map(|$r| [(SELECT VALUE text FROM ONLY type::record($tb, record::id($r.id))), $r.score]);",
        {"q": q, "opts": {"mode": "bm25", **({"lens": lens} if lens else {})}, "tb": f"{table}_fts"}))[-1]
    return [(t, s) for t, s in rows]


def same_ranking(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    """``a`` (the lists) ranks and scores as ``b`` (the engine), less the engine's score-0
    rows (words in more than half the rows: the lists hold no zero impact)."""
    b = [(t, s) for t, s in b if s > 0]
    assert [t for t, _ in a] == [t for t, _ in b]
    for (_, x), (_, y) in zip(a, b):
        assert x == pytest.approx(y, rel=1e-6)


@pytest.fixture(scope="module")
async def mem(db):
    m = hash_memory(db)
    for i in range(40):
        await m.facts.write({"text": note(i), "scopes": ["trips/north" if i % 2 else "trips/south"], "session_id": f"s{i % 4}"})
    for i in range(12):
        await m.facts.write({"triples": [attr(f"Guide {i}", "favourite_river", f"{WORDS[i % 10]} {WORDS[(i + 3) % 10]} river")]})
    m.before = {(t, q): await candidates(db, t, q, lists=False) for t in ("memory_chunk", "attribute") for q in QUERIES}
    m.build = await bm25lists.build(db)
    return m


async def test_complete_lists_rank_and_score_as_the_engine(mem):
    assert mem.build["rows"]["memory_chunk_fts"] == 40 and mem.build["rows"]["attribute_fts"] == 12
    (tables,) = await mem.conn.query("RETURN object::keys($amem_bm25.tables)")
    assert {"memory_chunk_fts", "attribute_fts"} <= set(tables)
    for (table, q), want in mem.before.items():
        same_ranking(await candidates(mem.conn, table, q, lists=True), want)
    # under a lens the candidates are tested against it, and still rank as the engine
    for q in QUERIES[:3]:
        same_ranking(await candidates(mem.conn, "memory_chunk", q, lists=True, lens=[["trips/north"]]),
                     await candidates(mem.conn, "memory_chunk", q, lists=False, lens=[["trips/north"]]))


async def test_memory_passages_are_not_length_normalised(mem):
    """Memory passages score without length normalisation (BM25 b 0, amem_db/constants.py
    BM25_PARAMS; issue 26): a one-turn passage and a long one that say a word once score the
    same for it, in the engine's statement and in the lists (published with the table's k1
    and b); attribute renderings (and document passages) keep the engine's 1.2 / 0.75, where
    the shorter one wins."""
    assert await call(mem.conn, "fn::amem::bm25::params", "memory_chunk_fts") == {"k1": 1.2, "b": 0.0}
    assert await call(mem.conn, "fn::amem::bm25::params", "chunk_fts") == {"k1": 1.2, "b": 0.75}
    (published,) = await mem.conn.query("RETURN $amem_bm25.tables")
    assert published["memory_chunk_fts"]["b"] == 0.0 and published["attribute_fts"]["b"] == 0.75
    (scores,) = await mem.conn.query(
        "RETURN (SELECT VALUE search::score(1) FROM memory_chunk_fts WHERE text @1@ 'calm').map(|$s| math::fixed($s, 9))")
    assert len(scores) == 40 and len(set(scores)) == 1  # "The day was calm." in notes of 3 to 12 words
    res = await mem.conn.query(
        "CREATE attribute_fts:short SET text = 'calm water', entity = entity:x; CREATE attribute_fts:long SET entity = entity:x,"
        " text = 'calm water on a long and winding river today';"
        "RETURN (SELECT record::id(id) AS id, search::score(1) AS s FROM attribute_fts WHERE text @1@ 'calm' ORDER BY s DESC).id;"
        "DELETE attribute_fts:short, attribute_fts:long;")
    assert res[2] == ["short", "long"]


async def test_recall_finds_memory_through_the_lists(mem):
    r = await mem.recall("kayak rapids", mode="bm25", k=5, include=["passages"])
    assert r.hits and all("kayak" in h.text or "rapids" in h.text for h in r.hits)
    assert [h.text for h in r.hits] == [t for t, _ in (await candidates(mem.conn, "memory_chunk", "kayak rapids", lists=True))[:5]]


async def test_rows_written_after_a_build_are_found(mem):
    await mem.facts.write({"text": "A late trip note about a whitewater slalom.", "scopes": ["trips/north"]})
    await mem.facts.write({"triples": [attr("Guide Late", "favourite_river", "slalom canal")]})
    (recent,) = await mem.conn.query("SELECT VALUE text FROM memory_chunk_fts_recent")
    assert recent == ["A late trip note about a whitewater slalom."]
    assert [t for t, _ in await candidates(mem.conn, "memory_chunk", "slalom", lists=True)] == ["A late trip note about a whitewater slalom."]
    assert [t for t, _ in await candidates(mem.conn, "attribute", "slalom", lists=True)] == [
        t for t, _ in await candidates(mem.conn, "attribute", "slalom", lists=False)]


async def test_a_forgotten_passage_and_a_superseded_value_stop_counting(mem):
    await bm25lists.build(mem.conn)
    (pid,) = await mem.conn.query("RETURN (SELECT VALUE id FROM memory_chunk WHERE text CONTAINS 'Trip note 7:')[0]")
    assert any(t.startswith("Trip note 7:") for t, _ in await candidates(mem.conn, "memory_chunk", "rapids current", lists=True))
    await mem.forget([str(pid)])
    got = await candidates(mem.conn, "memory_chunk", "rapids current", lists=True)
    assert got and not any(t.startswith("Trip note 7:") for t, _ in got)
    same_ranking(got, await candidates(mem.conn, "memory_chunk", "rapids current", lists=False))
    # a new value supersedes Guide 3's: the old rendering no longer counts, the new one does
    await mem.facts.write({"triples": [attr("Guide 3", "favourite_river", "quiet lagoon")]})
    got = [t for t, _ in await candidates(mem.conn, "attribute", "lagoon portage", lists=True)]
    want = [t for t, _ in await candidates(mem.conn, "attribute", "lagoon portage", lists=False)]
    assert got == want and any("lagoon" in t for t in got)


async def test_forget_purge_leaves_no_list_entry_behind(mem):
    await mem.facts.write({"text": "Private note: the secret put-in is below the weir.", "scopes": ["trips/south"]})
    await bm25lists.build(mem.conn)
    (pid,) = await mem.conn.query("RETURN (SELECT VALUE id FROM memory_chunk WHERE text CONTAINS 'secret put-in')[0]")

    async def entries() -> int:
        (n,) = await mem.conn.query("RETURN count(SELECT VALUE id FROM bm25_list WHERE $k IN top.c)", {"k": pid.id})
        return n

    assert await entries() > 0  # in the owner list and its scope's lists, one per token
    res = await mem.forget([str(pid)], purge=True)
    assert res.purged
    assert await entries() == 0
    for table in ("memory_chunk_fts", "memory_chunk_fts_recent"):
        (left,) = await mem.conn.query(f"SELECT VALUE text FROM {table} WHERE text CONTAINS 'secret put-in'")
        assert left == []
    assert await candidates(mem.conn, "memory_chunk", "secret weir", lists=True) == []


async def test_scrub_takes_only_a_list_table(mem):
    from amem_db.errors import InvalidInput

    with pytest.raises(InvalidInput, match="scrub takes one of"):
        await call(mem.conn, "fn::amem::bm25::scrub", "chunk", "k", "text", [])


async def test_a_table_empty_at_the_build_gets_no_lists_and_its_writes_no_recent_copy(own_db):
    """Documents listed, memory still empty (a store that ingested first): the build leaves the
    memory tables out, so a later memory write enters one full-text index, not also the recent
    copy (docs/ENGINE-ISSUES.md #41), recall's BM25 finds it through the engine's statement,
    and the next build lists it."""
    m = hash_memory(own_db)
    for i in range(6):
        await m.documents.ingest_text(f"Field guide {i}: {note(i)}", source=f"guide-{i}", embed=False)
    await bm25lists.build(own_db)
    (listed,) = await own_db.query("RETURN object::keys($amem_bm25.tables)")
    assert listed == ["chunk_fts"]
    await m.facts.write({"text": "A passage about a whitewater slalom.", "session_id": "s1"})
    await m.facts.write({"triples": [attr("Guide Late", "favourite_river", "slalom canal")]})
    recent = (await own_db.query(
        "RETURN [count(SELECT id FROM memory_chunk_fts_recent), count(SELECT id FROM attribute_fts_recent), count(SELECT id FROM memory_chunk_fts)]"))
    assert recent == [[0, 0, 1]]
    r = await m.recall("slalom", mode="bm25", k=5, include=["passages"])
    assert [h.text for h in r.hits] == ["A passage about a whitewater slalom."]
    for i in range(6):  # slalom then sits in fewer than half the passages (idf > 0)
        await m.facts.write({"text": note(i), "session_id": "s2"})
    await bm25lists.build(own_db)
    (listed,) = await own_db.query("RETURN object::keys($amem_bm25.tables)")
    assert sorted(listed) == ["attribute_fts", "chunk_fts", "memory_chunk_fts"]
    await m.facts.write({"text": "A second slalom passage, after the lists.", "session_id": "s1"})
    (recent,) = await own_db.query("SELECT VALUE text FROM memory_chunk_fts_recent")
    assert recent == ["A second slalom passage, after the lists."]
    assert [t for t, _ in await candidates(own_db, "memory_chunk", "slalom", lists=True)] == [
        t for t, _ in await candidates(own_db, "memory_chunk", "slalom", lists=False)]


async def test_a_passage_copy_carries_its_filter_fields_on_create_and_update(own_db):
    """The BM25 copy of a memory passage (surql/040) holds the fields its leg filters on, as
    written by a batch and after an update."""
    m = hash_memory(own_db)
    fields = "text, session_id, role, forgotten_at, labels, scopes, geometry"
    await m.facts.write_many([{"text": f"Batch note {i} about a canoe.", "session_id": "s9", "role": "user",
                               "labels": ["trip"], "scopes": ["trips/north"]} for i in range(3)])
    (rows,) = await own_db.query(f"SELECT record::id(id) AS k, {fields} FROM memory_chunk ORDER BY k")
    (copies,) = await own_db.query(f"SELECT record::id(id) AS k, {fields} FROM memory_chunk_fts ORDER BY k")
    assert len(rows) == 3 and copies == rows
    await own_db.query("UPDATE memory_chunk SET labels = ['trip', 'kept'] WHERE text CONTAINS 'note 1'")
    (copy,) = await own_db.query("SELECT VALUE labels FROM memory_chunk_fts WHERE text CONTAINS 'note 1'")
    assert copy == [["trip", "kept"]]
