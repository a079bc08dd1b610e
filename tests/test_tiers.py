"""The tier ladder of recall (surql/455_tiers, MEMORY.md section 4) on the real engine:
tier 1 reads the named entities' facts by key and joins tier 3 as an RRF leg (never
alone), tier 4 escalates a thin or unsure tier 3 (doubled pool, one more hop, the
HyDE embedding), merges by id keeping the higher score and stays k-sized; every
tier's reason in the response and in the retrieval_trace row (`tier`, `escalated`,
`tiers`); bad ladder options are errors that write nothing. Tier 2: tests/test_answers.py.

The hash embedder keeps vectors deterministic (similarity ~ shared words)."""

from __future__ import annotations

import itertools
import re

import pytest
from helpers import hash_memory

from amem_db import EmbeddingMismatch, InvalidInput
from amem_db.db import call

_n = itertools.count()


def person(prefix: str = "Tier") -> str:
    return f"{prefix} T{next(_n)}"


@pytest.fixture(scope="module")
async def mem(db):
    m = hash_memory(db)
    # a background of passages, so that ordinary queries have plenty of hits
    await m.facts.write({"text": " ".join(f"Note {i}: the harbour crane moved {i} containers of grain." for i in range(40)),
                         "category": "knowledge"})
    return m


async def trace_row(db, trace_id) -> dict:
    (rows,) = await db.query("SELECT tier, escalated, tiers FROM type::record($id)", {"id": str(trace_id)})
    return rows[0]


async def traces(db) -> int:
    (rows,) = await db.query("SELECT count() FROM retrieval_trace GROUP ALL")
    return rows[0]["count"] if rows else 0


# --- tier 1 ---------------------------------------------------------------------------
async def test_tier1_reads_the_named_key_even_past_the_graph_row_cap(mem, db):
    # 70 keys: the graph leg reads at most 64 attributes of a reached entity (by id),
    # tier 1 reads the named key through the (entity, key_norm) index
    who = person("Keys")
    triples = [{"entity": {"type": "person", "name": who}, "key": f"k{i:02d}", "value": f"filler value {i}"} for i in range(70)]
    triples.append({"entity": {"type": "person", "name": who}, "key": "zz_shoe_size", "value": "forty two"})
    await mem.facts.write({"triples": triples})
    q = f"What is {who}'s zz shoe size?"
    r = await mem.recall(q, k=5)
    (target,) = [x["id"] for x in (await db.query(
        "SELECT <string> id AS id FROM attribute WHERE key_norm = 'zz_shoe_size' AND value = 'forty two'"))[0]]
    assert r.tiers["seeds"]["ran"] is True and r.tiers["seeds"]["keys"] == ["zz_shoe_size"]
    assert r.tiers["seeds"]["rows"] == [target]
    assert r.classification_kind == "direct_lookup"
    assert [s.keys for s in r.seed_entities] == [["zz_shoe_size"]]
    assert r.hits[0].id == target
    # never alone: tier 3's other hits are still there, and the tier is 3 or 4, not 1
    assert len(r.hits) > 1 and r.tier in (3, 4)
    off = await mem.recall(q, k=5, ladder=False)
    assert off.tiers["seeds"]["ran"] is False and off.tiers["seeds"]["reason"] == "off: ladder false"
    assert target not in [h.id for h in off.hits[:1]]


async def test_tier1_reads_relation_keys_and_only_current_rows(mem):
    who = person("Rel")
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": who}, "key": "works_at",
                                        "target": {"type": "company", "name": "Old Widget Co"}}]})
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": who}, "key": "works_at",
                                        "target": {"type": "company", "name": "New Widget Co"}}]})
    r = await mem.recall(f"Where does {who} works at now?", k=5)
    rows = r.tiers["seeds"]["rows"]
    assert len(rows) == 1 and rows[0].startswith("relation:")
    top = next(h for h in r.hits if h.id == rows[0])
    assert "New Widget Co" in top.text


async def test_tier1_needs_a_key_the_query_names_as_a_word(mem):
    who = person("Word")
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": who}, "key": "age", "value": "41"}]})
    r = await mem.recall(f"Show the page about {who}", k=5)  # "page" contains "age", not the word
    assert r.tiers["seeds"]["ran"] is False and "none of their keys" in r.tiers["seeds"]["reason"]
    assert r.classification_kind == "hybrid"
    r = await mem.recall("What is the age of nobody in particular?", k=5)
    assert r.tiers["seeds"]["reason"] == "the query names no known entity"


async def test_tier1_stays_inside_the_lens(mem):
    who = person("Lens")
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": who}, "key": "role", "value": "lens role"}],
                           "scopes": ["org/x"]})
    inside = await mem.recall(f"What is {who}'s role?", lens=[["org/x"]])
    outside = await mem.recall(f"What is {who}'s role?", lens=[["org/y"]])
    assert len(inside.tiers["seeds"]["rows"]) == 1
    assert outside.tiers["seeds"]["rows"] == [] and not outside.hits


# --- tier 4 ---------------------------------------------------------------------------
async def test_a_thin_tier3_escalates_and_the_trace_says_why(mem, db):
    who = person("Thin")
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": who}, "key": "pet", "value": "a quokka"}]})
    r = await mem.recall("quokka", k=10, include=["facts"], threshold=0.99)
    esc = r.tiers["escalation"]
    assert r.escalated is True and r.tier == 4 and r.tier_reason.startswith("tier 4: thin")
    assert esc["ran"] is True and esc["floor"] == 0.4 and esc["what"]["pool"] == 128 and esc["what"]["graphDepth"] == 3
    assert esc["what"]["hyde"].startswith("skipped (no hydeEmbedding")
    assert [h["id"] for h in esc["after"]] == [h.id for h in r.hits] and len(r.hits) <= 10
    row = await trace_row(db, r.trace["id"])
    assert row["tier"] == 4 and row["escalated"] is True and row["tiers"]["escalation"]["reason"] == esc["reason"]


async def test_the_floor_decides_escalation(mem, db):
    q = "How many containers of grain did the harbour crane move?"
    sure = await mem.recall(q, k=5, confidence_floor=0.0)
    assert sure.escalated is False and sure.tier == 3 and sure.tiers["escalation"]["reason"].startswith("confident")
    assert (await trace_row(db, sure.trace["id"]))["escalated"] is False
    unsure = await mem.recall(q, k=5, confidence_floor=1.0)
    best = unsure.tiers["escalation"]["confidence"]
    assert best < 1.0 and unsure.escalated is True and "unsure" in unsure.tiers["escalation"]["reason"]
    # the reasons are for people: numbers as decimals, not the engine's float literals ('0.4f')
    for reason in (sure.tier_reason, unsure.tier_reason):
        assert re.search(r"floor \d", reason) and not re.search(r"\d+f\b", reason), reason
    # the floor is compared with tier 3's best normalised fused score
    just_below = await mem.recall(q, k=5, confidence_floor=best + 1e-6)
    at = await mem.recall(q, k=5, confidence_floor=best)
    assert just_below.escalated is True and at.escalated is False
    assert (await mem.recall(q, k=5, confidence_floor=1.0, ladder=False)).escalated is False


async def test_confidence_counts_only_the_legs_that_found_something(mem):
    # no entity named: the graph leg ran (weight 1 of 0.4 + 0.6 + 1) and found nothing; it
    # leaves the attainable RRF (issue 26), so the fused scores are not capped at 0.5 and
    # confidence needs no rescaling
    r = await mem.recall("How many containers of grain did the harbour crane move?", k=5, confidence_floor=0.0)
    esc = r.tiers["escalation"]
    assert r.trace["legs"]["graph"]["returned"] == 0 and esc["bestScore"] > 0.5
    assert esc["confidence"] == pytest.approx(esc["bestScore"])
    # a query that names an entity with facts: the graph leg finds rows, no rescaling
    who = person("Scale")
    await mem.facts.write({"triples": [{"entity": {"type": "person", "name": who}, "key": "boat", "value": "a red dinghy"}]})
    r = await mem.recall(f"{who} boat dinghy", k=5, confidence_floor=0.0)
    esc = r.tiers["escalation"]
    assert r.trace["legs"]["graph"]["returned"] > 0
    assert esc["confidence"] == pytest.approx(esc["bestScore"])


async def test_merge_keeps_the_higher_score_per_id(db):
    a, b, c = "attribute:a", "attribute:b", "attribute:c"
    merged = await db.query("RETURN fn::amem::tiers::merge([{id: attribute:a, score: 0.9}, {id: attribute:b, score: 0.2}], "
                            "[{id: attribute:b, score: 0.5}, {id: attribute:c, score: 0.3}, {id: attribute:a, score: 0.1}])")
    assert [(str(x["id"]), x["score"]) for x in merged[0]] == [(a, 0.9), (b, 0.5), (c, 0.3)]


async def test_escalation_merges_by_id_keeping_the_higher_score(mem):
    # a HyDE embedding about something else ranks tier 3's hits lower in tier 4: the merge keeps tier 3's scores
    q = "How many containers of grain did the harbour crane move?"
    hyde = await mem.embed_query("The lighthouse keeper paints the lamp room every spring.")
    r = await mem.recall(q, k=8, confidence_floor=1.0, hyde_embedding=hyde)
    esc = r.tiers["escalation"]
    before = {h["id"]: h["score"] for h in esc["before"]}
    after = {h["id"]: h["score"] for h in esc["after"]}
    assert len(after) == len(r.hits) <= 8 and set(before) & set(after)
    for hid, score in after.items():
        if hid in before:
            assert score >= before[hid] - 1e-9, hid
    assert [h.score for h in r.hits] == sorted((h.score for h in r.hits), reverse=True)
    # the k best of the union: nothing tier 3 had above the new k-th score was dropped
    kth = min(after.values())
    assert all(hid in after for hid, s in before.items() if s > kth + 1e-9)


async def test_a_hyde_embedding_reaches_what_the_query_could_not(mem):
    target = "The lighthouse keeper paints the lamp room every spring."
    await mem.facts.write({"text": target, "category": "knowledge"})
    q = "xqzv wplk"  # matches nothing: tier 3 is empty
    plain = await mem.recall(q, k=5, include=["passages"])
    assert not any(target in h.text for h in plain.hits) and plain.escalated is True
    hyde = await mem.embed_query(target)
    r = await mem.recall(q, k=5, include=["passages"], hyde_embedding=hyde)
    assert r.escalated is True and r.tiers["escalation"]["what"]["hyde"] == "used: hydeEmbedding"
    assert any(target in h.text for h in r.hits)
    # not used when tier 3 is confident (and never stored in the trace's options)
    r = await mem.recall("harbour crane grain containers", k=3, confidence_floor=0.0, hyde_embedding=hyde)
    assert r.escalated is False and not any(target in h.text for h in r.hits)
    assert "hydeEmbedding" not in r.trace["options"]["tiers"]


async def test_single_modes_do_not_escalate(mem):
    for mode in ("vector", "bm25", "graph"):
        r = await mem.recall("xqzv wplk", mode=mode, k=5)
        assert r.escalated is False and r.tiers["escalation"]["reason"].startswith("off: mode")


@pytest.mark.parametrize(("opts", "error", "match"), [
    ({"confidenceFloor": 1.5}, InvalidInput, "confidenceFloor"),
    ({"confidenceFloor": "high"}, InvalidInput, "confidenceFloor"),
    ({"ladder": "no"}, InvalidInput, "ladder"),
    ({"hydeEmbedding": "text"}, InvalidInput, "hydeEmbedding"),
    ({"hydeEmbedding": [0.1, 0.2]}, EmbeddingMismatch, "dimensions"),
    ({"hydeEmbedding": [0.0] * 384}, InvalidInput, "zero"),
])
async def test_bad_ladder_options_are_errors_and_write_no_trace(mem, db, opts, error, match):
    e = await mem.embed_query("anything")
    before = await traces(db)
    with pytest.raises(error, match=match):
        await call(db, "fn::amem::recall", "anything", e, opts)
    assert await traces(db) == before


async def test_raw_surrealql_sees_the_same_ladder(mem, db):
    q = "How many containers of grain did the harbour crane move?"
    e = await mem.embed_query(q)
    raw = await call(db, "fn::amem::recall", q, e, {"k": 5, "confidenceFloor": 1.0, "embeddingModel": mem.embedder.name})
    py = await mem.recall(q, k=5, confidence_floor=1.0)
    assert raw["tier"] == py.tier == 4 and raw["escalated"] is py.escalated is True
    assert [str(h["id"]) for h in raw["hits"]] == [h.id for h in py.hits]
