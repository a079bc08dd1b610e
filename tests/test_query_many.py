"""Several queries in flight on one connection (``Documents.query_many``,
amem_db/concurrent.py), on the real engine: embedded, and over the dev server's
websocket. Results equal the same queries run one by one, in input order; a query
the database refuses has its typed error in its slot and the others still answer.
No timing is asserted (throughput is the bench's job: docs/BENCHMARKS.md)."""

from __future__ import annotations

import uuid

import pytest
from devserver_fixture import ROOT_PASSWORD, ROOT_USER, started_dev_server

from amem_db import InvalidInput, Memory, SyncMemory
from amem_db.concurrent import run_many
from amem_db.models import QueryResponse

HASH = "hash:384"
TEXTS = [
    "Unopened items may be returned within 30 days for store credit.",
    "Gift cards cannot be returned or exchanged.",
    "The warranty covers manufacturing defects for two years.",
    "Support calls are recorded for quality and training purposes.",
    "Opened electronics are refunded minus a restocking fee.",
    "Shipping is free on orders over fifty dollars.",
]
QUERIES = ["return window", "gift card refund", "warranty defects", "restocking fee electronics",
           "free shipping", "recorded support calls", "store credit"]
TOO_LONG = "x" * 5000  # the query function refuses more than 4096 characters (amem:invalid_input)


def ranked(res: QueryResponse) -> list[tuple[str, float]]:
    return [(str(h.chunk.id), round(h.score, 9)) for h in res.results]


async def load(mem: Memory) -> None:
    for i, text in enumerate(TEXTS):
        await mem.documents.ingest_text(text, source=f"faq-{i}")


async def check_against_sequential(mem: Memory, concurrency: int) -> None:
    many = await mem.documents.query_many(QUERIES, concurrency=concurrency, mode="hybrid", k=3)
    one_by_one = [await mem.documents.query(q, mode="hybrid", k=3) for q in QUERIES]
    assert len(many) == len(QUERIES)
    assert all(isinstance(r, QueryResponse) for r in many), many
    assert [ranked(r) for r in many] == [ranked(r) for r in one_by_one]  # type: ignore[arg-type]
    assert any(ranked(r) for r in one_by_one)  # the comparison is not between empty lists


async def check_error_in_its_slot(mem: Memory) -> None:
    queries = QUERIES[:2] + [TOO_LONG] + QUERIES[2:4]
    many = await mem.documents.query_many(queries, concurrency=3, mode="hybrid", k=3)
    assert isinstance(many[2], InvalidInput) and "4096" in str(many[2])
    kept = [r for i, r in enumerate(many) if i != 2]
    assert all(isinstance(r, QueryResponse) for r in kept)
    expected = [ranked(await mem.documents.query(q, mode="hybrid", k=3)) for q in QUERIES[:4]]
    assert [ranked(r) for r in kept] == expected  # type: ignore[arg-type]


@pytest.fixture(scope="module")
async def mem():
    m = await Memory.open(url="mem://", ns=f"qm_{uuid.uuid4().hex[:8]}", db="test", embedder=HASH, migrate=True)
    await load(m)
    yield m
    await m.close()


async def test_embedded_results_equal_sequential(mem):
    await check_against_sequential(mem, concurrency=4)
    await check_against_sequential(mem, concurrency=1)


async def test_embedded_error_in_one_query_keeps_the_others(mem):
    await check_error_in_its_slot(mem)


async def test_bad_arguments_fail_before_any_query(mem):
    with pytest.raises(TypeError, match="unexpected keyword"):
        await mem.documents.query_many(QUERIES, mode="hybrid", kk=3)
    with pytest.raises(ValueError, match="concurrency"):
        await mem.documents.query_many(QUERIES, concurrency=0)
    with pytest.raises(TypeError, match="sequence of str"):
        await mem.documents.query_many("return window")
    # a query that is not a str fails in its own slot
    out = await mem.documents.query_many(["return window", 42], k=2)  # type: ignore[list-item]
    assert isinstance(out[0], QueryResponse) and isinstance(out[1], TypeError)
    assert await mem.documents.query_many([]) == []


async def test_over_the_dev_server_one_connection():
    async with started_dev_server("mem://") as server:
        m = await Memory.open(url=server.ws_url, ns="qm", db="ws", user=ROOT_USER, password=ROOT_PASSWORD,
                              embedder=HASH, migrate=True)
        try:
            await load(m)
            await check_against_sequential(m, concurrency=4)
            await check_error_in_its_slot(m)
        finally:
            await m.close()


def test_sync_twin_matches_the_async_results():
    with SyncMemory.open(url="mem://", ns=f"qs_{uuid.uuid4().hex[:8]}", db="test", embedder=HASH, migrate=True) as m:
        for i, text in enumerate(TEXTS):
            m.documents.ingest_text(text, source=f"faq-{i}")
        many = m.documents.query_many(QUERIES, concurrency=3, k=3)
        assert [ranked(r) for r in many] == [ranked(m.documents.query(q, k=3)) for q in QUERIES]  # type: ignore[arg-type]


async def test_run_many_keeps_order_and_bounds_what_is_in_flight():
    import asyncio

    running, peak = 0, 0

    async def work(i: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.001 * (5 - i % 5))  # later items finish first
        running -= 1
        if i == 3:
            raise RuntimeError("item 3")
        return i * 10

    out = await run_many(work, list(range(8)), concurrency=3)
    assert [o if isinstance(o, int) else str(o) for o in out] == [0, 10, 20, "item 3", 40, 50, 60, 70]
    assert peak == 3
