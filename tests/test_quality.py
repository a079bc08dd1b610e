"""Retrieval-quality options of documents.query (issue #16) on the real engine:
score fusion (fusion: zscore | minmax, fn::amem::fusion::scores), the query-aware
vector weight (identifierVectorWeight, fn::amem::fusion::has_identifier), and
their validation. Expected orders are computed here in Python from the seeded
cosines and from the BM25 scores the engine's own index gives (read with a plain
SELECT), never copied from the engine's answer."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from surrealdb import RecordID
from surrealdb.errors import ThrownError

from amem_db.harness.query_types import tag_query

DIM = 384
Q_CALL = "RETURN fn::amem::documents::query($q, $e, $o)"

# key, text, cosine with the query vector
CHUNKS = [
    ("c0", "Gene p53 regulates the cell cycle and apoptosis in tumour cells.", 0.62),
    ("c1", "The p53 protein binds DNA; mutations of p53 are common in cancer.", 0.41),
    ("c2", "Cell cycle checkpoints stop division when DNA is damaged.", 0.71),
    ("c3", "Apoptosis is programmed cell death.", 0.55),
    ("c4", "Tumour suppressors such as p53 act at cell cycle checkpoints in tumour cells.", 0.30),
    ("c5", "Wind tunnels measure the lift of an aerofoil.", 0.12),
    ("c6", "Boundary layers separate at high angles of attack.", 0.48),
]
QUERY = "p53 cell cycle tumour"  # the identifier type: p53 and 3 other content words


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


@pytest.fixture(scope="module")
async def corpus(db):
    rng = np.random.default_rng(1616)
    q = unit(rng.standard_normal(DIM))
    emb = {}
    for key, _, a in CHUNKS:
        u = rng.standard_normal(DIM)
        u = unit(u - (u @ q) * q)
        emb[key] = a * q + math.sqrt(1 - a * a) * u
    await db.query(
        "INSERT INTO document { id: document:bio, title: 'Biology', source: 'bio.txt', text: 'x', content_hash: 'h', "
        "mime_type: 'text/plain', scopes: ['org/q'] } RETURN NONE;"
        "INSERT INTO chunk $rows RETURN NONE;",
        {"rows": [{"id": RecordID("chunk", k), "document": RecordID("document", "bio"), "text": t, "position": i,
                   "char_start": i * 100, "char_end": i * 100 + len(t), "mime_type": "text/plain",
                   "scopes": ["org/q"], "embedding": [float(x) for x in emb[k]]}
                  for i, (k, t, _) in enumerate(CHUNKS)]},
    )
    return {"q": [float(x) for x in q], "sim": {f"chunk:{k}": a for k, _, a in CHUNKS}}


async def query(conn, q: str, e, **opts):
    (res,) = await conn.query(Q_CALL, {"q": q, "e": e, "o": opts})
    return res


async def bm25_scores(conn, q: str) -> dict[str, float]:
    (terms,) = await conn.query("RETURN fn::amem::query::terms($q)", {"q": q})
    (rows,) = await conn.query("SELECT id, search::score(1) AS score FROM chunk_fts WHERE text @1,OR@ $t",
                               {"t": terms["text"]})
    return {str(r["id"]).replace("chunk_fts:", "chunk:", 1): float(r["score"]) for r in rows}


def ref_scores(legs: list[dict[str, float]], weights: list[float], how: str) -> list[tuple[str, float]]:
    """Reference score fusion: per leg z-score (population) or min-max over its own
    candidates; a passage missing from a leg gets that leg's lowest normalised score;
    ties by id."""
    norm = []
    for leg in legs:
        s = list(leg.values())
        if not s:
            norm.append({})
            continue
        if how == "zscore":
            mu, sd = statistics.fmean(s), statistics.pstdev(s)
            norm.append({i: (x - mu) / sd if sd > 0 else 0.0 for i, x in leg.items()})
        else:
            lo, hi = min(s), max(s)
            norm.append({i: (x - lo) / (hi - lo) if hi > lo else 1.0 for i, x in leg.items()})
    ids = set().union(*norm)
    # a leg whose scores are all alike cannot rank: each of its passages gets the whole weight
    fused = {i: sum((w * n.get(i, min(n.values())) if max(n.values()) > min(n.values()) else (w if i in n else 0.0))
                    for w, n in zip(weights, norm, strict=True) if n) for i in ids}
    return sorted(fused.items(), key=lambda x: (-round(x[1], 12), x[0]))


# --- fn::amem::fusion::scores -------------------------------------------------------------

@pytest.mark.parametrize("how", ["zscore", "minmax"])
async def test_score_fusion_matches_reference(db, how):
    rng = np.random.default_rng(7)
    for trial in range(20):
        legs = []
        for _ in range(2):
            n = int(rng.integers(0, 12))
            keys = rng.choice(20, size=n, replace=False)
            legs.append({f"d{int(k):02d}": float(np.round(rng.normal(3, 2), 3)) for k in keys})
        weights = [float(np.round(rng.uniform(0, 1), 2))]
        weights.append(round(1 - weights[0], 2))
        lists = [sorted(({"id": i, "score": s} for i, s in leg.items()), key=lambda r: -r["score"]) for leg in legs]
        (got,) = await db.query("RETURN fn::amem::fusion::scores($l, $w, $h, 50)", {"l": lists, "w": weights, "h": how})
        want = ref_scores(legs, weights, how)
        assert [r["id"] for r in got] == [i for i, _ in want], (trial, legs, weights)
        if got:
            assert all(0 <= r["score"] <= 1 for r in got)


async def test_score_fusion_missing_passage_sits_at_the_leg_floor(db):
    # b is the vector leg's best and absent from BM25: under z-score it must not
    # inherit BM25's mean (search::linear's rule), it gets BM25's lowest score
    lists = [[{"id": "b", "score": 0.9}, {"id": "a", "score": 0.5}, {"id": "c", "score": 0.1}],
             [{"id": "a", "score": 10.0}, {"id": "c", "score": 9.0}, {"id": "d", "score": 1.0}]]
    (got,) = await db.query("RETURN fn::amem::fusion::scores($l, [0.5, 0.5], 'zscore', 10)", {"l": lists})
    assert [r["id"] for r in got] == [i for i, _ in ref_scores(
        [{r["id"]: r["score"] for r in lst} for lst in lists], [0.5, 0.5], "zscore")]
    # search::linear's rule (missing = 0 = the mean) would put b first:
    # vector z: b 1.22, a 0, c -1.22; BM25 z: a 0.83, c 0.58, d -1.41
    assert got[0]["id"] == "a" and [r["id"] for r in got][:2] == ["a", "b"]
    vz, lz = (1.5 ** 0.5, 0.0, -(1.5 ** 0.5)), [(x - 20 / 3) / statistics.pstdev([10, 9, 1]) for x in (10, 9, 1)]
    attainable = 0.5 * (vz[0] - vz[2]) + 0.5 * (lz[0] - lz[2])
    assert got[0]["score"] == pytest.approx((0.5 * (vz[1] - vz[2]) + 0.5 * (lz[0] - lz[2])) / attainable)


async def test_score_fusion_a_lone_hit_first_in_every_leg_scores_one(db):
    (got,) = await db.query("RETURN fn::amem::fusion::scores([[{id: 'a', score: 0.4}], [{id: 'a', score: 7.5}]], [0.5, 0.5], 'zscore', 10)")
    assert got == [{"id": "a", "score": 1.0, "fused": 1.0, "parts": [0.5, 0.5]}]
    (got,) = await db.query("RETURN fn::amem::fusion::scores([[{id: 'a', score: 0.4}], [{id: 'b', score: 2}, {id: 'a', score: 1}]], [0.5, 0.5], 'zscore', 10)")
    # a: 0.5 (the lone vector hit) + 0 (BM25's floor); b: 0 + 0.5 * (1 - -1) z = 1.0
    assert [(r["id"], r["fused"]) for r in got] == [("b", pytest.approx(1.0)), ("a", pytest.approx(0.5))]
    assert [r["id"] for r in got] == [i for i, _ in ref_scores([{"a": 0.4}, {"b": 2.0, "a": 1.0}], [0.5, 0.5], "zscore")]
    assert got[0]["score"] == pytest.approx(1.0 / 1.5)


async def test_score_fusion_ties_by_id_and_bad_arguments(db):
    (got,) = await db.query("RETURN fn::amem::fusion::scores([[{id: 'b', score: 1}, {id: 'a', score: 1}]], [1], 'minmax', 10)")
    assert [r["id"] for r in got] == ["a", "b"]
    with pytest.raises(ThrownError, match="one weight per list"):
        await db.query("RETURN fn::amem::fusion::scores([[{id: 'a', score: 1}]], [1, 2], 'zscore', 10)")
    with pytest.raises(ThrownError, match="amem:invalid_input: fusion must be one of"):
        await db.query("RETURN fn::amem::fusion::scores([[{id: 'a', score: 1}]], [1], 'borda', 10)")


# --- documents.query fusion option ------------------------------------------------------------

@pytest.mark.parametrize("how", ["zscore", "minmax"])
async def test_query_score_fusion_ranks_by_the_reference(db, corpus, how):
    lex = await bm25_scores(db, QUERY)
    assert len(lex) >= 3  # the BM25 leg really has several candidates
    vec = {i: s for i, s in corpus["sim"].items() if s >= 0.5}
    res = await query(db, QUERY, corpus["q"], mode="hybrid", k=10, fusion=how, vectorWeight=0.5, expandContext=False)
    want = [i for i, _ in ref_scores([vec, lex], [0.5, 0.5], how)]
    assert [str(h["chunk"]["id"]) for h in res["results"]] == want
    assert res["trace"]["options"]["fusion"] == how
    # the trace keeps each leg's rank and raw score, and its part of the score (no RRF sum)
    for hit in res["trace"]["hits"]:
        parts = [(hit.get(leg) or {}).get("contribution", 0.0) for leg in ("vector", "bm25")]
        assert hit.get("rrf") is None and sum(parts) == pytest.approx(hit["score"], abs=1e-9)


async def test_query_zscore_is_the_default_and_differs_from_rrf(db, corpus):
    from amem_db.constants import DEFAULT_FUSION

    default = await query(db, QUERY, corpus["q"], k=10, vectorWeight=0.5, expandContext=False)
    explicit = await query(db, QUERY, corpus["q"], k=10, vectorWeight=0.5, fusion=DEFAULT_FUSION, expandContext=False)
    rrf = await query(db, QUERY, corpus["q"], k=10, vectorWeight=0.5, fusion="rrf", expandContext=False)
    order = [[str(h["chunk"]["id"]) for h in r["results"]] for r in (default, explicit, rrf)]
    assert DEFAULT_FUSION == "zscore" and default["trace"]["options"]["fusion"] == "zscore"
    assert order[0] == order[1]
    assert order[0] != order[2]  # the seeded legs disagree enough for the rules to differ
    assert rrf["trace"]["hits"][0]["rrf"] is not None and default["trace"]["hits"][0].get("rrf") is None


async def test_bad_fusion_is_a_typed_error_naming_the_field_and_writes_nothing(db, corpus):
    from amem_db.db import call
    from amem_db.errors import InvalidInput

    (before,) = await db.query("SELECT count() FROM retrieval_trace GROUP ALL")
    for bad in ["borda", 3, ""]:
        with pytest.raises(InvalidInput, match="fusion must be one of rrf, zscore, minmax"):
            await call(db, "fn::amem::documents::query", QUERY, corpus["q"], {"fusion": bad})
    with pytest.raises(InvalidInput, match="identifierVectorWeight must be in"):
        await call(db, "fn::amem::documents::query", QUERY, corpus["q"], {"identifierVectorWeight": 2})
    (after,) = await db.query("SELECT count() FROM retrieval_trace GROUP ALL")
    assert after == before


# --- query-aware weighting --------------------------------------------------------------------

@pytest.mark.parametrize("text", ["p53 cell cycle", "ERR-482 error", "(DNA) repair", "TNF-alpha, please", "a\tH1N1\nx",
                                  "the 1990 study", "iPhone case", "x", "Ab", "plain words only", "MLWK3LL/A specs",
                                  "p53 mutations are common in many human tumour types", "what is the IL-6 of it all"])
async def test_identifier_query_matches_the_eval_heuristic(db, text):
    (got,) = await db.query("RETURN fn::amem::fusion::identifier_query($q)", {"q": text})
    assert got is (tag_query(text, ["x"])["type"] == "identifier")


async def test_identifier_query_agrees_with_the_eval_on_every_shared_query(db):
    import json

    from amem_db.harness.paths import datasets_root

    root = datasets_root()
    texts = [json.loads(line)["text"] for d in ("scifact", "cranfield", "cisi") if (root / d).exists()
             for line in (root / d / "queries.jsonl").read_text().splitlines() if line.strip()]
    if not texts:
        pytest.skip("the shared datasets are not on this machine")
    (got,) = await db.query("RETURN $qs.map(|$q| fn::amem::fusion::identifier_query($q))", {"qs": texts})
    want = [tag_query(t, ["x"])["type"] == "identifier" for t in texts]
    assert sum(want) > 10 and got == want


async def test_identifier_vector_weight_applies_to_identifier_queries_only(db, corpus):
    async def weight(q: str, **opts) -> float:
        res = await query(db, q, corpus["q"], k=5, expandContext=False, **opts)
        return res["trace"]["legs"]["vector"]["weight"]

    from amem_db.constants import DEFAULT_IDENTIFIER_VECTOR_WEIGHT

    assert await weight(QUERY) == pytest.approx(DEFAULT_IDENTIFIER_VECTOR_WEIGHT)
    assert await weight("cell cycle tumour") == pytest.approx(0.5)
    assert await weight(QUERY, identifierVectorWeight=0.2) == pytest.approx(0.2)
    assert await weight("cell cycle tumour", identifierVectorWeight=0.2) == pytest.approx(0.5)
    # an explicit vectorWeight wins over the query-aware one
    assert await weight(QUERY, identifierVectorWeight=0.2, vectorWeight=0.7) == pytest.approx(0.7)
    # the ranking follows the weight: at 0.0 the identifier query is BM25's order
    res = await query(db, QUERY, corpus["q"], k=10, identifierVectorWeight=0.0, expandContext=False)
    bm25 = await query(db, QUERY, None, mode="bm25", k=10, expandContext=False)
    assert [h["chunk"]["id"] for h in res["results"]] == [h["chunk"]["id"] for h in bm25["results"]]


# --- the threshold default, calibrated per embedding model -------------------------------------

async def test_threshold_default_is_the_model_calibration_and_threshold_overrides(db, corpus):
    from amem_db.constants import DEFAULT_THRESHOLD, MODEL_THRESHOLDS

    async def used(**opts) -> tuple[float, int]:
        res = await query(db, "cell cycle", corpus["q"], mode="vector", k=50, expandContext=False, **opts)
        return res["trace"]["options"]["threshold"], len(res["results"])

    def admitted(t: float) -> int:
        return sum(1 for s in corpus["sim"].values() if s >= t)

    # no vectors recorded yet: the spec's default
    await db.query("DELETE amem_setting:embedding")
    assert await used() == (DEFAULT_THRESHOLD, admitted(DEFAULT_THRESHOLD))
    try:
        for model, t in MODEL_THRESHOLDS.items():
            await db.query("UPSERT amem_setting:embedding CONTENT { model: $m, dimension: 384 }", {"m": model})
            assert await used() == (t, admitted(t))
        await db.query("UPSERT amem_setting:embedding CONTENT { model: 'someone-else', dimension: 384 }")
        assert await used() == (DEFAULT_THRESHOLD, admitted(DEFAULT_THRESHOLD))
        # an explicit threshold always wins
        assert await used(threshold=0.05) == (0.05, admitted(0.05))
    finally:
        await db.query("DELETE amem_setting:embedding")


# --- embedding context (ingest) --------------------------------------------------------------

def test_embedding_text_puts_title_and_heading_before_the_passage():
    from amem_db.ingest import embedding_text, texts_to_embed

    assert embedding_text("body", "Title", "Methods") == "Title\nMethods\n\nbody"
    assert embedding_text("body", None, "  ") == "body"
    prepared = {"chunks": [{"text": "a", "section": 0}, {"text": "b", "section": None}], "audio": [], "keywords": [{"text": "k"}],
                "sections": ["Intro"]}
    doc = {"title": "T", "sections": [{"heading": "Intro"}]}
    on = texts_to_embed(prepared, doc, context=True)
    assert on["chunks"] == ["T\nIntro\n\na", "T\n\nb"] and on["keywords"] == [] and on["sections"] == ["Intro"]
    # keyword nodes are embedded only on request (issue 25: amem_db/keyword_vectors.py)
    assert texts_to_embed(prepared, doc, context=True, keyword_vectors=True)["keywords"] == ["k"]
    assert texts_to_embed(prepared, doc, context=False)["chunks"] == ["a", "b"]


# --- the re-ingest path: documents reprocess --all --------------------------------------------

def test_reprocess_all_rebuilds_every_document(tmp_path):
    import json

    from typer.testing import CliRunner

    from amem_db.cli import app

    def cli(*args: str):
        return CliRunner().invoke(app, list(args), prog_name="amem-db")

    corpus = tmp_path / "docs"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"d{i}.md").write_text(f"# Doc {i}\n\n## Part\n\nThe tumour suppressor p53 number {i} regulates cells.\n")
    args = ("--url", f"surrealkv://{tmp_path / 'db'}", "--embedder", "hash:384")
    assert cli(*args, "migrate").exit_code == 0
    assert cli(*args, "ingest", str(corpus)).exit_code == 0

    def chunk_ids() -> list[str]:
        listed = json.loads(cli(*args, "documents", "list", "--json").stdout)
        out = []
        for d in listed["documents"]:
            out += [c["id"] for c in json.loads(cli(*args, "documents", "chunks", d["id"], "--json").stdout)["chunks"]]
        return sorted(out)

    before = chunk_ids()
    done = cli(*args, "documents", "reprocess", "--all")
    assert done.exit_code == 0, done.output
    assert "reprocessed 3 of 3 documents" in done.stdout
    after = chunk_ids()
    # the same number of passages, every one rebuilt (fresh generation ids)
    assert len(after) == len(before) >= 3 and not set(after) & set(before)
    assert cli(*args, "documents", "reprocess").exit_code == 2  # neither an id nor --all
