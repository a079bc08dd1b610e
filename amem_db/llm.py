"""An LLM provider for the query rewrites of ``documents.query`` (and ``recall``):
HyDE (a hypothetical answer passage, embedded in place of the query in the vector
leg) and decomposition (sub-questions, each run through the legs, merged by RRF).

The provider is any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama,
llama.cpp ...), over urllib only: URL, model and key from arguments or
``AMEM_LLM_URL`` / ``AMEM_LLM_MODEL`` / ``AMEM_LLM_KEY`` (else ``OPENAI_API_KEY``).
The database never calls a model: it receives the results as the options
``hydeEmbedding`` and ``subQueries`` (surql/470_rewrite). Without a provider, or when
it fails or times out, the query runs as a single query without error and the
trace says what was skipped and why (``options.hyde: 'skipped (no provider)'``).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Protocol, runtime_checkable

from .embedding.openai_compat import API_KEY_ENV, api_endpoint, endpoint_settings, post_json
from .errors import AmemError

ENV = "AMEM_LLM"  # AMEM_LLM_URL, AMEM_LLM_MODEL, AMEM_LLM_KEY
URL_ENV = f"{ENV}_URL"
DEFAULT_TIMEOUT_S = 20.0
#: at most this many sub-questions (the database's limit, surql/470_rewrite)
MAX_SUB_QUERIES = 4

HYDE_PROMPT = ("Write one short passage (3-5 sentences) that answers the question as a reference text "
               "would. State facts plainly; do not mention the question.")
DECOMPOSE_PROMPT = (f"Split the question into at most {MAX_SUB_QUERIES} simpler, self-contained search queries, "
                    "one per line, nothing else. If it asks one thing, answer with the question itself.")


class LLMError(AmemError, RuntimeError):
    """The chat endpoint failed or answered something unusable."""

    code = "llm_service"


@runtime_checkable
class ChatProvider(Protocol):
    """One chat completion: a system instruction and a user message -> text."""

    name: str

    def complete(self, system: str, user: str) -> str: ...


def chat_endpoint(url: str) -> str:
    """Accept a server root, a ``/v1`` base or the full ``chat/completions`` endpoint."""
    return api_endpoint(url, "chat/completions")


class OpenAICompatChat:
    """``POST /v1/chat/completions`` with ``temperature 0``."""

    def __init__(self, url: str | None = None, model: str | None = None, *, api_key: str | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, max_tokens: int = 300) -> None:
        self.endpoint, self.model, self._api_key = endpoint_settings(
            url, model, api_key, path="chat/completions", env=ENV, error=LLMError,
            example="http://127.0.0.1:8000/v1", fallback_key_env=API_KEY_ENV)
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self.name = f"openai-chat:{self.endpoint}" + (f":{self.model}" if self.model else "")

    def __repr__(self) -> str:
        return f"OpenAICompatChat(endpoint={self.endpoint!r}, model={self.model!r})"

    def complete(self, system: str, user: str) -> str:
        body = {"model": self.model, "temperature": 0, "max_tokens": self.max_tokens,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
        reply = self._post(json.dumps(body).encode("utf-8"))
        try:
            text = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.endpoint}: no choices[0].message.content in the reply") from exc
        if not isinstance(text, str) or not text.strip():
            raise LLMError(f"{self.endpoint}: an empty completion")
        return text.strip()

    def _post(self, body: bytes) -> Any:
        return post_json(self.endpoint, body, api_key=self._api_key, timeout_s=self.timeout_s, error=LLMError)


def provider_from_env() -> ChatProvider | None:
    """The provider ``AMEM_LLM_URL`` names, or None (the rewrites are then skipped)."""
    return OpenAICompatChat() if os.environ.get(URL_ENV) else None


def hyde_passage(provider: ChatProvider, query: str) -> str:
    """A hypothetical answer passage for ``query``."""
    return provider.complete(HYDE_PROMPT, query)


def sub_questions(provider: ChatProvider, query: str) -> list[str]:
    """At most MAX_SUB_QUERIES sub-questions (one per line; a JSON list is accepted);
    the question itself when the model returns nothing usable. Duplicates dropped."""
    text = provider.complete(DECOMPOSE_PROMPT, query)
    try:
        parsed = json.loads(text)
        lines = [str(x) for x in parsed] if isinstance(parsed, list) else text.splitlines()
    except ValueError:
        lines = text.splitlines()
    cleaned = [re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s*", "", line).strip() for line in lines]
    out = list(dict.fromkeys(c for c in cleaned if c))[:MAX_SUB_QUERIES]
    return out or [query]


async def rewrite_options(provider: ChatProvider | None, embedder: Any, query: str, *, mode: str,
                          hyde: bool, decompose: bool) -> dict[str, Any]:
    """The query options of the rewrites asked for: ``useHyde`` / ``hydeEmbedding``,
    ``decomposeQuery`` / ``subQueries``, and ``skipped`` (why one was not computed:
    no provider, a failure, a timeout, a mode without the leg), which the trace shows."""
    import asyncio

    opts: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    if hyde:
        opts["useHyde"] = True
        if mode == "bm25":
            skipped["hyde"] = "mode bm25 runs no vector leg"
        elif provider is None:
            skipped["hyde"] = "no provider"
        else:
            try:
                passage = await asyncio.to_thread(hyde_passage, provider, query)
                # the passage side of the embedder: HyDE compares a document with documents
                opts["hydeEmbedding"] = (await asyncio.to_thread(embedder.embed_documents, [passage]))[0]
            except LLMError as exc:
                skipped["hyde"] = f"provider failed: {exc}"[:300]
    if decompose:
        opts["decomposeQuery"] = True
        if mode != "hybrid":
            skipped["decompose"] = f"subQueries apply to mode hybrid only, not {mode}"
        elif provider is None:
            skipped["decompose"] = "no provider"
        else:
            try:
                parts = [p for p in await asyncio.to_thread(sub_questions, provider, query) if p != query]
                if parts:
                    vectors = await asyncio.to_thread(lambda: [embedder.embed_query(p) for p in parts])
                    opts["subQueries"] = [{"text": p, "embedding": v} for p, v in zip(parts, vectors, strict=True)]
                else:
                    skipped["decompose"] = "the provider found a single question"
            except LLMError as exc:
                skipped["decompose"] = f"provider failed: {exc}"[:300]
    if skipped:
        opts["skipped"] = skipped
    return opts
