"""The amem-db command line, run as a real process against the real engine:
clean process exits, exit codes, one-line errors, connection options before
and after the command, help and README for every command."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from amem_db.cli import app
from amem_db.migrator import bundled_dir

ROOT = Path(__file__).resolve().parent.parent


def amem(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AMEM_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "amem_db", *args],
        cwd=cwd or ROOT, env=full_env, capture_output=True, text=True, timeout=timeout,
    )


def command_paths() -> list[str]:
    """Every command, subcommands included: "migrate", "documents list", ..."""
    paths = []
    for name, cmd in typer.main.get_command(app).commands.items():
        subs = getattr(cmd, "commands", None)
        paths += [f"{name} {sub}" for sub in subs] if subs else [name]
    return sorted(paths)


def surql(url: str, sql: str) -> None:
    """Run SurrealQL on an embedded database in a process of its own (one process holds it at a time)."""
    code = textwrap.dedent(f"""
        import asyncio, os
        from amem_db.connection import Target, close_quietly, open_connection
        async def main():
            conn = await open_connection(Target(url={url!r}))
            await conn.query({sql!r})
            await close_quietly(conn)
        asyncio.run(main()); os._exit(0)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # 30 engine processes
def test_thirty_runs_exit_cleanly_every_time(tmp_path):
    # The native engine aborts at interpreter exit in 20-30% of runs unless the
    # CLI leaves with os._exit (docs/ENGINE-ISSUES.md #4): 30 runs, 30 clean exits.
    codes = [amem("--url", "mem://", "migrate", cwd=tmp_path).returncode for _ in range(30)]
    assert codes == [0] * 30


def test_failing_command_exits_1_not_134(tmp_path):
    codes = {amem("--url", "bogus://x", "status", cwd=tmp_path).returncode for _ in range(5)}
    assert codes == {1}


def readme_commands_section() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]


def test_every_command_and_subcommand_is_listed():
    paths = command_paths()
    assert {"migrate", "status", "verify", "ingest", "query", "grant", "eval", "bench", "serve"} <= set(paths)
    assert {"documents list", "documents get", "documents chunks", "documents delete", "documents reprocess",
            "documents recompute-links", "keywords for-document", "keywords list", "keywords get", "keywords search", "keywords embed",
            "keys list", "keys revoke"} <= set(paths)


@pytest.mark.parametrize("path", command_paths())
def test_every_command_has_help_and_is_in_the_readme(path):
    result = CliRunner().invoke(app, [*path.split(), "--help"], prog_name="amem-db")
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())  # rich wraps lines at the terminal width
    assert "Usage" in text and "Example: amem-db" in text, result.stdout
    assert "--url" in text or path == "bench", "connection options are accepted after the command"
    section = readme_commands_section()
    assert re.search(rf"amem-db [^\n]*\b{re.escape(path)}\b", section), f"README's Commands section lacks `amem-db {path}`"


def test_embedded_default_needs_no_server(tmp_path):
    first = amem("migrate", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / ".amem" / "data").exists()
    again = amem("migrate", cwd=tmp_path)
    assert "database is up to date" in again.stdout
    status = amem("status", cwd=tmp_path)
    assert status.returncode == 0
    assert re.search(r"surrealdb-3\.\d+\.\d+", status.stdout)
    migrations = len(list(bundled_dir("migrations").glob("*.surql.j2")))
    assert re.search(rf"^migration +{migrations} applied, 0 pending, 0 drift$", status.stdout, re.M), status.stdout
    assert re.search(r"^desired +\d+ applied, 0 pending, 0 drift$", status.stdout, re.M), status.stdout
    assert "chunk_embedding" not in status.stdout and "fn::amem::" not in status.stdout  # names only with --verbose
    verbose = amem("status", "--verbose", cwd=tmp_path)
    assert verbose.returncode == 0
    assert "chunk_embedding" in verbose.stdout and "knowledge_text" in verbose.stdout and "fn::amem::" in verbose.stdout


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
    # one transaction per script (the settings row, every migration, every desired-state file)
    scripts = len(list(bundled_dir("migrations").glob("*.surql.j2"))) + len(list(bundled_dir("surql").glob("*.surql.j2")))
    assert printed.stdout.count("BEGIN TRANSACTION;") == 1 + scripts
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


# --- connection options before and after the command --------------------------------------
def test_connection_options_after_the_command(tmp_path):
    url = f"surrealkv://{tmp_path / 'after'}"
    first = amem("migrate", "--url", url, "--ns", "afterns", "--db", "afterdb", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    status = amem("status", "--json", "--url", url, "--ns", "afterns", "--db", "afterdb", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert '"up_to_date": true' in status.stdout and "ns=afterns, db=afterdb" in status.stdout
    assert not (tmp_path / ".amem").exists()  # the default database was never opened


def test_the_option_after_the_command_wins(tmp_path):
    # documented rule: after the command > before the command > AMEM_* > the default
    url = f"surrealkv://{tmp_path / 'win'}"
    assert amem("--url", url, "migrate", cwd=tmp_path).returncode == 0
    after_wins = amem("--url", "bogus://x", "status", "--url", url, cwd=tmp_path)
    assert after_wins.returncode == 0 and "database is up to date" in after_wins.stdout, after_wins.stderr
    line = one_line_error(amem("--url", url, "status", "--url", "bogus://x", cwd=tmp_path))
    assert "unknown database URL scheme 'bogus'" in line
    # both an option (either place) and the environment: the option wins
    env = {"AMEM_URL": "bogus://env"}
    assert amem("status", "--url", url, cwd=tmp_path, env=env).returncode == 0
    assert amem("--url", url, "status", cwd=tmp_path, env=env).returncode == 0
    assert "'bogus'" in one_line_error(amem("status", cwd=tmp_path, env=env))


# --- exit codes ------------------------------------------------------------------------
def test_verify_exits_1_on_drift(tmp_path):
    url = f"surrealkv://{tmp_path / 'drift'}"
    assert amem("--url", url, "migrate").returncode == 0
    assert amem("--url", url, "verify").returncode == 0
    # what the database recorded no longer matches the migration file: drift
    surql(url, "UPDATE amem_migration SET checksum = 'tampered' WHERE kind = 'migration' AND key = '0001_core_schema'")
    line = one_line_error(amem("--url", url, "verify"))
    assert line.startswith("error (migration_drift): migration 0001_core_schema") and "immutable" in line
    as_json = amem("--url", url, "status", "--json")
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["up_to_date"] is False and [p["code"] for p in report["problems"]] == ["migration_drift"]
    assert [f["state"] for f in report["files"] if f["key"] == "0001_core_schema"] == ["drifted"]
    assert report["counts"]["migration"]["drift"] == 1 and report["counts"]["migration"]["pending"] == 0
    plain = amem("--url", url, "status")
    assert plain.returncode == 1
    assert re.search(r"^migration +\d+ applied, 0 pending, 1 drift$", plain.stdout, re.M), plain.stdout
    assert re.search(r"^ +drifted migration 0001_core_schema$", plain.stdout, re.M), plain.stdout  # named without --verbose
    assert "migration_drift" in one_line_error(amem("--url", url, "migrate"))


def test_verify_exits_1_on_a_missing_migration(tmp_path):
    url = f"surrealkv://{tmp_path / 'missing'}"
    assert amem("--url", url, "migrate").returncode == 0
    # the database applied a migration this package does not have
    surql(url, "CREATE amem_migration:['migration', '9999_gone'] SET kind = 'migration', key = '9999_gone', "
               "checksum = 'x', applied_at = time::now()")
    line = one_line_error(amem("--url", url, "verify"))
    assert line.startswith("error (migration_missing): migration 9999_gone was applied")


def test_ingest_where_every_file_failed_exits_1(tmp_path):
    url = f"surrealkv://{tmp_path / 'failing'}"
    assert amem("--url", url, "migrate").returncode == 0
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7 this is not a pdf")
    (tmp_path / "empty.md").write_text("")
    done = amem("--url", url, "--embedder", "hash:384", "ingest", str(tmp_path / "broken.pdf"), str(tmp_path / "empty.md"))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.count("failed ") == 2
    some = amem("--url", url, "--embedder", "hash:384", "ingest", str(tmp_path / "broken.pdf"), str(ROOT / "examples" / "sample-corpus" / "support-hours.txt"))
    assert some.returncode == 0, some.stderr  # one failed, one added: reported, not a failure


def test_documents_get_of_a_missing_id_exits_1(tmp_path):
    url = f"surrealkv://{tmp_path / 'getdb'}"
    assert amem("--url", url, "migrate").returncode == 0
    line = one_line_error(amem("--url", url, "documents", "get", "document:nosuchthing"))
    assert line == "error (not_found): no document document:nosuchthing"


def test_bench_without_its_extra_names_the_extra(monkeypatch):
    # rich once ate "[bench]" as markup: the hint read `pip install 'amem-db'`
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "lancedb" else real(name, *a))
    result = CliRunner().invoke(app, ["bench", "--systems", "lancedb"], prog_name="amem-db")
    assert result.exit_code == 1, result.output
    line = result.stderr.strip()
    assert line.startswith("error (missing_dependency): lancedb") and line.endswith(" not installed: pip install 'amem-db[bench]'"), line


def test_bench_without_the_datasets_is_one_line(tmp_path):
    result = amem("--embedder", "hash:384", "bench", "--sizes", "10", "--systems", "amem", "--out", str(tmp_path / "out"),
                  env={"AMEM_DATASETS": str(tmp_path / "nowhere")})
    line = one_line_error(result)
    assert line.startswith("error (datasets_not_found): no scifact, cranfield, cisi under ") and "AMEM_DATASETS" in line


def test_usage_errors_exit_2_with_typers_message():
    bad_option = amem("migrate", "--no-such-option")
    assert bad_option.returncode == 2
    assert "No such option: --no-such-option" in bad_option.stderr and "Usage: amem-db migrate" in bad_option.stderr
    bad_value = amem("query", "x", "--k", "many")
    assert bad_value.returncode == 2 and "Invalid value for '--k'" in bad_value.stderr
    assert amem("documents").returncode == 2  # a group without its command shows the help


# --- one-line errors ---------------------------------------------------------------------
def test_unknown_embedder_is_one_line_listing_the_choices():
    for args in (("--url", "mem://", "--embedder", "bogus", "query", "x"), ("query", "x", "--url", "mem://", "--embedder", "bogus")):
        line = one_line_error(amem(*args))
        assert line.startswith("error (invalid_input): --embedder: unknown embedder 'bogus'")
        assert all(choice in line for choice in ("minilm", "e5-small", "openai:URL:MODEL"))


def test_out_of_range_setting_is_one_line_naming_the_field_and_its_limit():
    line = one_line_error(amem("--url", "mem://", "migrate", "--hnsw-m", "2"))
    assert line == "error (invalid_input): hnsw_m must be between 4 and 128 (got 2)"
    line = one_line_error(amem("--url", "mem://", "migrate", "--analyzer-language", "klingon"))
    assert line.startswith("error (invalid_input): analyzer_language must be one of arabic,") and "(got 'klingon')" in line


@pytest.mark.parametrize("module", ["app", "migrate", "documents", "keywords", "query", "access", "harness", "serve"])
def test_command_modules_have_no_cycle_and_register_nothing(module):
    # no import cycle: within amem_db.cli, command modules import only .app, and .app
    # imports nothing of the package; no register-by-import: a command module holds
    # no typer app (amem_db.cli.build_app registers the commands)
    import ast
    import importlib

    source = (ROOT / "amem_db" / "cli" / f"{module}.py").read_text()
    inside = [n.module or "" for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.level == 1]
    assert inside == ([] if module == "app" else ["app"]), inside
    loaded = importlib.import_module(f"amem_db.cli.{module}")
    assert not [v for v in vars(loaded).values() if isinstance(v, typer.Typer)]


def test_build_app_makes_a_fresh_app_with_every_command():
    from amem_db.cli import build_app

    fresh = build_app()
    assert fresh is not app
    assert sorted(typer.main.get_command(fresh).commands) == sorted(typer.main.get_command(app).commands)


def test_status_shows_a_retired_function_and_migrate_removes_it(tmp_path):
    url = f"surrealkv://{tmp_path / 'db'}"
    assert amem("--url", url, "migrate").returncode == 0
    # an older surql/ defined a helper this one does not (a renamed or deleted function)
    stray = ("import asyncio, os\n"
             "from amem_db.connection import open_connection, resolve_target, close_quietly\n"
             "async def go():\n"
             f"    conn = await open_connection(resolve_target({url!r}))\n"
             "    await conn.query('DEFINE FUNCTION fn::amem::retired_helper() { RETURN 1; }')\n"
             "    await close_quietly(conn)\n"
             "    os._exit(0)\n"
             "asyncio.run(go())\n")
    assert subprocess.run([sys.executable, "-c", stray], capture_output=True, timeout=120).returncode == 0
    report = json.loads(amem("--url", url, "status", "--json").stdout)
    assert report["stale"] == {"functions": ["amem::retired_helper"], "desired": []}
    assert report["up_to_date"] is False and "fn::amem::retired_helper" in report["functions"]
    done = amem("--url", url, "migrate")
    assert done.returncode == 0 and "removed function  fn::amem::retired_helper" in done.stdout
    report = json.loads(amem("--url", url, "status", "--json").stdout)
    assert report["stale"] == {"functions": [], "desired": []} and report["up_to_date"] is True
    assert "fn::amem::retired_helper" not in report["functions"]
