"""The Embedder protocol and the small helpers every embedder shares."""

from __future__ import annotations

import os
from typing import Any, Protocol, runtime_checkable

# One intra-op thread by default: on the 2-core target machine the database
# holds the other core, and multi-threaded engines (OpenMP above all) stall
# badly when a second busy process competes for the cores they spin on.
THREADS_ENV = "AMEM_EMBED_THREADS"
DEFAULT_THREADS = 1


@runtime_checkable
class Embedder(Protocol):
    """Turns text into fixed-size vectors. Synchronous: async callers run it
    in a worker thread (``asyncio.to_thread``). Batching is internal, so pass
    whole lists.

    ``name`` is a stable model id (it keys the embedding cache and is stored
    next to vectors), so it must change whenever the vectors would change.
    """

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def is_symmetric(embedder: object) -> bool:
    """True when a query and a document with the same text get the same
    vector. Optional attribute ``symmetric``; assume False (the safe answer
    for the cache) when an embedder does not say."""
    return bool(getattr(embedder, "symmetric", False))


def embed_threads() -> int:
    """Intra-op threads for local models, from ``AMEM_EMBED_THREADS``."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return DEFAULT_THREADS
    try:
        threads = int(raw)
    except ValueError:
        raise ValueError(f"{THREADS_ENV} must be a positive integer, got {raw!r}") from None
    if threads < 1:
        raise ValueError(f"{THREADS_ENV} must be a positive integer, got {raw!r}")
    return threads


def l2_normalise_rows(matrix: Any) -> Any:  # numpy array (n, d) -> same, rows of length 1
    """Divide each row by its L2 norm (zero rows stay zero)."""
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def as_float_lists(matrix: Any) -> list[list[float]]:
    """float32 numpy rows -> Python lists. Going through float32 first means a
    vector read back from the float32 cache equals the freshly computed one."""
    import numpy as np

    rows: list[list[float]] = np.asarray(matrix, dtype=np.float32).tolist()
    return rows
