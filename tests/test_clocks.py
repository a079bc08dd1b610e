"""The three clocks (issue 12, MEMORY.md section 3) on the real engine.

The contract is the oracle test: hypothesis draws random timelines (writes with
random values, valid intervals, observed times, supersessions, late arrivals,
low-confidence statements, retractions, forgets, several scopes) and random reads
(asOf, validAt, validDuring, validFrom / validUntil, their combinations, lenses);
every answer of entities.get, entities.history and facts.diff must equal the plain
model in tests/clock_model.py. 100 timelines in `make test-fast`, 500 in `make test`.

Then behaviour tests: the worked example of the issue ("what did we believe last
June about who was CTO in 2021"), bad options, atInstant on versioned storage and
its typed refusal elsewhere, raw SurrealQL = Python."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime, timedelta

import pytest
from clock_model import Clock, Timeline
from helpers import mem  # noqa: F401  (a fixture)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem_db import InvalidInput, Memory, NotFound, NotVersioned
from amem_db.db import call
from amem_db.embedding import get_embedder

EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
SCOPES = [("org/a",), ("org/b",), ("org/a/x",)]
LENSES = [None, [["org/a"]], [["org/b"]], [["org/a/x"], ["org/b"]]]
_n = itertools.count()


def day(n: int) -> datetime:
    return EPOCH + timedelta(days=n)


# --- the oracle -------------------------------------------------------------------------------
# Times on a monthly grid (2020-01 .. 2026-06; the wall clock is later, so "now" is after
# every known time): coincident and nearby instants are common, which is where the rules
# differ. A statement is mostly observed soon after it starts to hold, sometimes long
# after (a back-dated correction), sometimes before (announced ahead).
months = st.integers(0, 78).map(lambda m: m * 30)


@st.composite
def timeline(draw) -> list[dict]:
    """Up to 8 operations on one entity: writes (most), retractions, forgets. Mostly one
    key and one scope, so that statements meet: supersessions, late arrivals and
    low-confidence rivals are common, not rare."""
    ops: list[dict] = []
    start = draw(months)
    for _ in range(draw(st.sampled_from([5, 8, 6, 3, 7, 4, 2]))):
        kind = draw(st.sampled_from(range(10)))
        if kind == 9 and ops:
            ops.append({"op": "forget", "pick": draw(st.integers(0, 20))})
            continue
        op = {
            "op": "retract" if kind == 8 else "write",
            "key": draw(st.sampled_from(["role"] * 5 + ["works_at"])),
            "scopes": draw(st.sampled_from([SCOPES[0]] * 5 + SCOPES[1:])),
            # mostly later than the last statement (a change), sometimes earlier (a late arrival)
            "valid_from": max(0, start + 30 * draw(st.sampled_from([3, 6, 1, 12, -2, 9, 0, 24]))),
            # observed mostly soon after the statement starts to hold; sometimes long after
            # (a back-dated correction) or before (announced ahead)
            "lag": 30 * draw(st.sampled_from([0, 1, 4, 9, 2, 15, -3, 24, 6, -6])),
        }
        if op["op"] == "write":
            op["value"] = draw(st.sampled_from(["v1", "v2", "v3"]))
            op["confidence"] = draw(st.sampled_from([1.0, 1.0, 0.9, 0.5]))
            # mostly open-ended (a row still open now can be superseded), else a bounded stint
            op["length"] = draw(st.sampled_from([None, None, 2400, None, 360, None, 1200, None, 90]))
        start = op["valid_from"]
        ops.append(op)
    return ops


def clock(times: list[datetime]) -> st.SearchStrategy[dict]:
    """Read options at the timeline's own instants (a day before, on, a day after each):
    the boundaries are where the rules differ."""
    instant = st.sampled_from(sorted({t + timedelta(days=d) for t in times for d in (-1, 0, 1)}))
    rarely = st.one_of(st.none(), st.none(), instant)
    return st.fixed_dictionaries({
        "as_of": st.one_of(st.none(), instant, instant), "valid_at": rarely,
        "during": st.one_of(st.none(), st.none(), st.tuples(instant, st.integers(1, 24).map(lambda m: timedelta(days=30 * m)))),
        "valid_from": rarely, "valid_until": rarely, "lens": st.sampled_from(LENSES),
    })


def instants(model: Timeline) -> list[datetime]:
    """Every time a row of the timeline has: known, closed, valid from, valid until (stated or closed)."""
    times = {t for r in model.rows for t in (r.recorded_at, r.closed_at, r.valid_from, r.valid_until, r.stated_until)}
    return sorted(t for t in times if t is not None) or [EPOCH]


def observed(op: dict) -> int:
    """The known time of a write: never in the future (facts::check refuses it)."""
    return min(max(0, op["valid_from"] + op["lag"]), 78 * 30)


def triple(who: str, op: dict) -> dict:
    entity = {"type": "person", "name": who}
    t: dict = {"entity": entity, "key": op["key"], "valid_from": day(op["valid_from"]).isoformat()}
    if op["op"] == "retract":
        return {**t, "retract": True}
    if op["length"] is not None:
        t["valid_until"] = day(op["valid_from"] + op["length"]).isoformat()
    t["confidence"] = op["confidence"]
    if op["key"] == "works_at":
        return {**t, "target": {"type": "organisation", "name": op["value"]}}
    return {**t, "value": op["value"]}


async def play(mem, who: str, ops: list[dict], snapshots: list | None = None) -> Timeline:
    """Write the timeline to the engine and the model; outcomes must agree. With
    ``snapshots``: after each operation, (the database's clock, a copy of the model)."""
    model = Timeline()
    for op in ops:
        if snapshots is not None and model.rows:
            (instant,) = await mem.conn.query("RETURN time::now()")
            snapshots.append((instant, copy.deepcopy(model)))
        if op["op"] != "forget":  # every write names the entity (a retraction too): known from its first
            model.named = min(model.named or day(observed(op)), day(observed(op)))
        if op["op"] == "forget":
            if model.rows:
                row = model.rows[op["pick"] % len(model.rows)]
                await mem.forget([row.id])
                model.forget(row.id)
            continue
        got = await mem.facts.write({"triples": [triple(who, op)], "scopes": list(op["scopes"]),
                                     "observed_at": day(observed(op)).isoformat()}, embed=False)
        (result,) = got.triples
        end = None if op["op"] == "retract" or op["length"] is None else day(op["valid_from"] + op["length"])
        outcome, row_id = model.write(result.id, op["key"], op.get("value"), op["scopes"], op.get("confidence", 1.0),
                                      day(op["valid_from"]), end, day(observed(op)), datetime.now(UTC))
        assert result.outcome == outcome, (op, result)
        if outcome != "unchanged":
            assert result.id == row_id
    return model


def options(c: dict) -> tuple[dict, Clock]:
    during = None if c["during"] is None else (c["during"][0], c["during"][0] + c["during"][1])
    opts = {"as_of": c["as_of"], "valid_at": c["valid_at"], "valid_during": during, "lens": c["lens"],
            "valid_from": c["valid_from"], "valid_until": c["valid_until"]}
    return opts, Clock(known=c["as_of"] or datetime.now(UTC), valid_at=c["valid_at"], during=during,
                       valid_from=c["valid_from"], valid_until=c["valid_until"])


async def check_reads(mem, who: str, model: Timeline, c: dict) -> None:
    opts, clk = options(c)
    got = await mem.entities.get("person", who, **opts)
    rows = [] if got is None else got.attributes + got.relations
    assert {r.id for r in rows} == model.get(clk, c["lens"]), opts
    by_id = {r.id: r for r in model.rows}
    for r in rows:  # the interval as believed at the read's known time
        assert r.valid_until == by_id[r.id].until_at(clk.known), (opts, r.id)
    for key in ("role", "works_at"):
        if not any(r.key == key for r in model.rows):
            continue
        try:
            h = await mem.entities.history("person", who, key, **opts)
        except NotFound:  # the entity was not named yet at the read's known time
            assert model.named is None or model.named > clk.known, opts
            continue
        assert {r.id: r.current for r in h.rows} == model.history(key, clk, c["lens"]), (opts, key)


async def check_diff(mem, who: str, model: Timeline, a: datetime, b: datetime) -> None:
    t1, t2 = min(a, b), max(a, b) + timedelta(days=1)
    d = await mem.facts.diff(t1, t2, entity=("person", who))
    added, closed, changed = model.diff(t1, t2)
    assert {r.id for r in d.added} == added
    assert {r.id for r in d.closed} == closed
    assert {c.key for c in d.changed} == {key for key, _ in changed}


async def oracle(mem, ops, data) -> None:
    who = f"Timeline {next(_n)}"
    model = await play(mem, who, ops)
    times = instants(model)
    for c in data.draw(st.lists(clock(times), min_size=2, max_size=6), label="reads"):
        await check_reads(mem, who, model, c)
    await check_diff(mem, who, model, *data.draw(st.tuples(st.sampled_from(times), st.sampled_from(times)), label="diff"))


SETTINGS = {"deadline": None, "derandomize": True, "database": None,
            "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]}


@settings(max_examples=100, **SETTINGS)
@given(ops=timeline(), data=st.data())
async def test_oracle_reads_equal_the_model(mem, ops, data):
    await oracle(mem, ops, data)


@pytest.mark.slow
@settings(max_examples=400, **SETTINGS)
@given(ops=timeline(), data=st.data())
async def test_oracle_reads_equal_the_model_400_more(mem, ops, data):
    await oracle(mem, ops, data)


# --- behaviour --------------------------------------------------------------------------------
async def test_what_we_believed_last_june_about_who_was_cto_in_2021(mem):
    acme = f"Acme {next(_n)}"
    org = {"type": "organisation", "name": acme}

    async def say(value, valid_from, observed):
        return await mem.facts.write({"triples": [{"entity": org, "key": "cto", "value": value, "valid_from": valid_from}],
                                      "observed_at": observed}, embed=False)

    await say("Bob", "2019-01-01", "2019-02-01")
    # in September 2022 we learn that Carol took over in January 2021 (a correction of our past belief)
    await say("Carol", "2021-01-01", "2022-09-01")

    async def cto(**opts):
        got = await mem.entities.get("organisation", acme, **opts)
        return [a.value for a in got.attributes]

    assert await cto() == ["Carol"]
    assert await cto(valid_at="2021-06-01") == ["Carol"]  # what we believe now about 2021
    assert await cto(as_of="2022-06-01", valid_at="2021-06-01") == ["Bob"]  # what we believed last June
    assert await cto(as_of="2022-06-01") == ["Bob"]
    assert await cto(valid_at="2020-06-01") == ["Bob"]
    assert await cto(valid_during=("2020-06-01", "2021-06-01")) == ["Carol", "Bob"]  # newest known first
    assert await mem.entities.get("organisation", acme, as_of="2019-01-15") is None  # not named yet
    history = await mem.entities.history("organisation", acme, "cto", as_of="2022-06-01")
    assert [(r.value, r.valid_until, r.superseded_at, r.current) for r in history.rows] == [("Bob", None, None, True)]
    assert history.clock == {"asOf": datetime(2022, 6, 1, tzinfo=UTC)}
    d = await mem.facts.diff("2022-06-01", "2022-10-01", entity=("organisation", acme))
    assert [(c.key, [r.value for r in c.before], [r.value for r in c.after]) for c in d.changed] == [("cto", ["Bob"], ["Carol"])]
    assert d.added == [] and d.closed == []


async def test_a_future_dated_supersession_keeps_the_old_value_until_it_starts(mem):
    who = f"Dana {next(_n)}"
    ent = {"type": "person", "name": who}
    soon = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    await mem.facts.write({"triples": [{"entity": ent, "key": "role", "value": "VP", "valid_from": "2024-01-01"}]}, embed=False)
    w = await mem.facts.write({"triples": [{"entity": ent, "key": "role", "value": "CTO", "valid_from": soon}]}, embed=False)
    assert w.triples[0].outcome == "superseded"
    # today she is still VP (the interval of the old value ends when the new one starts)
    assert [a.value for a in (await mem.entities.get("person", who)).attributes] == ["VP"]
    later = (datetime.now(UTC) + timedelta(days=31)).isoformat()
    assert [a.value for a in (await mem.entities.get("person", who, valid_at=later)).attributes] == ["CTO"]
    # recall agrees, through the BM25 copy too (attribute_fts.current stays true until the old value ends)
    hits = (await mem.recall(f"{who} role", mode="bm25", include=["facts"])).hits
    assert [h.citation["value"] for h in hits if h.source == "attribute" and who in h.text] == ["VP"]


async def test_an_entity_first_named_later_is_unknown_before(mem):
    who = f"Eve {next(_n)}"
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": who}, "key": "role", "value": "x"}],
                           "observed_at": "2023-03-01"}, embed=False)
    assert await mem.entities.get("person", who, as_of="2023-02-01") is None
    assert await mem.entities.get("person", who, as_of="2023-03-02") is not None
    names = (await mem.entities.list(as_of="2023-02-01", limit=500)).entities
    assert who not in [e.name for e in names]


@pytest.mark.parametrize(("opts", "message"), [
    ({"asOf": "last june"}, "asOf must be a datetime"),
    ({"validDuring": ["2021-01-01"]}, "validDuring must be a pair"),
    ({"validDuring": ["2022-01-01", "2021-01-01"]}, "from before to"),
    ({"validAt": 5}, "validAt must be a datetime"),
    ({"asOff": "2021-01-01"}, "unknown option asOff"),
])
async def test_bad_time_options_are_typed_errors(mem, opts, message):
    with pytest.raises(InvalidInput, match=message):
        await call(mem.conn, "fn::amem::entities::get", "person", "nobody", opts)


async def test_a_statement_observed_in_the_future_is_refused_and_nothing_is_written(mem, db):
    (before,) = await db.query("SELECT count() FROM attribute GROUP ALL")
    later = (datetime.now(UTC) + timedelta(days=2)).isoformat()
    with pytest.raises(InvalidInput, match="observed_at must not be in the future"):
        await mem.facts.write({"triples": [{"entity": {"type": "person", "name": "Future"}, "key": "role", "value": "x"}],
                               "observed_at": later}, embed=False)
    (after,) = await db.query("SELECT count() FROM attribute GROUP ALL")
    assert before == after


async def test_at_instant_is_refused_where_the_storage_keeps_no_versions(mem):
    (versioned,) = await mem.conn.query("RETURN fn::amem::clock::versioned()")
    if versioned:
        pytest.skip("this database keeps versions (AMEM_TEST_URL on versioned storage)")
    with pytest.raises(NotVersioned, match="surrealkv\\+versioned://"):
        await mem.entities.get("person", "anyone", at_instant="2024-01-01")


async def test_raw_surrealql_gives_the_same_answer_as_python(mem):
    who = f"Raw {next(_n)}"
    org = {"type": "person", "name": who}
    await mem.facts.write({"triples": [{"entity": org, "key": "role", "value": "a", "valid_from": "2020-01-01"}], "observed_at": "2020-01-02"}, embed=False)
    await mem.facts.write({"triples": [{"entity": org, "key": "role", "value": "b", "valid_from": "2021-01-01"}], "observed_at": "2021-01-02"}, embed=False)
    (raw,) = await mem.conn.query("RETURN fn::amem::entities::get('person', $who, { asOf: d'2020-06-01T00:00:00Z' })", {"who": who})
    py = await mem.entities.get("person", who, as_of="2020-06-01T00:00:00Z")
    assert [a["value"] for a in raw["attributes"]] == [a.value for a in py.attributes] == ["a"]
    (diff,) = await mem.conn.query("RETURN fn::amem::facts::diff('2020-06-01', '2021-06-01', { entity: { type: 'person', name: $who } })", {"who": who})
    assert [c["key"] for c in diff["changed"]] == ["role"]


# --- system time: the oracle on versioned storage ------------------------------------------------
@pytest.fixture(scope="module")
async def vmem(tmp_path_factory):
    mem = await Memory.open(f"surrealkv+versioned://{tmp_path_factory.mktemp('versioned') / 'db'}",
                            embedder=get_embedder("hash:384"), migrate=True)
    yield mem
    await mem.close()


@settings(max_examples=40, **SETTINGS)
@given(ops=timeline(), data=st.data())
async def test_oracle_on_versioned_storage_at_instant_and_as_of(vmem, ops, data):
    """On surrealkv+versioned://: atInstant t (after some of the timeline's operations)
    answers as the model of just those operations; asOf / valid reads as on mem://."""
    who = f"Versioned {next(_n)}"
    snapshots: list = []
    model = await play(vmem, who, ops, snapshots)
    for instant, before in data.draw(st.lists(st.sampled_from(snapshots), max_size=3), label="instants") if snapshots else []:
        got = await vmem.entities.get("person", who, at_instant=instant)
        rows = [] if got is None else got.attributes + got.relations
        assert {r.id for r in rows} == before.get(Clock(known=instant)), instant
    for c in data.draw(st.lists(clock(instants(model)), min_size=1, max_size=2), label="reads"):
        await check_reads(vmem, who, model, c)


async def test_at_instant_reads_the_database_as_it_was(tmp_path):
    mem = await Memory.open(f"surrealkv+versioned://{tmp_path / 'v'}", embedder=get_embedder("hash:384"), migrate=True)
    try:
        ent = {"type": "person", "name": "Vera"}
        await mem.facts.write({"triples": [{"entity": ent, "key": "role", "value": "analyst"}]}, embed=False)
        (before,) = await mem.conn.query("RETURN time::now()")
        await mem.facts.write({"triples": [{"entity": ent, "key": "role", "value": "lead"}]}, embed=False)
        await mem.facts.write({"triples": [{"entity": {"type": "person", "name": "Walt"}, "key": "role", "value": "x"}]}, embed=False)
        assert [a.value for a in (await mem.entities.get("person", "Vera", at_instant=before)).attributes] == ["analyst"]
        assert [a.value for a in (await mem.entities.get("person", "Vera")).attributes] == ["lead"]
        assert [r.value for r in (await mem.entities.history("person", "Vera", "role", at_instant=before)).rows] == ["analyst"]
        assert await mem.entities.get("person", "Walt", at_instant=before) is None
        assert (await mem.entities.list(at_instant=before)).total == 1
        # recall: today's indexes find the candidates, their rows as stored then decide
        hits = (await mem.recall("Vera role", mode="bm25", include=["facts"], at_instant=before)).hits
        assert [h.citation["value"] for h in hits if h.source == "attribute" and "Vera" in h.text] == ["analyst"]
        hits = (await mem.recall("Walt role", mode="bm25", include=["facts"], at_instant=before)).hits
        assert [h for h in hits if "Walt" in h.text] == []  # written after the instant
        hits = (await mem.recall("Vera role", mode="bm25", include=["facts"])).hits
        assert [h.citation["value"] for h in hits if h.source == "attribute" and "Vera" in h.text] == ["lead"]
    finally:
        await mem.close()


# --- recall at a clock --------------------------------------------------------------------------
async def test_recall_at_a_known_time_and_a_valid_time(mem):
    org = {"type": "organisation", "name": f"Globex {next(_n)}"}

    async def say(value, valid_from, observed, text=None):
        request = {"triples": [{"entity": org, "key": "cto", "value": value, "valid_from": valid_from}], "observed_at": observed,
                   "category": "knowledge"}
        if text:
            request["text"] = text
        await mem.facts.write(request)

    await say("Bob Stone", "2019-01-01", "2019-02-01", text=f"{org['name']} hired Bob Stone as CTO.")
    await say("Carol Reyes", "2021-01-01", "2022-09-01", text=f"{org['name']} named Carol Reyes CTO.")
    query = f"who is the CTO of {org['name']}"

    async def facts(**opts):
        r = await mem.recall(query, mode="bm25", include=["facts"], **opts)
        return [h.citation.get("value") for h in r.hits if h.source == "attribute" and org["name"] in h.text], r

    assert (await facts())[0] == ["Carol Reyes"]
    values, r = await facts(as_of="2022-06-01")
    assert values == ["Bob Stone"]  # the correction was not known yet
    assert r.clock == {"asOf": datetime(2022, 6, 1, tzinfo=UTC)}
    assert (await facts(as_of="2022-06-01", valid_at="2021-06-01"))[0] == ["Bob Stone"]
    assert (await facts(valid_at="2021-06-01"))[0] == ["Carol Reyes"]
    assert (await facts(valid_at="2020-06-01"))[0] == ["Bob Stone"]
    # the believed interval: under asOf June 2022 Bob's term was still open
    (hit,) = [h for h in (await mem.recall(query, mode="bm25", include=["facts"], as_of="2022-06-01")).hits
              if h.source == "attribute" and org["name"] in h.text]
    assert hit.valid_until is None
    # memory passages: known from their write's observed time
    passages = await mem.recall(query, mode="bm25", include=["passages"], as_of="2022-06-01")
    assert [h.text for h in passages.hits if h.source == "memory_chunk" and org["name"] in h.text] == [
        f"{org['name']} hired Bob Stone as CTO."]
    with pytest.raises(NotVersioned):  # mem://: no versions at all (on versioned storage: below)
        await call(mem.conn, "fn::amem::recall", query, None, {"mode": "bm25", "atInstant": "2024-01-01"})


@pytest.mark.parametrize(("text", "expected"), [
    ("2024-02-29", datetime(2024, 2, 29, tzinfo=UTC)),
    ("2024-01-01T10:00", datetime(2024, 1, 1, 10, tzinfo=UTC)),          # no seconds, no zone: UTC
    ("2024-01-01 10:00:00", datetime(2024, 1, 1, 10, tzinfo=UTC)),
    ("2024-06-01T10:00-04:00", datetime(2024, 6, 1, 14, tzinfo=UTC)),
    ("2024-01-01T10:00:00.5Z", datetime(2024, 1, 1, 10, 0, 0, 500000, tzinfo=UTC)),
    ("2023-02-29", None), ("2023-02-31", None), ("2024-13-01", None), ("2024-00-10", None),
    ("2024-01-01T25:00:00Z", None), ("2024-01-01T10:61", None), ("2024-01-01T10:00+25:00", None),
])
async def test_time_strings_parse_or_fail_typed(mem, text, expected):
    """Every string the ISO pattern admits either parses or is a typed error: the engine's own cast
    refuses 31 February (untyped) and a time without seconds or zone (we fill them in)."""
    if expected is None:
        with pytest.raises(InvalidInput, match="not a calendar date and time"):
            await call(mem.conn, "fn::amem::facts::time", text, "asOf")
    else:
        assert await call(mem.conn, "fn::amem::facts::time", text, "asOf") == expected


async def test_space_and_query_windows_on_versioned_storage_with_the_clocks(vmem):
    """The other read options of issue 12 on surrealkv+versioned:// beside the clocks: a near filter,
    a query window, asOf and atInstant in one recall each."""
    north = {"type": "location", "name": f"Kelp Farm North {next(_n)}"}
    south = {"type": "location", "name": f"Kelp Farm South {next(_n)}"}
    await vmem.facts.write({"triples": [{"entity": north, "key": "harvest", "value": "spring kelp"}],
                            "observed_at": "2023-05-08T00:00:00Z", "location": {"lat": 64.0, "lng": -21.0}})
    (between,) = await vmem.conn.query("RETURN time::now()")
    await vmem.facts.write({"triples": [{"entity": south, "key": "harvest", "value": "autumn kelp"}],
                            "observed_at": "2023-09-20T00:00:00Z", "location": {"lat": -41.0, "lng": 174.0}})

    def harvests(r):
        return sorted(h.citation["value"] for h in r.hits if h.source == "attribute" and "Kelp Farm" in h.text)

    near_north = {"near": {"lat": 64.0, "lng": -21.0, "radiusKm": 100}}
    assert harvests(await vmem.recall("kelp harvest", mode="bm25", location=near_north)) == ["spring kelp"]
    windowed = await vmem.recall("kelp harvest in September 2023", mode="bm25", strict_window=True)
    assert windowed.query_window is not None and harvests(windowed) == ["autumn kelp"]
    assert harvests(await vmem.recall("kelp harvest", mode="bm25", as_of="2023-06-01")) == ["spring kelp"]
    assert harvests(await vmem.recall("kelp harvest", mode="bm25", at_instant=between)) == ["spring kelp"]
    assert harvests(await vmem.recall("kelp harvest", mode="bm25")) == ["autumn kelp", "spring kelp"]
