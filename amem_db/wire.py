"""Vectors on the wire. The SDK's CBOR encoder is pure Python and writes a list one element
at a time: ~0.17 ms of CPU for a 384-float vector, 0.35 ms a fact write of two (issue 25).
A ``Vector`` is a list the encoder writes in one ``struct.pack``: the same bytes the SDK
writes for a list of finite Python floats (a CBOR array of float64, ``0xFB`` + 8 bytes
each), so the engine stores the same values. Anything else in it (an int, a NaN, an
infinity: the SDK writes those in other forms) goes through the SDK's own list encoder."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from surrealdb.cbor import _encoder

__all__ = ["Vector", "vectors"]


class Vector(list):  # type: ignore[type-arg]
    """A list of floats sent to the engine as one packed CBOR array."""

    __slots__ = ()


# one CBOR float64 item: the 0xFB head, then the number big-endian (unaligned: 9 bytes)
_ITEM = np.dtype([("head", "u1"), ("value", ">f8")])


def _encode_vector(encoder: Any, value: Vector) -> None:
    if set(map(type, value)) - {float} or not math.isfinite(sum(value)):
        encoder.encode_array(list(value))
        return
    items = np.empty(len(value), dtype=_ITEM)
    items["head"] = 0xFB
    items["value"] = value
    encoder.encode_length(4, len(value))
    encoder.write(items.tobytes())


# the SDK copies this table into every encoder it makes (surrealdb/cbor/_encoder.py)
_encoder.default_encoders[Vector] = _encode_vector


def vectors(values: Iterable[Sequence[float]]) -> list[Vector]:
    """Each vector as a ``Vector`` (for the ``vectors`` argument of a write)."""
    return [Vector(v) for v in values]
