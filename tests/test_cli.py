"""The amem-db command line, run as a real process against the real engine."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typer

from amem_db.cli import app

ROOT = Path(__file__).resolve().parent.parent


def amem(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AMEM_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "amem_db", *args],
        cwd=cwd or ROOT, env=full_env, capture_output=True, text=True, timeout=timeout,
    )


def command_names() -> list[str]:
    return sorted(typer.main.get_command(app).commands)


def test_thirty_runs_exit_cleanly_every_time(tmp_path):
    # The native engine aborts at interpreter exit in 20-30% of runs unless the
    # CLI leaves with os._exit (ENGINE-NOTES): 30 runs, 30 clean exits.
    codes = [amem("--url", "mem://", "migrate", cwd=tmp_path).returncode for _ in range(30)]
    assert codes == [0] * 30


def test_failing_command_exits_1_not_134(tmp_path):
    codes = {amem("--url", "bogus://x", "status", cwd=tmp_path).returncode for _ in range(5)}
    assert codes == {1}


@pytest.mark.parametrize("name", command_names())
def test_every_command_has_help_and_is_in_the_readme(name):
    result = amem(name, "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout and len(result.stdout.strip().splitlines()) > 3
    readme = (ROOT / "README.md").read_text()
    assert f"amem-db {name}" in readme or re.search(rf"amem-db [^\n]*\b{name}\b", readme), f"README lacks an example of `amem-db {name}`"


def test_embedded_default_needs_no_server(tmp_path):
    first = amem("migrate", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / ".amem" / "data").exists()
    again = amem("migrate", cwd=tmp_path)
    assert "database is up to date" in again.stdout
    status = amem("status", cwd=tmp_path)
    assert status.returncode == 0
    assert re.search(r"surrealdb-3\.\d+\.\d+", status.stdout)
    assert "chunk_embedding" in status.stdout and "knowledge_text" in status.stdout


def test_environment_selects_the_database(tmp_path):
    url = f"surrealkv://{tmp_path / 'envdb'}"
    assert amem("migrate", env={"AMEM_URL": url, "AMEM_NS": "envns", "AMEM_DB": "envdb"}).returncode == 0
    status = amem("status", "--json", env={"AMEM_URL": url, "AMEM_NS": "envns", "AMEM_DB": "envdb"})
    assert '"up_to_date": true' in status.stdout and "ns=envns" in status.stdout


def test_sql_prints_the_plan_and_changes_nothing(tmp_path):
    url = f"surrealkv://{tmp_path / 'db'}"
    printed = amem("--url", url, "migrate", "--sql")
    assert printed.returncode == 0
    assert "DEFINE ANALYZER OVERWRITE knowledge_text TOKENIZERS blank, class, camel, punct FILTERS lowercase, snowball(english);" in printed.stdout
    assert printed.stdout.count("BEGIN TRANSACTION;") >= 2
    status = amem("--url", url, "status")
    assert "pending" in status.stdout and "database is up to date" not in status.stdout


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr  # one line that says what to do, no traceback
    return lines[0]


def test_unknown_scheme_is_one_clear_line():
    line = one_line_error(amem("--url", "postgres://localhost/x", "status"))
    assert "unknown database URL scheme" in line and "ws://" in line


def test_unreachable_server_is_one_clear_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    line = one_line_error(amem("--url", f"ws://127.0.0.1:{port}", "status"))
    assert "could not reach SurrealDB" in line and "Is the server running" in line


def test_second_process_on_the_same_embedded_path_gets_in_use(tmp_path):
    url = f"surrealkv://{tmp_path / 'held'}"
    assert amem("--url", url, "migrate").returncode == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import asyncio, os, sys
            from surrealdb import AsyncSurreal
            async def main():
                db = AsyncSurreal({url!r}); await db.connect()
                print("open", flush=True)
                sys.stdin.read()
                await db.close(); os._exit(0)
            asyncio.run(main())
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        line = one_line_error(amem("--url", url, "status"))
        assert "in use by another process" in line
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
