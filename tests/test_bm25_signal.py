"""Issue 15 finding 10, as docs/SECURITY.md "Shared index statistics (finding 10)" states it:
the full-text statistics are shared by every tenant of a database, so a credential computes,
from the BM25 scores of its own rows alone, how many rows of other tenants contain a word
(exactly, while fewer than half the rows hold it); no row, id or text crosses; a database of
its own removes the channel. Real engine, two credentials over the dev server; the inversion
is scripts/security/measure_bm25_signal.py's (which measures the sizes the docs quote)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest_asyncio
from devserver_fixture import dev_server, tenants  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts" / "security"))
import measure_bm25_signal as signal

GRANTS = {"tenant-a": dict(read=[], write=["org/a"]), "tenant-b": dict(read=[], write=["org/b"])}


async def own_scores(a) -> tuple[float, float, float]:
    """A's probe passage scored for the word, the solo and the pair word, from A's own traces."""
    return tuple([(await signal.probe_scores(a, w))[0] for w in (signal.WORD, signal.SOLO, signal.PAIR)])  # type: ignore[return-value]


async def b_adds_rows_with_the_word(b, first: int, count: int) -> None:
    await signal.store(b, [signal.doc(f"b-{i}", f"{signal.filler(i + 5000, 30)} {signal.WORD}", "org/b")
                           for i in range(first, first + count)])


async def raw_view(a) -> tuple[list[float], int]:
    """A's raw SurrealQL over the full-text copies: the scores it gets and the rows it sees."""
    rows, (count,) = await a.query(
        "SELECT VALUE search::score(1) FROM chunk_fts WHERE text @1@ $w;"
        "SELECT VALUE count() FROM chunk_fts WHERE text @1@ $w GROUP ALL;", {"w": signal.WORD})
    return rows, count


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(dev_server):
    async with tenants(dev_server, "bm25", GRANTS) as t:
        a, b = t.conns["tenant-a"], t.conns["tenant-b"]
        await signal.a_corpus(a)
        await signal.store(b, [signal.doc(f"b-base-{i}", signal.filler(i + 100), "org/b") for i in range(40)])
        yield t


async def test_a_tenant_computes_another_tenants_word_count_from_its_own_scores(world):
    a, b = world.conns["tenant-a"], world.conns["tenant-b"]
    before = await own_scores(a)
    total, n = signal.estimate_count(*before)
    # 20 passages of A, 40 of B, 1 row with the word (A's probe): all read off A's own scores
    assert round(total) == 60 and n is not None and abs(n - 1) < 0.01, (total, n)
    raw_before, seen_before = await raw_view(a)
    assert seen_before == 1 and raw_before == [before[0]]  # raw SurrealQL gives the trace's score

    await b_adds_rows_with_the_word(b, 0, 12)
    after = await own_scores(a)
    total, n = signal.estimate_count(*after)
    assert after[0] < before[0], (before, after)  # A's own hit moved because of B's rows
    assert round(total) == 72 and n is not None and abs((n - 1) - 12) < 0.01, (total, n)  # B's count, exactly
    raw_after, seen_after = await raw_view(a)
    assert seen_after == 1 and raw_after == [after[0]]  # ... while A still sees only its own row
    (b_rows,) = await world.root.query("SELECT VALUE count() FROM chunk_fts WHERE text @1@ $w GROUP ALL", {"w": signal.WORD})
    assert b_rows == [13] or b_rows == 13


async def test_the_signal_ends_once_half_the_rows_hold_the_word(world):
    """The documented ceiling: the engine clamps a negative IDF to a score of 0."""
    a, b = world.conns["tenant-a"], world.conns["tenant-b"]
    total, with_word = await world.root.query(
        "RETURN count(SELECT 1 FROM chunk_fts); RETURN count(SELECT 1 FROM chunk_fts WHERE text @1@ $w);", {"w": signal.WORD})
    more = max(0, total - 2 * with_word) + 2  # then the word is in more than half the rows
    await b_adds_rows_with_the_word(b, 2000, more)
    word, solo, pair = await own_scores(a)
    assert word == 0.0 and solo > pair > 0, (word, solo, pair)
    estimated_total, n = signal.estimate_count(word, solo, pair)
    assert round(estimated_total) == total + more and n is None


async def test_a_database_of_its_own_removes_the_channel(world, dev_server):
    """The documented mitigation: statistics are per index, and an index per database."""
    b = world.conns["tenant-b"]
    async with tenants(dev_server, "bm25own", {"tenant-a": GRANTS["tenant-a"]}) as own:
        alone = own.conns["tenant-a"]
        await signal.a_corpus(alone)
        before = await own_scores(alone)
        await b_adds_rows_with_the_word(b, 1000, 15)  # in the shared database
        assert await own_scores(alone) == before
        total, n = signal.estimate_count(*before)
        assert round(total) == 20 and n is not None and abs(n - 1) < 0.01
