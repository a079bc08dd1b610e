"""HyDE and decomposition (surql/470_rewrite, amem_db/llm.py) on the real engine.

Raw SurrealQL callers pass the rewrites' results (``hydeEmbedding``,
``subQueries: [{text, embedding}]``); the Python client asks an OpenAI-compatible
chat endpoint for them. Here a small local HTTP server in a thread speaks the chat
API: it STANDS IN FOR A MODEL (its answers are fixed strings chosen by the test), so
what is tested is the wire protocol, how the results drive the legs, and the
fall-backs (no provider, HTTP error, timeout), never a model's quality.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import hash_memory
from standin import JsonStandIn

from amem_db import SyncMemory
from amem_db.db import call
from amem_db.errors import EmbeddingMismatch, InvalidInput
from amem_db.llm import LLMError, OpenAICompatChat, chat_endpoint, sub_questions

HASH = "hash:384"
TEXTS = {
    "trains": "Steam trains crossed the valley on iron rails at dawn.",
    "cats": "Cats purr and sleep in warm sunny windows all afternoon.",
    "tides": "Ocean tides rise and fall twice a day with the moon.",
    "bread": "Sourdough bread needs flour, water, salt and a long slow rise.",
    "volcano": "A volcano erupts molten lava, ash and hot gases from its vent.",
    "chess": "Chess openings like the Sicilian defence shape the middle game.",
}


@pytest.fixture(scope="module")
async def mem(db):
    m = hash_memory(db)
    for key, text in TEXTS.items():
        await m.documents.ingest_text(text, source=key)
    return m


def sources(resp: Any) -> list[str]:
    return [h.document.source for h in resp.results] if hasattr(resp, "results") else [h["document"]["source"] for h in resp["results"]]


async def traces(conn) -> int:
    (n,) = await conn.query("RETURN count(SELECT id FROM retrieval_trace)")
    return int(n)


# --- the chat API stand-in ------------------------------------------------------------------
class ChatStandIn(JsonStandIn):
    """/v1/chat/completions standing in for a model: HyDE prompts get `hyde`, decomposition
    prompts get `parts` (one per line); `status` / `delay_s` simulate failures."""

    def __init__(self, *, hyde: str = "", parts: list[str] | None = None, status: int = 200, delay_s: float = 0.0) -> None:
        def answer(body: dict[str, Any]) -> Any:
            system = body["messages"][0]["content"]
            content = "\n".join(f"{i + 1}. {p}" for i, p in enumerate(parts or [])) if system.startswith("Split") else hyde
            return {"choices": [{"message": {"role": "assistant", "content": content}}]}

        super().__init__(answer, status=status, delay_s=delay_s, base="/v1")


# --- raw SurrealQL: hydeEmbedding -------------------------------------------------------------
async def test_hyde_embedding_replaces_the_query_embedding_in_the_vector_leg(mem):
    q = await mem.embed_query("what moves on rails")
    hyde = await mem.embed_query(TEXTS["trains"])
    direct = await call(mem.conn, "fn::amem::documents::query", "what moves on rails", hyde, {"mode": "vector", "threshold": -1})
    res = await call(mem.conn, "fn::amem::documents::query", "what moves on rails", q,
                     {"mode": "vector", "threshold": -1, "useHyde": True, "hydeEmbedding": hyde})
    # the vector leg ranked by the hypothetical answer, exactly as if it were the query embedding
    assert [(h["document"]["source"], round(h["score"], 6)) for h in res["results"]] == \
           [(h["document"]["source"], round(h["score"], 6)) for h in direct["results"]]
    assert res["results"][0]["document"]["source"] == "trains"
    assert res["trace"]["options"]["hyde"].startswith("applied")
    assert "rw" not in res["trace"]["options"] and "hydeEmbedding" not in res["trace"]["options"]  # the vector is not traced
    assert res["trace"]["options"]["fallbacks"] == []


async def test_hyde_keeps_the_query_words_in_the_bm25_leg(mem):
    hyde = await mem.embed_query(TEXTS["volcano"])
    res = await call(mem.conn, "fn::amem::documents::query", "sourdough", await mem.embed_query("sourdough"),
                     {"useHyde": True, "hydeEmbedding": hyde, "threshold": -1})
    assert res["trace"]["legs"]["bm25"]["terms"] == ["sourdough"]
    top = {h["document"]["source"] for h in res["results"][:2]}
    assert top == {"bread", "volcano"}  # one from each leg


async def test_hyde_in_mode_bm25_is_skipped_and_said(mem):
    res = await call(mem.conn, "fn::amem::documents::query", "sourdough", None,
                     {"mode": "bm25", "useHyde": True, "hydeEmbedding": await mem.embed_query("lava")})
    assert res["trace"]["options"]["hyde"] == "skipped (mode bm25 runs no vector leg)"
    assert sources(res) == ["bread"]


# --- raw SurrealQL: subQueries ---------------------------------------------------------------
def rrf(lists: list[list[str]], weights: list[float], k: float = 60.0) -> list[tuple[str, float]]:
    scores: dict[str, float] = {}
    for lst, w in zip(lists, weights, strict=True):
        for rank, doc in enumerate(dict.fromkeys(lst), 1):
            scores[doc] = scores.get(doc, 0.0) + w / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-round(kv[1], 12), kv[0]))


async def leg_lists(mem, text: str) -> tuple[list[str], list[str]]:
    e = await mem.embed_query(text)
    v = await call(mem.conn, "fn::amem::documents::query", text, e, {"mode": "vector", "k": 50, "threshold": 0.1, "expandContext": False})
    lex = await call(mem.conn, "fn::amem::documents::query", text, None, {"mode": "bm25", "k": 50, "expandContext": False})
    return [str(h["chunk"]["id"]) for h in v["results"]], [str(h["chunk"]["id"]) for h in lex["results"]]


async def test_sub_queries_run_the_legs_and_merge_by_rrf(mem):
    query, subs = "cats and volcanoes", ["cats purr in windows", "volcano lava eruption"]
    lists: list[list[str]] = []
    for text in [query, *subs]:
        lists.extend(await leg_lists(mem, text))
    expected = rrf(lists, [0.5] * len(lists))
    sub_opts = [{"text": t, "embedding": await mem.embed_query(t)} for t in subs]
    before = await traces(mem.conn)
    res = await call(mem.conn, "fn::amem::documents::query", query, await mem.embed_query(query),
                     {"decomposeQuery": True, "subQueries": sub_opts, "threshold": 0.1, "k": 6, "expandContext": False})
    assert await traces(mem.conn) == before + 1
    assert [str(h["chunk"]["id"]) for h in res["results"]] == [d for d, _ in expected[:6]]
    attainable = 0.5 * len(lists) / 61
    assert [round(h["score"], 9) for h in res["results"]] == [round(min(1.0, s / attainable), 9) for _, s in expected[:6]]
    assert res["trace"]["options"]["decompose"] == "applied (2 sub-queries through the legs, merged by RRF with the query)"
    assert [s["text"] for s in res["trace"]["legs"]["subQueries"]] == subs
    assert {sources(res)[0], sources(res)[1]} == {"cats", "volcano"}


async def test_sub_queries_outside_mode_hybrid_are_skipped_and_said(mem):
    e = await mem.embed_query("cats")
    res = await call(mem.conn, "fn::amem::documents::query", "cats", e,
                     {"mode": "vector", "subQueries": [{"text": "lava", "embedding": await mem.embed_query("lava")}]})
    assert res["trace"]["options"]["decompose"] == "skipped (subQueries apply to mode hybrid only)"
    assert "subQueries" not in res["trace"]["legs"]


@pytest.mark.parametrize("opts, error, message", [
    ({"hydeEmbedding": [0.1] * 10}, EmbeddingMismatch, "hydeEmbedding has 10 dimensions"),
    ({"hydeEmbedding": "lava"}, InvalidInput, "hydeEmbedding must be a list of 384 numbers"),
    ({"hydeEmbedding": [0.0] * 384}, InvalidInput, "hydeEmbedding has zero"),
    ({"subQueries": "lava"}, InvalidInput, "subQueries must be a list of at most 4"),
    ({"subQueries": [{"text": "a"}] * 5}, InvalidInput, "subQueries must be a list of at most 4"),
    ({"subQueries": ["lava"]}, InvalidInput, r"subQueries\[0\] must be an object"),
    ({"subQueries": [{"text": "ok", "embedding": "bad"}]}, InvalidInput, r"subQueries\[0\].embedding must be a list"),
    ({"subQueries": [{"text": "ok", "embedding": "E"}, {"text": " ", "embedding": "E"}]}, InvalidInput, r"subQueries\[1\].text must be a non-empty"),
    ({"subQueries": [{"text": "no vector"}]}, InvalidInput, r"subQueries\[0\].embedding is required"),
    ({"subQueries": [{"text": "x", "embedding": [1.0] * 3}]}, EmbeddingMismatch, r"subQueries\[0\].embedding has 3 dimensions"),
    ({"skipped": {"hyde": 3}}, InvalidInput, "skipped must be an object of reasons"),
])
async def test_rewrite_options_are_validated_naming_the_field(mem, opts, error, message):
    e = await mem.embed_query("cats")
    # "E" stands for a valid embedding: the error must be the other field's
    subs = opts.get("subQueries")
    if isinstance(subs, list):
        opts = {"subQueries": [dict(x, embedding=e) if isinstance(x, dict) and x.get("embedding") == "E" else x for x in subs]}
    before = await traces(mem.conn)
    with pytest.raises(error, match=message):
        await call(mem.conn, "fn::amem::documents::query", "cats", e, opts)
    assert await traces(mem.conn) == before  # a refused query writes no trace


async def test_flags_without_results_fall_back_with_the_reason(mem):
    e = await mem.embed_query("cats")
    plain = await call(mem.conn, "fn::amem::documents::query", "cats", e, {})
    res = await call(mem.conn, "fn::amem::documents::query", "cats", e, {"useHyde": True, "decomposeQuery": True})
    assert sources(res) == sources(plain)
    assert res["trace"]["options"]["hyde"] == "skipped (no provider)"
    assert res["trace"]["options"]["decompose"] == "skipped (no provider)"
    res = await call(mem.conn, "fn::amem::documents::query", "cats", e,
                     {"useHyde": True, "skipped": {"hyde": "provider timed out after 2 s"}})
    assert res["trace"]["options"]["hyde"] == "skipped (provider timed out after 2 s)"
    assert res["warnings"] == ["useHyde: skipped (provider timed out after 2 s): the query embedding was used as given"]


# --- the Python client and the chat stand-in ---------------------------------------------------
async def test_client_hyde_and_decompose_through_the_chat_api(mem):
    with ChatStandIn(hyde=TEXTS["tides"], parts=["ocean tides and the moon", "bread rising slowly"]) as server:
        llm = OpenAICompatChat(server.url, "stand-in", api_key="sk-x")
        res = await mem.documents.query("what rises", hyde=True, decompose=True, llm=llm, threshold=0.0)
    paths = {r["path"] for r in server.requests}
    assert paths == {"/v1/chat/completions"} and len(server.requests) == 2
    assert all(r["model"] == "stand-in" and r["auth"] == "Bearer sk-x" and r["temperature"] == 0 for r in server.requests)
    assert res.trace["options"]["hyde"].startswith("applied")
    assert [s["text"] for s in res.trace["legs"]["subQueries"]] == ["ocean tides and the moon", "bread rising slowly"]
    # the hypothetical answer drove the vector leg: its best hit is the passage it paraphrases
    vec_best = min((t for t in res.trace["hits"] if t.get("vector")), key=lambda t: t["vector"]["rank"])
    assert vec_best["vector"]["sim"] == pytest.approx(1.0, abs=1e-5)
    assert {sources(res)[0], sources(res)[1]} == {"tides", "bread"}


@pytest.mark.parametrize("server_kw, reason", [
    ({"status": 500}, "provider failed: "),
    ({"delay_s": 1.5, "hyde": "late"}, "timed out"),
])
async def test_client_provider_failure_falls_back_without_error(mem, server_kw, reason):
    plain = await mem.documents.query("cats", threshold=0.0)
    with ChatStandIn(**server_kw) as server:
        llm = OpenAICompatChat(server.url, timeout_s=0.5)
        res = await mem.documents.query("cats", hyde=True, decompose=True, llm=llm, threshold=0.0)
    assert sources(res) == sources(plain)
    assert res.trace["options"]["hyde"].startswith("skipped (provider failed: ") and reason in res.trace["options"]["hyde"]
    assert res.trace["options"]["decompose"].startswith("skipped (provider failed: ")
    assert any(w.startswith("useHyde: skipped (provider failed") for w in res.warnings)


async def test_client_without_a_provider_says_no_provider(mem, monkeypatch):
    monkeypatch.delenv("AMEM_LLM_URL", raising=False)
    res = await mem.documents.query("cats", hyde=True, decompose=True)
    assert res.trace["options"]["hyde"] == "skipped (no provider)"
    assert res.trace["options"]["decompose"] == "skipped (no provider)"
    res = await mem.documents.query("cats", mode="bm25", hyde=True, decompose=True)
    assert res.trace["options"]["hyde"] == "skipped (mode bm25 runs no vector leg)"
    assert res.trace["options"]["decompose"] == "skipped (subQueries apply to mode hybrid only, not bm25)"


def test_sync_twin_takes_the_same_arguments(monkeypatch):
    monkeypatch.delenv("AMEM_LLM_URL", raising=False)
    with SyncMemory.open(url="mem://", embedder=HASH, migrate=True) as smem:
        smem.documents.ingest_text(TEXTS["cats"], source="cats")
        res = smem.documents.query("cats", hyde=True, use_reranker=True)
    assert res.results and res.trace["options"]["hyde"] == "skipped (no provider)"
    assert res.trace["legs"]["rerank"]["method"] == "rescore"


# --- pieces ------------------------------------------------------------------------------------
def test_chat_endpoint_and_sub_question_parsing():
    assert chat_endpoint("http://h:1") == "http://h:1/v1/chat/completions"
    assert chat_endpoint("http://h:1/v1/") == "http://h:1/v1/chat/completions"

    class Fixed:
        name = "fixed"

        def __init__(self, text: str) -> None:
            self.text = text

        def complete(self, system: str, user: str) -> str:
            return self.text

    assert sub_questions(Fixed("1. a\n2) b\n- c\n\n* a"), "q") == ["a", "b", "c"]
    assert sub_questions(Fixed('["x", "y"]'), "q") == ["x", "y"]
    assert sub_questions(Fixed("one\ntwo\nthree\nfour\nfive"), "q") == ["one", "two", "three", "four"]
    assert sub_questions(Fixed("  \n "), "q") == ["q"]


def test_no_endpoint_is_a_typed_error(monkeypatch):
    monkeypatch.delenv("AMEM_LLM_URL", raising=False)
    with pytest.raises(LLMError, match="AMEM_LLM_URL"):
        OpenAICompatChat()


async def test_recall_takes_a_hyde_embedding_too(mem):
    q = await mem.embed_query("what moves on rails")
    hyde = await mem.embed_query(TEXTS["trains"])
    res = await call(mem.conn, "fn::amem::recall", "what moves on rails", q,
                     {"mode": "vector", "threshold": 0.0, "useHyde": True, "hydeEmbedding": hyde, "include": ["passages"]})
    assert res["hits"][0]["citation"]["documentSource"] == "trains" and res["hits"][0]["score"] == pytest.approx(1.0, abs=1e-5)
    assert res["trace"]["options"]["hyde"].startswith("applied") and "rw" not in res["trace"]["options"]
    res = await call(mem.conn, "fn::amem::recall", "rails", None, {"mode": "graph", "useHyde": True, "hydeEmbedding": hyde})
    assert res["trace"]["options"]["hyde"] == "skipped (mode graph runs no vector leg)"
    with pytest.raises(EmbeddingMismatch, match="hydeEmbedding has 2 dimensions"):
        await call(mem.conn, "fn::amem::recall", "rails", q, {"hydeEmbedding": [1.0, 0.0]})
    with pytest.raises(InvalidInput, match="unknown recall option subQueries"):  # decomposition: documents.query only
        await call(mem.conn, "fn::amem::recall", "rails", q, {"subQueries": []})
    res = await mem.recall("what moves on rails", hyde=True, include=["passages"])
    assert res.trace["options"]["hyde"] == "skipped (no provider)"


def test_cli_flags_run_and_the_trace_says_what_ran(tmp_path):
    """`amem-db query --rerank rescore --hyde --decompose` as a real process: the reranker
    runs in the database, the rewrites are skipped (no AMEM_LLM_URL) and say so."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("AMEM_")}
    env.update({"AMEM_URL": f"surrealkv://{tmp_path / 'db'}", "AMEM_EMBEDDER": HASH})

    def amem(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "amem_db", *args], cwd=root, env=env, capture_output=True, text=True, timeout=180)

    assert amem("migrate").returncode == 0
    for key, text in TEXTS.items():
        (tmp_path / f"{key}.md").write_text(f"# {key}\n\n{text}\n")
    assert amem("ingest", str(tmp_path)).returncode == 0
    done = amem("query", "warm sunny windows", "--rerank", "rescore", "--hyde", "--decompose", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["results"][0]["document"]["title"] == "cats"
    assert out["trace"]["legs"]["rerank"]["method"] == "rescore" and out["trace"]["legs"]["rerank"]["ran"]
    assert out["trace"]["options"]["hyde"] == "skipped (no provider)"
    assert out["trace"]["options"]["decompose"] == "skipped (no provider)"
    bad = amem("query", "cats", "--rerank", "cohere")
    assert bad.returncode == 2 and "--rerank" in bad.stderr and "cross-encoder:PATH" in bad.stderr


def test_endpoint_settings_resolve_arguments_then_env(monkeypatch):
    """The chat provider and the endpoint reranker resolve url / model / key the same way
    (amem_db/embedding/openai_compat.endpoint_settings): arguments, then AMEM_LLM_* /
    AMEM_RERANK_*, the chat key falling back to OPENAI_API_KEY; no URL at all is a typed error."""
    from amem_db.rerank import EndpointReranker, RerankerError

    for name in ("AMEM_LLM_URL", "AMEM_LLM_MODEL", "AMEM_LLM_KEY", "AMEM_RERANK_URL", "AMEM_RERANK_MODEL", "AMEM_RERANK_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("AMEM_LLM_URL", "http://h:1")
    monkeypatch.setenv("AMEM_LLM_MODEL", "env-model")
    llm = OpenAICompatChat()
    assert (llm.endpoint, llm.model, llm._api_key) == ("http://h:1/v1/chat/completions", "env-model", "sk-openai")
    monkeypatch.setenv("AMEM_LLM_KEY", "sk-llm")
    assert OpenAICompatChat("http://a:2/v1", "given", api_key=None)._api_key == "sk-llm"
    assert OpenAICompatChat("http://a:2/v1", "given", api_key="")._api_key == ""  # an explicit key wins, even empty
    with pytest.raises(RerankerError, match="AMEM_RERANK_URL"):
        EndpointReranker()
    monkeypatch.setenv("AMEM_RERANK_URL", "http://r:3")
    rr = EndpointReranker()
    # the reranker never read OPENAI_API_KEY (before the shared resolver either)
    assert (rr.endpoint, rr.model, rr._api_key) == ("http://r:3/v1/rerank", "", None)
