"""Apply amem-db's versioned SurrealQL to a database.

Two lifecycles (docs/ARCHITECTURE.md):

* ``migrations/NNNN_name.surql.j2``: ordered, immutable, applied once. Rendered
  with NO settings, so a later settings change can never make an applied
  migration look drifted.
* ``surql/NNN_concern.surql.j2``: desired state (analyzers, indexes,
  functions), every DEFINE with OVERWRITE, re-applied whenever its rendered
  text changes (a settings change re-renders it).

Each script runs as ``BEGIN; ...; <tracking row>; COMMIT;`` in one query, so a
script and its bookkeeping land together or not at all. ``dry_run`` runs the
whole plan in one transaction that ends in CANCEL: the engine checks it, and
nothing changes. A ``CREATE`` on a fixed lock record excludes a second
concurrent migrator.
"""

from __future__ import annotations

import asyncio
import getpass
import hashlib
import json
import os
import re
import socket
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from . import __version__
from .constants import RENDER_CONTEXT, VECTOR_FIELDS
from .errors import (
    DimensionChangeRefused,
    MigrationDrift,
    MigrationError,
    MigrationLocked,
    MigrationMissing,
    MigrationOutOfOrder,
    from_thrown,
)
from .options import render_context as option_keys
from .settings import SchemaSettings

PACKAGE_ROOT = Path(__file__).resolve().parent

# The migrator's own bookkeeping must exist before anything can be tracked.
# IF NOT EXISTS: idempotent, and PERMISSIONS NONE keeps it away from record users.
BOOTSTRAP = """
DEFINE TABLE IF NOT EXISTS amem_migration SCHEMALESS PERMISSIONS NONE COMMENT 'amem-db: applied scripts (migrator bookkeeping)';
DEFINE TABLE IF NOT EXISTS amem_lock SCHEMALESS PERMISSIONS NONE COMMENT 'amem-db: migrate lock';
DEFINE TABLE IF NOT EXISTS amem_setting SCHEMALESS PERMISSIONS NONE COMMENT 'amem-db: schema settings recorded by migrate';
"""

# the stored functions amem-db owns: a desired-state apply removes those of
# them that the rendered surql/ no longer defines (renamed or deleted helpers)
OWN_FUNCTION = re.compile(r"DEFINE FUNCTION OVERWRITE fn::(amem::[A-Za-z0-9_:]+)\(")

LOCK_ID = "amem_lock:migrate"


def bundled_dir(name: str) -> Path:
    """``migrations/`` or ``surql/``: the repo folder in a checkout, else the installed copy."""
    checkout = PACKAGE_ROOT.parent / name
    if checkout.is_dir():
        return checkout
    return Path(str(resources.files("amem_db") / "sql" / name))


def literal(value: Any) -> str:
    """A SurrealQL literal for a bookkeeping value (JSON strings/numbers are valid SurrealQL)."""
    return json.dumps(value)


@dataclass(frozen=True)
class Script:
    key: str  # file name without .surql.j2, e.g. "0001_core_schema"
    kind: str  # "migration" | "desired"
    path: Path
    text: str  # rendered SurrealQL

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def record(self) -> str:
        return f"amem_migration:[{literal(self.kind)}, {literal(self.key)}]"


@dataclass
class FileState:
    key: str
    kind: str
    state: str  # applied | pending | changed | drifted | missing | out_of_order
    applied_at: Any = None


@dataclass
class Plan:
    settings: SchemaSettings
    stored_settings: dict[str, Any] | None
    pending: list[Script]
    states: list[FileState]
    problems: list[MigrationError] = field(default_factory=list)
    # fn::amem::* functions in the database that the rendered surql/ no longer defines,
    # and tracking rows of desired-state files that no longer exist
    stale_functions: list[str] = field(default_factory=list)
    stale_desired: list[str] = field(default_factory=list)

    @property
    def settings_changed(self) -> bool:
        return self.stored_settings != self.settings.model_dump()

    @property
    def up_to_date(self) -> bool:
        return not self.pending and not self.settings_changed and not self.stale_functions and not self.stale_desired


def environment(directory: Path | None = None) -> jinja2.Environment:
    """The one jinja environment for surql/ and migrations/: ``{% import "_macros.j2" %}``
    resolves against ``directory`` first, then the package's surql/ folder."""
    search = [str(d) for d in dict.fromkeys([directory, bundled_dir("surql")]) if d is not None]
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(search),
        undefined=jinja2.StrictUndefined,  # a missing setting is an error, never ""
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_dir(directory: Path, kind: str, context: dict[str, Any]) -> list[Script]:
    """Render every ``*.surql.j2`` of a folder (``_macros.j2`` is a library, not a script).

    Desired state gets the shared constants (``constants.RENDER_CONTEXT``) and the read
    options' key lists (amem_db/options) under the settings; migrations get only ``context``
    (empty: nothing that may change later)."""
    env = environment(directory)
    full = (RENDER_CONTEXT | option_keys() | context) if kind == "desired" else dict(context)
    scripts = []
    for path in sorted(directory.glob("*.surql.j2")):
        try:
            text = env.from_string(path.read_text()).render(**full)
        except jinja2.UndefinedError as exc:
            hint = " (migrations are rendered without settings: move settings-dependent DEFINEs to surql/)" if kind == "migration" else ""
            raise MigrationError(f"cannot render {path.name}: {exc}{hint}") from exc
        scripts.append(Script(path.name.removesuffix(".surql.j2"), kind, path, text))
    return scripts


def transaction(script: Script, applied_by: str, *, end: str = "COMMIT") -> str:
    """One script and its tracking row in one transaction."""
    verb = "CREATE" if script.kind == "migration" else "UPSERT"  # CREATE fails on a re-run
    row = (
        f"{verb} {script.record} CONTENT {{ key: {literal(script.key)}, kind: {literal(script.kind)}, "
        f"checksum: {literal(script.checksum)}, applied_at: time::now(), applied_by: {literal(applied_by)}, "
        f"duration: time::now() - $amem_started, package_version: {literal(__version__)} }} RETURN NONE;"
    )
    return (
        f"BEGIN TRANSACTION;\nLET $amem_started = time::now();\n"
        f"-- {script.kind}: {script.path.name}\n{script.text.strip()}\n{row}\n{end} TRANSACTION;\n"
    )


def settings_transaction(settings: SchemaSettings, *, end: str = "COMMIT") -> str:
    """Record the settings; refuse a dimension change while vectors exist (they need a re-embed)."""
    checks = "\n".join(
        f"LET $amem_has_{t} = IF '{t}' IN $amem_tables {{ array::len(SELECT VALUE id FROM {t} WHERE {f} != NONE LIMIT 1) > 0 }} ELSE {{ false }};"
        for t, f in VECTOR_FIELDS
    )
    any_vectors = " OR ".join(f"$amem_has_{t}" for t, _ in VECTOR_FIELDS)
    dim = settings.embedding_dim
    return (
        "BEGIN TRANSACTION;\n"
        "LET $amem_old = (SELECT * OMIT id FROM ONLY amem_setting:schema);\n"
        "LET $amem_tables = object::keys((INFO FOR DB).tables);\n"
        f"{checks}\n"
        f"IF $amem_old != NONE AND $amem_old.embedding_dim != {dim} AND ({any_vectors}) {{\n"
        f"    THROW 'amem:dimension_change: the database holds ' + <string> $amem_old.embedding_dim + "
        f"'-dimensional embeddings; changing to {dim} needs a re-embed of every document. "
        "Keep the old dimension, or migrate into a fresh database and re-ingest.';\n"
        "};\n"
        f"UPSERT amem_setting:schema CONTENT {settings.model_dump_json()} RETURN NONE;\n"
        f"{end} TRANSACTION;\n"
    )


def defined_functions(scripts: list[Script]) -> set[str]:
    """``amem::area::verb`` of every function the rendered scripts define."""
    return {m.group(1) for s in scripts for m in OWN_FUNCTION.finditer(s.text)}


def removal_transaction(functions: list[str], desired_keys: list[str], *, end: str = "COMMIT") -> str:
    """Remove what an older surql/ left behind: stored amem functions the current one no
    longer defines (renamed or deleted helpers) and the tracking rows of deleted files."""
    removes = "".join(f"REMOVE FUNCTION IF EXISTS fn::{n};\n" for n in functions)
    removes += "".join(f"DELETE amem_migration:[{literal('desired')}, {literal(k)}] RETURN NONE;\n" for k in desired_keys)
    return f"BEGIN TRANSACTION;\n-- desired: what surql/ no longer defines\n{removes}{end} TRANSACTION;\n"


def _script_name(sql: str) -> str:
    """The ``-- kind: file`` marker that ``transaction`` writes, for error messages."""
    if "\n-- " in sql:
        return sql.split("\n-- ", 1)[1].split("\n", 1)[0]
    return "the settings update"


def _root_cause(raw: dict[str, Any]) -> str | None:
    """The statement error that failed a transaction (the others only say they were not run)."""
    for stmt in raw.get("result") or []:
        if stmt.get("status") != "ERR":
            continue
        text = str(stmt.get("result"))
        if (stmt.get("details") or {}).get("kind") == "Cancelled" or "not executed due to a" in text:
            continue
        return text
    return None


def _error_text(error: Any) -> str:
    return error.get("message", str(error)) if isinstance(error, dict) else str(error)


def _failure(raw: dict[str, Any]) -> str | None:
    """Why a query failed: a statement's root cause, or the whole request's error."""
    return _root_cause(raw) or (_error_text(raw["error"]) if raw.get("error") else None)


def who() -> str:
    try:
        user = getpass.getuser()
    except Exception:
        user = "unknown"
    return f"{user}@{socket.gethostname()} pid {os.getpid()}"


class Migrator:
    def __init__(
        self,
        conn: Any,
        *,
        migrations_dir: Path | None = None,
        surql_dir: Path | None = None,
    ) -> None:
        self.conn = conn
        self.migrations_dir = migrations_dir or bundled_dir("migrations")
        self.surql_dir = surql_dir or bundled_dir("surql")
        self.holder = who()

    # --- reading state ------------------------------------------------------
    async def _tables(self) -> set[str]:
        info = await self.conn.query("INFO FOR DB")
        return set((info[0] or {}).get("tables", {}))

    async def _stored_functions(self) -> set[str]:
        info = await self.conn.query("INFO FOR DB")
        return {name for name in (info[0] or {}).get("functions", {}) if name.startswith("amem::")}

    async def _tracked(self) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        if "amem_migration" not in await self._tables():
            return [], None
        rows, stored = await self.conn.query(
            "SELECT key, kind, checksum, applied_at FROM amem_migration ORDER BY key;"
            "SELECT * OMIT id FROM ONLY amem_setting:schema;"
        )
        return rows or [], stored

    async def plan(self, overrides: dict[str, Any] | None = None) -> Plan:
        applied, stored = await self._tracked()
        base = SchemaSettings(**stored) if stored else SchemaSettings()
        settings = base.merged(overrides or {})
        migrations = render_dir(self.migrations_dir, "migration", {})
        desired = render_dir(self.surql_dir, "desired", settings.model_dump() | {"hnsw_ef": settings.hnsw_ef})

        done = {(r["kind"], r["key"]): r for r in applied}
        states: list[FileState] = []
        problems: list[MigrationError] = []
        pending: list[Script] = []
        last_applied = max((r["key"] for r in applied if r["kind"] == "migration"), default="")

        for s in migrations:
            row = done.get(("migration", s.key))
            if row is None:
                if s.key < last_applied:
                    states.append(FileState(s.key, s.kind, "out_of_order"))
                    problems.append(MigrationOutOfOrder(
                        f"pending migration {s.path.name} sorts before the last applied one ({last_applied}): "
                        "migrations are ordered; rename it to sort after the last applied migration"))
                else:
                    states.append(FileState(s.key, s.kind, "pending"))
                    pending.append(s)
            elif row["checksum"] != s.checksum:
                states.append(FileState(s.key, s.kind, "drifted", row["applied_at"]))
                problems.append(MigrationDrift(
                    f"migration {s.path.name} changed after it was applied on {row['applied_at']}: "
                    "applied migrations are immutable; restore the file and put the change in a new migration"))
            else:
                states.append(FileState(s.key, s.kind, "applied", row["applied_at"]))
        present = {s.key for s in migrations}
        for (kind, key), row in done.items():
            if kind == "migration" and key not in present:
                states.append(FileState(key, kind, "missing", row["applied_at"]))
                problems.append(MigrationMissing(
                    f"migration {key} was applied on {row['applied_at']} but its file is missing from "
                    f"{self.migrations_dir}: restore it (applied migrations are never deleted)"))
        for s in desired:
            row = done.get(("desired", s.key))
            if row is None or row["checksum"] != s.checksum:
                states.append(FileState(s.key, s.kind, "pending" if row is None else "changed", row and row["applied_at"]))
                pending.append(s)
            else:
                states.append(FileState(s.key, s.kind, "applied", row["applied_at"]))
        stale = sorted(await self._stored_functions() - defined_functions(desired))
        present_desired = {s.key for s in desired}
        gone = sorted(key for kind, key in done if kind == "desired" and key not in present_desired)
        return Plan(settings, stored, pending, states, problems, stale, gone)

    def plan_sql(self, plan: Plan, *, end: str = "COMMIT") -> list[str]:
        """Every transaction the plan would run, in order, exactly as sent."""
        txns = [BOOTSTRAP.strip() + "\n"]
        if plan.settings_changed:
            txns.append(settings_transaction(plan.settings, end=end))
        txns += [transaction(s, self.holder, end=end) for s in plan.pending]
        if plan.stale_functions or plan.stale_desired:
            txns.append(removal_transaction(plan.stale_functions, plan.stale_desired, end=end))
        return txns

    # --- applying -------------------------------------------------------------
    async def migrate(
        self, overrides: dict[str, Any] | None = None, *, dry_run: bool = False, force_unlock: bool = False
    ) -> Plan:
        plan = await self.plan(overrides)
        if plan.problems:
            raise plan.problems[0]
        if dry_run:
            await self._check_by_cancel(plan)
            return plan
        if plan.up_to_date:
            return plan
        await self._bootstrap()
        if force_unlock:
            await self.unlock()
        await self._lock()
        try:
            # under the lock: concurrent DEFINE DATABASE OVERWRITEs upset the other migrators
            await self._strict()
            await self._probe_storage()
            # the plan may be stale if another migrator finished while we waited
            plan = await self.plan(overrides)
            if plan.problems:
                raise plan.problems[0]
            for sql in self.plan_sql(plan)[1:]:
                await self._run(sql)
        finally:
            await self.conn.query(f"DELETE {LOCK_ID} WHERE holder = $holder", {"holder": self.holder})
        return plan

    async def _run(self, sql: str) -> None:
        # A script is one transaction. Another migrator's bookkeeping writes, still racing to the
        # lock, can make its COMMIT fail as "Transaction conflict ... This transaction can be
        # retried" (seen once in 1,400 runs of tests/test_ws_path.py's race): nothing of it was
        # kept, so it is run again, as the engine says.
        for attempt in range(5):
            raw = await self.conn.query_raw(sql)
            message = _failure(raw)
            if message is None or "can be retried" not in message or attempt == 4:
                break
            await asyncio.sleep(0.05 * (attempt + 1))
        if raw.get("error"):
            raise MigrationError(f"the engine refused {_script_name(sql)}: {_error_text(raw['error'])}")
        message = _root_cause(raw)
        if message is not None:
            typed = from_thrown(message)
            if isinstance(typed, DimensionChangeRefused):
                raise typed
            raise MigrationError(f"{_script_name(sql)} failed: {message}")

    async def _check_by_cancel(self, plan: Plan) -> None:
        """Run the whole plan inside one transaction that ends in CANCEL: checked, nothing kept."""
        body = []
        for sql in self.plan_sql(plan)[1:]:
            body.append(sql.replace("BEGIN TRANSACTION;\n", "").replace("COMMIT TRANSACTION;\n", ""))
        if not body:
            return
        # Bookkeeping tables may not exist yet on a fresh database; define them
        # inside the cancelled transaction too so the tracking rows can be checked.
        raw = await self.conn.query_raw("BEGIN TRANSACTION;\n" + BOOTSTRAP + "".join(body) + "CANCEL TRANSACTION;\n")
        if raw.get("error"):
            raise MigrationError(f"dry run: the engine refused the plan: {_error_text(raw['error'])}")
        message = _root_cause(raw)
        if message is not None:
            raise from_thrown(message) or MigrationError(f"dry run: the engine refused the plan: {message}")

    # --- the lock -------------------------------------------------------------
    async def _lock(self) -> None:
        # Two concurrent CREATEs of the lock record can also fail as a write
        # conflict (neither committed yet): look again, a few times, briefly.
        for attempt in range(10):
            raw = await self.conn.query_raw(
                f"CREATE {LOCK_ID} CONTENT {{ holder: $holder, acquired_at: time::now() }} RETURN NONE",
                {"holder": self.holder},
            )
            stmt = (raw.get("result") or [{}])[0]
            if stmt.get("status") == "OK":
                return
            current = await self.lock_holder()
            if current is not None:
                raise MigrationLocked(
                    f"another migrate holds the lock: {current['holder']} since {current['acquired_at']}. "
                    "Wait for it; if that process is gone, run `amem-db migrate --force-unlock`."
                )
            await asyncio.sleep(0.05 * (attempt + 1))
        raise MigrationLocked("could not take the migrate lock (the engine kept reporting write conflicts); try again")

    async def _bootstrap(self) -> None:
        """Define the bookkeeping tables; concurrent migrators may collide here: retry.
        On a fresh namespace the first write also defines the namespace and database, and
        two migrators doing that at once fail as a conflict or as "The key being inserted
        already exists" (surrealdb core kvs/err.rs), which is no error of ours either:
        the statements are idempotent, so any failure but a refusal is tried again."""
        message = ""
        for attempt in range(10):
            raw = await self.conn.query_raw(BOOTSTRAP)
            message = _failure(raw) or ""
            if not message:
                return
            if any(word in message.lower() for word in ("permission", "not allowed", "iam error")):
                raise MigrationError(f"could not create the migrator's bookkeeping tables: {message}")
            await asyncio.sleep(0.05 * (attempt + 1))
        raise MigrationError(f"could not create the migrator's bookkeeping tables after 10 tries: {message}; try again")

    async def _strict(self) -> None:
        """Put the database in STRICT mode: a CREATE into an undefined table is refused
        instead of defining it. Without it a record user could define tables (issue 15
        finding 3: hundreds per second, and a name squatted before a migration makes
        that migration fail). Idempotent; the data stays. A credential that may not
        define databases (a database-level user) cannot set it: docs/SECURITY.md."""
        (db,) = await self.conn.query("RETURN session::db()")
        if not isinstance(db, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", db):
            return
        raw = await self.conn.query_raw(f"DEFINE DATABASE OVERWRITE `{db}` STRICT")
        message = _failure(raw)
        if message is not None and "permission" not in message.lower():
            raise MigrationError(f"could not put the database in strict mode: {message}")

    async def _probe_storage(self) -> None:
        """Record whether the storage keeps versions (a VERSION read succeeds): the
        stored functions refuse `atInstant` with a typed error where it does not
        (fn::amem::clock::versioned, surql/120). mem:// and plain surrealkv:// refuse
        VERSION; surrealkv+versioned:// answers it."""
        raw = await self.conn.query_raw("SELECT * FROM amem_setting LIMIT 1 VERSION time::now()")
        versioned = not raw.get("error") and _root_cause(raw) is None
        await self.conn.query(
            "UPSERT amem_setting:storage CONTENT { versioned: $v, probed_at: time::now() } RETURN NONE", {"v": versioned}
        )

    async def lock_holder(self) -> dict[str, Any] | None:
        if "amem_lock" not in await self._tables():
            return None
        (rows,) = await self.conn.query(f"SELECT holder, acquired_at FROM {LOCK_ID}")
        return rows[0] if rows else None

    async def unlock(self) -> dict[str, Any] | None:
        """Operator override for a stale lock; returns who held it."""
        holder = await self.lock_holder()
        if holder is not None:
            await self.conn.query(f"DELETE {LOCK_ID}")
        return holder
