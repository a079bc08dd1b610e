"""Several requests in flight on one connection (``Documents.query_many``).

Both transports the client uses let one connection carry several requests at
once: the websocket SDK matches replies to requests by id (the dev server runs
up to 64 per connection, a SurrealDB server more), and the embedded engine's
``execute`` is a native future that runs on the engine's own threads, so two
queries overlap there too (issue 14 measured 1.3-1.6x throughput with two in
flight on 2 cores). ``run_many`` keeps at most ``concurrency`` calls running,
returns their results in input order, and hands back a failed call's exception
in its slot instead of raising it, so one bad query loses none of the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: the default number of requests one client keeps in flight
DEFAULT_CONCURRENCY = 4


async def run_many(call: Callable[[T], Awaitable[R]], items: Sequence[T], concurrency: int) -> list[R | Exception]:
    """``call(item)`` for every item, at most ``concurrency`` at a time; results in
    order, an ``Exception`` in the slot of a call that raised one (cancellation and
    other ``BaseException`` still propagate)."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number >= 1, got {concurrency!r}")
    slots = asyncio.Semaphore(concurrency)

    async def one(item: T) -> R | Exception:
        async with slots:
            try:
                return await call(item)
            except Exception as exc:  # reported in its slot: the other calls go on
                return exc

    return list(await asyncio.gather(*(one(item) for item in items)))
