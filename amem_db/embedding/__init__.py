"""Text embedders for amem-db: an offline default model, named options, and
a disk cache.

    from amem_db.embedding import CachedEmbedder, get_embedder
    embedder = CachedEmbedder(get_embedder())      # default: "minilm"
    vectors = embedder.embed_documents(["...", "..."])
    query = embedder.embed_query("...")
    print(embedder.stats)                          # hits / misses / model_seconds

Importing this package is cheap: numpy, onnxruntime and the model load on
the first embed.
"""

import os as _os

# onnxruntime writes a device id under ~/.cache/Microsoft and queues a
# telemetry event when it is imported, unless this is set before the import.
# Set here, early, in case anything imports onnxruntime before our loader.
_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from .base import THREADS_ENV, Embedder, embed_threads
from .cache import (
    CACHE_DIR_ENV,
    CachedEmbedder,
    CacheStats,
    EmbeddingStore,
    default_cache_path,
)
from .factory import DEFAULT_SPEC, VALID_SPECS, get_embedder

__all__ = [
    "CACHE_DIR_ENV",
    "DEFAULT_SPEC",
    "THREADS_ENV",
    "VALID_SPECS",
    "CacheStats",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingStore",
    "default_cache_path",
    "embed_threads",
    "get_embedder",
]
