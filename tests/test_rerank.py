"""useReranker: the second stage over the fused candidates (surql/480_rerank,
amem_db/rerank.py), on the real engine.

* rescore (in the database): the order is checked against a reference computed
  here from independent reads (every row's BM25 score straight from the full-text
  index, the stored vectors' cosine in numpy, z-scores with ``statistics``).
* the client rerankers: a small local HTTP server in a thread speaks the JSON rerank
  API (POST {model, query, documents, top_n} -> {results: [{index, relevance_score}]}).
  It STANDS IN FOR A MODEL: it scores a document by how often a marker word occurs,
  so the expected order is known here; what is tested is the wire protocol, the
  reordering, the trace record and the fall-backs, not a model's quality.
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

import numpy as np
import pytest
import pytest_asyncio
from devserver_fixture import dev_server, tenants  # noqa: F401
from helpers import hash_memory
from standin import JsonStandIn

from amem_db import Memory
from amem_db.db import call
from amem_db.embedding import get_embedder
from amem_db.errors import InvalidInput, NotFound
from amem_db.ingest import Item, ingest_items
from amem_db.rerank import (
    CrossEncoderReranker,
    EndpointReranker,
    RerankerError,
    _scores_from_reply,
    resolve_reranker,
    unit_score,
)

HASH = "hash:384"
WORDS = ("solar wind magnetic field plasma wave boundary layer turbulence heat flux shock flow pressure "
         "current density ion electron storm orbit satellite radiation belt").split()


def passage(i: int) -> str:
    """Deterministic, varied passages: each word's frequency differs per passage."""
    picked = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(6 + i % 5)]
    marker = " ".join(["zeta"] * (i % 4))  # the stand-in model's signal
    return f"Passage {i} on {' '.join(picked)} {marker}".strip()


@pytest.fixture(scope="module")
async def mem(db):
    m = hash_memory(db)
    for i in range(40):
        await m.documents.ingest_text(passage(i), source=f"p{i}")
    return m


async def traces(conn) -> int:
    (rows,) = await conn.query("RETURN count(SELECT id FROM retrieval_trace)")
    return int(rows)


# --- the rerank API stand-in -----------------------------------------------------------
class StandIn(JsonStandIn):
    """A /v1/rerank server standing in for a model (see the module docstring)."""

    def __init__(self, *, status: int = 200, delay_s: float = 0.0, reply: Any = None) -> None:
        def answer(body: dict[str, Any]) -> Any:
            return reply if reply is not None else {"results": sorted(
                ({"index": i, "relevance_score": d.count("zeta") / 4} for i, d in enumerate(body["documents"])),
                key=lambda r: -r["relevance_score"])[: body.get("top_n")]}

        super().__init__(answer, status=status, delay_s=delay_s, error_body=b"model overloaded")


# --- rescore, in the database ----------------------------------------------------------
def zscores(xs: list[float]) -> list[float]:
    mean, sd = statistics.fmean(xs), statistics.stdev(xs)
    return [(x - mean) / sd if sd > 0 else 0.0 for x in xs]


async def reference_rescore(mem, query: str, depth: int, mix: float) -> list[str]:
    """The rescore order from independent reads: the fused candidates (the query
    without the reranker, k = depth), every chunk's BM25 score from the index, every
    stored vector's cosine in numpy; z-scored over the candidates, mixed."""
    fused = await mem.documents.query(query, k=depth, threshold=0.0, expand_context=False)
    cands = [str(h.chunk.id) for h in fused.results]
    terms = " ".join(fused.trace["legs"]["bm25"]["terms"])
    (bm,) = await mem.conn.query("SELECT id, search::score(1) AS s FROM chunk_fts WHERE text @1,OR@ $t", {"t": terms})
    bm25 = {f"chunk:{r['id'].id}": r["s"] for r in bm}
    (rows,) = await mem.conn.query("SELECT id, embedding FROM chunk")
    q = np.array(await mem.embed_query(query))
    cos = {f"chunk:{r['id'].id}": float(np.dot(r["embedding"], q) / (np.linalg.norm(r["embedding"]) * np.linalg.norm(q))) for r in rows}
    zb = zscores([bm25.get(c, 0.0) for c in cands])
    zc = zscores([cos[c] for c in cands])
    z = {c: (1 - mix) * zb[i] + mix * zc[i] for i, c in enumerate(cands)}
    return sorted(cands, key=lambda c: (-round(z[c], 12), c)), cands


@pytest.mark.parametrize("query, mix", [("solar wind plasma", 0.5), ("magnetic storm orbit", 0.3), ("ion electron heat flux", 0.8)])
async def test_rescore_orders_by_the_z_mix_of_bm25_and_cosine(mem, query, mix):
    depth, k = 20, 8
    expected, fused = await reference_rescore(mem, query, depth, mix)
    before = await traces(mem.conn)
    res = await mem.documents.query(query, k=k, threshold=0.0, expand_context=False, use_reranker=True,
                                    rerank_depth=depth, rerank_mix=mix)
    assert await traces(mem.conn) == before + 1  # one trace per query, the rerank inside it
    got = [str(h.chunk.id) for h in res.results]
    assert got == expected[:k]
    legs = res.trace["legs"]["rerank"]
    assert legs["ran"] and legs["method"] == "rescore" and legs["depth"] == depth and legs["candidates"] == len(fused)
    for h, t in zip(res.results, res.trace["hits"], strict=True):
        led = t["rerank"]
        assert str(t["id"]) == str(h.chunk.id)
        assert led["before"] == fused.index(str(h.chunk.id)) + 1
        assert h.score == pytest.approx(1 / (1 + math.exp(-led["z"])))
        assert led["z"] == pytest.approx((1 - mix) * led["zBm25"] + mix * led["zCosine"])


async def test_rescore_changes_the_fused_order_somewhere(mem):
    # not vacuous: on this corpus the second stage moves hits
    moved = 0
    for q in ("solar wind plasma", "magnetic storm orbit", "ion electron heat flux", "radiation belt satellite"):
        fused = await mem.documents.query(q, k=8, threshold=0.0, expand_context=False)
        rer = await mem.documents.query(q, k=8, threshold=0.0, expand_context=False, use_reranker=True)
        moved += [h.chunk.id for h in fused.results] != [h.chunk.id for h in rer.results]
    assert moved >= 1


@pytest.mark.parametrize("query, threshold, looked_up", [
    # "on" is a stop word for BM25 but a feature of the vector: vector-only candidates,
    # whose BM25 score is looked up (0 when no query word matches)
    ("on turbulence", 0.0, "bm25Looked"),
    # threshold 0.9: the vector leg keeps almost nothing, BM25 finds the passages: their
    # cosine is computed from the stored vectors
    ("turbulence", 0.9, "cosine"),
])
async def test_rescore_computes_the_signals_the_legs_did_not(mem, query, threshold, looked_up):
    res = await mem.documents.query(query, k=40, threshold=threshold, use_reranker=True, rerank_depth=40)
    assert res.trace["legs"]["rerank"]["computed"][looked_up] > 0
    (bm,) = await mem.conn.query("SELECT id, search::score(1) AS s FROM chunk_fts WHERE text @1,OR@ 'turbulence'")
    bm25 = {f"chunk:{r['id'].id}": r["s"] for r in bm}
    (rows,) = await mem.conn.query("SELECT id, embedding FROM chunk")
    q = np.array(await mem.embed_query(query))
    cos = {f"chunk:{r['id'].id}": float(np.dot(r["embedding"], q) / (np.linalg.norm(r["embedding"]) * np.linalg.norm(q))) for r in rows}
    assert res.trace["hits"]
    for t in res.trace["hits"]:
        assert t["rerank"]["bm25"] == pytest.approx(bm25.get(str(t["id"]), 0.0))
        assert t["rerank"]["cosine"] == pytest.approx(cos[str(t["id"])], abs=1e-6)


async def test_reranker_off_leaves_no_rerank_trace(mem):
    res = await mem.documents.query("solar wind", k=5)
    assert "rerank" not in res.trace["legs"]
    assert all(t.get("rerank") is None for t in res.trace["hits"])
    assert res.trace["options"]["rerank"]["on"] is False


@pytest.mark.parametrize("opts, field", [
    ({"reranker": "cohere"}, "reranker must be rescore"),
    ({"rerankDepth": 0}, "rerankDepth must be a whole number from 1 to 256"),
    ({"rerankDepth": 257}, "rerankDepth must be a whole number from 1 to 256"),
    ({"rerankDepth": 2.5}, "rerankDepth"),
    ({"rerankMix": 1.5}, "rerankMix must be in [0, 1]"),
    ({"rerankMix": "half"}, "rerankMix"),
])
async def test_rerank_options_are_validated_and_nothing_is_written(mem, opts, field):
    e = await mem.embed_query("solar")
    before = await traces(mem.conn)
    with pytest.raises(InvalidInput, match=field.replace("[", r"\[").replace("]", r"\]")):
        await call(mem.conn, "fn::amem::documents::query", "solar", e, {"useReranker": True, **opts})
    assert await traces(mem.conn) == before


# --- explain: the rerank delta of a hit ------------------------------------------------------
async def moved_query(mem, depth: int, k: int):
    """The first query whose rescore moves some hit (so the delta is not vacuous), with its
    fused order read independently (the same query without the reranker, k = depth)."""
    for q in ("solar wind plasma", "magnetic storm orbit", "ion electron heat flux", "radiation belt satellite"):
        fused = await mem.documents.query(q, k=depth, threshold=0.0, expand_context=False)
        res = await mem.documents.query(q, k=k, threshold=0.0, expand_context=False, use_reranker=True, rerank_depth=depth)
        if [h.chunk.id for h in res.results] != [h.chunk.id for h in fused.results[:k]]:
            return fused, res
    raise AssertionError("no query moved")


async def test_explain_shows_each_hits_rank_and_score_before_and_after_the_rescore(mem):
    fused, res = await moved_query(mem, depth=20, k=8)
    before = {str(h.chunk.id): (rank, h.score) for rank, h in enumerate(fused.results, start=1)}
    deltas = []
    for rank, h in enumerate(res.results, start=1):
        why = await mem.traces.explain(res.trace["id"], rank)
        d = why.rerank
        b_rank, b_score = before[str(h.chunk.id)]
        assert d["method"] == "rescore" and d["mix"] == 0.5
        assert d["before"]["rank"] == b_rank and d["before"]["score"] == pytest.approx(b_score)
        assert d["after"] == {"rank": rank, "score": pytest.approx(h.score)}
        assert d["rankDelta"] == b_rank - rank and d["scoreDelta"] == pytest.approx(h.score - b_score)
        row = why.ledger[-1]
        assert row.signal == "rerank" and row.rank == rank and row.value == pytest.approx(h.score)
        assert row.contribution == pytest.approx(h.score - b_score) and row.weight == 0.5
        assert row.note.startswith(f"rank {b_rank} -> {rank}, score ")
        assert any(x.startswith(f"rerank (rescore): rank {b_rank} -> {rank}") and "logistic(z" in x for x in why.decisions)
        # the legs' rows are still there, and the fused score is what the fusion sentence explains
        assert {"vector", "bm25"} & {r.signal for r in why.ledger}
        deltas.append(d["rankDelta"])
    assert any(deltas)  # some hit moved, so the before / after columns differ somewhere
    plain_q = await mem.documents.query("solar wind plasma", k=3, threshold=0.0)
    why = await mem.traces.explain(plain_q.trace["id"], 1)
    assert why.rerank is None and all(r.signal != "rerank" for r in why.ledger)


def test_cli_explain_prints_the_rerank_row(tmp_path):
    from typer.testing import CliRunner

    from amem_db.cli import app

    args = ["--url", f"surrealkv://{tmp_path / 'db'}", "--embedder", HASH]
    run = lambda *a: CliRunner(env={"COLUMNS": "250"}).invoke(app, [*args, *a], prog_name="amem-db")  # noqa: E731
    assert run("migrate").exit_code == 0
    for i in range(12):
        (tmp_path / f"p{i}.md").write_text(passage(i))
    assert run("ingest", str(tmp_path)).exit_code == 0
    done = run("query", "solar wind plasma", "--rerank", "rescore", "--k", "5", "--json")
    assert done.exit_code == 0, done.output
    trace = json.loads(done.stdout)["trace"]
    hit = trace["hits"][0]
    shown = run("traces", "explain", trace["id"], "1")
    assert shown.exit_code == 0, shown.output
    assert "rerank" in shown.stdout and f"rank {hit['rerank']['before']} -> 1" in shown.stdout
    assert "rescore: logistic(z)" in shown.stdout


async def test_explain_shows_a_client_rerankers_delta(mem):
    with StandIn() as server:
        rr = EndpointReranker(server.url, "stand-in-model")
        res = await mem.documents.query("solar wind", k=6, threshold=0.0, use_reranker=True, reranker=rr, rerank_depth=30)
    # a client-reranked trace keeps every candidate in its fused place (rank) and the model's {score, rank}
    fused_rank = {str(t["id"]): t["rank"] for t in res.trace["hits"]}
    moved = 0
    for after, h in enumerate(res.results, start=1):
        why = await mem.traces.explain(res.trace["id"], str(h.chunk.id))
        d = why.rerank
        assert d["method"] == "client" and d["model"] == rr.name
        assert d["after"] == {"rank": after, "score": pytest.approx(h.score)}
        assert d["before"]["rank"] == fused_rank[str(h.chunk.id)] == why.hit["rank"]
        assert why.ledger[-1].signal == "rerank" and why.ledger[-1].measure == f"reranker score ({rr.name})"
        moved += d["rankDelta"] != 0
    assert moved > 0


# --- client rerankers (the stand-in server) ------------------------------------------------
async def test_endpoint_reranker_reorders_and_records_in_the_same_trace(mem, monkeypatch):
    monkeypatch.setenv("AMEM_RERANK_KEY", "sk-test")
    with StandIn() as server:
        rr = EndpointReranker(server.url, "stand-in-model")
        before = await traces(mem.conn)
        res = await mem.documents.query("solar wind", k=6, threshold=0.0, use_reranker=True, reranker=rr, rerank_depth=30)
        assert await traces(mem.conn) == before + 1
    (req,) = server.requests
    assert req["path"] == "/v1/rerank" and req["model"] == "stand-in-model" and req["query"] == "solar wind"
    assert req["auth"] == "Bearer sk-test" and req["top_n"] == len(req["documents"])
    # the stand-in's order: most "zeta" first, ties in fused order
    zetas = [h.chunk.text.count("zeta") for h in res.results]
    assert zetas == sorted(zetas, reverse=True) and zetas[0] == 3
    assert [h.score for h in res.results] == [z / 4 for z in zetas]
    legs = res.trace["legs"]["rerank"]
    assert legs["ran"] and legs["method"] == "client" and legs["model"] == rr.name and legs["candidates"] == len(req["documents"])
    scored = {str(t["id"]): t["rerank"] for t in res.trace["hits"] if t.get("rerank")}
    assert len(scored) == len(req["documents"])
    assert [scored[str(h.chunk.id)]["rank"] for h in res.results] == list(range(1, 7))
    assert "rerankCandidates" not in res.model_dump(by_alias=True)


@pytest.mark.parametrize("server_kw, reason", [
    ({"status": 503}, "HTTP 503"),
    ({"delay_s": 1.5}, "timed out"),
    ({"reply": {"results": [{"index": 0, "relevance_score": 1.0}]}}, "got no score"),
])
async def test_endpoint_failure_keeps_the_fused_order_and_says_why(mem, server_kw, reason):
    fused = await mem.documents.query("solar wind", k=6, threshold=0.0)
    with StandIn(**server_kw) as server:
        rr = EndpointReranker(server.url, timeout_s=0.5)
        res = await mem.documents.query("solar wind", k=6, threshold=0.0, use_reranker=True, reranker=rr)
    assert [h.chunk.id for h in res.results] == [h.chunk.id for h in fused.results]
    assert any(w.startswith(f"useReranker: {rr.name} failed") and reason in w for w in res.warnings)
    legs = res.trace["legs"]["rerank"]
    assert legs["ran"] is False and reason in legs["error"]


async def test_unreachable_endpoint_is_a_typed_error_when_called_directly():
    rr = EndpointReranker("http://127.0.0.1:9", timeout_s=0.5)
    with pytest.raises(RerankerError, match="cannot reach"):
        rr.rerank("q", ["a", "b"])


async def test_record_accepts_only_the_trace_candidates(mem):
    res = await call(mem.conn, "fn::amem::documents::query", "solar wind", await mem.embed_query("solar wind"),
                     {"useReranker": True, "reranker": "client", "k": 3, "rerankDepth": 5, "threshold": 0.0})
    trace = res["trace"]["id"]
    cands = {h["chunk"]["id"] for h in res["rerankCandidates"]}
    (every,) = await mem.conn.query("SELECT VALUE id FROM chunk")
    other = next(f"chunk:{r.id}" for r in every if f"chunk:{r.id}" not in cands)
    with pytest.raises(InvalidInput, match="not a candidate of this trace"):
        await call(mem.conn, "fn::amem::rerank::record", trace, {"method": "client", "scores": [{"id": other, "score": 1.0}]})
    with pytest.raises(InvalidInput, match="finite scores"):
        await call(mem.conn, "fn::amem::rerank::record", trace, {"method": "client", "scores": [{"id": res["results"][0]["chunk"]["id"], "score": "high"}]})
    (missing,) = await mem.conn.query("RETURN type::record('retrieval_trace', 'nope')")
    with pytest.raises(NotFound):
        await call(mem.conn, "fn::amem::rerank::record", missing, {"method": "client", "scores": []})
    # raw SurrealQL: the candidates come back hydrated, the fused top k is the answer until recorded
    assert len(res["rerankCandidates"]) == 5 and len(res["results"]) == 3
    assert res["trace"]["legs"]["rerank"]["ran"] is False


async def test_recall_reranks_its_hits_with_a_client_reranker(mem):
    with StandIn() as server:
        res = await mem.recall("solar wind", k=5, use_reranker=True, reranker=EndpointReranker(server.url), rerank_depth=20,
                               include=["passages"])
    zetas = [h.text.count("zeta") for h in res.hits]
    assert len(res.hits) == 5 and zetas == sorted(zetas, reverse=True)
    assert res.trace["legs"]["rerank"]["method"] == "client"
    # no reranker configured: recall has no in-database rescore, says so, keeps its order
    plain = await mem.recall("solar wind", k=5, include=["passages"])
    res = await mem.recall("solar wind", k=5, use_reranker=True, include=["passages"])
    assert [h.id for h in res.hits] == [h.id for h in plain.hits]
    assert any("no reranker configured for recall" in w for w in res.warnings)


# --- pieces -----------------------------------------------------------------------------
def test_reply_parsing_accepts_the_common_shapes_and_rejects_bad_ones():
    assert _scores_from_reply({"results": [{"index": 1, "relevance_score": 0.2}, {"index": 0, "relevance_score": 0.9}]}, 2, "e") == [0.9, 0.2]
    assert _scores_from_reply({"data": [{"index": 0, "score": 3.5}]}, 1, "e") == [3.5]
    for bad in ({"results": [{"index": 0, "relevance_score": 1}, {"index": 0, "relevance_score": 2}]},
                {"results": [{"index": 5, "relevance_score": 1}]}, {"nothing": []},
                {"results": [{"index": 0, "relevance_score": float("nan")}, {"index": 1, "relevance_score": 1}]}):
        with pytest.raises(RerankerError):
            _scores_from_reply(bad, 2, "e")


def test_scores_become_unit_scores():
    assert unit_score(0.25) == 0.25
    assert unit_score(0.0) == 0.0 and unit_score(1.0) == 1.0
    assert unit_score(2.0) == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert 0 < unit_score(-1000.0) < 1e-100


def test_resolve_reranker(monkeypatch, tmp_path):
    monkeypatch.delenv("AMEM_RERANK_URL", raising=False)
    assert resolve_reranker(None) is None and resolve_reranker("rescore") is None
    monkeypatch.setenv("AMEM_RERANK_URL", "http://127.0.0.1:1234/v1")
    env = resolve_reranker(None)
    assert isinstance(env, EndpointReranker) and env.endpoint == "http://127.0.0.1:1234/v1/rerank"
    assert resolve_reranker("https://x.example/rerank").endpoint == "https://x.example/rerank"
    with pytest.raises(ValueError, match="unknown reranker"):
        resolve_reranker("cohere")
    # the cross-encoder loads from a directory on disk only
    with pytest.raises(RerankerError, match="is not a directory"):
        resolve_reranker(f"cross-encoder:{tmp_path / 'absent'}")


def test_cross_encoder_without_the_extra_says_how_to_install(tmp_path):
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(RerankerError, match=r"pip install 'amem-db\[rerank\]'"):
            CrossEncoderReranker(tmp_path)
    else:  # the extra is installed: an empty directory is no model, and nothing is downloaded
        with pytest.raises(RerankerError, match="cannot load a cross-encoder"):
            CrossEncoderReranker(tmp_path)


async def test_rescore_after_the_graph_rerank_keeps_the_graph_ledger(mem):
    res = await mem.documents.query("solar wind plasma", mode="hybrid_graph", k=5, threshold=0.0, use_reranker=True)
    assert len(res.results) == 5 and res.trace["legs"]["rerank"]["ran"]
    for t in res.trace["hits"]:
        assert t["graph"] is not None and "base" in t["graph"] and t["rerank"]["before"] >= 1


async def test_mode_bm25_rescore_has_no_cosine_and_keeps_the_order(mem):
    fused = await mem.documents.query("solar wind plasma", mode="bm25", k=8)
    res = await mem.documents.query("solar wind plasma", mode="bm25", k=8, use_reranker=True)
    # BM25 alone: the z-mix is a monotone map of the BM25 score, ties by id
    assert [t["rerank"].get("cosine") for t in res.trace["hits"]] == [None] * len(res.results)
    assert [h.chunk.id for h in res.results] == [h.chunk.id for h in fused.results]
    assert "no query embedding" in res.trace["legs"]["rerank"]["reason"]


# --- scopes: record users over the websocket dev server ------------------------------------
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def two(dev_server):
    grants = {"tenant-a": dict(read=[], write=["org/a"]), "tenant-b": dict(read=[], write=["org/b"])}
    async with tenants(dev_server, "rerank", grants) as t:
        emb = get_embedder(HASH)
        for name, tag in (("tenant-a", "alpha"), ("tenant-b", "bravo")):
            items = [Item(f"{tag}{i}", {"text": f"{passage(i)} {tag}secret", "mime_type": "text/plain", "source": f"{tag}{i}"})
                     for i in range(8)]
            rep = await ingest_items(t.conns[name], emb, items)
            assert all(r.status == "added" for r in rep.results)
        yield t


async def test_rerank_stays_in_the_callers_scope(two):
    a, b = two.conns["tenant-a"], two.conns["tenant-b"]
    mem_a = Memory(a, embedder=HASH)
    e = await mem_a.embed_query("solar wind bravosecret")
    # rescore and client candidates: only A's passages, whatever the query names
    res = await call(a, "fn::amem::documents::query", "solar wind bravosecret", e, {"useReranker": True, "threshold": -1, "k": 20})
    assert res["results"] and all("alphasecret" in h["chunk"]["text"] for h in res["results"])
    res = await call(a, "fn::amem::documents::query", "solar wind bravosecret", e,
                     {"useReranker": True, "reranker": "client", "threshold": -1, "k": 5, "rerankDepth": 40})
    assert all("alphasecret" in h["chunk"]["text"] for h in res["rerankCandidates"])
    # the signals of B's rows, asked for by id straight through raw SurrealQL: A learns nothing
    (b_ids,) = await two.root.query("SELECT VALUE id FROM chunk WHERE scope_keys CONTAINS 'org/b'")
    sig = await call(a, "fn::amem::rerank::signals", "bravosecret", e, [{"id": i, "score": 1.0} for i in b_ids], [], [])
    assert all(r["bm25"] == 0 and r.get("cosine") is None for r in sig["rows"])
    # B cannot record on A's trace; A itself may not update traces (retrieval_trace PERMISSIONS):
    # the client says the scores were not recorded
    with pytest.raises(NotFound):
        await call(b, "fn::amem::rerank::record", res["trace"]["id"], {"method": "client", "scores": []})
    done = await call(a, "fn::amem::rerank::record", res["trace"]["id"],
                      {"method": "client", "scores": [{"id": res["rerankCandidates"][0]["chunk"]["id"], "score": 0.9}]})
    assert done["recorded"] is False and "may not update traces" in done["reason"]
    with StandIn() as server:
        out = await mem_a.documents.query("solar wind", k=3, threshold=-1.0, use_reranker=True, reranker=EndpointReranker(server.url))
    assert len(out.results) == 3 and any("scores were not recorded" in w for w in out.warnings)
