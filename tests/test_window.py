"""Query windows (issue 12, MEMORY.md section 3): fn::amem::window::parse over a
table of phrases (expected intervals written by hand from the rules in
surql/460_window.surql.j2), then recall on the real engine: the boost reorders,
strict filters (rows without a time drop out), off and weight 0 change nothing,
the window is echoed in the response and the trace, a stated valid interval
counts, and bad options are typed errors that write no trace."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime

import pytest
from helpers import mem  # noqa: F401  (a fixture)

from amem_db import InvalidInput
from amem_db.db import plain

# Friday 15 March 2024, 10:00 UTC: its week starts Monday 11 March
NOW = "2024-03-15T10:00:00Z"
D = "T00:00:00Z"


def d(day: str) -> str:
    return day + D


# (query, now, from, to, phrase); None for from/to = open; a None phrase = no window
PHRASES: list[tuple[str, str, str | None, str | None, str | None]] = [
    # years and months
    ("what happened in 2023?", NOW, d("2023-01-01"), d("2024-01-01"), "in 2023"),
    ("during 2019 what did we ship", NOW, d("2019-01-01"), d("2020-01-01"), "during 2019"),
    ("who called in May 2023", NOW, d("2023-05-01"), d("2023-06-01"), "in may 2023"),
    ("report for Sept 2022", NOW, d("2022-09-01"), d("2022-10-01"), "sept 2022"),
    ("what did Ann buy in December 2023", NOW, d("2023-12-01"), d("2024-01-01"), "in december 2023"),
    # a month without a year: the most recent one that began at or before now
    ("trips in May", NOW, d("2023-05-01"), d("2023-06-01"), "in may"),
    ("trips in March", NOW, d("2024-03-01"), d("2024-04-01"), "in march"),
    ("what happened in jan", NOW, d("2024-01-01"), d("2024-02-01"), "in jan"),
    # days
    ("what did we decide on 8 May", NOW, d("2023-05-08"), d("2023-05-09"), "on 8 may"),
    ("notes from 8 May 2023", NOW, d("2023-05-08"), d("2023-05-09"), "from 8 may 2023"),
    ("May 8, 2023 meeting", NOW, d("2023-05-08"), d("2023-05-09"), "may 8 2023"),
    ("the 8th of May", NOW, d("2023-05-08"), d("2023-05-09"), "8th of may"),
    ("on October 13, 2023 what painting", NOW, d("2023-10-13"), d("2023-10-14"), "on october 13 2023"),
    ("logs of 2023-05-08", NOW, d("2023-05-08"), d("2023-05-09"), "2023-05-08"),
    ("on 15 March", NOW, d("2024-03-15"), d("2024-03-16"), "on 15 march"),
    ("on 16 March", NOW, d("2023-03-16"), d("2023-03-17"), "on 16 march"),
    ("on 29 February", NOW, d("2024-02-29"), d("2024-03-01"), "on 29 february"),
    # ranges and open bounds
    ("between 2019 and 2021", NOW, d("2019-01-01"), d("2022-01-01"), "between 2019 and 2021"),
    ("between 2021 and 2019", NOW, d("2019-01-01"), d("2022-01-01"), "between 2021 and 2019"),
    ("from March to June 2022", NOW, d("2022-03-01"), d("2022-07-01"), "from march to june 2022"),
    ("from November to February 2023", NOW, d("2022-11-01"), d("2023-03-01"), "from november to february 2023"),
    ("from November 2022 to February", NOW, d("2022-11-01"), d("2023-03-01"), "from november 2022 to february"),
    ("between May and June", NOW, d("2023-05-01"), d("2023-07-01"), "between may and june"),
    ("since 2021", NOW, d("2021-01-01"), None, "since 2021"),
    ("since last year", NOW, d("2023-01-01"), None, "since last year"),
    ("before June 2024", NOW, None, d("2024-06-01"), "before june 2024"),
    ("after 2020", NOW, d("2021-01-01"), None, "after 2020"),
    ("after 8 May", NOW, d("2023-05-09"), None, "after 8 may"),
    ("until 2022", NOW, None, d("2023-01-01"), "until 2022"),
    # relative to now (calendar units, weeks from Monday)
    ("what did I do today", NOW, d("2024-03-15"), d("2024-03-16"), "today"),
    ("yesterday's standup", NOW, d("2024-03-14"), d("2024-03-15"), "yesterday"),
    ("this week", NOW, d("2024-03-11"), d("2024-03-18"), "this week"),
    ("last week", NOW, d("2024-03-04"), d("2024-03-11"), "last week"),
    ("a week ago", NOW, d("2024-03-04"), d("2024-03-11"), "a week ago"),
    ("two weeks ago", NOW, d("2024-02-26"), d("2024-03-04"), "two weeks ago"),
    ("a couple of weeks ago", NOW, d("2024-02-26"), d("2024-03-04"), "a couple of weeks ago"),
    ("3 days ago", NOW, d("2024-03-12"), d("2024-03-13"), "3 days ago"),
    ("this month", NOW, d("2024-03-01"), d("2024-04-01"), "this month"),
    ("last month", NOW, d("2024-02-01"), d("2024-03-01"), "last month"),
    ("last month", "2024-01-20T08:00:00Z", d("2023-12-01"), d("2024-01-01"), "last month"),
    ("this year", NOW, d("2024-01-01"), d("2025-01-01"), "this year"),
    ("last year", NOW, d("2023-01-01"), d("2024-01-01"), "last year"),
    ("a few months ago", NOW, d("2023-10-01"), d("2024-02-01"), "a few months ago"),
    ("last May", NOW, d("2023-05-01"), d("2023-06-01"), "last may"),
    ("last March", NOW, d("2023-03-01"), d("2023-04-01"), "last march"),
    ("in the past 3 days", NOW, "2024-03-12T10:00:00Z", d("2024-03-16"), "past 3 days"),
    ("the past year", NOW, "2023-03-15T10:00:00Z", d("2024-03-16"), "past year"),
    ("in the past 2 months", NOW, "2024-01-15T10:00:00Z", d("2024-03-16"), "past 2 months"),
    # offsets from a point
    ("the puppy she got two weeks before August 11, 2023", NOW, d("2023-07-28"), d("2023-08-11"), "two weeks before august 11 2023"),
    ("the week after 8 May", NOW, d("2023-05-09"), d("2023-05-16"), "the week after 8 may"),
    ("a month before June 2023", NOW, d("2023-05-01"), d("2023-06-01"), "a month before june 2023"),
    ("the day before yesterday", NOW, d("2024-03-13"), d("2024-03-14"), "the day before yesterday"),
    ("moved from Boston 4 years ago", NOW, d("2020-01-01"), d("2021-01-01"), "4 years ago"),
    # two phrases: the leftmost wins
    ("who was CTO in 2021 and in 2022", NOW, d("2021-01-01"), d("2022-01-01"), "in 2021"),
    ("what did I do 2 days ago in May 2023", NOW, d("2024-03-13"), d("2024-03-14"), "2 days ago"),
    # negatives: no window
    ("2023 iPhone sales figures", NOW, None, None, None),  # a bare year as a modifier names the topic
    ("May I ask what Caroline said?", NOW, None, None, None),  # "may" without a day, year or preposition
    ("what did June say about the march", NOW, None, None, None),  # names and nouns, not months
    ("write it in 2000 words", NOW, None, None, None),  # a count, not a year
    ("how long ago was her birthday", NOW, None, None, None),  # "ago" without a count
    ("on 31 February", NOW, None, None, None),  # no such day
    ("the last time we met", NOW, None, None, None),
    ("what did we do before the trip", NOW, None, None, None),
    ("room 1234 has 8 chairs", NOW, None, None, None),
    ("", NOW, None, None, None),
]


@pytest.mark.parametrize(("query", "now", "start", "end", "phrase"), PHRASES, ids=[f"{i}:{p[0][:30]}" for i, p in enumerate(PHRASES)])
async def test_parse_table(db, query, now, start, end, phrase):
    (got,) = await db.query("RETURN fn::amem::window::parse($q, <datetime> $now)", {"q": query, "now": now})
    if phrase is None:
        assert got is None
        return
    want = {"from": start, "to": end, "phrase": phrase}
    iso = {k: (v.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if isinstance(v, datetime) else v) for k, v in got.items()}
    assert iso == want


def test_the_table_is_large_and_has_negatives():
    assert len(PHRASES) >= 40
    assert sum(p[4] is None for p in PHRASES) >= 8


# --- recall ----------------------------------------------------------------------------
_n = itertools.count()


async def hikes(mem) -> tuple[str, dict[str, str]]:
    """Three passages of one person in a scope of their own, observed on three
    dates; the May one matches the question's words least."""
    scope = f"window/{next(_n)}"
    ids: dict[str, str] = {}
    for when, text in [("2023-01-10T09:00:00Z", "Nora went hiking in the hills with friends, a long hiking day"),
                       ("2023-09-20T09:00:00Z", "Nora went hiking in the hills again, hiking is her thing"),
                       ("2023-05-08T09:00:00Z", "Nora walked up a hill")]:
        w = await mem.facts.write({"text": text, "observed_at": when, "scopes": [scope], "category": "knowledge"})
        ids[when[:7]] = w.passages[0]
    return scope, ids


async def traces(db) -> int:
    (rows,) = await db.query("SELECT count() FROM retrieval_trace GROUP ALL")
    return rows[0]["count"] if rows else 0


Q = "where did Nora go hiking in May 2023?"


async def test_boost_reorders_and_is_echoed(mem):
    scope, ids = await hikes(mem)
    lens = [[scope]]
    off = await mem.recall(Q, lens=lens, include=["passages"], query_window=False, now=NOW)
    assert off.hits[0].id != ids["2023-05"] and off.query_window is None
    assert off.trace["options"]["window"]["ran"] is False
    on = await mem.recall(Q, lens=lens, include=["passages"], window_weight=1.0, now=NOW)
    assert on.hits[0].id == ids["2023-05"]
    assert {h.id for h in on.hits} == {h.id for h in off.hits}  # a boost reorders, it removes nothing
    w = on.query_window
    assert w is not None and w.phrase == "in may 2023"
    assert (w.from_, w.to) == (datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC))
    legs = on.trace["options"]["window"]
    assert legs["ran"] is True and legs["matched"] == 1 and legs["window"]["phrase"] == "in may 2023"
    assert on.trace["options"]["window"]["weight"] == 1.0 and on.trace["options"]["window"]["strict"] is False
    assert on.model_dump(by_alias=True, mode="json")["queryWindow"]["phrase"] == "in may 2023"


async def test_weight_zero_and_off_change_nothing(mem):
    scope, _ = await hikes(mem)
    lens = [[scope]]
    off = await mem.recall(Q, lens=lens, query_window=False, now=NOW)
    zero = await mem.recall(Q, lens=lens, window_weight=0, now=NOW)
    assert [(h.id, round(h.score, 9)) for h in zero.hits] == [(h.id, round(h.score, 9)) for h in off.hits]
    assert zero.query_window is not None  # parsed and echoed, but weighs nothing
    plain_q = "where did Nora go hiking?"  # no time words: on or off, the same answer
    a = await mem.recall(plain_q, lens=lens, now=NOW)
    b = await mem.recall(plain_q, lens=lens, query_window=False, now=NOW)
    assert a.query_window is None and [h.id for h in a.hits] == [h.id for h in b.hits]


async def test_strict_keeps_only_rows_in_the_window(mem):
    scope, ids = await hikes(mem)
    await mem.documents.ingest_text("Nora went hiking in the hills of the guidebook.", title=f"guide {scope}")
    r = await mem.recall("Nora hiking hills in 2023", k=20, include=["passages"], strict_window=True, now=NOW)
    assert r.query_window is not None and r.query_window.phrase == "in 2023"
    assert r.hits and all(h.source == "memory_chunk" for h in r.hits)  # a document passage has no time: dropped
    assert all(h.occurred_at is not None and h.occurred_at.year == 2023 for h in r.hits)
    boost = await mem.recall("Nora hiking hills in 2023", k=20, include=["passages"], now=NOW)
    assert "chunk" in {h.source for h in boost.hits}  # the boost keeps it
    narrow = await mem.recall(Q, lens=[[scope]], strict_window=True, now=NOW)
    assert [h.id for h in narrow.hits] == [ids["2023-05"]]
    assert narrow.trace["options"]["window"]["strict"] is True


async def test_relative_words_follow_the_now_option(mem):
    scope, ids = await hikes(mem)
    r = await mem.recall("Nora hiking last month", lens=[[scope]], strict_window=True, now="2023-10-03T12:00:00Z")
    assert r.query_window is not None and r.query_window.from_ == datetime(2023, 9, 1, tzinfo=UTC)
    assert [h.id for h in r.hits] == [ids["2023-09"]]
    r2 = await mem.recall("Nora hiking last month", lens=[[scope]], strict_window=True, now=datetime(2023, 2, 2, tzinfo=UTC))
    assert [h.id for h in r2.hits] == [ids["2023-01"]]


async def test_a_stated_valid_interval_counts_the_default_does_not(mem):
    scope = f"window/{next(_n)}"
    who = f"Omar W{next(_n)}"
    # said in 2024: Omar has worked at Acme since 2019 (a stated valid interval)
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": who}, "key": "employer", "value": "Acme",
                                        "valid_from": "2019-01-01T00:00:00Z"}],
                           "observed_at": "2024-01-05T00:00:00Z", "scopes": [scope]})
    # said in 2024 with the default validity (from the observed time, open): true "since it was said"
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": who}, "key": "hobby", "value": "chess"}],
                           "observed_at": "2024-01-05T00:00:00Z", "scopes": [scope]})
    r = await mem.recall(f"{who} employer hobby in 2020", lens=[[scope]], include=["facts"], strict_window=True, now=NOW)
    texts = " ".join(h.text for h in r.hits)
    assert "Acme" in texts and "chess" not in texts


@pytest.mark.parametrize(("opts", "field"), [
    ({"now": "yesterday"}, "now"),
    ({"now": "2023-02-31T00:00:00Z"}, "now"),
    ({"now": 5}, "now"),
    ({"window_weight": -0.1}, "windowWeight"),
    ({"window_weight": 11}, "windowWeight"),
    ({"window_weight": float("nan")}, "windowWeight"),
    ({"query_window": "yes"}, "queryWindow"),
    ({"strict_window": 1}, "strictWindow"),
])
async def test_bad_window_options_are_typed_errors_and_write_nothing(mem, db, opts, field):
    before = await traces(db)
    with pytest.raises(InvalidInput, match=field):
        await mem.recall("hiking in May 2023", mode="bm25", **opts)
    assert await traces(db) == before


async def test_raw_surrealql_equals_python(mem, db):
    scope, _ = await hikes(mem)
    (raw,) = await db.query("RETURN fn::amem::recall($q, NONE, {mode: 'bm25', lens: [[$s]], now: <datetime> $now, windowWeight: 1})",
                            {"q": Q, "s": scope, "now": NOW})
    py = await mem.recall(Q, mode="bm25", lens=[[scope]], now=NOW, window_weight=1.0)
    assert raw["queryWindow"]["phrase"] == py.query_window.phrase
    assert [plain(h["id"]) for h in raw["hits"]] == [h.id for h in py.hits] and py.hits


# --- the CLI ---------------------------------------------------------------------------
def test_cli_recall_window_options(tmp_path):
    from typer.testing import CliRunner

    from amem_db.cli import app

    def cli(*args: str):
        return CliRunner().invoke(app, ["--url", f"surrealkv://{tmp_path / 'db'}", "--embedder", "hash:384", *args], prog_name="amem-db")

    assert cli("migrate").exit_code == 0
    for when, text in [("2023-05-08T09:00:00Z", "Lena painted a lake"), ("2023-09-01T09:00:00Z", "Lena painted a lake at dawn, painted twice")]:
        done = cli("remember", text, "--category", "knowledge", "--observed-at", when)
        assert done.exit_code == 0, done.output
    strict = json.loads(cli("recall", "what did Lena paint last May", "--now", NOW, "--strict-window", "--json").stdout)
    assert strict["queryWindow"]["phrase"] == "last may"
    assert [h["text"] for h in strict["hits"]] == ["Lena painted a lake"]
    off = json.loads(cli("recall", "what did Lena paint last May", "--now", NOW, "--no-query-window", "--json").stdout)
    assert off["queryWindow"] is None and len(off["hits"]) == 2
    table = cli("recall", "what did Lena paint in May 2023", "--window-weight", "2")
    assert table.exit_code == 0, table.output
    assert "window 'in may 2023' 2023-05-01 .. 2023-06-01" in table.stdout
    bad = cli("recall", "Lena", "--now", "soon")
    assert bad.exit_code == 1 and "now must be a datetime" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


async def test_now_defaults_to_the_clock_known_time(mem):
    scope, ids = await hikes(mem)
    # asOf 3 October 2023: "last month" is September 2023 (what was believed then, about then)
    r = await mem.recall("Nora hiking last month", lens=[[scope]], strict_window=True, as_of="2023-10-03T12:00:00Z")
    assert r.query_window is not None and r.query_window.from_ == datetime(2023, 9, 1, tzinfo=UTC)
    assert [h.id for h in r.hits] == [ids["2023-09"]]


async def test_now_takes_every_time_string_the_other_options_take(db):
    """`now` is parsed like asOf and observed_at (fn::amem::facts::time): a time without seconds or
    zone is UTC; before, "2024-06-01T12:00Z" passed the option check and failed the engine's cast untyped."""
    for now in ["2024-06-01T12:00Z", "2024-06-01T12:00", "2024-06-01 12:00:00"]:
        (got,) = await db.query("RETURN fn::amem::window::options('what happened last week', { now: $now }, time::now())", {"now": now})
        assert got["now"] == datetime(2024, 6, 1, 12, tzinfo=UTC) and got["parsed"]["phrase"] == "last week", now
