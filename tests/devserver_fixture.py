"""Helpers to run the loopback dev server (amem_db.devserver) in tests.

Import into conftest.py, for example::

    from devserver_fixture import dev_server, dev_server_url, started_dev_server  # noqa: F401

* ``started_dev_server(url="mem://", **kwargs)``: async context manager that
  yields a started :class:`~amem_db.devserver.DevServer` (``.ws_url``,
  ``.user``, ``.password``) and stops it afterwards.
* ``background_dev_server(url="mem://", **kwargs)``: the same for synchronous
  code and the blocking ``surrealdb.Surreal`` client (server on its own thread).
* ``dev_server`` (pytest fixture, module scope): one server on ``mem://`` per
  test module, fresh data per module; ``dev_server_url`` is its ws URL.
  The root user is ``root`` / ``root``.

Every connection gets its own engine session, so tests in a module can share
one server as long as they use their own namespace/database names.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from amem_db.devserver import BackgroundDevServer, DevServer

ROOT_USER = "root"
ROOT_PASSWORD = "root"


@contextlib.asynccontextmanager
async def started_dev_server(url: str = "mem://", **kwargs: Any) -> AsyncIterator[DevServer]:
    """Start a DevServer on a free loopback port; stop it on exit."""
    kwargs.setdefault("user", ROOT_USER)
    kwargs.setdefault("password", ROOT_PASSWORD)
    server = DevServer(url, **kwargs)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@contextlib.contextmanager
def background_dev_server(url: str = "mem://", **kwargs: Any) -> Iterator[BackgroundDevServer]:
    """Start a DevServer on its own thread (for sync code); stop it on exit."""
    kwargs.setdefault("user", ROOT_USER)
    kwargs.setdefault("password", ROOT_PASSWORD)
    server = BackgroundDevServer(url, **kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def unique_name(prefix: str = "t") -> str:
    """A namespace/database name no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@dataclasses.dataclass
class Tenants:
    """A migrated database of its own on the dev server: the root connection and one
    signed-in connection (and its key) per credential."""

    ns: str
    url: str
    root: Any
    conns: dict[str, Any]
    keys: dict[str, str]


@contextlib.asynccontextmanager
async def tenants(server: DevServer, prefix: str, grants: dict[str, dict[str, Any]]) -> AsyncIterator[Tenants]:
    """``grants``: credential name -> ``access.grant`` keywords (read, write, forget, admin)."""
    from amem_db import access
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.migrator import Migrator

    ns, url = unique_name(prefix), server.ws_url
    root = await open_connection(Target(url=url, ns=ns, db="test", user=ROOT_USER, password=ROOT_PASSWORD))
    await Migrator(root).migrate()
    keys = {name: (await access.grant(root, name, **kw))[1] for name, kw in grants.items()}
    conns = {name: await open_connection(Target(url=url, ns=ns, db="test", key=k)) for name, k in keys.items()}
    try:
        yield Tenants(ns, url, root, conns, keys)
    finally:
        for c in [*conns.values(), root]:
            await close_quietly(c)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def dev_server() -> AsyncIterator[DevServer]:
    async with started_dev_server() as server:
        yield server


@pytest.fixture(scope="module")
def dev_server_url(dev_server: DevServer) -> str:
    return dev_server.ws_url
