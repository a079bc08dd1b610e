"""Several requests in flight on one connection (``Documents.query_many``, and the
groups of ``Facts.write_many`` through ``run_apart``).

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
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar

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


class Apart(Protocol):
    """What a job of ``run_apart`` touches: ``a.apart(b)`` when neither can change what the other does."""

    def apart(self, other: Any) -> bool: ...


async def run_apart(jobs: Sequence[tuple[Coroutine[Any, Any, None], Apart | None]], limit: int) -> None:
    """Run the jobs in order, at most ``limit`` at a time; a job starts only once every
    running job whose footprint it is not ``apart`` from has finished (a None footprint
    waits for, and holds back, all of them: Facts.write_many's groups of writes).
    An error stops new starts; the running jobs finish (their writes are independent
    transactions) before it is raised."""
    running: list[tuple[asyncio.Task[None], Apart | None]] = []
    pending = list(jobs)
    try:
        while pending:
            job, foot = pending[0]
            blocking = [t for t, f in running if foot is None or f is None or not foot.apart(f)]
            if blocking or len(running) >= limit:
                await asyncio.wait(blocking or [t for t, _ in running], return_when=asyncio.FIRST_COMPLETED)
                for t, _ in running:
                    if t.done():
                        t.result()  # a finished job's error stops the batch here
                running = [(t, f) for t, f in running if not t.done()]
                continue
            pending.pop(0)
            running.append((asyncio.ensure_future(job), foot))
        await asyncio.gather(*(t for t, _ in running))
    finally:
        for coro, _ in pending:  # never started: close them so no "never awaited" warning
            coro.close()
        if running:
            await asyncio.gather(*(t for t, _ in running), return_exceptions=True)
