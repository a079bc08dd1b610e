"""Rerankers that run outside the database: the second stage of ``documents.query``
(``use_reranker=True``) and of ``recall``.

The query makes its one round trip first; the model scores the candidates after
it, in Python, and the scores are written into the same trace
(``fn::amem::rerank::record``, surql/480_rerank). Three rerankers:

* ``"rescore"`` (the default, no model, nothing to download): runs *in the
  database* (surql/480_rerank): every fused candidate's BM25 score and exact cosine,
  z-scored and mixed. Nothing in this module is needed for it.
* :class:`EndpointReranker`: any server speaking the common JSON rerank API
  (Cohere, Jina, Voyage, TEI, vLLM, llama.cpp ``/v1/rerank``):
  ``POST {model, query, documents, top_n}`` -> ``{results: [{index, relevance_score}]}``.
  URL, model and key from arguments or ``AMEM_RERANK_URL`` / ``AMEM_RERANK_MODEL`` /
  ``AMEM_RERANK_KEY``.
* :class:`CrossEncoderReranker`: a local ``sentence-transformers`` cross-encoder
  loaded from a path on disk (``pip install 'amem-db[rerank]'``); never downloads.

Any object with ``name`` and ``rerank(query, documents) -> list[float]`` is a
:class:`Reranker`.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .embedding.openai_compat import api_endpoint, endpoint_settings, post_json
from .errors import AmemError

ENV = "AMEM_RERANK"  # AMEM_RERANK_URL, AMEM_RERANK_MODEL, AMEM_RERANK_KEY
URL_ENV = f"{ENV}_URL"
DEFAULT_TIMEOUT_S = 10.0


class RerankerError(AmemError, RuntimeError):
    """A reranker failed or answered something unusable (the query falls back to
    the fused order and says so; calling a reranker directly raises this)."""

    code = "reranker"


@runtime_checkable
class Reranker(Protocol):
    """Scores documents against a query: one float per document, in their order,
    higher = more relevant."""

    name: str

    def rerank(self, query: str, documents: list[str]) -> list[float]: ...


def rerank_endpoint(url: str) -> str:
    """Accept a server root, a ``/v1`` base or the full ``rerank`` endpoint."""
    return api_endpoint(url, "rerank")


class EndpointReranker:
    """A remote reranker speaking the common JSON rerank API, over urllib only."""

    def __init__(self, url: str | None = None, model: str | None = None, *, api_key: str | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.endpoint, self.model, self._api_key = endpoint_settings(
            url, model, api_key, path="rerank", env=ENV, error=RerankerError,
            example="http://127.0.0.1:8080/v1/rerank")
        self.timeout_s = timeout_s
        self.name = f"endpoint:{self.endpoint}" + (f":{self.model}" if self.model else "")

    def __repr__(self) -> str:
        return f"EndpointReranker(endpoint={self.endpoint!r}, model={self.model!r})"

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        if not documents:
            return []
        body: dict[str, Any] = {"query": query, "documents": documents, "top_n": len(documents)}
        if self.model:
            body["model"] = self.model
        reply = self._post(json.dumps(body).encode("utf-8"))
        return _scores_from_reply(reply, len(documents), self.endpoint)

    def _post(self, body: bytes) -> Any:
        return post_json(self.endpoint, body, api_key=self._api_key, timeout_s=self.timeout_s, error=RerankerError)


def _scores_from_reply(reply: Any, expected: int, endpoint: str) -> list[float]:
    """``{results: [{index, relevance_score}]}`` (``data`` and ``score`` accepted too:
    some servers use them) -> one score per document; every index must be scored once."""
    items = reply.get("results", reply.get("data")) if isinstance(reply, dict) else reply
    if not isinstance(items, list):
        raise RerankerError(f"{endpoint}: no results[] in the reply")
    scores: list[float | None] = [None] * expected
    for item in items:
        try:
            index = int(item["index"])
            score = float(item["relevance_score"] if "relevance_score" in item else item["score"])
        except (KeyError, TypeError, ValueError) as exc:
            raise RerankerError(f"{endpoint}: a result without index / relevance_score: {item!r}") from exc
        if not 0 <= index < expected or scores[index] is not None or not math.isfinite(score):
            raise RerankerError(f"{endpoint}: bad or repeated index {index} (or a non-finite score) for {expected} documents")
        scores[index] = score
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        raise RerankerError(f"{endpoint}: {len(missing)} of {expected} documents got no score")
    return [s for s in scores if s is not None]


class CrossEncoderReranker:
    """A ``sentence-transformers`` CrossEncoder loaded from a local directory only
    (``local_files_only``: nothing is downloaded). Imported lazily: the package is
    the optional extra ``amem-db[rerank]``."""

    def __init__(self, path: str | Path, *, batch_size: int = 32, max_length: int = 512) -> None:
        self.path = Path(path).expanduser()
        if not self.path.is_dir():
            raise RerankerError(f"cross-encoder path {self.path} is not a directory holding a model (config.json + weights)")
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise RerankerError("the cross-encoder reranker needs sentence-transformers: pip install 'amem-db[rerank]'") from exc
        try:
            self._model = CrossEncoder(str(self.path), max_length=max_length, local_files_only=True)
        except Exception as exc:  # any loader failure: a typed error naming the path
            raise RerankerError(f"cannot load a cross-encoder from {self.path}: {exc}") from exc
        self.batch_size = batch_size
        self.name = f"cross-encoder:{self.path}"

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        if not documents:
            return []
        try:
            scores = self._model.predict([(query, d) for d in documents], batch_size=self.batch_size)
        except Exception as exc:
            raise RerankerError(f"{self.name} failed: {exc}") from exc
        return [float(s) for s in scores]


def resolve_reranker(spec: Reranker | str | None) -> Reranker | None:
    """What ``reranker=`` means: None -> the endpoint of ``AMEM_RERANK_URL`` if set,
    else the in-database ``rescore`` (returned as None); ``"rescore"`` -> None;
    ``"endpoint"`` or an http(s) URL -> :class:`EndpointReranker`;
    ``"cross-encoder:PATH"`` -> :class:`CrossEncoderReranker`; a Reranker -> itself."""
    if spec is None:
        return EndpointReranker() if os.environ.get(URL_ENV) else None
    if isinstance(spec, str):
        if spec == "rescore":
            return None
        if spec == "endpoint":
            return EndpointReranker()
        if spec.startswith(("http://", "https://")):
            return EndpointReranker(spec)
        if spec.startswith("cross-encoder:"):
            return CrossEncoderReranker(spec.split(":", 1)[1])
        raise ValueError(f"unknown reranker {spec!r}: rescore, endpoint, an http(s) URL, or cross-encoder:PATH")
    if isinstance(spec, Reranker):
        return spec
    raise TypeError(f"a reranker is a Reranker or a str, not {type(spec).__name__}")


# --- the client's second stage (documents.query, recall) -------------------------------
def unit_score(score: float) -> float:
    """A reranker score as a hit score in [0, 1]: kept when it already is one
    (relevance_score of the rerank APIs), else its logistic (cross-encoder logits)."""
    return score if 0.0 <= score <= 1.0 else 1.0 / (1.0 + math.exp(-max(-500.0, min(500.0, score))))


async def _score(reranker: Reranker, query: str, texts: list[str]) -> tuple[list[float] | None, str | None, float]:
    """(scores, error, ms): a failure is a note, never an exception (the caller falls back)."""
    import asyncio
    import time

    started = time.perf_counter()
    try:
        scores = await asyncio.to_thread(reranker.rerank, query, texts)
        if len(scores) != len(texts):
            raise RerankerError(f"{reranker.name} returned {len(scores)} scores for {len(texts)} documents")
        error = None
    except RerankerError as exc:
        scores, error = None, str(exc)[:300]
    return scores, error, round((time.perf_counter() - started) * 1000, 3)


async def _record(conn: Any, raw: dict[str, Any], report: dict[str, Any]) -> None:
    """Write the report into the query's own trace (fn::amem::rerank::record); a
    caller who may not update traces gets a warning instead."""
    from .db import call

    trace = raw.get("trace") or {}
    if trace.get("id") is None:
        return
    done = await call(conn, "fn::amem::rerank::record", trace["id"], report)
    if done.get("recorded"):
        raw["trace"] = done["trace"]
    else:
        raw.setdefault("warnings", []).append(f"useReranker: {done.get('reason')}")


async def rerank_documents(conn: Any, reranker: Reranker, query: str, raw: dict[str, Any]) -> dict[str, Any]:
    """A ``documents.query`` answer of ``reranker: 'client'`` (``rerankCandidates``:
    the fused candidates, hydrated) -> the top k by the reranker, recorded in its
    trace. On failure the fused top k stays and a warning says why."""
    cands = raw.pop("rerankCandidates", None) or []
    k = int((raw.get("trace") or {}).get("options", {}).get("k") or len(raw.get("results", [])))
    scores, error, ms = await _score(reranker, query, [c["chunk"]["text"] for c in cands])
    report: dict[str, Any] = {"method": "client", "model": reranker.name, "ms": ms}
    if scores is None:
        report["error"] = error
        raw.setdefault("warnings", []).append(f"useReranker: {reranker.name} failed ({error}): fused order kept")
    else:
        order = sorted(range(len(cands)), key=lambda i: (-scores[i], i))
        raw["results"] = [dict(cands[i], score=unit_score(scores[i])) for i in order[:k]]
        kept = {str(r["chunk"]["id"]) for r in raw["results"]}
        raw["contextHits"] = [c for c in raw.get("contextHits", []) if str(c.get("expands")) in kept]
        report["scores"] = [{"id": c["chunk"]["id"], "score": s} for c, s in zip(cands, scores, strict=True)]
    await _record(conn, raw, report)
    return raw


async def rerank_recall(conn: Any, reranker: Reranker, query: str, raw: dict[str, Any], k: int) -> dict[str, Any]:
    """A recall answer (fetched at the rerank depth) -> its top k by the reranker,
    recorded in its trace (the scores of the hits the trace lists)."""
    hits = raw.get("hits", [])
    scores, error, ms = await _score(reranker, query, [h.get("text") or "" for h in hits])
    report: dict[str, Any] = {"method": "client", "model": reranker.name, "ms": ms}
    if scores is None:
        report["error"] = error
        raw.setdefault("warnings", []).append(f"useReranker: {reranker.name} failed ({error}): fused order kept")
        raw["hits"] = hits[:k]
    else:
        order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
        raw["hits"] = [dict(hits[i], score=unit_score(scores[i])) for i in order[:k]]
        traced = {str(h["id"]) for h in (raw.get("trace") or {}).get("hits", [])}
        report["scores"] = [{"id": h["id"], "score": s} for h, s in zip(hits, scores, strict=True) if str(h["id"]) in traced]
    await _record(conn, raw, report)
    return raw


async def rerank_recall_step(conn: Any, reranker: Reranker | None, query: str, raw: dict[str, Any], k: int) -> dict[str, Any]:
    """recall's second stage. Recall has no in-database rescore: with no reranker
    configured the fused hits stay and a warning says so."""
    if reranker is None:
        raw.setdefault("warnings", []).append(
            "useReranker: no reranker configured for recall (reranker=..., or AMEM_RERANK_URL): fused order kept")
        return raw
    return await rerank_recall(conn, reranker, query, raw, k)
