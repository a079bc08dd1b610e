"""Shared fixtures: every test module gets its own namespace/database on the
real engine, migrated, removed afterwards. No mocks of the database.

Targets:
* default: the embedded engine (``mem://``), in-process;
* ``AMEM_TEST_URL=ws://host:port`` (+ ``AMEM_TEST_USER``/``AMEM_TEST_PASS``):
  the same suite against a SurrealDB server.
"""

from __future__ import annotations

import os
import sys

import pytest
from helpers import drop, make_target, migrated

from amem_db.connection import close_quietly, open_connection


@pytest.fixture(scope="module")
async def fresh_db():
    """An empty, un-migrated database of its own."""
    target = make_target("fresh")
    conn = await open_connection(target)
    yield conn
    await drop(conn, target)
    await close_quietly(conn)


@pytest.fixture(scope="module")
async def db():
    """A migrated database of this module's own."""
    async for conn in migrated("mod"):
        yield conn


# --- exit cleanly, every time ------------------------------------------------------
# The native engine aborts at interpreter exit in 20-30% of runs (rc 134,
# docs/ENGINE-ISSUES.md #4). After pytest has reported, leave with os._exit and the real status.
_status = {"code": 0}


def pytest_sessionfinish(session, exitstatus):
    _status["code"] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if os.environ.get("AMEM_TEST_NO_HARD_EXIT"):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_status["code"])
