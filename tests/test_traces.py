"""Traces you can use (issue 13, surql/470_traces) on the real engine: list / get / stats
with their filters and limits, retention enforced by the database on every trace write
(count cap, age cap, bounded per write), explain's per-signal ledger checked against the
RRF formula, feedback (it helps the marked query, can be switched off, a bad verdict is a
typed error that writes nothing), the Python client, its sync twin and the CLI; then,
over the dev server, record users: each sees only its own traces and verdicts, and
another tenant's feedback never moves its ranking (raw SurrealQL included).

The hash embedder keeps vectors deterministic (similarity ~ shared words)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from devserver_fixture import dev_server, tenants  # noqa: F401
from helpers import hash_memory, own_db  # noqa: F401  (own_db: a fixture)

from amem_db import InvalidInput, NotFound, PermissionDenied, SyncMemory
from amem_db.db import call, plain
from amem_db.embedding import get_embedder
from amem_db.ingest import Item, ingest_items
from amem_db.models import TraceExplanation, TracePage, TraceStats

ROOT = Path(__file__).resolve().parent.parent
HASH = "hash:384"
DOCS = ["The Zorblat engine burns kerosene at high pressure.", "Kerosene storage tanks must be vented daily.",
        "The Zorblat crew trains for six months before flight.", "Engine tests of the Zorblat ran in 1999.",
        "Kerosene prices rose sharply in the spring.", "Pressure valves on the Zorblat engine were replaced."]
Q = "zorblat engine kerosene"


async def loaded(conn):
    m = hash_memory(conn)
    for i, text in enumerate(DOCS):
        await m.documents.ingest_text(text, title=f"d{i}", source=f"d{i}.md")
    return m


@pytest.fixture(scope="module")
async def mem(db):
    return await loaded(db)


@pytest.fixture
async def traced(own_db):
    """DOCS in a database of this test alone: for a test that counts every trace, sets a
    retention cap or leaves verdicts that would move the module's other rankings."""
    return await loaded(own_db)


async def count(db, table: str) -> int:
    (rows,) = await db.query(f"SELECT count() FROM {table} GROUP ALL")
    return rows[0]["count"] if rows else 0


def ids(results) -> list[str]:
    return [h.chunk.id for h in results]


# --- list / get / stats --------------------------------------------------------------------
async def test_list_is_newest_first_and_filters_by_mode_time_and_tier(traced):
    mem, db = traced, traced.conn
    await mem.documents.query(Q, k=3, threshold=-1)
    await mem.recall(Q, k=3)
    middle = datetime.now(UTC)
    await mem.documents.query("kerosene", mode="bm25", k=3)
    # a hand-made trace of the tier ladder (another helper writes tier / escalated)
    await db.query("CREATE retrieval_trace CONTENT {query: 'cached q', mode: 'recall', options: {tier: 'cache'}, legs: {}, hits: [], "
                   "timings: {totalMs: 1.0}}; CREATE retrieval_trace CONTENT {query: 'hard q', mode: 'recall', "
                   "options: {tier: 4, escalated: true}, legs: {}, hits: [], timings: {totalMs: 9.0}}")
    page = await mem.traces.list()
    assert isinstance(page, TracePage) and page.next is None
    assert [t.query for t in page.traces] == ["hard q", "cached q", "kerosene", Q, Q]
    assert [t.mode for t in page.traces] == ["recall", "recall", "bm25", "recall", "hybrid"]
    stamps = [t.created_at for t in page.traces]
    assert stamps == sorted(stamps, reverse=True)
    assert [t.tier for t in page.traces] == [4, 2, 3, 3, 3] and page.traces[0].escalated and page.traces[1].cache_hit
    assert page.traces[-1].hits == 3 and page.traces[-1].top_hit and page.traces[-1].total_ms > 0
    assert [t.query for t in (await mem.traces.list(mode="recall")).traces] == ["hard q", "cached q", Q]
    assert [t.mode for t in (await mem.traces.list(until=middle)).traces] == ["recall", "hybrid"]
    assert [t.query for t in (await mem.traces.list(since=middle)).traces] == ["hard q", "cached q", "kerosene"]
    assert [t.query for t in (await mem.traces.list(tier=2)).traces] == ["cached q"]
    # paging: `next` is the until of the next page, pages neither overlap nor skip
    first = await mem.traces.list(limit=2)
    second = await mem.traces.list(limit=2, until=first.next)
    third = await mem.traces.list(limit=2, until=second.next)
    assert [t.id for t in first.traces + second.traces + third.traces] == [t.id for t in page.traces]
    assert third.next is None


@pytest.mark.parametrize(("opts", "field"), [
    ({"limit": 501}, "limit"), ({"limit": 0}, "limit"), ({"limit": 2.5}, "limit"), ({"mode": "fast"}, "mode"),
    ({"tier": 5}, "tier"), ({"since": "yesterday"}, "since"), ({"since": "2030-01-01", "until": "2020-01-01"}, "since"),
    ({"colour": "red"}, "colour")])
async def test_bad_read_options_are_typed_errors_naming_the_field(mem, db, opts, field):
    with pytest.raises(InvalidInput, match=field):
        await call(db, "fn::amem::traces::list", opts)


async def test_stats_limit_is_bounded_too(mem, db):
    with pytest.raises(InvalidInput, match="limit must be a whole number from 1 to 10000"):
        await mem.traces.stats(limit=10001)


async def test_get_returns_the_stored_trace_without_its_embedding_and_none_when_absent(mem, db):
    r = await mem.documents.query(Q, k=3, threshold=-1)
    got = await mem.traces.get(r.trace["id"])
    assert got is not None and got.query == Q and got.mode == "hybrid" and got.tier == 3
    assert [plain(h["id"]) for h in got.hits] == ids(r.results)
    assert "query_embedding" not in got.model_dump(by_alias=True) and "query_embedding" not in r.trace
    (stored,) = await db.query("SELECT VALUE query_embedding FROM ONLY type::record($id)", {"id": r.trace["id"]})
    assert stored is not None and len(stored) == 384  # kept for feedback, not sent back
    assert await mem.traces.get("retrieval_trace:nope") is None
    with pytest.raises(InvalidInput, match="not supported here"):
        await mem.traces.get("chunk:abc")


async def test_stats_counts_rates_and_percentiles_match_a_python_reference(traced):
    mem, db = traced, traced.conn
    for _ in range(3):
        await mem.documents.query(Q, k=3, threshold=-1)
    for _ in range(2):
        await mem.recall(Q, k=3)
    await db.query("CREATE retrieval_trace CONTENT {query: 'c', mode: 'recall', options: {tier: 2, reusedFrom: 'answer:x'}, legs: {}, "
                   "hits: [], timings: {totalMs: 0.5}}")
    stats = await mem.traces.stats()
    assert isinstance(stats, TraceStats) and stats.traces == 6 and not stats.truncated
    assert {m: s.count for m, s in stats.modes.items()} == {"hybrid": 3, "recall": 3}
    assert stats.tiers == {"tier1": 0, "tier2": 1, "tier3": 5, "tier4": 0}
    assert stats.cache_hit_rate == pytest.approx(1 / 6) and stats.escalation_rate == 0
    (rows,) = await db.query("SELECT mode, timings.totalMs AS ms FROM retrieval_trace")
    for mode in ("hybrid", "recall"):
        ms = sorted(r["ms"] for r in rows if r["mode"] == mode)
        assert stats.modes[mode].p50_ms == pytest.approx(percentile(ms, 50), abs=1e-3)
        assert stats.modes[mode].p95_ms == pytest.approx(percentile(ms, 95), abs=1e-3)
        assert stats.modes[mode].max_ms == pytest.approx(max(ms))
    assert (await mem.traces.stats(limit=2)).truncated
    assert (await mem.traces.stats(mode="hybrid")).traces == 3


def percentile(sorted_values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = (len(sorted_values) - 1) * p / 100
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


# --- retention ----------------------------------------------------------------------------
async def test_count_cap_keeps_the_newest_traces(traced):
    mem, db = traced, traced.conn
    assert (await mem.traces.retention()).max_count is None  # off by default
    set_ = await mem.traces.retention(max_count=4)
    assert set_.max_count == 4 and set_.per_write == 8
    written = [(await mem.documents.query(f"kerosene {i}", mode="bm25", k=1)).trace["id"] for i in range(7)]
    assert await count(db, "retrieval_trace") == 4
    assert [t.id for t in (await mem.traces.list()).traces] == written[::-1][:4]
    await mem.traces.retention(max_count=0)  # off again: nothing more is deleted
    await mem.documents.query("kerosene", mode="bm25", k=1)
    assert await count(db, "retrieval_trace") == 5


async def test_age_cap_deletes_old_traces_at_most_eight_per_write(traced):
    mem, db = traced, traced.conn
    old = (datetime.now(UTC) - timedelta(days=2)).isoformat()
    await db.query("FOR $i IN 0..11 { CREATE retrieval_trace CONTENT {query: 'old', mode: 'bm25', options: {}, legs: {}, hits: [], "
                   "timings: {}, created_at: <datetime> $old} }", {"old": old})
    await db.query("CREATE retrieval_trace CONTENT {query: 'recent', mode: 'bm25', options: {}, legs: {}, hits: [], timings: {}, "
                   "created_at: time::now() - 1h}")
    assert await count(db, "retrieval_trace") == 12
    assert (await mem.traces.retention(max_age="1d")).max_age == "1d"
    await mem.documents.query("kerosene", mode="bm25", k=1)  # one write: at most 8 expired ones go
    (left,) = await db.query("SELECT VALUE query FROM retrieval_trace")
    assert sorted(left).count("old") == 11 - 8 and "recent" in left and "kerosene" in left
    await mem.documents.query("kerosene", mode="bm25", k=1)
    (left,) = await db.query("SELECT VALUE query FROM retrieval_trace")
    assert "old" not in left and sorted(left) == ["kerosene", "kerosene", "recent"]
    assert (await mem.traces.retention(max_age=3600)).max_age == "1h"


async def test_a_store_that_never_set_retention_keeps_thirty_days_of_traces(traced):
    # the default bound on the trace table (issue 25 item 4): age only, since a count limit
    # costs a count scan of the table on every trace write
    mem, db = traced, traced.conn
    default = await mem.traces.retention()
    assert default.max_age == "4w2d" and default.max_count is None  # 30 days, as the engine writes a duration
    for label, days in (("expired", 31), ("kept", 29)):
        await db.query("CREATE retrieval_trace CONTENT {query: $q, mode: 'bm25', options: {}, legs: {}, hits: [], timings: {}, "
                       "created_at: <datetime> $at}", {"q": label, "at": (datetime.now(UTC) - timedelta(days=days)).isoformat()})
    await mem.documents.query("kerosene", mode="bm25", k=1)
    (left,) = await db.query("SELECT VALUE query FROM retrieval_trace")
    assert sorted(left) == ["kept", "kerosene"]
    # 0 turns the default off too, and it stays off
    assert (await mem.traces.retention(max_age=0)).max_age is None
    await db.query("CREATE retrieval_trace CONTENT {query: 'expired', mode: 'bm25', options: {}, legs: {}, hits: [], timings: {}, "
                   "created_at: time::now() - 40d}")
    await mem.documents.query("kerosene", mode="bm25", k=1)
    (left,) = await db.query("SELECT VALUE query FROM retrieval_trace")
    assert "expired" in left and (await mem.traces.retention()).max_age is None


@pytest.mark.parametrize(("kw", "field"), [({"max_age": "soon"}, "maxAge"), ({"max_age": -1}, "maxAge"),
                                           ({"max_count": -3}, "maxCount"), ({"max_count": 1.5}, "maxCount")])
async def test_bad_retention_is_a_typed_error_and_changes_nothing(traced, kw, field):
    mem = traced
    await mem.traces.retention(max_count=100)
    with pytest.raises(InvalidInput, match=field):
        await mem.traces.retention(**kw)
    assert (await mem.traces.retention()).max_count == 100


# --- explain -------------------------------------------------------------------------------
async def test_explain_ledger_is_the_rrf_formula_of_the_trace(mem, db):
    # the default fusion is by scores; its ledger: each leg's part, summing to the score
    z = await mem.documents.query(Q, k=4, threshold=-1)
    for rank, hit in enumerate(z.trace["hits"], start=1):
        why = await mem.traces.explain(z.trace["id"], rank)
        assert sum(row.contribution or 0 for row in why.ledger if row.signal in ("vector", "bm25")) == pytest.approx(hit["score"])
        assert any(d.startswith("zscore score fusion") for d in why.decisions)
    r = await mem.documents.query(Q, k=4, threshold=-1, fusion="rrf")
    tid = r.trace["id"]
    for rank, hit in enumerate(r.trace["hits"], start=1):
        why = await mem.traces.explain(tid, rank)
        assert isinstance(why, TraceExplanation) and why.hit["rank"] == rank and plain(why.hit["id"]) == plain(hit["id"])
        legs = {row.signal: row for row in why.ledger}
        assert set(legs) <= {"vector", "bm25"} and legs
        for name, row in legs.items():
            assert row.rank == hit[name]["rank"] and row.weight == 0.5
            assert row.contribution == pytest.approx(0.5 / (60 + row.rank))
        assert sum(row.contribution for row in legs.values()) == pytest.approx(hit["rrf"])
        assert any(d.startswith("RRF: sum of the contributions") for d in why.decisions)
        assert any("threshold -1" in d for d in why.decisions)
    by_id = await mem.traces.explain(tid, ids(r.results)[1])
    assert by_id.hit["rank"] == 2
    with pytest.raises(NotFound, match="hit 9 is not in trace"):
        await mem.traces.explain(tid, 9)
    with pytest.raises(NotFound, match="no trace"):
        await mem.traces.explain("retrieval_trace:nope", 1)


async def test_explain_a_recall_hit_uses_the_stored_weights(mem, db):
    r = await mem.recall(Q, k=3)
    why = await mem.traces.explain(r.trace["id"], 1)
    w = r.trace["options"]["weights"]
    for row in why.ledger:
        weight = {"vector": w["wv"], "bm25": w["wl"], "graph": w["wg"]}[row.signal]
        assert row.weight == pytest.approx(weight) and row.contribution == pytest.approx(weight / (w["rrfK"] + row.rank))
    assert why.rrf_k == w["rrfK"]


# --- feedback --------------------------------------------------------------------------------
FUSIONS = {"zscore": {}, "rrf": {"fusion": "rrf"}}  # the default score fusion, and RRF


@pytest.mark.parametrize("fusion", list(FUSIONS))
async def test_feedback_helps_the_marked_query_and_can_be_switched_off(traced, fusion):
    mem = traced
    # the boost is a share of the fused scores' spread, so it moves a hit under RRF (scores
    # close together) as under z-score fusion (spread over 0.3-1.0)
    f = FUSIONS[fusion]
    before = await mem.documents.query(Q, k=4, threshold=-1, **f)
    marked = ids(before.results)[3]
    fb = await mem.traces.feedback(before.trace["id"], 4, "useful")
    assert fb.verdict == "useful" and fb.hit == marked and fb.rank == 4
    after = await mem.documents.query(Q, k=4, threshold=-1, **f)
    assert ids(after.results).index(marked) < 3  # moved up
    moved = next(h for h in after.trace["hits"] if plain(h["id"]) == marked)
    entry = moved["feedback"]
    assert entry["verdict"] == "useful" and entry["weight"] == 0.5
    # bounded: half the spread of the fused scores at most, the spread itself within [0.01, 1]
    assert 0.01 <= entry["spread"] <= 1 and 0 < entry["delta"] <= 0.5 * entry["spread"]
    assert entry["delta"] == pytest.approx(0.5 * entry["similarity"] * entry["spread"])
    # the other hits were not moved: their scores are those before the mark
    old = {plain(h["id"]): h["score"] for h in before.trace["hits"]}
    assert all(h["score"] == pytest.approx(old[plain(h["id"])]) for h in after.trace["hits"] if plain(h["id"]) != marked)
    assert moved["score"] == pytest.approx(min(1.0, old[marked] + entry["delta"]))
    why = await mem.traces.explain(after.trace["id"], marked)
    assert [row.signal for row in why.ledger][-1] == "feedback" and why.ledger[-1].contribution == entry["delta"]
    assert "x score spread" in why.ledger[-1].note
    # the same query with feedback off: exactly the order before the mark
    off = await mem.documents.query(Q, k=4, threshold=-1, feedback=False, **f)
    assert ids(off.results) == ids(before.results)
    assert all(h.get("feedback") is None for h in off.trace["hits"])
    # a query that shares no words with the marked one is not moved
    other = await mem.documents.query("prices spring", k=4, threshold=-1, **f)
    assert all(h.get("feedback") is None for h in other.trace["hits"])


@pytest.mark.parametrize("fusion", list(FUSIONS))
async def test_a_wrong_mark_demotes_a_hit_under_either_fusion(traced, fusion):
    mem = traced
    # bounded: a verdict moves a hit by at most half the spread of the top fused scores, so
    # hit 2 (not the top one, which leads both legs here) falls below hit 4
    f = FUSIONS[fusion]
    before = await mem.documents.query(Q, k=4, threshold=-1, **f)
    second, fourth = ids(before.results)[1], ids(before.results)[3]
    await mem.traces.feedback(before.trace["id"], 2, "wrong")
    after = await mem.documents.query(Q, k=4, threshold=-1, **f)
    order = ids(after.results)
    assert second not in order or order.index(second) > order.index(fourth)
    entry = next((h["feedback"] for h in after.trace["hits"] if plain(h["id"]) == second), None)
    assert entry is None or (entry["verdict"] == "wrong" and -0.5 * entry["spread"] <= entry["delta"] < 0)


async def test_feedback_in_recall_helps_and_wrong_demotes(traced):
    mem, db = traced, traced.conn
    before = await mem.recall(Q, k=4, include=["passages"])
    top, fourth = before.hits[0].id, before.hits[3].id
    await mem.traces.feedback(before.trace["id"], fourth, "useful")
    await mem.traces.feedback(before.trace["id"], 1, "wrong")
    after = await mem.recall(Q, k=4, include=["passages"])
    order = [h.id for h in after.hits]
    assert order.index(fourth) < 3 and (top not in order or order.index(top) > 0)
    off = await mem.recall(Q, k=4, include=["passages"], feedback=False)
    assert [h.id for h in off.hits] == [h.id for h in before.hits]
    # a second verdict on the same hit replaces the first (one row per trace and hit)
    assert await count(db, "trace_feedback") == 2
    await mem.traces.feedback(before.trace["id"], fourth, "wrong")
    assert await count(db, "trace_feedback") == 2
    with pytest.raises(InvalidInput, match="feedback must be true or false"):
        await call(db, "fn::amem::recall", Q, None, {"mode": "bm25", "feedback": "no"})


@pytest.mark.parametrize(("hit", "verdict", "error", "match"), [
    (1, "great", InvalidInput, "verdict must be useful or wrong"), (1, None, InvalidInput, "verdict"),
    (99, "useful", NotFound, "hit 99 is not in trace"), ("chunk:nope", "wrong", NotFound, "is not in trace")])
async def test_bad_feedback_is_a_typed_error_and_writes_nothing(mem, db, hit, verdict, error, match):
    r = await mem.documents.query(Q, k=2, threshold=-1)
    n = await count(db, "trace_feedback")
    with pytest.raises(error, match=match):
        await call(db, "fn::amem::traces::feedback", r.trace["id"], hit, verdict)
    with pytest.raises(NotFound, match="no trace"):
        await call(db, "fn::amem::traces::feedback", "retrieval_trace:nope", 1, "useful")
    assert await count(db, "trace_feedback") == n


@pytest.mark.parametrize("fusion", list(FUSIONS))
async def test_an_owner_side_caller_gets_only_its_own_feedback(traced, fusion):
    mem, db = traced, traced.conn
    emb = await mem.embed_query(Q)
    opts = {"k": 4, "threshold": -1, **FUSIONS[fusion]}
    base = await call(db, "fn::amem::documents::query", Q, emb, opts | {"caller": "app-1"})
    await call(db, "fn::amem::traces::feedback", base["trace"]["id"], 4, "useful")
    # app-2 has a verdict of its own (on an unrelated query), so its signal runs, on its rows only
    elsewhere = await call(db, "fn::amem::documents::query", "prices spring", await mem.embed_query("prices spring"), opts | {"caller": "app-2"})
    await call(db, "fn::amem::traces::feedback", elsewhere["trace"]["id"], 1, "wrong")
    for_other = await call(db, "fn::amem::documents::query", Q, emb, opts | {"caller": "app-2"})
    assert all(h.get("feedback") is None for h in for_other["trace"]["hits"])
    assert [h["chunk"]["id"] for h in for_other["results"]] == [h["chunk"]["id"] for h in base["results"]]
    for_me = await call(db, "fn::amem::documents::query", Q, emb, opts | {"caller": "app-1"})
    assert [h["chunk"]["id"] for h in for_me["results"]] != [h["chunk"]["id"] for h in base["results"]]


# --- stable pagination ------------------------------------------------------------------------
async def test_pages_of_a_frozen_candidate_set_never_reshuffle_or_repeat_while_writes_go_on(mem, db):
    for i in range(20):
        await mem.documents.ingest_text(f"Zorblat engine log {i}: kerosene pump {i} checked.", title=f"log{i}")
    first = await mem.documents.query(Q, threshold=-1, page_size=5)
    assert len(first.results) == 5 and first.cursor and first.candidates >= 20
    frozen = [plain(h["id"]) for h in first.trace["hits"]]
    assert len(frozen) == first.candidates and ids(first.results) == frozen[:5]
    # new rows that match better than anything: the frozen set does not move
    new = [(await mem.documents.ingest_text(f"Zorblat engine kerosene, zorblat engine kerosene {i}.", title=f"new{i}")).document.id
           for i in range(5)]
    seen, cursor, pages = ids(first.results), first.cursor, 1
    while cursor is not None:
        page = await mem.documents.query("", cursor=cursor, page_size=5)
        assert page.candidates == first.candidates and page.trace["id"] == first.trace["id"]
        assert not set(ids(page.results)) & set(seen)  # never repeats
        seen += ids(page.results)
        cursor, pages = page.cursor, pages + 1
    assert seen == frozen and pages == -(-len(frozen) // 5)  # the frozen order, all of it
    fresh = await mem.documents.query(Q, threshold=-1, page_size=5)
    fresh_docs = {plain(h["id"]).split("_")[0].replace("chunk:", "document:") for h in fresh.trace["hits"]}
    frozen_docs = {f.split("_")[0].replace("chunk:", "document:") for f in frozen}
    assert set(new) <= fresh_docs and not set(new) & frozen_docs  # a new first page sees the new rows, the old pages did not


async def test_a_cursor_expires_with_its_trace_and_bad_paging_options_are_typed_errors(mem, db):
    first = await mem.documents.query(Q, threshold=-1, page_size=2)
    await db.query("DELETE type::record($id)", {"id": first.trace["id"]})  # as retention would
    with pytest.raises(NotFound, match="has expired"):
        await mem.documents.query("", cursor=first.cursor)
    for opts, match in (({"pageSize": 0}, "pageSize"), ({"pageSize": 51}, "pageSize"), ({"cursor": "chunk:x@1"}, "cursor"),
                        ({"cursor": 5}, "cursor")):
        n = await count(db, "retrieval_trace")
        with pytest.raises(InvalidInput, match=match):
            await call(db, "fn::amem::documents::query", Q, None, {"mode": "bm25", **opts})
        assert await count(db, "retrieval_trace") == n


async def test_recall_pages_a_frozen_set_and_its_cursor_is_its_own(mem, db):
    for i in range(14):
        await mem.facts.write({"text": f"Quillon harbour log {i}: the crane moved grain.", "category": "knowledge"})
    first = await mem.recall("quillon harbour crane grain", include=["passages"], page_size=5)
    assert len(first.hits) == 5 and first.cursor and first.page_size == 5
    frozen = [plain(h["id"]) for h in first.trace["hits"] if h["returned"]]
    assert len(frozen) == first.candidates >= 14 and [h.id for h in first.hits] == frozen[:5]
    # a better match written now never enters the pages of the frozen set
    await mem.facts.write({"text": "Quillon harbour crane grain, quillon harbour crane grain.", "category": "knowledge"})
    seen, cursor = [h.id for h in first.hits], first.cursor
    while cursor is not None:
        page = await mem.recall("", cursor=cursor)
        assert page.trace["id"] == first.trace["id"] and not set(h.id for h in page.hits) & set(seen)
        seen, cursor = seen + [h.id for h in page.hits], page.cursor
    assert seen == frozen
    # raw SurrealQL pages the same way; a documents.query cursor is not a recall cursor
    (raw,) = await db.query("RETURN fn::amem::recall('', NONE, {cursor: $c})", {"c": first.cursor})
    assert [plain(h["id"]) for h in raw["hits"]] == frozen[5:10]
    other = await mem.documents.query(Q, threshold=-1, page_size=2)
    with pytest.raises(NotFound, match="not a recall cursor"):
        await mem.recall("", cursor=other.cursor)
    with pytest.raises(InvalidInput, match="pageSize"):
        await mem.recall("quillon", page_size=0)


# --- Python surface, sync twin, CLI ------------------------------------------------------------
def test_sync_twin_reads_traces():
    mem = SyncMemory.open(url="mem://", embedder=HASH, migrate=True)
    try:
        mem.documents.ingest_text(DOCS[0], source="d0")
        r = mem.documents.query("zorblat", k=1, threshold=-1)
        assert mem.traces.list().traces[0].id == r.trace["id"]
        assert mem.traces.explain(r.trace["id"], 1).hit["rank"] == 1
        assert mem.traces.stats().traces == 1
    finally:
        mem.close()


@pytest.mark.slow  # one process per command
def test_readme_traces_examples_run_as_printed(tmp_path):
    """The README's `amem-db traces` examples, in order, on one embedded database; the
    placeholder id retrieval_trace:abc stands for the trace of the query above it."""
    from test_readme import subsection_sh

    env = os.environ | {"AMEM_URL": f"surrealkv://{tmp_path / 'db'}", "AMEM_EMBEDDER": HASH, "COLUMNS": "200"}

    def run(args: list[str], code: int = 0) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "amem_db", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == code, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done

    run(["migrate"])
    for i, text in enumerate(DOCS):
        (tmp_path / f"d{i}.md").write_text(text)
    run(["ingest", str(tmp_path)])
    cmds = subsection_sh("`amem-db traces` (why did this rank here?)")
    assert [c[:2] for c in cmds] == [["amem-db", "query"]] + [["amem-db", "traces"]] * 6, cmds
    outputs = [run(cmds[0][1:]).stdout]
    tid = json.loads(run(["traces", "list", "--json"]).stdout)["traces"][0]["id"]
    for args in cmds[1:]:
        outputs.append(run([tid if a == "retrieval_trace:abc" else a for a in args[1:]]).stdout)
    listed, explained, marked, shown, stats, kept = outputs[1:]
    assert tid in listed and "zorblat kerosene" in listed
    assert all(w in explained for w in ("vector", "bm25", "contribution", "zscore score fusion")), explained
    assert "marked useful (rank 2" in marked
    assert json.loads(shown)["id"] == tid and json.loads(shown)["query"] == "zorblat kerosene"
    assert "hybrid" in stats and "cache hit rate" in stats
    assert "max age 4w2d, max count 100000" in kept  # 30d as the engine prints a duration
    again = json.loads(run(["query", "zorblat kerosene", "--k", "3", "--json"]).stdout)
    assert any(h.get("feedback") for h in again["trace"]["hits"])  # the mark moved its hit
    done = run(["traces", "explain", tid, "9"], code=1)
    assert "not_found" in done.stderr


# --- record users: each its own traces and verdicts -------------------------------------------------
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(dev_server):
    grants = {"tenant-a": dict(read=[], write=["org/a"]), "tenant-b": dict(read=[], write=["org/b"]),
              "reader-a": dict(read=["org/a"], write=[])}
    async with tenants(dev_server, "traces", grants) as t:
        emb = get_embedder(HASH)
        for conn, tenant in ((t.conns["tenant-a"], "a"), (t.conns["tenant-b"], "b")):
            items = [Item(f"{tenant}{i}", {"text": text, "mime_type": "text/plain", "title": f"{tenant}{i}", "source": f"{tenant}{i}.md",
                                           "scopes": [f"org/{tenant}"]}) for i, text in enumerate(DOCS)]
            report = await ingest_items(conn, emb, items)
            assert [r.status for r in report.results] == ["added"] * len(DOCS)
        t.emb = emb
        yield t


async def test_record_users_see_only_their_own_traces(world):
    a, b = world.conns["tenant-a"], world.conns["tenant-b"]
    emb = world.emb.embed_query(Q)
    ra = await call(a, "fn::amem::documents::query", Q, emb, {"k": 3, "threshold": -1})
    rb = await call(b, "fn::amem::recall", Q, emb, {"k": 3})
    a_list = await call(a, "fn::amem::traces::list", None)
    assert ra["trace"]["id"] in [t["id"] for t in a_list["traces"]]
    assert rb["trace"]["id"] not in [t["id"] for t in a_list["traces"]]
    assert {t["caller"] for t in a_list["traces"]} == {(await a.query("RETURN <string> $auth.id"))[0]}
    assert await call(a, "fn::amem::traces::get", rb["trace"]["id"]) is None
    with pytest.raises(NotFound):
        await call(a, "fn::amem::traces::explain", rb["trace"]["id"], 1)
    with pytest.raises(NotFound):  # B's trace is not A's to judge
        await call(a, "fn::amem::traces::feedback", rb["trace"]["id"], 1, "wrong")
    stats = await call(a, "fn::amem::traces::stats", None)
    assert "recall" not in stats["modes"] or all(t["mode"] != "recall" for t in a_list["traces"])
    with pytest.raises(PermissionDenied, match="owner"):
        await call(a, "fn::amem::traces::retention", {"maxCount": 1})
    (root_count,) = await world.root.query("SELECT count() FROM retrieval_trace GROUP ALL")
    assert root_count[0]["count"] >= 2


async def test_another_tenants_feedback_never_moves_my_ranking(world):
    # the default (z-score) fusion: the boost is a share of the score spread (see above)
    a, b, reader = world.conns["tenant-a"], world.conns["tenant-b"], world.conns["reader-a"]
    emb = world.emb.embed_query(Q)
    before = await call(a, "fn::amem::documents::query", Q, emb, {"k": 4, "threshold": -1})
    order = [h["chunk"]["id"] for h in before["results"]]
    # B marks its own 4th hit useful and its 1st wrong; B's ranking moves, A's does not
    rb = await call(b, "fn::amem::documents::query", Q, emb, {"k": 4, "threshold": -1})
    await call(b, "fn::amem::traces::feedback", rb["trace"]["id"], 4, "useful")
    await call(b, "fn::amem::traces::feedback", rb["trace"]["id"], 1, "wrong")
    rb2 = await call(b, "fn::amem::documents::query", Q, emb, {"k": 4, "threshold": -1})
    assert [h["chunk"]["id"] for h in rb2["results"]] != [h["chunk"]["id"] for h in rb["results"]]
    # raw SurrealQL: B cannot plant a verdict as A (caller must be B), nor read or change A's
    (a_caller,) = await a.query("RETURN <string> $auth.id")
    a_hit = before["results"][3]["chunk"]["id"]
    await b.query("CREATE trace_feedback CONTENT {trace: 'retrieval_trace:x', hit: type::record($h), verdict: 'useful', query: $q, "
                  "query_norm: 'zorblat engine kerosene', caller: $c}", {"h": plain(a_hit), "q": Q, "c": a_caller})
    after = await call(a, "fn::amem::documents::query", Q, emb, {"k": 4, "threshold": -1})
    assert [h["chunk"]["id"] for h in after["results"]] == order
    assert all(h.get("feedback") is None for h in after["trace"]["hits"])
    (b_rows,) = await world.root.query("SELECT VALUE caller FROM trace_feedback")
    assert a_caller not in b_rows and len(b_rows) == 2
    # A's own verdict moves A (and is invisible to B and to a reader of the same scope)
    await call(a, "fn::amem::traces::feedback", before["trace"]["id"], 4, "useful")
    mine = await call(a, "fn::amem::documents::query", Q, emb, {"k": 4, "threshold": -1})
    assert [h["chunk"]["id"] for h in mine["results"]].index(a_hit) < 3
    (b_sees,) = await b.query("SELECT * FROM trace_feedback WHERE caller = $c", {"c": a_caller})
    (reader_sees,) = await reader.query("SELECT * FROM trace_feedback")
    assert b_sees == [] and reader_sees == []
    theirs = await call(reader, "fn::amem::documents::query", Q, emb, {"k": 4, "threshold": -1})
    assert all(h.get("feedback") is None for h in theirs["trace"]["hits"])
    # a cursor is A's alone: B's read of it finds no trace
    page = await call(a, "fn::amem::documents::query", Q, emb, {"threshold": -1, "pageSize": 2})
    assert page["cursor"]
    with pytest.raises(NotFound, match="another caller"):
        await call(b, "fn::amem::documents::query", "", None, {"cursor": page["cursor"]})
    assert len((await call(a, "fn::amem::documents::query", "", None, {"cursor": page["cursor"]}))["results"]) == 2
    # nor can B change or delete A's verdict
    await b.query("UPDATE trace_feedback SET verdict = 'wrong'; DELETE trace_feedback")
    (a_rows,) = await world.root.query("SELECT VALUE verdict FROM trace_feedback WHERE caller = $c", {"c": a_caller})
    assert a_rows == ["useful"]


# --- replay: eval --from-traces ----------------------------------------------------------------
async def test_replay_scores_the_judged_queries_with_each_signal_switched_off(traced):
    mem, db = traced, traced.conn
    from amem_db.traces_replay import ndcg, recall_at, replay

    assert (await replay(db, k=4))["queries"] == 0  # no verdicts: nothing to score
    first = await mem.documents.query(Q, k=4, threshold=-1)
    useful = ids(first.results)[3]
    await mem.traces.feedback(first.trace["id"], 4, "useful")
    await mem.traces.feedback(first.trace["id"], 1, "wrong")
    r = await mem.recall("zorblat crew", k=4, include=["passages"])
    await mem.traces.feedback(r.trace["id"], 2, "useful")
    report = await replay(db, k=4)
    assert report["queries"] == 2 and report["judgements"] == 3
    q = report["reads"]["query"]
    assert set(q) == {"all signals", "no vector", "no bm25", "+feedback"}
    # the reference: the same query run by hand with feedback off, scored by the formula
    ranked = ids((await mem.documents.query(Q, k=4, threshold=-1, feedback=False)).results)
    assert q["all signals"]["ndcg@4"] == pytest.approx(ndcg(ranked, {useful}, 4))
    assert q["all signals"]["recall@4"] == pytest.approx(recall_at(ranked, {useful}, 4)) == 1.0
    assert q["+feedback"]["ndcg@4"] > q["all signals"]["ndcg@4"]  # the verdict lifts its record
    assert set(report["reads"]["recall"]) == {"all signals", "no vector", "no bm25", "no graph", "no window", "+feedback"}


def test_ndcg_matches_ranx():
    ranx = pytest.importorskip("ranx")
    from amem_db.traces_replay import ndcg

    ranked, relevant = ["d3", "d1", "d7", "d2", "d9"], {"d1", "d2", "d5"}
    qrels = ranx.Qrels({"q": {d: 1 for d in relevant}})
    run = ranx.Run({"q": {d: float(len(ranked) - i) for i, d in enumerate(ranked)}})
    assert ndcg(ranked, relevant, 5) == pytest.approx(ranx.evaluate(qrels, run, "ndcg@5"))
