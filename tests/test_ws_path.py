"""The ws:// code path of the client and migrator, on every run: the real engine
behind the loopback dev server (amem_db.devserver), one engine session per connection."""

from __future__ import annotations

import asyncio
import sys

import pytest
from devserver_fixture import ROOT_PASSWORD, ROOT_USER, dev_server, dev_server_url, unique_name  # noqa: F401

from amem_db.connection import Target, close_quietly, open_connection
from amem_db.errors import AuthenticationFailed, MigrationLocked
from amem_db.migrator import Migrator


def ws_target(url: str, ns: str, password: str = ROOT_PASSWORD) -> Target:
    return Target(url=url, ns=ns, db="test", user=ROOT_USER, password=password)


async def run_cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "amem_db", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    return proc.returncode, out.decode(), err.decode()


async def test_migrate_over_ws_then_no_op(dev_server_url):
    conn = await open_connection(ws_target(dev_server_url, unique_name("ws")))
    try:
        plan = await Migrator(conn).migrate()
        assert plan.pending
        tables = (await conn.query("INFO FOR DB"))[0]["tables"]
        assert {"document", "chunk", "keyword", "retrieval_trace"} <= set(tables)
        assert (await Migrator(conn).migrate()).up_to_date
        assert (await conn.query("RETURN fn::amem::scope::closure(['org/acme/x'])"))[0] == ["org", "org/acme", "org/acme/x"]
    finally:
        await close_quietly(conn)


async def test_cli_over_ws(dev_server_url):
    ns = unique_name("cli")
    common = ("--url", dev_server_url, "--ns", ns, "--user", ROOT_USER, "--pass", ROOT_PASSWORD)
    code, out, err = await run_cli(*common, "migrate")
    assert code == 0, err
    code, out, err = await run_cli(*common, "status")
    assert code == 0 and "database is up to date" in out and "surrealdb-3." in out


async def test_bad_credentials_are_one_clear_error(dev_server_url):
    with pytest.raises(AuthenticationFailed, match="check --user/--pass"):
        await open_connection(ws_target(dev_server_url, unique_name("auth"), password="wrong"))
    code, out, err = await run_cli("--url", dev_server_url, "--user", "root", "--pass", "wrong", "status")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "signing in" in err


# 3 rounds in the fast suite; the slow suite runs 40 (issue 15 finding 9: a loser once got an
# untyped "write conflict" or "table does not exist" instead of migration_locked)
@pytest.mark.parametrize("round_", [pytest.param(i, marks=pytest.mark.slow) if i >= 3 else i for i in range(40)])
async def test_concurrent_migrates_cannot_interleave(dev_server_url, round_):
    ns = unique_name("race")
    conns = [await open_connection(ws_target(dev_server_url, ns)) for _ in range(4)]
    try:
        outcomes = await asyncio.gather(*(Migrator(c).migrate() for c in conns), return_exceptions=True)
        errors = [o for o in outcomes if isinstance(o, Exception)]
        # each loser's type and message in full (pytest shortens a long list in the middle)
        assert all(isinstance(e, MigrationLocked) for e in errors), "\n".join(f"{type(e).__module__}.{type(e).__name__}: {e}" for e in errors)
        assert len(errors) < len(conns)  # somebody migrated
        (rows,) = await conns[0].query("SELECT key, kind FROM amem_migration")
        keys = [(r["kind"], r["key"]) for r in rows]
        assert len(keys) == len(set(keys))  # each script applied exactly once
        assert (await Migrator(conns[0]).plan()).up_to_date
        assert await Migrator(conns[0]).lock_holder() is None
    finally:
        for c in conns:
            await close_quietly(c)
