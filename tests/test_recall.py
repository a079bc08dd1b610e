"""Unified recall on the real engine (issue 11, MEMORY.md section 2):
fn::amem::recall in every mode and include variant, "current" on every path
(superseded, retracted, expired context facts), labels and lens, the graph leg
(seeds named in the query, relation hops, mentions), the trace, reinforcement,
every bad option with the trace table unchanged, raw SurrealQL = Python, and a
realistic scenario (a role and an employer that change over several writes).
Record-user scope tests live in tests/test_security.py.

The hash embedder keeps vectors deterministic (similarity ~ shared words)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from helpers import attr, hash_memory, migrated, rel
from surrealdb import RecordID

from amem_db import InvalidInput
from amem_db.db import call, plain

FACTS = {"entity", "attribute", "relation"}
PASSAGES = {"memory_chunk", "chunk", "audio_chunk"}
ZORBLAT = ("# Rockets\n\n## Engines\n\nThe Zorblat engine burns kerosene. It was tested in 1999.\n\n"
           "The Zorblat engine has two turbopumps.\n\n## Crew\n\nThe crew trains for six months.")
_n = itertools.count()


def person(prefix: str = "Person") -> str:
    return f"{prefix} Q{next(_n)}"


@pytest.fixture(scope="module")
async def mem(db):
    m = hash_memory(db)
    await m.documents.ingest_text(ZORBLAT, title="zorblat notes", mime_type="text/markdown")
    return m


async def traces(db) -> int:
    (rows,) = await db.query("SELECT count() FROM retrieval_trace GROUP ALL")
    return rows[0]["count"] if rows else 0


def sources(r) -> set[str]:
    return {h.source for h in r.hits}


# --- modes and include ------------------------------------------------------------------
async def test_every_mode_and_include_variant(mem):
    who = person("Mode")
    await mem.facts.write({"triples": [attr(who, "favourite_engine", "Zorblat"), rel(who, "works_at", "Zorblat Works")],
                           "text": f"{who} said the Zorblat engine is loud.", "category": "knowledge"})
    q = f"What does {who} think of the Zorblat engine?"
    seen = {}
    for mode in ("hybrid", "vector", "bm25", "graph"):
        r = await mem.recall(q, mode=mode, k=20)
        seen[mode] = sources(r)
        assert r.hits, mode
        assert all(0 <= h.score <= 1 for h in r.hits), mode
        assert [h.score for h in r.hits] == sorted((h.score for h in r.hits), reverse=True), mode
        assert r.trace["mode"] == "recall" and r.trace["options"]["mode"] == mode
    assert {"attribute", "memory_chunk", "chunk"} <= seen["hybrid"]
    assert "chunk" in seen["bm25"] and "memory_chunk" in seen["vector"]
    assert seen["graph"] <= FACTS | {"memory_chunk", "chunk"} and "relation" in seen["graph"]
    facts = await mem.recall(q, include=["facts"], k=20)
    passages = await mem.recall(q, include=["passages"], k=20)
    assert facts.hits and sources(facts) <= FACTS
    assert passages.hits and sources(passages) <= PASSAGES
    # include filters the response only: the trace (what recall saw) has both kinds
    seen_sources = {h["source"] for h in passages.trace["hits"]}
    assert seen_sources & FACTS and any(not h["returned"] for h in passages.trace["hits"])


async def test_hits_carry_their_citation_and_clocks(mem):
    who = person("Cite")
    w = await mem.facts.write({"triples": [attr(who, "badge", "B-17", valid_from="2024-03-01T00:00:00Z")],
                               "text": f"{who} showed badge B-17 at the gate.", "observed_at": "2024-03-02T09:00:00Z",
                               "source": {"kind": "turn", "ref": "conv-1:D1:3", "span": {"start": 0, "end": 20}},
                               "session_id": "s-1", "role": "user", "category": "knowledge"})
    r = await mem.recall(f"{who} badge B-17", k=20)
    fact = next(h for h in r.hits if h.source == "attribute" and who in h.text)
    assert fact.citation["write"] == w.write and fact.citation["key"] == "badge" and fact.citation["value"] == "B-17"
    assert fact.valid_from == datetime(2024, 3, 1, tzinfo=UTC) and fact.valid_until is None
    assert fact.occurred_at == datetime(2024, 3, 2, 9, tzinfo=UTC)
    passage = next(h for h in r.hits if h.source == "memory_chunk" and who in h.text)
    c = passage.citation
    assert c["memoryPassage"] == passage.id == w.passages[0] and c["write"] == w.write
    assert c["source"] == {"kind": "turn", "ref": "conv-1:D1:3", "span": {"start": 0, "end": 20}}
    assert (c["sessionId"], c["role"], c["charStart"]) == ("s-1", "user", 0)
    doc = next(h for h in (await mem.recall("Zorblat engine kerosene turbopumps", k=20)).hits if h.source == "chunk")
    assert doc.citation["document"].startswith("document:") and doc.citation["title"] == "zorblat notes"
    # the offsets cite the document's own text: the cited span is the passage
    assert ZORBLAT[doc.citation["charStart"]:doc.citation["charEnd"]] == doc.text and "Zorblat" in doc.text
    assert doc.occurred_at is None


async def test_context_hits_are_section_siblings_outside_k(mem):
    r = await mem.recall("Zorblat engine kerosene 1999", include=["passages"], k=1)
    assert len(r.hits) == 1 and r.hits[0].source == "chunk"
    assert all(c.expands == r.hits[0].id for c in r.context_hits)
    none = await mem.recall("Zorblat engine kerosene 1999", include=["passages"], k=1, expand_context=False)
    assert none.context_hits == []


# --- "current" on every path -----------------------------------------------------------
async def test_superseded_retracted_and_expired_rows_are_not_recalled(mem):
    who = person("Cur")
    await mem.facts.write({"triples": [attr(who, "title", "intern"), rel(who, "works_at", "Oldco")]})
    await mem.facts.write({"triples": [attr(who, "title", "director"), rel(who, "works_at", "Newco")]})
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": who}, "key": "works_at",
                                        "target": {"type": "company", "name": "Newco"}, "retract": True}]})
    old = (datetime.now(UTC) - timedelta(days=10)).isoformat()
    await mem.facts.write({"triples": [attr(who, "mood", "grumpy", category="context"), attr(who, "pet", "parrot")],
                           "observed_at": old})
    for mode in ("hybrid", "vector", "bm25", "graph"):
        texts = " | ".join(h.text for h in (await mem.recall(f"{who} title works_at Oldco Newco mood pet", mode=mode, k=50)).hits)
        assert "director" in texts or mode == "graph" and "title = director" in texts, (mode, texts)
        # superseded (the intern title, the Oldco edge) and retracted (the Newco edge); the companies stay entities
        assert "title = intern" not in texts and f"{who} works_at" not in texts, (mode, texts)
        assert "grumpy" not in texts, (mode, texts)  # a context fact older than 7 days has expired
        assert "parrot" in texts, (mode, texts)  # a knowledge fact of the same age has not


async def test_labels_must_all_match_and_lens_narrows(mem):
    who = person("Lab")
    await mem.facts.write({"triples": [attr(who, "drink", "tea")], "labels": ["x", "y"], "scopes": ["team/red"]})
    await mem.facts.write({"triples": [attr(who, "snack", "figs")], "labels": ["x"], "scopes": ["team/blue"]})
    q = f"{who} drink tea snack figs"
    both = {h.text for h in (await mem.recall(q, k=50, labels=["x"])).hits}
    assert any("tea" in t for t in both) and any("figs" in t for t in both)
    xy = (await mem.recall(q, k=50, labels=["x", "y"])).hits
    assert xy and all("figs" not in h.text for h in xy) and {h.source for h in xy} <= {"attribute", "relation", "memory_chunk"}
    red = (await mem.recall(q, k=50, lens=[["team/red"]])).hits
    assert any("tea" in h.text for h in red) and all("figs" not in h.text for h in red)
    assert all(h.source != "chunk" for h in red)  # the document has no team scope
    assert (await mem.recall(q, k=50, lens=[["team/green"]])).hits == []


# --- the graph leg ---------------------------------------------------------------------
async def test_graph_seeds_hops_aliases_and_mentions(mem, db):
    who, boss, city = person("Graph"), person("Boss"), person("Town")
    w = await mem.facts.write({"triples": [
        {"entity": {"type": "person", "name": who, "aliases": ["Gizmo"]}, "key": "reports_to", "target": {"type": "person", "name": boss}},
        {"entity": {"type": "person", "name": boss}, "key": "lives_in", "target": {"type": "location", "name": city}},
        attr(boss, "office", "Lisbon"), {"entity": {"type": "location", "name": city}, "key": "population", "value": "500k"}],
        "text": "an unrelated note about the weather"})
    # a mentions edge (maintained by the write path when it names an entity; made by hand here)
    await db.query("RELATE $p->mentions->$e SET scopes = []", {"p": RecordID("memory_chunk", w.passages[0].split(":", 1)[1]),
                                                                "e": RecordID("entity", f"person/{boss.lower()}")})
    r = await mem.recall("Where is Gizmo's manager based?", mode="graph", k=20)
    assert [s.name for s in r.seed_entities] == [who] and r.seed_entities[0].named == ["gizmo"]
    texts = [h.text for h in r.hits]
    assert texts[0] == f"{who} reports_to {boss}"  # next to the seed; the seed itself is not ranked by the graph leg
    assert f"{who} (person)" not in texts
    assert f"{boss}: office = Lisbon" in texts  # one hop: seed -> reports_to -> boss, and the boss's attributes
    assert "an unrelated note about the weather" in texts  # the passage that mentions the boss
    assert f"{city}: population = 500k" in texts and f"{boss} lives_in {city}" in texts  # two hops (the default)
    one_hop = [h.text for h in (await mem.recall("Where is Gizmo's manager based?", mode="graph", k=20, graph_depth=1)).hits]
    assert f"{boss}: office = Lisbon" in one_hop and f"{city}: population = 500k" not in one_hop
    nothing = await mem.recall("nobody known here", mode="graph")
    assert nothing.hits == [] and nothing.trace["legs"]["graph"]["seeds"] == 0


async def test_classification_kind(mem):
    who = person("Kind")
    await mem.facts.write({"triples": [attr(who, "home_town", "Porto")]})
    assert (await mem.recall(f"What is {who}'s home town?")).classification_kind == "direct_lookup"
    assert (await mem.recall(f"Tell me about {who}")).classification_kind == "full_context"
    assert (await mem.recall("kerosene engines")).classification_kind == "hybrid"


# --- trace and reinforcement -----------------------------------------------------------
async def test_recall_defaults_are_its_own(mem):
    """rrfK 2 / vectorWeight 0.4 / graphWeight 1 / threshold 0.1 (chosen on LoCoMo dev,
    docs/EVALUATION.md), not documents.query's 60 / 0.5 / 0.5."""
    o = (await mem.recall("Zorblat engine")).trace["options"]
    assert (o["rrfK"], o["vectorWeight"], o["graphWeight"], o["threshold"], o["k"]) == (2, 0.4, 1.0, 0.1, 10)
    q = (await mem.documents.query("Zorblat engine")).trace["options"]
    assert (q["rrfK"], q["vectorWeight"], q["threshold"]) == (60, 0.5, 0.5)


async def test_trace_has_per_hit_per_signal_contributions(mem):
    r = await mem.recall("Zorblat engine turbopumps", k=5)
    t = r.trace
    assert set(t["legs"]) == {"vector", "bm25", "graph"} and t["legs"]["vector"]["ran"] and t["legs"]["bm25"]["ran"]
    w = t["options"]["weights"]
    for h in t["hits"]:
        parts = [h[leg]["contribution"] for leg in ("vector", "bm25", "graph") if h.get(leg)]
        assert parts and abs(sum(parts) / w["attainable"] - h["score"]) < 1e-9 or h["score"] == 1
    assert [h["id"] for h in t["hits"] if h["returned"]] == [h.id for h in r.hits]


async def test_recall_reinforces_what_it_saw(mem, db):
    who = person("Reinf")
    w = await mem.facts.write({"triples": [attr(who, "shoe_size", "44"), attr(who, "hat_size", "7")]})
    shoe, hat = (t.id for t in w.triples)

    async def importance(rid):  # the reinforcement row (migrations/0008); the record keeps its initial value
        (rows,) = await db.query("SELECT VALUE importance FROM reinforcement WHERE record = <record> $id", {"id": rid})
        (initial,) = await db.query(f"SELECT VALUE importance FROM {rid}")
        assert initial == [0.8]
        return rows[0] if rows else 0.8

    r = await mem.recall(f"{who} shoe_size 44", include=["passages"], k=1)  # facts are seen, not returned
    seen = [h["id"] for h in r.trace["hits"]]
    assert shoe in seen
    assert await importance(shoe) == pytest.approx(0.8 * 1.1)
    if hat not in seen:
        assert await importance(hat) == 0.8
    for _ in range(4):
        await mem.recall(f"{who} shoe_size 44", k=1)
    assert await importance(shoe) == 1.0  # capped
    history = await mem.entities.history("person", who, "shoe_size")
    assert history.rows[0].importance == 1.0  # the reads show the reinforced value
    await mem.forget([shoe], purge=True)
    (left,) = await db.query("SELECT * FROM reinforcement WHERE record = <record> $id", {"id": shoe})
    assert left == []  # a purge takes the reinforcement row with it


# --- bad input ---------------------------------------------------------------------------
@pytest.mark.parametrize("opts, field", [
    ({"k": 51}, "k"), ({"k": 0}, "k"), ({"k": 2.5}, "k"), ({"mode": "hybrid_graph"}, "mode"),
    ({"include": ["everything"]}, "include"), ({"include": []}, "include"), ({"labels": "x"}, "labels"),
    ({"graphDepth": 3}, "graphDepth"), ({"graphWeight": 2}, "graphWeight"), ({"vectorWeight": -1}, "vectorWeight"),
    ({"lens": [[]]}, "lens"), ({"bogus": 1}, "bogus"), ({"threshold": 3}, "threshold"),
])
async def test_bad_options_are_refused_and_nothing_is_written(mem, db, opts, field):
    before = await traces(db)
    e = await mem.embed_query("anything")
    with pytest.raises(InvalidInput, match=field):
        await call(db, "fn::amem::recall", "anything", e, opts)
    assert await traces(db) == before


async def test_bad_embedding_and_python_argument_errors(mem, db):
    before = await traces(db)
    with pytest.raises(InvalidInput, match="embedding"):
        await call(db, "fn::amem::recall", "x", [0.0] * 384, {})
    with pytest.raises(InvalidInput, match="needs \\$embedding"):
        await call(db, "fn::amem::recall", "x", None, {"mode": "vector"})
    with pytest.raises(TypeError):
        await mem.recall(["not", "a", "str"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await mem.recall("x", include="facts")  # type: ignore[arg-type]
    assert await traces(db) == before


# --- raw SurrealQL = Python -------------------------------------------------------------
async def test_raw_surrealql_gives_the_python_result(mem, db):
    q = "Zorblat engine crew"
    e = await mem.embed_query(q)
    (raw,) = await db.query("RETURN fn::amem::recall($q, $e, {k: 7, embeddingModel: $m})", {"q": q, "e": e, "m": mem.embedder.name})
    py = await mem.recall(q, k=7)
    assert [plain(h["id"]) for h in raw["hits"]] == [h.id for h in py.hits] and py.hits
    assert [h["score"] for h in raw["hits"]] == [h.score for h in py.hits]


# --- legs over empty tables (issue 24) ---------------------------------------------------
@pytest.fixture(scope="module")
async def passages_only():
    """A database holding memory passages only: no document, no entity, no attribute."""
    async for conn in migrated("passages"):
        yield conn


async def test_legs_over_empty_tables_are_skipped_and_find_the_same_rows(passages_only):
    db = passages_only
    m = hash_memory(db)
    await m.facts.write({"text": " ".join(f"Turn {i}: the lighthouse keeper logged {i} ships in the fog." for i in range(12)),
                         "category": "knowledge"})
    q = "How many ships did the lighthouse keeper log in the fog?"
    r = await m.recall(q, k=5)
    assert r.hits and {h.source for h in r.hits} == {"memory_chunk"}
    tables = r.trace["legs"]["vector"]["tables"]
    # a small table goes through the KNN too (its distance, not a cosine per row: ENGINE-ISSUES #30)
    assert tables["memory_chunk"]["strategy"] == "hnsw" and tables["memory_chunk"]["candidates"] > 0
    assert {t: tables[t]["strategy"] for t in ("entity", "attribute", "chunk", "audio_chunk", "passage_version")} == dict.fromkeys(
        ("entity", "attribute", "chunk", "audio_chunk", "passage_version"), "skipped: empty table")
    assert r.seed_entities == [] and r.trace["legs"]["graph"]["seeds"] == 0
    # the same legs told nothing of which tables hold rows (no `present`) read every table: same rows
    e = await m.embed_query(q)
    got = (await db.query(
        "LET $o = fn::amem::recall::options($q, $e, {embeddingModel: $m}); LET $t = fn::amem::query::terms($q).text;"
        "LET $all = object::remove($o.f, 'present');"
        "RETURN { present: $o.f.present,"
        "  skipped: [fn::amem::recall::vector_leg($e, $o.f, $o.threshold).rows, fn::amem::recall::bm25_leg($t, $o.f).rows],"
        "  every: [fn::amem::recall::vector_leg($e, $all, $o.threshold).rows, fn::amem::recall::bm25_leg($t, $all).rows] };",
        {"q": q, "e": e, "m": m.embedder.name}))[-1]
    assert got["present"] == {"entity": False, "entity_name": False, "attribute": False, "memory_chunk": True,
                              "chunk": False, "audio_chunk": False, "passage_version": False}
    assert got["skipped"][0] and got["skipped"][1] and got["skipped"] == got["every"]
    # a document arrives: its legs run again (present is read on every recall)
    await m.documents.ingest_text("The lighthouse keeper counted ships in the fog every night.", title="log")
    again = await m.recall(q, k=5)
    assert again.trace["legs"]["vector"]["tables"]["chunk"]["strategy"] != "skipped: empty table"
    assert "chunk" in {h.source for h in again.hits}


async def test_hydrate_ranked_is_the_one_step_hydration_where_it_counts(mem, db):
    """hydrate_ranked reads the first k candidates, and the rest only when one of them is no
    longer current: its first k rows and first k included hits are those of hydrate(candidates)."""
    who = person("Hyd")
    w = await mem.facts.write({"triples": [attr(who, f"key_{i}", f"value {i}") for i in range(8)],
                               "text": f"{who} wrote eight notes.", "category": "knowledge"})
    ids = [t.id for t in w.triples] + list(w.passages)
    await mem.forget([ids[1]])  # the second best is no longer current

    async def both(k: int, include: list[str]) -> list[list[str]]:
        got = (await db.query(
            "LET $f = fn::amem::recall::options('x', NONE, {mode: 'bm25'}).f;"
            "LET $r = $ids.map(|$id, $i| { id: type::record($id), score: 1.0 - $i * 0.01 });"
            "RETURN [fn::amem::recall::hydrate_ranked($r, $k, $inc, $f), fn::amem::recall::hydrate(fn::amem::recall::candidates($r, $k, $inc), $f)];",
            {"ids": ids, "k": k, "inc": include}))[-1]
        return [[plain(h["id"]) for h in rows] for rows in got]

    for k, include in ((3, ["facts", "passages"]), (1, ["passages"]), (5, ["facts"])):
        two_step, one_step = await both(k, include)
        assert ids[1] not in two_step and ids[1] not in one_step
        assert two_step[:k] == one_step[:k], (k, include)
        kinds = {t for kind, t in (("facts", "attribute"), ("passages", "memory_chunk")) if kind in include}
        hits = [i for i in one_step if i.split(":")[0] in kinds][:k]
        assert hits and [i for i in two_step if i.split(":")[0] in kinds][:k] == hits
    # nothing gone among the first k: only they are read
    two_step, one_step = await both(1, ["facts", "passages"])
    assert two_step == [ids[0]] and len(one_step) > 1


# --- a realistic scenario ----------------------------------------------------------------
async def test_scenario_role_and_employer_change_over_writes(mem):
    who = person("Dana")
    day = lambda d: (datetime(2025, 1, 1, tzinfo=UTC) + timedelta(days=d)).isoformat()  # noqa: E731
    await mem.facts.write({"triples": [attr(who, "role", "engineer"), rel(who, "works_at", "Initech")],
                           "text": f"{who} joined Initech as an engineer.", "observed_at": day(0), "category": "knowledge"})
    await mem.facts.write({"triples": [attr(who, "role", "team lead")], "observed_at": day(200)})
    last = await mem.facts.write({"triples": [attr(who, "role", "CTO"), rel(who, "works_at", "Globex")],
                                  "text": f"{who} left Initech and is now CTO at Globex.", "observed_at": day(400),
                                  "category": "knowledge"})
    r = await mem.recall(f"What is {who}'s role?", include=["facts"], k=5)
    top = r.hits[0]
    assert top.source == "attribute" and top.text == f"{who}: role = CTO" and top.citation["write"] == last.write
    assert r.classification_kind == "direct_lookup" and r.seed_entities[0].name == who
    assert all("engineer" not in h.text and "team lead" not in h.text for h in r.hits)
    work = await mem.recall(f"Where does {who} work?", include=["facts"], k=10)
    rels = [h.text for h in work.hits if h.source == "relation"]
    assert rels == [f"{who} works_at Globex"]
    history = await mem.entities.history("person", who, "role")
    assert [row.value for row in history.rows] == ["CTO", "team lead", "engineer"]
    assert history.rows[1].superseded_by == history.rows[0].id and history.rows[2].superseded_by == history.rows[1].id
