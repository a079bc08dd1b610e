"""`amem-db migrate`, `amem-db status` and its alias `amem-db verify`."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from .. import __version__
from ..migrator import Migrator
from .app import EXIT_ERROR, Session, err, json_option, out


async def migrate(
    session: Session,
    embedding_dim: int | None = typer.Option(None, help="embedding dimension of the HNSW indexes (default 384; recorded, later runs keep it)"),
    hnsw_m: int | None = typer.Option(None, help="HNSW M (default 12)"),
    hnsw_efc: int | None = typer.Option(None, help="HNSW EFC (default 150)"),
    candidate_pool: int | None = typer.Option(None, help="candidates per retrieval leg of documents.query (default 256)"),
    recall_pool: int | None = typer.Option(None, help="candidates per leg and memory table of recall (default 64, at least 50)"),
    analyzer_language: str | None = typer.Option(None, help="snowball stemmer language of knowledge_text (default english)"),
    document_history: bool | None = typer.Option(
        None, "--document-history/--no-document-history",
        help="keep the passages of replaced document versions, so documents.query and recall answer --as-of / "
             "--at-instant over them (default off; recorded, later runs keep it)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="show the plan and check it inside a cancelled transaction; change nothing"),
    sql: bool = typer.Option(False, "--sql", help="print exactly the SurrealQL that would run, change nothing"),
    force_unlock: bool = typer.Option(False, "--force-unlock", help="remove a stale migrate lock left by a crashed run, then migrate"),
) -> None:
    """Apply pending migrations and changed desired-state SurrealQL.

    Example: amem-db migrate --embedding-dim 384
    """
    overrides = dict(embedding_dim=embedding_dim, hnsw_m=hnsw_m, hnsw_efc=hnsw_efc,
                     candidate_pool=candidate_pool, recall_pool=recall_pool, analyzer_language=analyzer_language,
                     document_history=document_history)
    m = Migrator(await session.connection())
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
    for name in plan.stale_functions:
        out.print(f"{'would remove' if dry_run else 'removed'} function  fn::{name} (surql/ no longer defines it)")
    if dry_run:
        out.print("dry run: the plan was checked inside a cancelled transaction; nothing changed")


async def status(session: Session, as_json: bool = json_option("machine-readable output"),
                 verbose: bool = typer.Option(False, "--verbose", "-v", help="list every file, table, index, analyzer and function")) -> None:
    """Show the engine version, settings, applied / pending / drift counts per kind and the schema's size.

    --verbose lists every script and the schema by name. Exits 1 on drift, a missing or an out-of-order migration. Example: amem-db status --verbose
    """
    await _status(session, as_json, verbose)


async def verify(session: Session, as_json: bool = json_option("machine-readable output"),
                 verbose: bool = typer.Option(False, "--verbose", "-v", help="list every file, table, index, analyzer and function")) -> None:
    """Alias of status: exits 1 on drift, missing or out-of-order migrations.

    Example: amem-db verify
    """
    await _status(session, as_json, verbose)


# drift: an applied migration whose file changed, a deleted one, or one older than the last applied
DRIFT_STATES = ("drifted", "missing", "out_of_order")


def state_counts(states: list[Any], kind: str) -> dict[str, int]:
    """{applied, pending, drift} of one kind of file; a changed desired-state file is pending (migrate re-applies it)."""
    mine = [f.state for f in states if f.kind == kind]
    return {"applied": mine.count("applied"), "pending": mine.count("pending") + mine.count("changed"),
            "drift": sum(mine.count(d) for d in DRIFT_STATES)}


async def _status(session: Session, as_json: bool, verbose: bool = False) -> None:
    target = session.target()
    conn = await session.connection()
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
    kinds = sorted({f.kind for f in plan.states}, key=lambda k: (k != "migration", k))  # migrations apply first
    report: dict[str, Any] = {
        "engine": version,
        "package": __version__,
        "target": target.describe(),
        "settings": plan.settings.model_dump(),
        "counts": {kind: state_counts(plan.states, kind) for kind in kinds},
        "files": [{"key": f.key, "kind": f.kind, "state": f.state, "applied_at": str(f.applied_at or "")} for f in plan.states],
        "tables": tables,
        "indexes": indexes,
        "analyzers": sorted(info.get("analyzers", {})),
        "functions": sorted(f"fn::{name}" for name in info.get("functions", {})),
        "lock": lock and {k: str(v) for k, v in lock.items()},
        # what the next migrate removes: functions surql/ no longer defines, tracking rows of deleted files
        "stale": {"functions": plan.stale_functions, "desired": plan.stale_desired},
        "up_to_date": plan.up_to_date and not plan.problems,
        "problems": [{"code": p.code, "message": str(p)} for p in plan.problems],
    }
    if as_json:
        import json

        print(json.dumps(report, indent=2))
        if plan.problems:
            raise typer.Exit(EXIT_ERROR)
        return
    out.print(f"engine     {version}  (amem-db {__version__})")
    out.print(f"database   {report['target']}")
    out.print(f"settings   {report['settings']}")
    for kind, n in report["counts"].items():
        drift = f"[red]{n['drift']} drift[/]" if n["drift"] else "0 drift"
        pending = f"[yellow]{n['pending']} pending[/]" if n["pending"] else "0 pending"
        out.print(f"{kind:10} {n['applied']} applied, {pending}, {drift}")
    colour = {"applied": "green", "pending": "yellow", "changed": "yellow"}
    if verbose:
        files = Table("kind", "file", "state", "applied at")
        for f in plan.states:
            files.add_row(f.kind, f.key, f"[{colour.get(f.state, 'red')}]{f.state}[/]", str(f.applied_at or ""))
        out.print(files)
        out.print(f"tables     {len(tables)}: {', '.join(tables)}")
        out.print(f"indexes    {sum(map(len, indexes.values()))}: " + ", ".join(i for v in indexes.values() for i in v))
        out.print(f"analyzers  {', '.join(report['analyzers'])}")
        out.print(f"functions  {len(report['functions'])}: {', '.join(report['functions'])}")
    else:
        for f in plan.states:  # drift is named even without --verbose: it is what needs attention
            if f.state in DRIFT_STATES:
                out.print(f"  [{colour.get(f.state, 'red')}]{f.state}[/] {f.kind} {f.key}")
        out.print(f"schema     {len(tables)} tables, {sum(map(len, indexes.values()))} indexes, "
                  f"{len(report['analyzers'])} analyzers, {len(report['functions'])} functions (--verbose lists them)")
    if plan.stale_functions or plan.stale_desired:
        out.print(f"[yellow]stale[/]      the next migrate removes {', '.join([f'fn::{n}' for n in plan.stale_functions] + plan.stale_desired)}")
    if lock:
        out.print(f"[red]lock held by {lock['holder']} since {lock['acquired_at']}[/] (amem-db migrate --force-unlock if stale)")
    if plan.problems:
        for p in plan.problems:
            err.print(f"[red]error[/] ({p.code}): {p}", highlight=False)
        raise typer.Exit(EXIT_ERROR)
    out.print("database is up to date" if plan.up_to_date else "migrations pending: run `amem-db migrate`")
