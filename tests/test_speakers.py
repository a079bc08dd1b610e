"""Speakers as entities and the adjacency signal of recall (issue 26, levers 1 and 2).

A write's ``speaker`` (fn::amem::facts::speaker) names a person entity in the write's
scopes and links every passage of the write to it with a span-less mentions edge
(fn::amem::mentions::spoken); names in the text link through the mentions matcher. A
forget of the turn takes its edges (purge) or hides the turn from every walk (soft).
The graph leg then reaches the named speaker's turns. The adjacency signal
(fn::amem::recall::adjacent) lends the session neighbours of a strong passage hit a
share of its score, visible in the trace ledger and in explain.

Each test writes a conversation in a scope of its own and recalls under that lens."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from helpers import hash_memory

from amem_db import InvalidInput
from amem_db.constants import ADJACENT_DECAY

_n = itertools.count()
BASE = datetime(2023, 5, 1, 10, 0, tzinfo=UTC)

# a hand-made two-person conversation: (speaker, text); Caroline's research is turn 3
TURNS = [
    ("Caroline", "Hey Mel, good to see you again"),
    ("Melanie", "Hi! What have you been up to lately?"),
    ("Caroline", "I researched adoption agencies all week"),
    ("Melanie", "That is wonderful news about the agencies"),
    ("Melanie", "I went camping with my kids by the lake"),
    ("Caroline", "Camping sounds lovely, was the weather good"),
    ("Melanie", "Sunny and warm, we swam every morning"),
]


@pytest.fixture(scope="module")
async def mem(db):
    return hash_memory(db)


def rid(x) -> str:
    """A record id as text, whichever way it arrived (RecordID, or the engine's ⟨⟩ string)."""
    return str(x).replace("⟨", "").replace("⟩", "")


def scope() -> str:
    return f"conv/s{next(_n)}"


async def write_conversation(mem, sc: str, turns=TURNS, *, session: str = "session-1", speaker: bool = True) -> list:
    """One write per turn, in order (a session's write order is its turn order)."""
    out = []
    for i, (who, text) in enumerate(turns):
        req = {"text": f"{who}: {text}", "scopes": [sc], "session_id": f"{sc}:{session}", "category": "knowledge",
               "observed_at": (BASE + timedelta(minutes=i)).isoformat(), "source": {"kind": "turn", "ref": f"{sc}:{i}"}}
        if speaker:
            req["speaker"] = who
        out.append(await mem.facts.write(req))
    return out


def renamed(a: str, b: str) -> list[tuple[str, str]]:
    """TURNS with Caroline and Melanie renamed: an entity is shared by every scope that names
    it, so a test that gives a speaker a fact uses names no other test gives one."""
    return [({"Caroline": a, "Melanie": b}[who], text) for who, text in TURNS]


async def edges_of(mem, passage: str) -> list[dict]:
    (rows,) = await mem.conn.query(f"SELECT out, char_start, char_end, scopes FROM mentions WHERE in = {passage} ORDER BY char_start")
    return rows


# --- lever 1: speakers ---------------------------------------------------------------------

async def test_a_speaker_is_a_person_entity_linked_to_the_turn(mem):
    sc = scope()
    w = (await write_conversation(mem, sc, TURNS[:1]))[0]
    assert rid(w.model_dump()["speaker"]) == "entity:person/caroline"
    ent = await mem.entities.get("person", "Caroline", lens=[[sc]])
    assert ent is not None and ent.name == "Caroline"
    edges = await edges_of(mem, w.passages[0])
    # the span-less speaker edge and the matcher's edge for "Caroline" in the text, both in the turn's scopes
    assert {(rid(e["out"]), e.get("char_start"), e.get("char_end")) for e in edges} == {
        ("entity:person/caroline", None, None), ("entity:person/caroline", 0, 8)}
    assert all(e["scopes"] == [sc] for e in edges)


async def test_a_bare_turn_gets_its_speaker_edge_and_names_in_the_text_link_too(mem):
    sc = scope()
    await mem.facts.write({"text": "hello there", "scopes": [sc], "speaker": "Melanie"})
    w = await mem.facts.write({"text": "I told Melanie about the trip", "scopes": [sc], "speaker": {"type": "person", "name": "Caroline"}})
    edges = {(rid(e["out"]), e.get("char_start")) for e in await edges_of(mem, w.passages[0])}
    assert edges == {("entity:person/caroline", None), ("entity:person/melanie", 7)}


async def test_an_agent_speaker_keeps_its_type(mem):
    sc = scope()
    w = await mem.facts.write({"text": "I booked the flight", "scopes": [sc], "speaker": {"type": "agent", "name": "Planner"}})
    assert rid(w.model_dump()["speaker"]) == "entity:agent/planner"


@pytest.mark.parametrize("speaker, message", [
    ("", "speaker.name must be a non-empty string"),
    (42, "speaker must be a name"),
    ({"name": "Ann", "role": "x"}, "speaker: unknown option role"),
    ({"type": "person"}, "speaker.name must be a non-empty string"),
    ("Ann\u202e", "speaker.name holds a bidirectional override"),
])
async def test_a_bad_speaker_is_refused_and_nothing_is_written(mem, speaker, message):
    sc = scope()
    with pytest.raises(InvalidInput, match=message):
        await mem.facts.write({"text": "some words", "scopes": [sc], "speaker": speaker})
    (rows, names) = await mem.conn.query("SELECT VALUE id FROM memory_chunk WHERE scopes CONTAINS $s;"
                                         "SELECT VALUE id FROM entity_name WHERE scopes CONTAINS $s", {"s": sc})
    assert rows == [] and names == []


async def test_a_speaker_needs_text(mem):
    with pytest.raises(InvalidInput, match="speaker needs text"):
        await mem.facts.write({"triples": [{"entity": {"type": "person", "name": "Ann"}, "key": "role", "value": "CTO"}],
                               "speaker": "Ann"})


async def test_the_speaker_edge_is_forgotten_with_the_turn(mem):
    sc = scope()
    ws = await write_conversation(mem, sc, TURNS[:3])
    research = ws[2]
    assert await edges_of(mem, research.passages[0])
    hits = await mem.recall("What did Caroline research?", mode="graph", k=10, include=["passages"], lens=[[sc]])
    assert research.passages[0] in [h.id for h in hits.hits]
    # soft: the turn leaves every walk
    await mem.forget(query={"write": research.write})
    hits = await mem.recall("What did Caroline research?", mode="graph", k=10, include=["passages"], lens=[[sc]])
    assert research.passages[0] not in [h.id for h in hits.hits]
    assert {h.id for h in hits.hits} == {ws[0].passages[0]}  # Caroline's other turn
    # purge: its edges are erased with it
    await mem.forget(query={"write": research.write}, purge=True)
    assert await edges_of(mem, research.passages[0]) == []
    assert await edges_of(mem, ws[0].passages[0])  # the other turn keeps its own


async def test_graph_mode_returns_the_named_speakers_turns(mem):
    sc = scope()
    ws = await write_conversation(mem, sc, speaker=True)
    resp = await mem.recall("What did Caroline research?", mode="graph", k=10, include=["passages"], lens=[[sc]])
    caroline = {w.passages[0] for w, (who, _) in zip(ws, TURNS, strict=True) if who == "Caroline"}
    got = {h.id for h in resp.hits}
    assert got and got <= caroline | {w.passages[0] for w, (_, text) in zip(ws, TURNS, strict=True) if "Caroline" in text}
    assert caroline <= got
    assert [s.name for s in resp.seed_entities] == ["Caroline"]
    assert resp.trace["legs"]["graph"]["seeds"] == 1


async def test_graph_mode_orders_the_speakers_turns_by_the_querys_words(mem):
    # one edge each to the same seed: equal walks, so the query's BM25 leg orders them (by id
    # they came in noise order); the trace's prior counts the rows that gave the order
    sc = scope()
    ws = await write_conversation(mem, sc, speaker=True)
    resp = await mem.recall("What did Caroline research?", mode="graph", k=10, include=["passages"], lens=[[sc]])
    assert resp.hits[0].id == ws[2].passages[0]
    assert resp.trace["legs"]["graph"]["prior"] > 0
    camping = await mem.recall("Caroline camping weather", mode="graph", k=10, include=["passages"], lens=[[sc]])
    assert camping.hits[0].id == ws[5].passages[0]
    # the hits are still the walk's: the named speaker's turns only, graph-scored
    caroline = {w.passages[0] for w, (who, _) in zip(ws, TURNS, strict=True) if who == "Caroline"}
    assert {h.id for h in camping.hits} == caroline


async def test_without_speakers_graph_mode_has_nothing_to_walk(mem):
    sc = scope()
    await write_conversation(mem, sc, speaker=False)
    resp = await mem.recall("What did Caroline research?", mode="graph", k=10, include=["passages"], lens=[[sc]])
    assert resp.hits == []


async def test_in_hybrid_the_graph_leg_ranks_the_speakers_turns_in_the_fused_order(mem):
    sc = scope()
    ws = await write_conversation(mem, sc)
    # with the speaker signal off (default 0.2): on, the leg hands these passages to it (next test)
    resp = await mem.recall("What did Caroline research?", k=10, include=["passages"], lens=[[sc]], adjacent_weight=0,
                            speaker_weight=0)
    assert resp.hits[0].id == ws[2].passages[0]
    graph = [h for h in resp.trace["hits"] if h.get("graph")]
    # every graph-ranked hit is one of Caroline's turns; the best of them ranks first in the leg
    caroline = {w.passages[0] for w, (who, _) in zip(ws, TURNS, strict=True) if who == "Caroline"}
    assert graph and {rid(h["id"]) for h in graph} <= caroline
    assert min(graph, key=lambda h: h["graph"]["rank"])["id"] == resp.hits[0].id
    assert resp.trace["legs"]["graph"]["prior"] > 0


async def test_with_the_speaker_signal_the_graph_leg_hands_its_passages_over(mem):
    sc = scope()
    ws = await write_conversation(mem, sc)
    resp = await mem.recall("What did Caroline research?", k=10, include=["passages"], lens=[[sc]], adjacent_weight=0,
                            speaker_weight=0.2)
    assert resp.hits[0].id == ws[2].passages[0]
    assert not [h for h in resp.trace["hits"] if h.get("graph")]
    leg = resp.trace["legs"]["graph"]
    # Caroline has no fact: the leg does not walk to her turns at all, it hands her over
    assert leg["returned"] == 0 and leg["seeds"] == 1 and leg["speakerSeeds"] == 1 and "mentions" not in leg
    caroline = {w.passages[0] for w, (who, _) in zip(ws, TURNS, strict=True) if who == "Caroline"}
    assert {rid(h["id"]) for h in resp.trace["hits"] if h.get("speaker")} == caroline
    # mode graph still walks to them
    graph = await mem.recall("What did Caroline research?", mode="graph", k=10, include=["passages"], lens=[[sc]])
    assert caroline <= {h.id for h in graph.hits}
    # with the signal off the leg walks them (and votes for them)
    off = await mem.recall("What did Caroline research?", k=10, include=["passages"], lens=[[sc]], adjacent_weight=0,
                           speaker_weight=0)
    assert off.trace["legs"]["graph"]["mentions"] > 0 and "speakerSeeds" not in off.trace["legs"]["graph"]


async def test_the_graph_leg_walks_from_a_seed_with_facts_and_hands_the_factless_one_over(mem):
    sc = scope()
    ws = await write_conversation(mem, sc, renamed("Astrid", "Beatrix"))
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": "Beatrix"}, "key": "hobby", "value": "camping"}],
                           "scopes": [sc]})
    q = "What did Astrid tell Beatrix about camping?"
    resp = await mem.recall(q, k=10, lens=[[sc]], adjacent_weight=0)
    leg = resp.trace["legs"]["graph"]
    assert leg["seeds"] == 2 and leg["speakerSeeds"] == 1
    # the walk from Melanie reached her turns (handed to the signal) and her attribute (ranked)
    assert leg["passagesToSpeakerSignal"] > 0 and leg["attributes"] == 1 and leg["returned"] >= 1
    assert any(rid(h["id"]).startswith("attribute:") for h in resp.trace["hits"] if h.get("graph"))
    # both speakers' turns are lifted by the signal, Caroline's unwalked
    both = {w.passages[0] for w in ws}
    assert {rid(h["id"]) for h in resp.trace["hits"] if h.get("speaker")} <= both
    assert {rid(e) for h in resp.trace["hits"] if h.get("speaker") for e in h["speaker"]["entities"]} == {
        "entity:person/astrid", "entity:person/beatrix"}


# --- lever 2: the adjacency signal -----------------------------------------------------------

async def test_the_adjacency_signal_lifts_the_neighbours_of_a_strong_hit(mem):
    sc = scope()
    ws = await write_conversation(mem, sc, speaker=False)
    (other,) = await write_conversation(mem, sc, [("Melanie", "Camping by the lake again, tomatoes")], session="session-2", speaker=False)
    q = "Who went camping by the lake?"
    off = await mem.recall(q, k=10, include=["passages"], lens=[[sc]], adjacent_weight=0)
    on = await mem.recall(q, k=10, include=["passages"], lens=[[sc]], adjacent_weight=0.5)
    best = ws[4].passages[0]
    assert off.hits[0].id == best and on.hits[0].id == best
    score_off = {h.id: h.score for h in off.hits}
    lifted = {rid(h["id"]): h["adjacent"] for h in on.trace["hits"] if h.get("adjacent")}
    # the neighbours at distance 1 and 2 in the session, lifted by a share of the best hit's score
    # (every turn of this small conversation is a strong hit: a passage takes the largest offer)
    top = on.hits[0].score
    for i in (3, 5):
        a = lifted[ws[i].passages[0]]
        assert a["distance"] == 1 and rid(a["from"]) == rid(best) and a["share"] == pytest.approx(0.5)
        assert a["lift"] == pytest.approx(a["share"] * a["base"])
    for i in (2, 6):  # two turns away: at least the best hit's offer at distance 2
        a = lifted[ws[i].passages[0]]
        assert a["lift"] == pytest.approx(a["share"] * a["base"])
        assert a["share"] in (pytest.approx(0.5), pytest.approx(0.5 * ADJACENT_DECAY))
        assert a["lift"] >= 0.5 * ADJACENT_DECAY * score_off[best] - 1e-9
    score_on = {h.id: h.score for h in on.hits}
    n = ws[3].passages[0]
    assert score_on[n] == pytest.approx(min(1.0, score_off.get(n, 0.0) + lifted[n]["lift"]), abs=1e-6)
    # the other session's passage is nobody's neighbour; the trace stores the option
    assert other.passages[0] not in lifted and top <= 1.0
    assert on.trace["options"]["adjacentWeight"] == 0.5
    assert all(not h.get("adjacent") for h in off.trace["hits"])


async def test_a_neighbour_no_leg_found_joins_and_explain_shows_the_lift(mem):
    sc = scope()
    ws = await write_conversation(mem, sc, speaker=False)
    on = await mem.recall("adoption agencies researched", k=10, include=["passages"], lens=[[sc]], adjacent_weight=0.5)
    ids = [h.id for h in on.hits]
    assert ids[0] == ws[2].passages[0]
    # turn 1 ("Hi! What have you been up to lately?") shares no word with the query
    quiet = ws[1].passages[0]
    assert quiet in ids
    why = await mem.traces.explain(on.trace["id"], quiet)
    rows = {r.signal: r for r in why.ledger}
    assert set(rows) == {"adjacent"}
    assert rows["adjacent"].contribution == pytest.approx(rows["adjacent"].weight * rows["adjacent"].value)
    assert "lifted by " + ws[2].passages[0] in rows["adjacent"].note
    assert any(d.startswith("adjacent: ") for d in why.decisions)


async def test_a_forgotten_neighbour_is_not_lifted_and_modes_other_than_hybrid_ignore_it(mem):
    sc = scope()
    ws = await write_conversation(mem, sc, speaker=False)
    await mem.forget([ws[1].passages[0]])
    on = await mem.recall("adoption agencies researched", k=10, include=["passages"], lens=[[sc]], adjacent_weight=0.5)
    assert ws[1].passages[0] not in [h.id for h in on.hits]
    lifted = {rid(h["id"]) for h in on.trace["hits"] if h.get("adjacent")}
    assert ws[3].passages[0] in lifted  # the next one still is
    bm25 = await mem.recall("adoption agencies researched", mode="bm25", k=10, include=["passages"], lens=[[sc]], adjacent_weight=0.5)
    assert all(not h.get("adjacent") for h in bm25.trace["hits"])


async def positions(mem, sc: str) -> dict[str, list]:
    """{session_id: [(session_pos, session_key, text)]} of a scope's passages, by position."""
    (rows,) = await mem.conn.query("SELECT session_id, session_pos, session_key, text FROM memory_chunk WHERE scopes CONTAINS $s "
                                   "ORDER BY session_pos", {"s": sc})
    out: dict[str, list] = {}
    for r in rows:
        out.setdefault(r.get("session_id"), []).append((r.get("session_pos"), r.get("session_key"), r["text"]))
    return out


async def test_a_passage_gets_its_place_in_its_session_at_write_time(mem):
    sc = scope()
    ws = await write_conversation(mem, sc, TURNS[:2])
    # a batch continues the sessions it writes to, in request order; a write without session has none
    reqs = [{"text": f"batch {i}", "scopes": [sc], "session_id": f"{sc}:{'session-1' if i % 2 == 0 else 'session-2'}"} for i in range(4)]
    res = await mem.facts.write_many(reqs + [{"text": "no session", "scopes": [sc]}])
    assert not res.errors
    await mem.facts.write({"text": "Melanie: and one more", "scopes": [sc], "session_id": f"{sc}:session-1"})
    got = await positions(mem, sc)
    s1, s2 = f"{sc}:session-1", f"{sc}:session-2"
    assert [(p, t) for p, _, t in got[s1]] == [(0, "Caroline: Hey Mel, good to see you again"), (1, "Melanie: Hi! What have you been up to lately?"),
                                              (2, "batch 0"), (3, "batch 2"), (4, "Melanie: and one more")]
    assert [(p, k, t) for p, k, t in got[s2]] == [(0, f"{s2}#0", "batch 1"), (1, f"{s2}#1", "batch 3")]
    assert got[None] == [(None, None, "no session")]
    assert ws[0].passages[0] != ws[1].passages[0]


async def test_migration_0022_numbers_the_passages_written_before_in_write_order(tmp_path):
    """Existing data: the passages of a session get the positions the old signal ordered them
    by (created_at, then id); a passage written after the upgrade continues the session."""
    from pathlib import Path

    from helpers import make_target, older_release

    from amem_db.connection import close_quietly, open_connection
    from amem_db.migrator import Migrator

    root = Path(__file__).resolve().parent.parent
    before, old_surql = older_release(tmp_path, "0022")
    # that release indexed session_id alone (older_release drops the indexes of session_pos / session_key)
    idx = old_surql / "030_lookup_indexes.surql.j2"
    idx.write_text(idx.read_text() + "DEFINE INDEX OVERWRITE memory_chunk_session ON memory_chunk FIELDS session_id;\n")
    conn = await open_connection(make_target("m22"))
    try:
        await Migrator(conn, migrations_dir=before, surql_dir=old_surql).migrate({"embedding_dim": 384})
        rows = [("b", "s1", "2024-01-01T00:00:02Z"), ("a", "s1", "2024-01-01T00:00:01Z"), ("c", "s1", "2024-01-01T00:00:02Z"),
                ("x", "s2", "2024-01-01T00:00:05Z"), ("n", None, "2024-01-01T00:00:00Z")]
        for key, session, at in rows:
            await conn.query("CREATE type::record('memory_chunk', $k) CONTENT { text: $k, position: 0, char_start: 0, char_end: 1, "
                             "write: $k, session_id: $s, scopes: ['conv/m'], created_at: <datetime> $at }", {"k": key, "s": session, "at": at})
        await Migrator(conn, migrations_dir=root / "migrations", surql_dir=root / "surql").migrate({"embedding_dim": 384})
        (got,) = await conn.query("SELECT VALUE [record::id(id), session_pos, session_key] FROM memory_chunk ORDER BY id")
        assert got == [["a", 0, "s1#0"], ["b", 1, "s1#1"], ["c", 2, "s1#2"], ["n", None, None], ["x", 0, "s2#0"]]
        (idx,) = await conn.query("INFO FOR TABLE memory_chunk")
        assert "memory_chunk_session" not in idx["indexes"] and "memory_chunk_session_key" in idx["indexes"]
        w = await hash_memory(conn).facts.write({"text": "after the upgrade", "scopes": ["conv/m"], "session_id": "s1"})
        (pos,) = await conn.query(f"SELECT VALUE session_pos FROM {w.passages[0]}")
        assert pos == [3]
    finally:
        await close_quietly(conn)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "high", True])
@pytest.mark.parametrize(("arg", "key"), [("adjacent_weight", "adjacentWeight"), ("speaker_weight", "speakerWeight")])
async def test_a_bad_adjacent_or_speaker_weight_is_refused(mem, arg, key, bad):
    with pytest.raises(InvalidInput, match=f"{key} must be in"):
        await mem.recall("anything", mode="bm25", **{arg: bad})


async def test_a_batched_write_links_speakers_as_single_writes_do(mem):
    sc = scope()
    reqs = [{"text": f"{who}: {text}", "scopes": [sc], "session_id": f"{sc}:s1", "speaker": who} for who, text in TURNS[:4]]
    res = await mem.facts.write_many(reqs)
    assert not res.errors and res.passages == 4
    (rows,) = await mem.conn.query("SELECT in, out FROM mentions WHERE char_start = NONE AND scopes CONTAINS $s", {"s": sc})
    assert sorted(rid(r["out"]).split("/")[1] for r in rows) == ["caroline", "caroline", "melanie", "melanie"]


async def test_a_speakers_own_entity_row_stays_out_of_the_text_legs_until_it_has_a_fact(mem):
    sc = scope()
    await write_conversation(mem, sc)
    q = "What did Caroline research?"
    for mode in ("hybrid", "bm25", "vector"):
        resp = await mem.recall(q, mode=mode, k=10, lens=[[sc]], adjacent_weight=0)
        assert "entity:person/caroline" not in {rid(h.id) for h in resp.hits}, mode
    resp = await mem.recall(q, mode="bm25", k=10, lens=[[sc]])
    assert resp.trace["legs"]["bm25"]["factlessEntities"] == 1
    assert [s.name for s in resp.seed_entities] == ["Caroline"]
    # a fact about her: her row is a fact-bearing entity like any other, and ranks again
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": "Caroline"}, "key": "hobby", "value": "research"}],
                           "scopes": [sc]})
    resp = await mem.recall(q, mode="bm25", k=10, lens=[[sc]])
    assert "entity:person/caroline" in {rid(h.id) for h in resp.hits}
    assert "factlessEntities" not in resp.trace["legs"]["bm25"]



async def test_tier_4_keeps_a_factless_speaker_out_of_its_wider_legs_too(mem):
    sc = scope()
    ws = await write_conversation(mem, sc, renamed("Cordelia", "Dagmar"))
    q = "What did Cordelia say about camping by the lake?"
    # confidenceFloor 1: tier 4 runs unless the best hit is first in every leg (surql/455_tiers)
    resp = await mem.recall(q, k=10, lens=[[sc]], adjacent_weight=0, confidence_floor=1.0)
    assert resp.escalated is True and resp.tier == 4
    assert "entity:person/cordelia" not in {rid(h.id) for h in resp.hits}
    # the wider graph leg handed Caroline's turns to the speaker signal too: no vote for each of them
    assert resp.tiers["escalation"]["legs"]["graph"] == 0
    assert {h.id for h in resp.hits} <= {w.passages[0] for w in ws}
    # her row ranks again once she has a fact
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": "Cordelia"}, "key": "hobby", "value": "camping"}],
                           "scopes": [sc]})
    again = await mem.recall(q, k=10, lens=[[sc]], adjacent_weight=0, confidence_floor=1.0)
    assert again.escalated is True and "entity:person/cordelia" in {rid(h.id) for h in again.hits}


# --- lever 1, in hybrid: the speaker signal (surql/465_speakers) -------------------------------

async def test_the_speaker_signal_boosts_the_named_speakers_turns_by_its_formula(mem):
    sc = scope()
    ws = await write_conversation(mem, sc)
    q = "What did Caroline say about camping by the lake?"
    common = {"k": 10, "include": ["passages"], "lens": [[sc]], "adjacent_weight": 0, "graph_weight": 0}
    off = await mem.recall(q, speaker_weight=0, **common)
    on = await mem.recall(q, speaker_weight=0.5, **common)
    caroline = {w.passages[0] for w, (who, _) in zip(ws, TURNS, strict=True) if who == "Caroline"}
    before = {h.id: h.score for h in off.hits}
    after = {h.id: h.score for h in on.hits}
    assert set(before) == set(after)
    for pid, s in before.items():
        assert after[pid] == pytest.approx((s + (0.5 if pid in caroline else 0.0)) / 1.5, abs=1e-6)
    lifted = {rid(h["id"]): h["speaker"] for h in on.trace["hits"] if h.get("speaker")}
    assert set(lifted) == caroline & set(after)
    assert all(rid(e) == "entity:person/caroline" for s in lifted.values() for e in s["entities"])
    assert on.trace["options"]["speakers"] == {"ran": True, "weight": 0.5}
    assert all(not h.get("speaker") for h in off.trace["hits"])
    # the best of Caroline's turns now ranks above every turn of Melanie's
    ranks = [h.id for h in on.hits]
    assert min(ranks.index(p) for p in caroline & set(ranks)) < min(ranks.index(p) for p in set(ranks) - caroline)


async def test_the_speaker_signal_is_on_by_default(mem):
    sc = scope()
    await write_conversation(mem, sc)
    resp = await mem.recall("What did Caroline research?", k=10, include=["passages"], lens=[[sc]])
    assert resp.trace["options"]["speakers"] == {"ran": True, "weight": pytest.approx(0.2)}
    # the graph leg handed the turns over and found no other row: it leaves the attainable RRF
    assert resp.trace["legs"]["graph"]["returned"] == 0 and resp.hits[0].score > 0.5


async def test_explain_shows_the_speaker_row_and_the_window_decision_still_holds(mem):
    sc = scope()
    ws = await write_conversation(mem, sc)
    on = await mem.recall("What did Caroline research?", k=10, include=["passages"], lens=[[sc]], speaker_weight=0.5,
                          adjacent_weight=0)
    research = ws[2].passages[0]
    assert on.hits[0].id == research
    why = await mem.traces.explain(on.trace["id"], research)
    rows = {r.signal: r for r in why.ledger}
    assert rows["speaker"].weight == pytest.approx(0.5)
    assert "person/caroline" in rows["speaker"].note
    assert any(d.startswith("speaker: linked to ") for d in why.decisions)
    melanie = ws[1].passages[0]
    if melanie in [h.id for h in on.hits]:
        why = await mem.traces.explain(on.trace["id"], melanie)
        assert "speaker" not in {r.signal for r in why.ledger}
        assert any(d.startswith("speaker: not linked") for d in why.decisions)


async def test_the_speaker_signal_needs_a_named_entity_and_mode_hybrid(mem):
    sc = scope()
    await write_conversation(mem, sc)
    plain = await mem.recall("camping by the lake", k=10, include=["passages"], lens=[[sc]], speaker_weight=0.5)
    assert plain.trace["options"]["speakers"]["ran"] is False
    assert all(not h.get("speaker") for h in plain.trace["hits"])
    bm25 = await mem.recall("What did Caroline research?", mode="bm25", k=10, include=["passages"], lens=[[sc]], speaker_weight=0.5)
    assert all(not h.get("speaker") for h in bm25.trace["hits"])

