"""amem_db/wire.py: a packed Vector is the bytes the SDK writes for the same list (CBOR float64
items), so the engine stores the same values; what the SDK writes in other forms (ints, NaN,
infinities) goes through the SDK's own encoder."""

from __future__ import annotations

import random

import pytest
from surrealdb.data.cbor import encode

from amem_db.db import call
from amem_db.wire import Vector, vectors

_RNG = random.Random(5)


@pytest.mark.parametrize("values", [
    [_RNG.gauss(0, 1) for _ in range(384)], [], [0.5], [1e-320, -0.0, 1.7976931348623157e308],
    [1, 2.5], [True, 0.5], [1.0, float("nan")], [float("inf"), 1.0], [float("-inf")],
])
def test_a_vector_encodes_as_the_sdk_encodes_its_list(values):
    assert encode(Vector(values)) == encode(list(values))
    assert encode({"v": vectors([values, values])}) == encode({"v": [list(values), list(values)]})


async def test_a_packed_vector_reaches_the_engine_whole(db):
    v = [_RNG.gauss(0, 1) for _ in range(384)]
    assert await call(db, "fn::amem::facts::limits") is not None  # migrated
    (back,) = await db.query("RETURN $v", {"v": Vector(v)})
    assert back == v
