"""The ``amem-db`` command line (typer).

Every command opens the database through ``connection.resolve_target`` (options >
AMEM_* environment > the embedded default), does its work in one coroutine, and
closes the engine. ``main`` then ends the process with ``os._exit``: the native
engine aborts at interpreter exit in 20-30% of runs otherwise (ENGINE-NOTES,
exit code 134), and a CLI must exit with the right code every time.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from . import __version__
from .client import Memory
from .connection import Target, close_quietly, open_connection, resolve_target
from .errors import AmemError
from .migrator import Migrator

app = typer.Typer(
    help="amem-db: agent-memory retrieval inside SurrealDB.\n\n"
    "Where the database is: --url/--ns/--db/--user/--pass, else AMEM_URL, AMEM_NS, "
    "AMEM_DB, AMEM_USER, AMEM_PASS, else an embedded database in ./.amem/data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True, soft_wrap=True)  # an error is one line, never wrapped


@app.callback()
def _global(
    ctx: typer.Context,
    url: str | None = typer.Option(None, "--url", help="mem://, surrealkv://PATH, surrealkv+versioned://PATH, file://PATH, ws(s)://HOST:PORT, http(s)://HOST:PORT (env AMEM_URL)"),
    ns: str | None = typer.Option(None, "--ns", help="namespace (env AMEM_NS, default amem)"),
    db: str | None = typer.Option(None, "--db", help="database (env AMEM_DB, default main)"),
    user: str | None = typer.Option(None, "--user", help="user to sign in as on a server (env AMEM_USER)"),
    password: str | None = typer.Option(None, "--pass", help="password (env AMEM_PASS)"),
    key: str | None = typer.Option(None, "--key", help="NAME:SECRET from `amem-db grant`: connect as that scoped credential (env AMEM_KEY)"),
    embedder: str | None = typer.Option(None, "--embedder", envvar="AMEM_EMBEDDER",
        help="embedding model: minilm (default), e5-small, or openai:URL:MODEL (env AMEM_EMBEDDER)"),
) -> None:
    ctx.obj = {"url": url, "ns": ns, "db": db, "user": user, "password": password, "key": key, "embedder": embedder}


def target_of(ctx: typer.Context) -> Target:
    opts = dict(ctx.find_root().obj)
    opts.pop("embedder", None)
    return resolve_target(**opts)


@asynccontextmanager
async def memory(ctx: typer.Context) -> AsyncIterator[Memory]:
    target = target_of(ctx)
    mem = Memory(await open_connection(target), embedder=ctx.find_root().obj.get("embedder"), target=target)
    try:
        yield mem
    finally:
        await mem.close()


def print_json(value: Any) -> None:
    print(json.dumps(jsonable(value), indent=2, ensure_ascii=False, default=str))


def jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


@asynccontextmanager
async def connected(ctx: typer.Context) -> AsyncIterator[Any]:
    conn = await open_connection(target_of(ctx))
    try:
        yield conn
    finally:
        await close_quietly(conn)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# --- migrate ----------------------------------------------------------------------
@app.command()
def migrate(
    ctx: typer.Context,
    embedding_dim: int | None = typer.Option(None, help="embedding dimension of the HNSW indexes (default 384; recorded, later runs keep it)"),
    hnsw_m: int | None = typer.Option(None, help="HNSW M (default 12)"),
    hnsw_efc: int | None = typer.Option(None, help="HNSW EFC (default 150)"),
    candidate_pool: int | None = typer.Option(None, help="candidates per retrieval leg (default 256)"),
    analyzer_language: str | None = typer.Option(None, help="snowball stemmer language of knowledge_text (default english)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="show the plan and check it inside a cancelled transaction; change nothing"),
    sql: bool = typer.Option(False, "--sql", help="print exactly the SurrealQL that would run, change nothing"),
    force_unlock: bool = typer.Option(False, "--force-unlock", help="remove a stale migrate lock left by a crashed run, then migrate"),
) -> None:
    """Apply pending migrations and changed desired-state SurrealQL.

    Example: amem-db migrate --embedding-dim 384
    """
    overrides = dict(embedding_dim=embedding_dim, hnsw_m=hnsw_m, hnsw_efc=hnsw_efc,
                     candidate_pool=candidate_pool, analyzer_language=analyzer_language)

    async def go() -> None:
        async with connected(ctx) as conn:
            m = Migrator(conn)
            if sql:
                plan = await m.plan(overrides)
                if plan.problems:
                    raise plan.problems[0]
                for txn in m.plan_sql(plan):
                    print(txn)
                return
            plan = await m.migrate(overrides, dry_run=dry_run, force_unlock=force_unlock)
            if plan.up_to_date:
                out.print("database is up to date")
                return
            verb = "would apply" if dry_run else "applied"
            for s in plan.pending:
                out.print(f"{verb} {s.kind:9} {s.path.name}")
            if plan.settings_changed:
                out.print(f"{verb} settings  {plan.settings.model_dump()}")
            if dry_run:
                out.print("dry run: the plan was checked inside a cancelled transaction; nothing changed")

    run(go())


# --- status ------------------------------------------------------------------------
def _status(ctx: typer.Context, as_json: bool) -> None:
    async def go() -> None:
        target = target_of(ctx)
        async with connected(ctx) as conn:
            version = await conn.version()
            m = Migrator(conn)
            plan = await m.plan()
            info = (await conn.query("INFO FOR DB"))[0] or {}
            tables = sorted(t for t in info.get("tables", {}) if not t.startswith("amem_"))
            indexes: dict[str, list[str]] = {}
            for t in tables:
                tinfo = (await conn.query(f"INFO FOR TABLE {t}"))[0] or {}
                indexes[t] = sorted(tinfo.get("indexes", {}))
            lock = await m.lock_holder()
        report = {
            "engine": version,
            "package": __version__,
            "target": target.describe(),
            "settings": plan.settings.model_dump(),
            "files": [{"key": f.key, "kind": f.kind, "state": f.state, "applied_at": str(f.applied_at or "")} for f in plan.states],
            "tables": tables,
            "indexes": indexes,
            "analyzers": sorted(info.get("analyzers", {})),
            "functions": sorted(f"fn::{name}" for name in info.get("functions", {})),
            "lock": lock and {k: str(v) for k, v in lock.items()},
            "up_to_date": plan.up_to_date and not plan.problems,
        }
        if as_json:
            print(json.dumps(report, indent=2))
            return
        out.print(f"engine     {version}  (amem-db {__version__})")
        out.print(f"database   {report['target']}")
        out.print(f"settings   {report['settings']}")
        files = Table("kind", "file", "state", "applied at")
        colour = {"applied": "green", "pending": "yellow", "changed": "yellow"}
        for f in plan.states:
            files.add_row(f.kind, f.key, f"[{colour.get(f.state, 'red')}]{f.state}[/]", str(f.applied_at or ""))
        out.print(files)
        out.print(f"tables     {len(tables)}: {', '.join(tables)}")
        out.print(f"indexes    {sum(map(len, indexes.values()))}: " + ", ".join(i for v in indexes.values() for i in v))
        out.print(f"analyzers  {', '.join(report['analyzers'])}")
        out.print(f"functions  {len(report['functions'])}: {', '.join(report['functions'])}")
        if lock:
            out.print(f"[red]lock held by {lock['holder']} since {lock['acquired_at']}[/] (amem-db migrate --force-unlock if stale)")
        if plan.problems:
            for p in plan.problems:
                err.print(f"[red]{type(p).__name__}[/]: {p}")
            raise typer.Exit(1)
        out.print("database is up to date" if plan.up_to_date else "migrations pending: run `amem-db migrate`")

    run(go())


@app.command()
def status(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """Show the engine version, settings, applied / pending / drifted scripts and the schema.

    Example: amem-db status
    """
    _status(ctx, as_json)


@app.command()
def verify(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """Alias of status: exits 1 on drift, missing or out-of-order migrations.

    Example: amem-db verify
    """
    _status(ctx, as_json)


# --- serve --dev -----------------------------------------------------------------------
@app.command()
def serve(
    ctx: typer.Context,
    dev: bool = typer.Option(False, "--dev", help="required: acknowledges this is a development bridge, not a production server"),
    host: str = typer.Option("127.0.0.1", help="address to bind (loopback by default)"),
    port: int = typer.Option(8000, help="port"),
) -> None:
    """Serve the embedded engine over ws:// for local experiments (development only).

    Production uses `surreal start` or SurrealDB Cloud. Example: amem-db serve --dev --port 8000
    """
    if not dev:
        raise AmemError("`amem-db serve` is a development bridge: pass --dev to acknowledge it (production: `surreal start`)")
    from .devserver import run_dev_server

    target = target_of(ctx)
    if not target.embedded:
        raise AmemError("serve --dev serves an embedded database: give --url mem:// or surrealkv://PATH")
    run_dev_server(target.url, host=host, port=port)


# --- entry point -----------------------------------------------------------------------
from . import cli_access, cli_documents, cli_eval, cli_query  # noqa: E402,F401  (register their commands)


def main(argv: list[str] | None = None) -> None:
    code = 0
    try:
        app(args=argv, standalone_mode=False)
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.Abort:
        err.print("aborted")
        code = 130
    except AmemError as exc:
        err.print(f"[red]error[/] ({exc.code}): {exc}", highlight=False)
        code = 1
    except KeyboardInterrupt:
        code = 130
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except Exception as exc:
        # usage errors (typer vendors click: typer._click.exceptions.UsageError)
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            code = exc.exit_code
        elif os.environ.get("AMEM_DEBUG"):
            import traceback

            traceback.print_exc()
            code = 1
        else:
            first = (str(exc).strip().splitlines() or [""])[0]
            err.print(f"[red]error[/] ({type(exc).__name__}): {first} (AMEM_DEBUG=1 shows the traceback)", highlight=False)
            code = 1
    # Skip interpreter teardown: the native engine can abort there (rc 134).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
