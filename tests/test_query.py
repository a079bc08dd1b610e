"""fn::amem::documents::query and fn::amem::fusion::rrf on the real engine.

Seeds documents, sections, chunks and transcript segments with direct INSERTs
and embeddings whose cosine to the query vector is chosen exactly
(e = a*q + sqrt(1 - a^2)*u with u orthogonal to q), so every expected order is
computed here, in Python, independently of the engine.

The 10,000-chunk module (`big`) checks the filter-before-top-k guarantee on
every access path of the vector leg against exact numpy cosine.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import drop, make_target
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from surrealdb import RecordID
from surrealdb.errors import ThrownError

from amem_db.connection import close_quietly, open_connection
from amem_db.constants import KNOWN_MIME_TYPES, LENS_SLOTS
from amem_db.migrator import Migrator, bundled_dir, render_dir
from amem_db.settings import SchemaSettings

DIM = 384
Q_CALL = "RETURN fn::amem::documents::query($q, $e, $o)"


# --- helpers -----------------------------------------------------------------------

def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def with_cosine(q: np.ndarray, a: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector whose cosine with the unit vector q is exactly a."""
    u = rng.standard_normal(q.shape[0])
    u = unit(u - (u @ q) * q)
    return a * q + math.sqrt(1.0 - a * a) * u


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def rid(table: str, key: str) -> RecordID:
    return RecordID(table, key)


def ids(hits: list[dict]) -> list[str]:
    return [str(h["chunk"]["id"]) for h in hits]


async def query(conn, q: str, e=None, **opts):
    # these tests check RRF; score fusion (documents.query's default since issue #16) is
    # checked in tests/test_quality.py
    opts.setdefault("fusion", "rrf")
    emb = None if e is None else [float(x) for x in e]
    (res,) = await conn.query(Q_CALL, {"q": q, "e": emb, "o": opts})
    return res


async def thrown(conn, q: str, e=None, **opts) -> str:
    with pytest.raises(ThrownError) as info:
        await query(conn, q, e, **opts)
    return str(info.value)


def ref_rrf(rankings, k=60, weights=None):
    """Spec 001's reference, plus per-list weights (weight 1 = the reference exactly)."""
    if k <= 0:
        raise ValueError("k must be positive")
    weights = weights or [1.0] * len(rankings)
    scores: dict = {}
    for w, ranking in zip(weights, rankings):
        seen = set()
        rank = 0
        for doc_id in ranking:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            rank += 1
            scores[doc_id] = scores.get(doc_id, 0.0) + w / (k + rank)
    # ties as surql/300_fusion breaks them: on the sum rounded to 12 decimals, by id
    # (two sums equal in exact arithmetic can differ in the last bit)
    order = sorted(scores, key=lambda doc_id: (-round(scores[doc_id], 12), doc_id))
    return order, scores


def tied(a: float, b: float, rel: float) -> bool:
    """Equal up to float noise, or equal at 12 decimals: surql/300_fusion breaks ties on
    the sum rounded to 12 decimals (by id), so two scores below 1e-12 always tie
    (found by hypothesis: weights [0, 1e-12])."""
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-15) or round(a, 12) == round(b, 12)


def assert_same_fusion(got: list[dict], order: list, scores: dict, rel=1e-12):
    """Same ids, same scores; the order equal to the reference wherever scores differ
    by more than float noise (sums of 1/(k+r) in another order may differ in the last bit)."""
    assert sorted(g["id"] for g in got) == sorted(order)
    for g in got:
        assert g["score"] == pytest.approx(scores[g["id"]], rel=rel, abs=1e-15)
    for a, b in zip(got, got[1:]):
        if tied(a["score"], b["score"], rel):
            continue
        assert a["score"] > b["score"]
    # strict equality of the order when no two scores are within float noise
    distinct = all(not tied(scores[x], scores[y], rel) or scores[x] == scores[y] for x, y in zip(order, order[1:]))
    if distinct:
        assert [g["id"] for g in got] == order


# --- the small corpus ----------------------------------------------------------------
# (key, document, section, position, text, cosine with Q, scopes override)
DOCS = {
    "returns": dict(title="Returns Policy", source="returns.pdf", mime_type="application/pdf", scopes=["org/acme/support"]),
    "warranty": dict(title="Warranty", source="warranty.md", mime_type="text/markdown", scopes=["org/acme/legal"]),
    "shipping": dict(title="Shipping FAQ", source="shipping.txt", mime_type="text/plain", scopes=["org/other"]),
    "call": dict(title="Support call", source="call.vtt", mime_type="text/vtt", scopes=["org/acme/support"]),
    "ties": dict(title="Ties", source="ties.txt", mime_type="text/plain", scopes=["org/ties"]),
}
SECTIONS = {
    "ret_elig": ("returns", "Eligibility", 0),
    "ret_refund": ("returns", "Refunds", 1),
    "ship_main": ("shipping", "Shipping", 0),
}
CHUNKS = [
    ("r0", "returns", "ret_elig", 0, "Unopened items may be returned within 30 days of the original purchase date.", 0.90, None),
    ("r1", "returns", "ret_elig", 1, "Opened items can be exchanged for store credit only.", 0.30, None),
    ("r2", "returns", "ret_elig", 2, "Gift cards cannot be returned.", 0.20, ["org/acme/restricted"]),
    ("r3", "returns", "ret_elig", 3, "Clearance items are final sale.", 0.10, None),
    ("r4", "returns", "ret_elig", 4, "Receipts are required for every return.", 0.55, None),
    ("r5", "returns", "ret_refund", 5, "Refunds are issued to the original payment method within 5 business days.", 0.70, None),
    ("r6", "returns", "ret_refund", 6, "Shipping fees are not refunded.", 0.05, None),
    ("w0", "warranty", None, 0, "The limited warranty covers manufacturing defects for one year.", 0.80, None),
    ("w1", "warranty", None, 1, "Warranty claims require the serial number.", 0.40, None),
    ("w2", "warranty", None, 2, "Accidental damage is not covered by the warranty.", 0.60, None),
    ("s0", "shipping", "ship_main", 0, "Standard shipping takes 3 to 5 business days.", 0.85, None),
    ("s1", "shipping", "ship_main", 1, "Express shipping arrives the next business day.", 0.35, None),
    ("s2", "shipping", "ship_main", 2, "International orders may incur customs duties.", 0.65, None),
    ("t_b", "ties", None, 0, "zyzzyva quokka", 0.0, None),
    ("t_a", "ties", None, 1, "zyzzyva quokka", 0.0, None),
]
AUDIO = [
    ("a0", "call", 0, 0.0, 4.5, "Hello, thanks for calling support about your return.", 0.75),
    ("a1", "call", 1, 4.5, 9.0, "The return window for unopened items is thirty days.", 0.52),
]
SCOPES = {key: (override or DOCS[doc]["scopes"]) for key, doc, _, _, _, _, override in CHUNKS}
SCOPES.update({key: DOCS[doc]["scopes"] for key, doc, *_ in AUDIO})
MIME = {key: DOCS[doc]["mime_type"] for key, doc, *_ in CHUNKS}
MIME.update({key: DOCS[doc]["mime_type"] for key, doc, *_ in AUDIO})
DOC_OF = {key: doc for key, doc, *_ in CHUNKS} | {key: doc for key, doc, *_ in AUDIO}


def chunk_rid(key: str) -> RecordID:
    return rid("audio_chunk", key) if key.startswith("a") else rid("chunk", key)


@pytest.fixture(scope="module")
async def corpus(db):
    rng = np.random.default_rng(20261130)
    q = unit(rng.standard_normal(DIM))
    tie = unit(rng.standard_normal(DIM))
    tie = unit(tie - (tie @ q) * q)  # cosine 0 with q
    emb: dict[str, np.ndarray] = {}
    for key, *_, sim, _ in CHUNKS:
        emb[key] = tie if key.startswith("t_") else with_cosine(q, sim, rng)
    for key, *_, sim in AUDIO:
        emb[key] = with_cosine(q, sim, rng)

    docs = [{"id": rid("document", k), "text": k, "content_hash": k, **v} for k, v in DOCS.items()]
    sections = [
        {"id": rid("section", k), "document": rid("document", d), "heading": h, "position": p,
         "char_start": 0, "char_end": 1, "scopes": DOCS[d]["scopes"]}
        for k, (d, h, p) in SECTIONS.items()
    ]
    chunks = []
    for key, doc, sec, pos, text, _, _ in CHUNKS:
        row = {"id": rid("chunk", key), "document": rid("document", doc), "text": text, "position": pos,
               "char_start": pos * 100, "char_end": pos * 100 + len(text), "mime_type": MIME[key],
               "scopes": SCOPES[key], "embedding": [float(x) for x in emb[key]]}
        if sec:
            row |= {"section": rid("section", sec), "section_heading": SECTIONS[sec][1]}
        chunks.append(row)
    audio = [
        {"id": rid("audio_chunk", key), "document": rid("document", doc), "text": text, "position": pos,
         "char_start": pos * 60, "char_end": pos * 60 + len(text), "start_s": s, "end_s": e,
         "mime_type": MIME[key], "scopes": SCOPES[key], "embedding": [float(x) for x in emb[key]]}
        for key, doc, pos, s, e, text, _ in AUDIO
    ]
    await db.query(
        "INSERT INTO document $docs RETURN NONE; INSERT INTO section $sections RETURN NONE;"
        "INSERT INTO chunk $chunks RETURN NONE; INSERT INTO audio_chunk $audio RETURN NONE;",
        {"docs": docs, "sections": sections, "chunks": chunks, "audio": audio},
    )
    return {"q": q, "tie": tie, "emb": emb}


def expected_vector(corpus, keys=None, threshold=0.5, e=None):
    """Exact cosine ranking of the seeded rows (ties by id), thresholded."""
    e = corpus["q"] if e is None else e
    keys = keys if keys is not None else list(corpus["emb"])
    rows = [(cos(corpus["emb"][k], e), str(chunk_rid(k))) for k in keys]
    rows = [r for r in rows if r[0] >= threshold]
    rows.sort(key=lambda r: (-r[0], r[1]))
    return rows


async def bm25_leg(conn, q: str) -> list[tuple[float, str]]:
    """The BM25 leg computed with plain SELECTs (terms from the same term function)."""
    (terms,) = await conn.query("RETURN fn::amem::query::terms($q)", {"q": q})
    rows = []
    for table in ("chunk", "audio_chunk"):
        (part,) = await conn.query(
            f"SELECT id, search::score(1) AS score FROM {table}_fts WHERE text @1,OR@ $t ORDER BY score DESC, id ASC LIMIT 256",
            {"t": terms["text"]},
        )
        # {table}_fts:<key> is the full-text copy of {table}:<key> (migrations/0004)
        rows += [(r["score"], str(r["id"]).replace(f"{table}_fts:", f"{table}:", 1)) for r in part]
    rows.sort(key=lambda r: (-r[0], r[1]))
    return rows[:256]


# --- RRF ---------------------------------------------------------------------------------

async def rrf(conn, lists, weights, k):
    (res,) = await conn.query("RETURN fn::amem::fusion::rrf($l, $w, $k)", {"l": lists, "w": weights, "k": k})
    return res


async def test_rrf_spec_examples(db):
    got = await rrf(db, [["policy", "faq"], ["faq", "guide"]], [1, 1], 60)
    assert got[0]["id"] == "faq"
    assert await rrf(db, [["a", "a", "b"]], [1], 60) == await rrf(db, [["a", "b"]], [1], 60)
    assert await rrf(db, [], [], 60) == []
    # integer weights and k: no integer division (1 / 61 would be 0)
    assert (await rrf(db, [["a"]], [1], 60))[0]["score"] == pytest.approx(1 / 61)


async def test_rrf_rejects_bad_arguments(db):
    for lists, weights, k, needle in [
        ([["a"]], [1], 0, "must be > 0"),
        ([["a"]], [1], -1, "must be > 0"),
        ([["a"], ["b"]], [1], 60, "one weight per list"),
        ([["a"]], [-1], 60, ">= 0"),
    ]:
        with pytest.raises(ThrownError, match="amem:invalid_input") as info:
            await rrf(db, lists, weights, k)
        assert needle in str(info.value)


async def test_rrf_ties_broken_by_id(db):
    # b and a have equal scores: id order, whatever the input order
    assert [r["id"] for r in await rrf(db, [["b", "a"], ["a", "b"]], [1, 1], 60)] == ["a", "b"]
    assert [r["id"] for r in await rrf(db, [["a", "b"], ["b", "a"]], [1, 1], 60)] == ["a", "b"]


ID = st.sampled_from([f"d{i}" for i in range(12)])
LISTS = st.lists(st.lists(ID, max_size=12), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lists=LISTS, k=st.one_of(st.integers(1, 100), st.floats(0.01, 100, allow_nan=False)))
async def test_rrf_matches_spec_reference(db, lists, k):
    order, scores = ref_rrf(lists, k)
    assert_same_fusion(await rrf(db, lists, [1] * len(lists), k), order, scores)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lists=LISTS, weights=st.lists(st.floats(0, 1, allow_nan=False), min_size=4, max_size=4), k=st.integers(1, 100))
@example(lists=[[], ["d1", "d0"]], weights=[0, 1e-12, 0, 0], k=1)  # found by hypothesis: both scores < 1e-12 tie
async def test_rrf_weighted_matches_reference(db, lists, weights, k):
    w = weights[: len(lists)]
    order, scores = ref_rrf(lists, k, w)
    assert_same_fusion(await rrf(db, lists, w, k), order, scores)


@pytest.fixture(scope="module")
def ranx():
    return pytest.importorskip("ranx")


@pytest.mark.slow  # ranx JIT-compiles on first use (~15 s)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lists=st.lists(st.lists(ID, min_size=1, max_size=12), min_size=2, max_size=3),
       weights=st.lists(st.integers(1, 3), min_size=3, max_size=3), k=st.integers(1, 100))
# found by hypothesis in CI: d2 = 2/15 + 3/15 and d1 = 3/9 tie in exact arithmetic
# but not in floats; the tie must still break by id
@example(lists=[["d0", "d3", "d4", "d5", "d6", "d7", "d2"]] * 2 + [["d1"]], weights=[2, 3, 3], k=8)
async def test_rrf_matches_ranx(db, ranx, lists, weights, k):
    """ranx's RRF (Cormack et al.) on the same rankings. ranx has no weighted RRF;
    an integer weight w is the same list fused w times."""
    w = weights[: len(lists)]
    deduped = [list(dict.fromkeys(lst)) for lst in lists]  # a ranx Run holds an id once
    runs = []
    for lst, times in zip(deduped, w):
        run = ranx.Run({"q": {d: float(len(lst) - i) for i, d in enumerate(lst)}})
        runs += [run] * times
    fused = ranx.fuse(runs, norm=None, method="rrf", params={"k": k}).to_dict()["q"]
    got = await rrf(db, lists, w, k)
    assert {g["id"] for g in got} == set(fused)
    for g in got:
        assert g["score"] == pytest.approx(fused[g["id"]], rel=1e-9)
    order = sorted(fused, key=lambda d: (-fused[d], d))
    assert_same_fusion(got, order, fused, rel=1e-9)


# --- options and bad input -------------------------------------------------------------------

async def test_defaults_and_response_shape(db, corpus):
    res = await query(db, "return window for unopened items", corpus["q"])
    assert set(res) == {"results", "contextHits", "queryMs", "warnings", "trace"}
    opts = res["trace"]["options"]
    assert opts["mode"] == "hybrid" and opts["k"] == 10 and opts["threshold"] == 0.5
    assert opts["vectorWeight"] == 0.5 and opts["rrfK"] == 60 and opts["expandContext"] is True
    assert opts["kClamped"] is False and opts["candidatePool"] == 256 and opts["contextPerHit"] == 2
    assert opts["useHyde"] is False and opts["decomposeQuery"] is False and opts["useReranker"] is False
    assert res["warnings"] == [] and res["queryMs"] > 0
    assert 0 < len(res["results"]) <= 10
    hit = res["results"][0]
    assert set(hit) == {"chunk", "score", "document"}
    assert set(hit["document"]) == {"id", "title", "source"}
    for h in res["results"]:
        assert 0 <= h["score"] <= 1
        keys = {"id", "document", "text", "section", "position", "charStart", "charEnd"}
        if h["chunk"]["id"].table_name == "audio_chunk":
            keys |= {"startS", "endS"}
        assert set(h["chunk"]) == keys
    r0 = next(h for h in res["results"] if str(h["chunk"]["id"]) == "chunk:r0")
    assert r0["chunk"] == {
        "id": rid("chunk", "r0"), "document": rid("document", "returns"), "text": CHUNKS[0][4],
        "section": "Eligibility", "position": 0, "charStart": 0, "charEnd": len(CHUNKS[0][4]),
    }
    assert r0["document"] == {"id": rid("document", "returns"), "title": "Returns Policy", "source": "returns.pdf"}


@pytest.mark.parametrize("opts, code, needle", [
    ({"mode": "hybrid_graph", "graphEdges": ["bogus"]}, "invalid_input", "graphEdges holds bogus"),
    ({"mode": "fuzzy"}, "invalid_input", "mode must be one of hybrid (default), vector, bm25"),
    ({"mode": 3}, "invalid_input", "mode must be one of"),
    ({"k": 0}, "invalid_input", "k must be a whole number >= 1"),
    ({"k": -3}, "invalid_input", "k must be a whole number"),
    ({"k": 2.5}, "invalid_input", "k must be a whole number"),
    ({"k": "10"}, "invalid_input", "k must be a whole number"),
    ({"k": True}, "invalid_input", "k must be a whole number"),
    ({"threshold": 1.5}, "invalid_input", "threshold is a minimum cosine similarity in [-1, 1]"),
    ({"threshold": -1.01}, "invalid_input", "threshold"),
    ({"threshold": "high"}, "invalid_input", "threshold"),
    ({"vectorWeight": 1.2}, "invalid_input", "vectorWeight must be in [0, 1]"),
    ({"vectorWeight": -0.1}, "invalid_input", "vectorWeight"),
    ({"rrfK": 0}, "invalid_input", "rrfK must be a number > 0"),
    ({"rrfK": -60}, "invalid_input", "rrfK"),
    ({"filter": "application/pdf"}, "invalid_input", "filter must be an object"),
    ({"filter": ["x"]}, "invalid_input", "filter must be an object"),
    ({"filter": {"mimeType": "application/pdf"}}, "invalid_input", "filter.mimeType must be a list"),
    ({"filter": {"mimeType": [1]}}, "invalid_input", "filter.mimeType must be a list"),
    ({"filter": {"documentIds": "returns"}}, "invalid_input", "filter.documentIds must be a list"),
    ({"filter": {"documentIds": [7]}}, "invalid_input", "filter.documentIds entries must be document ids"),
    ({"filter": {"documentIds": [RecordID("chunk", "r0")]}}, "invalid_input", "is not a document id"),
    ({"lens": "org/acme"}, "invalid_input", "lens must be a non-empty list"),
    ({"lens": [["bad path!"]]}, "invalid_input", "is not a scope path"),
    ({"useHyde": "yes"}, "invalid_input", "useHyde must be true or false"),
    ({"expandContext": 1}, "invalid_input", "expandContext must be true or false"),
    ({"caller": 5}, "invalid_input", "caller must be a string"),
])
async def test_bad_options(db, corpus, opts, code, needle):
    message = await thrown(db, "returns", corpus["q"], **opts)
    assert f"amem:{code}:" in message
    assert needle in message


async def test_bad_embeddings_and_queries(db, corpus):
    assert "amem:embedding_mismatch:" in await thrown(db, "x", [0.1, 0.2, 0.3])
    m = await thrown(db, "x", [0.0] * 383 + [1.0, 1.0])
    assert "amem:embedding_mismatch: the query embedding has 385 dimensions; this database indexes 384" in m
    # a given embedding is checked in bm25 mode too
    assert "amem:embedding_mismatch:" in await thrown(db, "x", [0.1] * 3, mode="bm25")
    assert "zero (or NaN) norm" in await thrown(db, "x", [0.0] * DIM)
    # every kind of element that is not a finite number below 1e6, anywhere in the vector (the
    # check reads the largest and smallest by the engine's ordering, not each element)
    for bad in ("a", None, True, False, [0.1], {"x": 1}, float("nan"), float("inf"), float("-inf"), 1e6, -1e6, 1e300):
        for at in (0, DIM // 2, DIM - 1):
            e = [0.1] * DIM
            e[at] = bad
            with pytest.raises(ThrownError, match="list of 384 finite numbers"):
                await db.query(Q_CALL, {"q": "x", "e": e, "o": {}})
    for mode in ("hybrid", "vector"):
        m = await thrown(db, "returns", None, mode=mode)
        assert f"amem:invalid_input: mode {mode} needs $embedding" in m
    assert "the limit is 4096" in await thrown(db, "x" * 4097, corpus["q"])
    assert "mode bm25 needs a non-empty query" in await thrown(db, "   ", None, mode="bm25")
    # 4096 exactly is fine
    res = await query(db, "return " * 585, corpus["q"], k=1)
    assert res["trace"]["legs"]["bm25"]["terms"] == ["return"]


async def test_embedding_model_must_match_the_ingested_one(db, corpus):
    await db.query("UPSERT amem_setting:embedding CONTENT { model: 'hash-384', dimension: 384 }")
    try:
        m = await thrown(db, "returns", corpus["q"], embeddingModel="minilm-l6-int8")
        assert "amem:embedding_mismatch: this database holds embeddings from hash-384" in m
        res = await query(db, "returns", corpus["q"], embeddingModel="hash-384", k=1)
        assert res["trace"]["options"]["embeddingModel"] == "hash-384"
        # bm25 does not use the embedding: no model check
        await query(db, "returns", None, mode="bm25", embeddingModel="minilm-l6-int8", k=1)
    finally:
        await db.query("DELETE amem_setting:embedding")


async def test_k_is_clamped_and_said_so(db, corpus):
    res = await query(db, "returns", corpus["q"], k=500, threshold=-1, mode="vector")
    assert res["trace"]["options"]["k"] == 50
    assert res["trace"]["options"]["kRequested"] == 500
    assert res["trace"]["options"]["kClamped"] is True
    assert any("k=500 exceeds the maximum 50: clamped to 50" in w for w in res["warnings"])
    assert res["trace"]["options"]["warnings"] == res["warnings"]
    # all 17 passages fit; a whole-number float is a valid k
    assert len(res["results"]) == len(corpus["emb"])
    res = await query(db, "returns", corpus["q"], k=3.0, threshold=-1, mode="vector")
    assert len(res["results"]) == 3 and res["trace"]["options"]["kClamped"] is False


async def test_ignored_options_and_filter_keys_are_reported(db, corpus):
    res = await query(db, "returns", corpus["q"], graphAlpha=0.3, filter={"tags": ["x"], "mimeType": None})
    assert res["trace"]["options"]["ignoredOptions"] == ["graphAlpha"]
    assert res["trace"]["options"]["ignoredFilterKeys"] == ["tags"]
    warnings = " | ".join(res["warnings"])
    assert "option graphAlpha applies to mode hybrid_graph only: ignored" in warnings
    assert "filter keys tags are not used" in warnings


async def test_an_unknown_option_is_refused_as_recall_refuses_it(db, corpus):
    """Issue 29: both read pipelines refuse an unknown key the same way (it used to be a
    warning here), naming it and the known keys; nothing is written (no trace)."""
    (before,) = await db.query("RETURN count(SELECT id FROM retrieval_trace)")
    with pytest.raises(ThrownError, match=r"amem:invalid_input: unknown query option frobnicate \(known: asOf, atInstant, .*mode, k, "):
        await query(db, "returns", corpus["q"], frobnicate=1)
    with pytest.raises(ThrownError, match=r"amem:invalid_input: unknown recall option frobnicate \(known: asOf, atInstant, .*mode, k, "):
        await db.query("RETURN fn::amem::recall('returns', NONE, {mode: 'bm25', frobnicate: 1})")
    (after,) = await db.query("RETURN count(SELECT id FROM retrieval_trace)")
    assert after == before
    # null option values mean "not given"
    res = await query(db, "returns", corpus["q"], k=None, threshold=None, mode=None)
    assert res["trace"]["options"]["k"] == 10 and res["trace"]["options"]["mode"] == "hybrid"


async def test_llm_flags_fall_back_without_error(db, corpus):
    plain = await query(db, "return window", corpus["q"])
    # no hydeEmbedding / subQueries given: the rewrites fall back (surql/470_rewrite);
    # useReranker runs (surql/480_rerank, tests/test_rerank.py) and is no fallback
    res = await query(db, "return window", corpus["q"], useHyde=True, decomposeQuery=True)
    assert ids(res["results"]) == ids(plain["results"])
    fallbacks = res["trace"]["options"]["fallbacks"]
    assert len(fallbacks) == 2
    assert any(f.startswith("useHyde: skipped (no provider)") for f in fallbacks)
    assert any(f.startswith("decomposeQuery: skipped (no provider)") for f in fallbacks)
    assert res["trace"]["options"]["useHyde"] is True
    assert res["trace"]["options"]["hyde"] == "skipped (no provider)"
    # said where the caller looks, too: the response's warnings (and the trace's copy of them)
    assert res["warnings"] == fallbacks and res["trace"]["options"]["warnings"] == fallbacks
    assert plain["warnings"] == []


# --- modes -------------------------------------------------------------------------------------

async def test_vector_mode_is_exact_cosine_with_threshold(db, corpus):
    res = await query(db, "ignored text", corpus["q"], mode="vector", k=50)
    expected = expected_vector(corpus, threshold=0.5)
    assert ids(res["results"]) == [r[1] for r in expected]
    for h, (sim, _) in zip(res["results"], expected):
        # score = cosine similarity, as the HNSW index computes it in f32 (the KNN's own
        # distance, surql/_macros.j2 knn_sim; docs/ENGINE-ISSUES.md #30)
        assert h["score"] == pytest.approx(sim, abs=1e-6)
    assert res["trace"]["legs"]["bm25"]["ran"] is False
    assert res["trace"]["legs"]["vector"]["tables"]["chunk"]["strategy"] == "hnsw"
    # 0.69, not a seeded similarity: r5 sits at 0.70, and the index's f32 cosine may put it
    # either side of a threshold it equals
    low = await query(db, "x", corpus["q"], mode="vector", k=50, threshold=0.69)
    assert ids(low["results"]) == [r[1] for r in expected_vector(corpus, threshold=0.69)]
    assert low["trace"]["legs"]["vector"]["belowThreshold"] == len(corpus["emb"]) - len(low["results"])
    # below zero: scores clamp at 0, the order stays by cosine
    neg = await query(db, "x", -corpus["q"], mode="vector", k=50, threshold=-1)
    assert ids(neg["results"]) == [r[1] for r in expected_vector(corpus, threshold=-1, e=-corpus["q"])]
    assert all(0 <= h["score"] <= 1 for h in neg["results"])


async def test_bm25_mode(db, corpus):
    q = "What is the return window for unopened items?"
    res = await query(db, q, None, mode="bm25", k=50)
    leg = await bm25_leg(db, q)
    assert ids(res["results"]) == [r[1] for r in leg]
    assert res["results"][0]["score"] == 1.0
    for h, (score, _) in zip(res["results"], leg):
        assert h["score"] == pytest.approx(score / leg[0][0])
    bm25 = res["trace"]["legs"]["bm25"]
    assert bm25["terms"] == ["return", "window", "unopened", "items"]  # stop words and "?" dropped
    assert bm25["droppedStopwords"] is True
    assert res["trace"]["legs"]["vector"] == {"ran": False, "weight": 0.0, "reason": "mode bm25"}
    # OR semantics: a query whose words never co-occur still finds each word
    res = await query(db, "zyzzyva warranty", None, mode="bm25", k=50)
    assert {"chunk:t_a", "chunk:t_b", "chunk:w0", "chunk:w1", "chunk:w2"} <= set(ids(res["results"]))
    # threshold does not apply to bm25
    assert ids((await query(db, q, None, mode="bm25", k=50, threshold=1))["results"]) == [r[1] for r in leg]
    # nothing searchable: empty, not an error
    res = await query(db, "?!", None, mode="bm25")
    assert res["results"] == [] and res["trace"]["legs"]["bm25"]["ran"] is False


@pytest.mark.parametrize("vw, rrf_k, threshold", [(0.5, 60, 0.5), (0.8, 10, 0.0), (0.3, 1, -1.0), (0.5, 0.5, 0.6)])
async def test_hybrid_is_weighted_rrf_of_the_legs(db, corpus, vw, rrf_k, threshold):
    q = "return window for unopened items"
    res = await query(db, q, corpus["q"], k=50, vectorWeight=vw, rrfK=rrf_k, threshold=threshold)
    vec = [r[1] for r in expected_vector(corpus, threshold=threshold)]
    lex = [r[1] for r in await bm25_leg(db, q)]
    order, scores = ref_rrf([vec, lex], rrf_k, [vw, 1 - vw])
    assert ids(res["results"]) == order[:50]
    best = 1.0 / (rrf_k + 1)  # weights sum to 1
    for h in res["results"]:
        assert h["score"] == pytest.approx(scores[str(h["chunk"]["id"])] / best)
    # BM25 hits are admitted without the threshold
    below = {r[1] for r in expected_vector(corpus, threshold=-1)} - set(vec)
    assert below & set(lex) <= set(ids(res["results"]))
    # the trace explains every hit
    for i, (h, t) in enumerate(zip(res["results"], res["trace"]["hits"])):
        assert t["rank"] == i + 1 and str(t["id"]) == str(h["chunk"]["id"])
        parts = [t[leg]["contribution"] for leg in ("vector", "bm25") if t.get(leg)]
        assert sum(parts) == pytest.approx(t["rrf"])
        if t.get("vector"):
            assert vec[t["vector"]["rank"] - 1] == str(t["id"])
            assert t["vector"]["contribution"] == pytest.approx(vw / (rrf_k + t["vector"]["rank"]))
        if t.get("bm25"):
            assert lex[t["bm25"]["rank"] - 1] == str(t["id"])


async def test_hybrid_weight_edges_skip_a_leg(db, corpus):
    q = "return window for unopened items"
    only_vec = await query(db, q, corpus["q"], vectorWeight=1, k=50)
    assert only_vec["trace"]["legs"]["bm25"] == {"ran": False, "weight": 0.0, "reason": "vectorWeight is 1"}
    assert ids(only_vec["results"]) == [r[1] for r in expected_vector(corpus)]
    assert only_vec["results"][0]["score"] == pytest.approx(1.0)
    only_lex = await query(db, q, corpus["q"], vectorWeight=0, k=50)
    assert only_lex["trace"]["legs"]["vector"]["ran"] is False
    assert ids(only_lex["results"]) == [r[1] for r in await bm25_leg(db, q)]


async def test_hybrid_with_empty_query_runs_the_vector_leg_only(db, corpus):
    res = await query(db, "", corpus["q"], k=50)
    assert ids(res["results"]) == [r[1] for r in expected_vector(corpus)]
    assert res["trace"]["legs"]["bm25"]["ran"] is False
    assert "no searchable terms" in " ".join(res["warnings"])


async def test_audio_segments_are_hits_with_times(db, corpus):
    res = await query(db, "thanks for calling", corpus["q"], mode="vector", k=5)
    a0 = next(h for h in res["results"] if str(h["chunk"]["id"]) == "audio_chunk:a0")
    assert a0["chunk"]["startS"] == 0.0 and a0["chunk"]["endS"] == 4.5
    assert a0["chunk"]["section"] is None
    assert a0["document"]["title"] == "Support call"
    # transcript text is searched too (its BM25 scores come from its own, smaller
    # index, so they are merged by raw score: an approximation, see QUERY-DESIGN)
    lex = await query(db, "thirty days", None, mode="bm25")
    a1 = next(h for h in lex["results"] if str(h["chunk"]["id"]) == "audio_chunk:a1")
    assert a1["chunk"]["startS"] == 4.5 and a1["chunk"]["endS"] == 9.0


# --- filters and lens ------------------------------------------------------------------------

@pytest.mark.parametrize("flt, keep", [
    ({"mimeType": ["application/pdf"]}, lambda k: MIME[k] == "application/pdf"),
    ({"mimeType": ["text/vtt", "text/markdown"]}, lambda k: MIME[k] in ("text/vtt", "text/markdown")),
    ({"documentIds": ["warranty", "document:shipping", RecordID("document", "call")]},
     lambda k: DOC_OF[k] in ("warranty", "shipping", "call")),
    ({"documentIds": ["returns", "warranty"], "mimeType": ["text/markdown"]}, lambda k: DOC_OF[k] == "warranty"),
    ({"documentIds": ["nope"]}, lambda k: False),
])
async def test_filters_apply_to_both_legs_before_top_k(db, corpus, flt, keep):
    q = "return window for unopened items warranty shipping"
    allowed = [k for k in corpus["emb"] if keep(k)]
    vec = await query(db, q, corpus["q"], mode="vector", k=3, threshold=-1, filter=flt)
    assert ids(vec["results"]) == [r[1] for r in expected_vector(corpus, allowed, threshold=-1)][:3]
    lex = await query(db, q, None, mode="bm25", k=50, filter=flt)
    unfiltered = await bm25_leg(db, q)
    assert ids(lex["results"]) == [r[1] for r in unfiltered if r[1].split(":")[1] in allowed]
    hyb = await query(db, q, corpus["q"], k=50, threshold=-1, filter=flt)
    assert set(ids(hyb["results"])) <= {str(chunk_rid(k)) for k in allowed}
    assert vec["trace"]["legs"]["vector"]["tables"]["chunk"]["strategy"] == "exact"


async def test_empty_filter_lists_match_nothing(db, corpus):
    res = await query(db, "returns", corpus["q"], filter={"mimeType": []}, threshold=-1)
    assert res["results"] == []
    assert "filter.mimeType is an empty list: no passage can match" in res["warnings"]
    assert res["trace"]["legs"]["vector"] == {"ran": False, "weight": 0.5, "reason": "the filter admits nothing"}
    assert res["trace"]["legs"]["bm25"]["reason"] == "the filter admits nothing"
    res = await query(db, "returns", corpus["q"], filter={"documentIds": []}, threshold=-1)
    assert res["results"] == [] and "filter.documentIds is an empty list" in " ".join(res["warnings"])


@pytest.mark.parametrize("lens, visible", [
    ([["org/acme"]], lambda s: any(p.startswith("org/acme") for p in s)),
    ([["org/acme/legal"], ["org/other"]], lambda s: "org/acme/legal" in s or "org/other" in s),
    ([["org/acme/support"]], lambda s: "org/acme/support" in s),
    ([["org/acme", "nope"]], lambda s: False),
])
async def test_lens_narrows_both_legs(db, corpus, lens, visible):
    q = "return window for unopened items warranty shipping gift cards"
    allowed = [k for k in corpus["emb"] if visible(SCOPES[k])]
    vec = await query(db, q, corpus["q"], mode="vector", k=4, threshold=-1, lens=lens)
    assert ids(vec["results"]) == [r[1] for r in expected_vector(corpus, allowed, threshold=-1)][:4]
    lex = await query(db, q, None, mode="bm25", k=50, lens=lens)
    assert ids(lex["results"]) == [r[1] for r in await bm25_leg(db, q) if r[1].split(":")[1] in allowed]
    hyb = await query(db, q, corpus["q"], k=50, threshold=-1, lens=lens)
    assert set(ids(hyb["results"])) <= {str(chunk_rid(k)) for k in allowed}
    assert set(ids(hyb["contextHits"])) <= {str(chunk_rid(k)) for k in allowed}
    # the trace records the lens as its scopes
    assert sorted(hyb["trace"]["scopes"]) == sorted({p for clause in lens for p in clause})


# --- context hits --------------------------------------------------------------------------------

def ctx(res) -> list[tuple[str, str]]:
    return [(str(h["chunk"]["id"]), str(h["expands"])) for h in res["contextHits"]]


async def test_context_hits_are_nearest_same_section_siblings(db, corpus):
    res = await query(db, "x", corpus["q"], mode="vector", k=2, threshold=-1)
    assert ids(res["results"]) == ["chunk:r0", "chunk:s0"]
    assert ctx(res) == [("chunk:r1", "chunk:r0"), ("chunk:r2", "chunk:r0"), ("chunk:s1", "chunk:s0"), ("chunk:s2", "chunk:s0")]
    hit = res["contextHits"][0]
    assert set(hit) == {"chunk", "document", "expands"}
    assert hit["chunk"]["section"] == "Eligibility" and hit["document"]["title"] == "Returns Policy"
    # k=3 adds w0, which has no section: nothing more
    res3 = await query(db, "x", corpus["q"], mode="vector", k=3, threshold=-1)
    assert ctx(res3) == ctx(res)
    # off
    assert (await query(db, "x", corpus["q"], mode="vector", k=2, threshold=-1, expandContext=False))["contextHits"] == []


async def test_context_hits_never_repeat_and_never_shadow_ranked_hits(db, corpus):
    res = await query(db, "x", corpus["q"], mode="vector", k=5, threshold=-1, filter={"documentIds": ["returns"]})
    ranked = ids(res["results"])
    assert ranked == ["chunk:r0", "chunk:r5", "chunk:r4", "chunk:r1", "chunk:r2"]
    # r0 (best) takes r3, its nearest unranked sibling; r5 takes r6; r4, r1, r2 find none left
    assert ctx(res) == [("chunk:r3", "chunk:r0"), ("chunk:r6", "chunk:r5")]
    got = [c for c, _ in ctx(res)]
    assert len(got) == len(set(got)) and not set(got) & set(ranked)
    for _chunk, anchor in ctx(res):
        assert anchor in ranked


async def test_context_hits_honour_the_lens(db, corpus):
    open_ = await query(db, "x", corpus["q"], mode="vector", k=1, threshold=-1)
    assert ctx(open_)[:2] == [("chunk:r1", "chunk:r0"), ("chunk:r2", "chunk:r0")]
    # r2 is scoped org/acme/restricted: invisible under org/acme/support, the next nearest comes instead
    lensed = await query(db, "x", corpus["q"], mode="vector", k=1, threshold=-1, lens=[["org/acme/support"]])
    assert ctx(lensed) == [("chunk:r1", "chunk:r0"), ("chunk:r3", "chunk:r0")]


# --- determinism, ties, traces, empty database ---------------------------------------------------

async def test_ties_are_broken_by_id_in_every_mode(db, corpus):
    vec = await query(db, "x", corpus["tie"], mode="vector", k=2)
    assert ids(vec["results"]) == ["chunk:t_a", "chunk:t_b"]
    lex = await query(db, "zyzzyva", None, mode="bm25", k=2)
    assert ids(lex["results"]) == ["chunk:t_a", "chunk:t_b"]
    assert lex["results"][0]["score"] == lex["results"][1]["score"]
    hyb = await query(db, "zyzzyva", corpus["tie"], k=2)
    assert ids(hyb["results"]) == ["chunk:t_a", "chunk:t_b"]


async def test_same_query_same_answer(db, corpus):
    q = "return window for unopened items"
    first = await query(db, q, corpus["q"], k=20, threshold=0)
    for _ in range(3):
        again = await query(db, q, corpus["q"], k=20, threshold=0)
        assert [(str(h["chunk"]["id"]), h["score"]) for h in again["results"]] == \
               [(str(h["chunk"]["id"]), h["score"]) for h in first["results"]]
        assert ctx(again) == ctx(first)


async def test_trace_is_stored_and_returned(db, corpus):
    res = await query(db, "return window", corpus["q"], k=3, caller="tests", lens=[["org/acme"]])
    trace = res["trace"]
    # the stored trace also keeps the query embedding (for trace feedback, surql/470); the response does not
    (stored,) = await db.query("SELECT * OMIT query_embedding FROM ONLY $id", {"id": trace["id"]})
    assert stored == trace
    assert trace["query"] == "return window" and trace["mode"] == "hybrid" and trace["caller"] == "tests"
    assert trace["scopes"] == ["org/acme"]
    assert [str(h["id"]) for h in trace["hits"]] == ids(res["results"])
    assert [h["score"] for h in trace["hits"]] == [h["score"] for h in res["results"]]
    assert set(trace["timings"]) == {"optionsMs", "vectorMs", "bm25Ms", "fuseMs", "hydrateMs", "contextMs", "traceMs", "totalMs"}
    assert trace["timings"]["totalMs"] <= res["queryMs"]
    legs = trace["legs"]
    assert legs["vector"]["ran"] and legs["bm25"]["ran"]
    assert legs["vector"]["tables"]["chunk"]["strategy"] in ("hnsw_postfilter", "hnsw_postfilter+exact")
    assert legs["vector"]["candidates"] >= legs["vector"]["returned"]
    assert "f" not in trace["options"]  # internal plumbing stays out of the trace


async def test_empty_database_returns_empty_results():
    target = make_target("empty")
    conn = await open_connection(target)
    try:
        await Migrator(conn).migrate()
        e = [1.0] + [0.0] * (DIM - 1)
        for opts in ({}, {"mode": "vector"}, {"mode": "bm25"}, {"filter": {"mimeType": ["x"]}}, {"lens": [["org"]]}):
            res = await query(conn, "anything at all", e, **opts)
            assert res["results"] == [] and res["contextHits"] == []
            # a trace is written for an empty answer too: the stored record is the one returned
            (stored,) = await conn.query("SELECT * OMIT query_embedding FROM ONLY $id", {"id": res["trace"]["id"]})
            assert stored == res["trace"] and stored["query"] == "anything at all" and stored["hits"] == []
    finally:
        await drop(conn, target)
        await close_quietly(conn)


# --- query plans ----------------------------------------------------------------------------------

def rendered_function(name: str) -> str:
    s = SchemaSettings()
    scripts = render_dir(bundled_dir("surql"), "desired", s.model_dump() | {"hnsw_ef": s.hnsw_ef})
    text = next(x.text for x in scripts if x.key == "400_query")
    start = text.index(f"DEFINE FUNCTION OVERWRITE {name}(")
    return text[start: text.index("} COMMENT", start)]


def statements(body: str) -> list[str]:
    """Every SELECT in a function body, up to its ';' or its closing parenthesis."""
    out = []
    for m in re.finditer(r"SELECT ", body):
        depth, i = 0, m.start()
        while i < len(body):
            ch = body[i]
            if ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            elif ch == ";" and depth == 0:
                break
            i += 1
        out.append(body[m.start():i])
    return out


async def explain(conn, name: str, contains: str, f: dict, **params) -> str:
    body = rendered_function(name)
    lets = "".join(line.strip() for line in body.splitlines() if re.match(r"LET \$(c\d+|docs|mimes) = ", line.strip()))
    stmt = next(s for s in statements(body) if contains in s)
    (*_, plan) = await conn.query(f"{lets} EXPLAIN {stmt};", {"f": f, **params})
    return plan


GOLDEN = Path(__file__).parent / "golden" / "query_plans"


def normalise_plan(plan) -> str:
    """EXPLAIN text without what varies between runs: engine-generated record keys,
    timings and memory addresses; trailing spaces trimmed."""
    text = plan if isinstance(plan, str) else json.dumps(plan, indent=1, sort_keys=True, default=str)
    text = re.sub(r"\b(\d+(\.\d+)?) ?(ns|µs|us|ms|s)\b", "<time>", text)
    text = re.sub(r"0x[0-9a-f]+", "<addr>", text)
    text = re.sub(r"⟨[0-9a-z]{20,}⟩|\b[0-9a-z]{20,}\b", "<key>", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines()) + "\n"


def check_golden(name: str, plan) -> str:
    """Compare a plan with tests/golden/query_plans/<name>.txt; `make goldens` rewrites them."""
    text = normalise_plan(plan)
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("AMEM_UPDATE_GOLDENS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden plan {path}: run `make goldens`"
    assert text == path.read_text(), f"the plan of {name} changed: review it, then run `make goldens` to accept it"
    return text


# (golden name, function, a fragment of the statement, filter, parameters); the structural
# assertions below say what each golden must show
PLANS = {
    "bm25_chunk": ("fn::amem::query::bm25_engine_chunk", "search::score", "open", {"text": "return window"}),
    "vector_chunk_hnsw": ("fn::amem::query::vector_chunk", "<|256,", "open", {"e": True}),
    "exact_chunk_documents": ("fn::amem::query::exact_chunk", "document IN $docs", "docs", {"e": True}),
    "exact_chunk_mime": ("fn::amem::query::exact_chunk", "WHERE mime_type IN $mimes", "mime", {"e": True}),
    "exact_chunk_lens": ("fn::amem::query::exact_chunk", "WHERE (scope_keys", "lens", {"e": True}),
    "mime_count_chunk": ("fn::amem::query::mime_count_chunk", "mime_type = 'application/pdf'", "mime", {}),
    "count_chunk": ("fn::amem::query::vector_chunk", "count() FROM chunk GROUP ALL", "open", {}),
    "context_siblings": ("fn::amem::query::context", "section IN $sections", "open", {"sections": True}),
}


@pytest.fixture(scope="module")
async def plans(db, corpus):
    e = [float(x) for x in corpus["q"]]
    none_lens = [[]] * LENS_SLOTS
    f_open = {"docs": None, "mimes": None, "lens": None, "clauses": none_lens}
    filters = {
        "open": f_open,
        "docs": {**f_open, "docs": [rid("document", "returns"), rid("document", "warranty")]},
        "mime": {**f_open, "mimes": ["application/pdf"]},
        "lens": {**f_open, "lens": [["org/acme"]], "clauses": [["org/acme"]] * LENS_SLOTS},
    }
    out = {}
    for name, (fn, fragment, flt, params) in PLANS.items():
        p = {k: v for k, v in params.items() if not isinstance(v, bool)}
        if params.get("e"):
            p["e"] = e
        if params.get("sections"):
            p.update(sections=[rid("section", "ret_elig")], ranked=[rid("chunk", "r0")])
        out[name] = check_golden(name, await explain(db, fn, fragment, filters[flt], **p))
    return out


async def test_query_plans_match_their_goldens(plans):
    assert set(plans) == set(PLANS)
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(PLANS), "stale golden files: run `make goldens`"


async def test_query_plans_use_the_indexes(plans):
    assert "FullTextScan" in plans["bm25_chunk"] and "index: chunk_fts_text" in plans["bm25_chunk"]
    plan = plans["vector_chunk_hnsw"]
    assert "KnnScan" in plan and "index: chunk_embedding" in plan and "k: 256" in plan
    plan = plans["exact_chunk_documents"]
    assert "IndexScan" in plan and "index: chunk_document" in plan and "TableScan" not in plan
    plan = plans["exact_chunk_mime"]
    assert "index: chunk_mime_type" in plan and "TableScan" not in plan
    plan = plans["exact_chunk_lens"]
    assert "TableScan" in plan and "pre_decode_filter: yes" in plan
    # counts: index-only for a literal MIME type (a $param would decode every row)
    plan = plans["mime_count_chunk"]
    assert plan.strip().startswith("IndexCountScan") and "mime_type = 'application/pdf'" in plan
    assert plans["count_chunk"].strip().startswith("CountScan")
    assert "index: chunk_section" in plans["context_siblings"]


def test_literal_mime_counts_cover_the_parsers():
    """mime_count_* renders literal counts for the MIME types the parsers produce
    (a literal is what gets an index-only count): keep the list in sync."""
    from amem_db import parsing

    body = rendered_function("fn::amem::query::mime_count_chunk")
    for mime in KNOWN_MIME_TYPES:
        assert f"mime_type = '{mime}'" in body, mime
    for name in dir(parsing):
        if name.startswith("MIME_") and isinstance(getattr(parsing, name), str):
            assert f"mime_type = '{getattr(parsing, name)}'" in body, name


# --- 10,000 chunks: the filter applies before top-k on every access path ---------------------------

BIG_DOCS, BIG_PER_DOC = 100, 100
NEEDLES = ["n0", "n1", "n2"]  # 3 documents x 5 chunks, least similar of all to the query


@pytest.fixture(scope="module")
async def big():
    target = make_target("big")
    conn = await open_connection(target)
    await Migrator(conn).migrate()
    rng = np.random.default_rng(7)
    q = unit(rng.standard_normal(DIM))
    docs = [f"b{i:03d}" for i in range(BIG_DOCS)] + NEEDLES
    # 10,000 chunks in all: 99 x 100 + 85 + 3 x 5
    per_doc = {d: 5 if d in NEEDLES else BIG_PER_DOC for d in docs}
    per_doc[docs[BIG_DOCS - 1]] = BIG_PER_DOC - 5 * len(NEEDLES)
    mime_of = {d: "application/x-needle" if d in NEEDLES else ("application/pdf" if i % 2 else "text/plain")
               for i, d in enumerate(docs)}
    await conn.query(
        "INSERT INTO document $docs RETURN NONE",
        {"docs": [{"id": rid("document", d), "text": d, "content_hash": d, "title": d, "mime_type": mime_of[d],
                   "chunk_count": per_doc[d], "scopes": ["org/needle"] if d in NEEDLES else ["org/bulk"]} for d in docs]},
    )
    keys, mimes, rows = [], [], []
    for d in docs:
        needle = d in NEEDLES
        for j in range(per_doc[d]):
            key = f"{d}_{j:03d}"
            # needles: distinct cosines in [-0.356, -0.30], below every random row (min ~ -0.2)
            v = with_cosine(q, -0.30 - 0.004 * (NEEDLES.index(d) * 5 + j), rng) if needle else unit(rng.standard_normal(DIM))
            keys.append(key)
            mimes.append(mime_of[d])
            rows.append({"k": key, "d": d, "p": j, "m": mime_of[d], "s": "org/needle" if needle else "org/bulk",
                         "t": "needle haystack" if needle else "haystack straw bale",
                         "e": ",".join(f"{x:.9g}" for x in v)})
    sql = (
        "INSERT INTO chunk $rows.map(|$r| { id: type::record('chunk', $r.k), document: type::record('document', $r.d), "
        "text: $r.t, position: $r.p, char_start: 0, char_end: 1, mime_type: $r.m, scopes: [$r.s], "
        "embedding: <array<float>> string::split($r.e, ',') }) RETURN NONE"
    )
    for s in range(0, len(rows), 100):
        await conn.query(sql, {"rows": rows[s: s + 100]})
    (count,) = await conn.query("SELECT count() FROM chunk GROUP ALL")
    assert count[0]["count"] == 10_000
    # the engine's own copies of the vectors (string round trip), for exact numpy cosine
    matrix = np.array([[float(x) for x in r["e"].split(",")] for r in rows])
    yield {"conn": conn, "q": q, "keys": np.array(keys), "mimes": np.array(mimes), "m": matrix}
    await drop(conn, target)
    await close_quietly(conn)


def exact_top(big, mask, n):
    sims = big["m"] @ big["q"] / np.linalg.norm(big["m"], axis=1)
    idx = np.where(mask)[0]
    order = sorted(idx, key=lambda i: (-sims[i], big["keys"][i]))[:n]
    return [f"chunk:{big['keys'][i]}" for i in order], [float(sims[i]) for i in order]


@pytest.mark.slow  # a 10k-chunk corpus
async def test_big_needles_are_not_in_the_unfiltered_pool(big):
    res = await query(big["conn"], "x", big["q"], mode="vector", k=50, threshold=-1)
    want, _ = exact_top(big, np.ones(len(big["keys"]), bool), 50)
    assert ids(res["results"]) == want  # HNSW agrees with exact search at the top
    assert res["trace"]["legs"]["vector"]["tables"]["chunk"]["strategy"] == "hnsw"
    assert not any("chunk:n" in i for i in ids(res["results"]))


@pytest.mark.slow  # a 10k-chunk corpus
@pytest.mark.parametrize("opts, strategy", [
    ({"filter": {"documentIds": NEEDLES}}, "exact"),
    ({"filter": {"mimeType": ["application/x-needle"]}}, "hnsw_postfilter+exact"),  # no cheap count for an unknown type
    ({"lens": [["org/needle"]]}, "hnsw_postfilter+exact"),
    ({"filter": {"documentIds": NEEDLES + ["b000"]}, "lens": [["org/needle"]]}, "exact"),
])
async def test_big_filter_keeping_three_documents_returns_their_best_chunks(big, opts, strategy):
    mask = np.char.startswith(big["keys"], "n")
    want, sims = exact_top(big, mask, 15)
    res = await query(big["conn"], "x", big["q"], mode="vector", k=15, threshold=-1, **opts)
    assert ids(res["results"]) == want
    for h, s in zip(res["results"], sims):
        assert h["score"] == 0.0 and s < 0  # all below zero: clamped scores, exact order
    assert res["trace"]["legs"]["vector"]["tables"]["chunk"]["strategy"] == strategy
    # hybrid keeps them too (the BM25 leg sees only their text under the filter)
    hyb = await query(big["conn"], "needle", big["q"], k=15, threshold=-1, **opts)
    assert set(ids(hyb["results"])) == set(want)


@pytest.mark.slow  # a 10k-chunk corpus
async def test_big_broad_filter_uses_hnsw_then_filters(big):
    mask = big["mimes"] == "application/pdf"  # ~half the rows
    want, _ = exact_top(big, mask, 20)
    res = await query(big["conn"], "x", big["q"], mode="vector", k=20, threshold=-1, filter={"mimeType": ["application/pdf"]})
    assert ids(res["results"]) == want
    chunk = res["trace"]["legs"]["vector"]["tables"]["chunk"]
    assert chunk["strategy"] == "hnsw_postfilter" and chunk["admitted"] == int(mask.sum()) and chunk["total"] == 10_000


@pytest.mark.slow  # a 10k-chunk corpus
async def test_big_bm25_filter_before_limit(big):
    # "haystack" is in every chunk: without the filter the top 256 are all bulk rows
    res = await query(big["conn"], "haystack", None, mode="bm25", k=50, filter={"documentIds": NEEDLES})
    assert len(res["results"]) == 15 and all("chunk:n" in i for i in ids(res["results"]))
