"""A deterministic hashing embedder: for fast unit tests ONLY.

It has no notion of meaning (two texts are close only if they share words),
so it is never used unless named explicitly ("hash" / "hash:DIM"); it is
never a fallback when a real model fails to load.
"""

from __future__ import annotations

import hashlib
import math
import re
from array import array

DEFAULT_DIMENSION = 384
_WORD = re.compile(r"\w+", re.UNICODE)
# Gives empty / punctuation-only texts a non-zero vector, so cosine stays defined.
_EMPTY_FEATURE = "\x00empty"


def _bucket_and_sign(feature: str, dimension: int) -> tuple[int, float]:
    # blake2b, not hash(): Python's str hash is salted per process, and these
    # vectors must be identical across runs and machines.
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dimension, (1.0 if (value >> 63) & 1 else -1.0)


class HashingEmbedder:
    """Signed feature hashing of lower-cased words, L2-normalised."""

    symmetric = True

    def __init__(self, dimension: int = DEFAULT_DIMENSION):
        if dimension < 2:
            raise ValueError(f"hash embedder dimension must be >= 2, got {dimension}")
        self.dimension = dimension
        self.name = f"hash-{dimension}"

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimension={self.dimension})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        features = _WORD.findall(text.lower()) or [_EMPTY_FEATURE]
        for feature in features:
            bucket, sign = _bucket_and_sign(feature, self.dimension)
            vector[bucket] += sign
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        # Rounded through float32, like every other embedder's output, so a
        # vector read back from the float32 cache equals a fresh one.
        return array("f", [x / norm for x in vector]).tolist()
