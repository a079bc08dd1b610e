"""The BM25 leg over champion lists (issue 24; surql/315_bm25_lists, amem_db/bm25lists.py,
migrations/0018) on the real engine.

The reference is the engine's own full-text statement (`fn::amem::query::bm25_engine_chunk`,
what the leg ran before any build): where every list is complete the leg must rank and
score as it does; rows written after a build must be found; a deleted passage never comes
back; a build that dies leaves the published lists in use; and a record user reads only the
lists of its own grants.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
import pytest_asyncio
from devserver_fixture import dev_server, tenants  # noqa: F401

from amem_db import bm25lists
from amem_db.client import Memory
from amem_db.db import call
from amem_db.embedding import get_embedder
from amem_db.errors import InvalidInput, PermissionDenied

WORDS = ["orchard", "harvest", "pruning", "grafting", "cider", "blossom", "frost", "soil", "irrigation", "pollen"]
PRODUCT = "The MLWK3LL/A laptop ships with a 70W charger and a braided cable."
QUERIES = ["orchard harvest", "cider frost soil", "pollen blossom pruning grafting", "irrigation", "frost frost orchard",
           "MLWK3LL/A charger", "nothing matches zebra"]


def note(i: int) -> str:
    # a known mix: word j appears in the notes where (i + j) % (j + 2) == 0, repeated for some
    chosen = [w for j, w in enumerate(WORDS) if (i + j) % (j + 2) == 0]
    extra = " ".join(WORDS[i % len(WORDS)] for _ in range(i % 3))
    return f"Field note {i}: " + " ".join(chosen) + (". " + extra if extra else ".") + " Weather was mild."


async def bm25(conn, q: str) -> list[tuple[str, float]]:
    resp = await call(conn, "fn::amem::documents::query", q, None, {"mode": "bm25", "k": 50, "expandContext": False})
    return [(h["chunk"]["text"], h["score"]) for h in resp["results"]]


async def candidates(conn, fn: str, q: str) -> list[tuple[str, float]]:
    """A BM25 function's candidates for the query's terms, unfiltered: (text, raw BM25) best first."""
    rows = (await conn.query(
        "LET $t = fn::amem::query::terms($q).text;"
        f"RETURN ({fn}($t, fn::amem::query::legs_filter({{}}, NONE))).map(|$r| [$r.id.text, $r.score]);",
        {"q": q}))[-1]
    return [(t, s) for t, s in rows]


async def engine(conn, q: str) -> list[tuple[str, float]]:
    """The engine's statement, called directly (the reference)."""
    return await candidates(conn, "fn::amem::query::bm25_engine_chunk", q)


async def leg(conn, q: str) -> list[tuple[str, float]]:
    """The leg as the query runs it (the lists once a build is published)."""
    return await candidates(conn, "fn::amem::query::bm25_chunk", q)


@pytest.fixture(scope="module")
async def mem(db):
    m = Memory(db, embedder=get_embedder("hash:384"))
    for i in range(40):
        await m.documents.ingest_text(note(i), source=f"note-{i}", embed=False)
    await m.documents.ingest_text(PRODUCT, source="product", embed=False)
    m.before = {q: await engine(db, q) for q in QUERIES}
    m.build = await bm25lists.build(db)
    return m


def same_ranking(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    """``a`` (the leg) ranks and scores as ``b`` (the engine). The engine also returns, last,
    rows whose only query words sit in more than half the passages, with score 0 (its idf
    floor); the lists hold no zero impact, so the leg leaves those out."""
    b = [(t, s) for t, s in b if s > 0]
    assert [t for t, _ in a] == [t for t, _ in b]
    for (_, x), (_, y) in zip(a, b):
        assert x == pytest.approx(y, rel=1e-6)


async def test_complete_lists_rank_and_score_as_the_engine(mem):
    assert mem.build["gen"] == 1 and mem.build["rows"]["chunk_fts"] == 41
    (st,) = await mem.conn.query("RETURN $amem_bm25")
    assert st["gen"] == 1
    for q in QUERIES:
        got = await leg(mem.conn, q)
        same_ranking(got, mem.before[q])
    # the engine still answers the same: the reference did not move under the build
    assert await engine(mem.conn, "orchard harvest") == mem.before["orchard harvest"]


async def test_documents_query_uses_the_lists_and_identifiers_stay_exact(mem):
    hits = await bm25(mem.conn, "MLWK3LL/A")
    assert hits and hits[0][0] == PRODUCT
    assert await bm25(mem.conn, "nothing matches zebra") == []


async def test_rows_written_after_a_build_are_found_and_scored_with_it(mem):
    await mem.documents.ingest_text("A late note on orchard cider and quince.", source="late", embed=False)
    (recent,) = await mem.conn.query("SELECT VALUE text FROM chunk_fts_recent")
    assert recent == ["A late note on orchard cider and quince."]
    hits = await leg(mem.conn, "quince")
    assert [t for t, _ in hits] == ["A late note on orchard cider and quince."]
    # scored with the build's statistics, so it ranks among the listed rows on shared words
    mixed = [t for t, _ in await leg(mem.conn, "orchard cider")]
    assert "A late note on orchard cider and quince." in mixed and len(mixed) > 1
    # a rebuild takes it into the lists and empties the recent copy
    again = await bm25lists.build(mem.conn)
    assert again["gen"] == 2
    (recent,) = await mem.conn.query("SELECT VALUE text FROM chunk_fts_recent")
    assert recent == []
    (old,) = await mem.conn.query("RETURN count(SELECT VALUE id FROM bm25_list:[1]..[2])")
    assert old == 0  # the previous build's lists are gone
    assert [t for t, _ in await leg(mem.conn, "quince")] == ["A late note on orchard cider and quince."]
    same_ranking(await leg(mem.conn, "orchard cider"), await engine(mem.conn, "orchard cider"))


async def test_a_deleted_passage_never_comes_back(mem):
    res = await mem.documents.ingest_text("Quarantine note: fireblight found.", source="gone", embed=False)
    await bm25lists.build(mem.conn)
    assert [t for t, _ in await leg(mem.conn, "fireblight")] == ["Quarantine note: fireblight found."]
    await mem.documents.delete(res.document.id)
    assert await leg(mem.conn, "fireblight") == []


async def test_a_build_that_dies_leaves_the_published_lists_in_use(mem):
    (pub,) = await mem.conn.query("RETURN $amem_bm25.gen")
    expected = await leg(mem.conn, "orchard harvest")
    begun = await call(mem.conn, "fn::amem::bm25::begin")
    assert begun["gen"] == pub + 1
    # half a build: one list stored, never published
    await call(mem.conn, "fn::amem::bm25::store", begun["gen"], "chunk_fts", [{"list": "", "h": "0" * 16, "top": [{"c": "x", "s": 1.0}]}])
    assert await leg(mem.conn, "orchard harvest") == expected
    # writes meanwhile are kept in the recent copy, so they are found either way
    await mem.documents.ingest_text("Mid-build note about medlar trees.", source="mid", embed=False)
    assert [t for t, _ in await leg(mem.conn, "medlar")] == ["Mid-build note about medlar trees."]
    done = await bm25lists.build(mem.conn)  # the next build reuses the number and drops the remains
    assert done["gen"] == begun["gen"]
    (orphans,) = await mem.conn.query("SELECT VALUE top FROM type::record('bm25_list', [$g, 'chunk_fts', '', $h])",
                                      {"g": done["gen"], "h": "0" * 16})
    assert orphans == []
    assert [t for t, _ in await leg(mem.conn, "medlar")] == ["Mid-build note about medlar trees."]


async def test_truncated_lists_keep_the_best_impacts(mem):
    await bm25lists.build(mem.conn, size=3)
    (tops,) = await mem.conn.query("SELECT VALUE top FROM bm25_list WHERE id[0] = $amem_bm25.gen AND id[2] = ''")
    assert tops and max(len(t) for t in tops) == 3
    for t in tops:
        assert [e["s"] for e in t] == sorted((e["s"] for e in t), reverse=True)
    # a word in more passages than its list holds: the list keeps the engine's three best scores
    full = await engine(mem.conn, "harvest")
    assert len(full) > 3
    got = await leg(mem.conn, "harvest")
    assert [s for _, s in got] == pytest.approx([s for _, s in full][:3], rel=1e-6)
    await bm25lists.build(mem.conn)


async def test_building_is_for_the_operator_and_checks_its_input(mem):
    with pytest.raises(InvalidInput, match="store takes at most 500 lists"):
        await call(mem.conn, "fn::amem::bm25::store", 1, "chunk", [])
    with pytest.raises(InvalidInput, match="publish takes"):
        await call(mem.conn, "fn::amem::bm25::publish", 9, datetime(2026, 1, 1, tzinfo=UTC), {"chunk_fts": {}})
    stats = {"n": 3, "avgdl": 2.0, "statsGen": 1, "k1": 1.2, "b": 0.75}
    with pytest.raises(InvalidInput, match="publish takes"):
        await call(mem.conn, "fn::amem::bm25::publish", 9, datetime(2026, 1, 1, tzinfo=UTC), {"chunk": stats})
    (pub,) = await mem.conn.query("RETURN $amem_bm25.gen")
    with pytest.raises(InvalidInput, match="published one"):
        await call(mem.conn, "fn::amem::bm25::drop_build", pub)


def test_maintain_builds_when_due():
    empty = {"published": None, **{t: {"rows": 0, "recent": 0} for t in bm25lists.TABLES}, "chunk_fts": {"rows": 10, "recent": 0}}
    assert not bm25lists.due(empty)
    big = {**empty, "chunk_fts": {"rows": bm25lists.MIN_ROWS, "recent": 0}}
    assert bm25lists.due(big)
    built = {**big, "published": {"gen": 1, "tables": {"chunk_fts": {"n": bm25lists.MIN_ROWS}}}}
    assert not bm25lists.due(built)
    stale = {**built, "chunk_fts": {"rows": 10_000, "recent": 2_000}}
    assert bm25lists.due(stale)
    # a table the build left out (it was empty) is due once it holds MIN_ROWS rows
    grown = {**built, "memory_chunk_fts": {"rows": bm25lists.MIN_ROWS - 1, "recent": 0}}
    assert not bm25lists.due(grown)
    assert bm25lists.due({**grown, "memory_chunk_fts": {"rows": bm25lists.MIN_ROWS, "recent": 0}})


# --- record users (dev server): a tenant reads only the lists of its grants -----------------

GRANTS = {"tenant-a": dict(read=[], write=["org/a"]), "tenant-b": dict(read=[], write=["org/b"])}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(dev_server):
    async with tenants(dev_server, "lists", GRANTS) as t:
        a = Memory(t.conns["tenant-a"], embedder=get_embedder("hash:384"))
        b = Memory(t.conns["tenant-b"], embedder=get_embedder("hash:384"))
        for i in range(5):
            await a.documents.ingest_text(f"secret orchard {WORDS[i]} plan alpha", source=f"a-{i}", scopes=["org/a"], embed=False)
        for i in range(10):  # filler, so that orchard sits in fewer than half the passages (idf > 0)
            await a.documents.ingest_text(f"weekly report {i} on {WORDS[-1 - i % 3]}", source=f"a-f{i}", scopes=["org/a"], embed=False)
        await b.documents.ingest_text("orchard budget for beta", source="b-0", scopes=["org/b"], embed=False)
        await bm25lists.build(t.root)
        yield t


@pytest.mark.asyncio(loop_scope="module")
async def test_a_tenant_reads_only_its_own_lists_and_passages(world):
    a, b = world.conns["tenant-a"], world.conns["tenant-b"]
    assert [t for t, _ in await bm25(b, "orchard secret")] == ["orchard budget for beta"]
    assert len(await bm25(a, "orchard")) == 5
    (rows,) = await b.query("SELECT * FROM bm25_list")
    assert rows and all(r["scopes"] == ["org/b"] for r in rows)
    assert {e["c"] for r in rows for e in r["top"]} == {k for k in await keys(world.root, "org/b")}
    (owner,) = await a.query("SELECT * FROM bm25_list WHERE id[2] = ''")
    assert owner == []
    # rows written after the build: the recent copy is gated like the passages
    await Memory(a, embedder=get_embedder("hash:384")).documents.ingest_text("orchard late secret", source="a-late", scopes=["org/a"], embed=False)
    (seen,) = await b.query("SELECT * FROM chunk_fts_recent")
    assert seen == []
    assert [t for t, _ in await bm25(b, "late secret orchard")] == ["orchard budget for beta"]
    for stmt in ("CREATE bm25_list:[1, 'chunk_fts', 'org/b', 'x'] SET top = []", "UPDATE bm25_list SET top = []", "DELETE bm25_list"):
        await b.query(stmt)
    (n,) = await world.root.query("RETURN count(SELECT VALUE id FROM bm25_list WHERE array::len(top) > 0)")
    assert n > 0
    for fn, args in (("fn::amem::bm25::begin", []), ("fn::amem::bm25::store", [1, "chunk_fts", []]),
                     ("fn::amem::bm25::rows_chunk_fts", [None, 10])):
        with pytest.raises(PermissionDenied):
            await call(b, fn, *args)


async def keys(root, scope: str) -> list[str]:
    (rows,) = await root.query("SELECT VALUE record::id(id) FROM chunk_fts WHERE scopes CONTAINS $s", {"s": scope})
    return rows


async def test_a_listed_passage_changed_since_the_build_counts_by_its_new_text(mem):
    await bm25lists.build(mem.conn)
    (key,) = await mem.conn.query("RETURN (SELECT VALUE id FROM chunk WHERE text CONTAINS 'Field note 7:')[0]")
    assert "Field note 7: orchard" not in [t for t, _ in await leg(mem.conn, "loquat")]
    await mem.conn.query("UPDATE $k SET text = 'Field note 7: loquat only.'", {"k": key})
    (gone,) = await mem.conn.query("SELECT VALUE record::id(id) FROM chunk_fts_gone")
    assert gone == [key.id]
    assert [t for t, _ in await leg(mem.conn, "loquat")] == ["Field note 7: loquat only."]
    before = [t for t, _ in mem.before["cider frost soil"]]
    now = [t for t, _ in await leg(mem.conn, "cider frost soil")]
    assert not any(t.startswith("Field note 7:") for t in now)
    assert [t for t in before if not t.startswith("Field note 7:")][:3] == now[:3]


async def test_a_row_written_during_a_build_counts_once(mem):
    """A row written after a build began and before its scan reached it is in the lists and in
    the recent copy alike (the next build clears the copy): it must come back once."""
    await mem.documents.ingest_text("A note on damson and orchard frost.", source="during", embed=False)
    await bm25lists.build(mem.conn)
    (listed,) = await mem.conn.query("SELECT VALUE id FROM chunk_fts_recent")
    assert listed == []  # in the lists only; now give it the recent copy a mid-build write leaves
    await mem.conn.query("INSERT INTO chunk_fts_recent (SELECT type::record('chunk_fts_recent', record::id(id)) AS id, text, document,"
                         " mime_type, scopes, geometry, recorded_at, passage_start FROM chunk_fts WHERE text CONTAINS 'damson')")
    hits = [t for t, _ in await leg(mem.conn, "damson")]
    assert hits == ["A note on damson and orchard frost."]


def test_cli_maintain_rebuilds_published_lists_and_says_so(tmp_path):
    """`amem-db maintain` (a full pass) rebuilds lists that exist, and prints what it built."""
    import os
    import subprocess
    import sys

    url = f"surrealkv://{tmp_path}/data"
    env = {**os.environ, "AMEM_EMBEDDER": "hash:384"}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    for i in range(3):
        (tmp_path / f"n{i}.md").write_text(f"# Note {i}\n\nOrchard {WORDS[i]} report number {i}.\n")
    assert run("-m", "amem_db", "--url", url, "migrate").returncode == 0
    assert run("-m", "amem_db", "--url", url, "ingest", str(tmp_path)).returncode == 0
    first = run("-c", "import asyncio, os\n"
                      "from amem_db import bm25lists\n"
                      "from amem_db.connection import Target, open_connection, close_quietly\n"
                      "async def main():\n"
                      f"    c = await open_connection(Target(url={url!r}, ns='amem', db='main'))\n"
                      "    print((await bm25lists.build(c))['gen'])\n"
                      "    await close_quietly(c)\n"
                      "asyncio.run(main()); os._exit(0)")
    assert first.returncode == 0 and first.stdout.strip() == "1", first.stderr
    done = run("-m", "amem_db", "--url", url, "maintain")
    assert done.returncode == 0, done.stderr
    assert re.search(r"built BM25 champion lists: build 2, \d+ lists over \d+ passages", done.stdout), done.stdout
