"""Calling stored functions: one round trip each, errors mapped once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from surrealdb import RecordID
from surrealdb.errors import SurrealError

from .errors import from_engine_error


def plain(value: Any) -> Any:
    """Engine values -> plain Python: record ids become ``table:id`` strings."""
    if isinstance(value, RecordID):
        # "document:01HX..." rather than the engine's "document:⟨01HX...⟩": readable, and accepted back
        return f"{value.table_name}:{value.id}" if isinstance(value.id, (str, int)) else str(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value
    return value


def call_sql(fn: str, n_args: int) -> str:
    return f"RETURN {fn}({', '.join(f'$a{i}' for i in range(n_args))});"


async def call(conn: Any, fn: str, *args: Any) -> Any:
    """``RETURN fn::...($a0, $a1, ...)`` with the arguments as parameters."""
    try:
        (result,) = await conn.query(call_sql(fn, len(args)), {f"a{i}": a for i, a in enumerate(args)})
    except SurrealError as exc:
        raise from_engine_error(exc) from exc
    return plain(result)


async def call_each(conn: Any, fn: str, arg_lists: list[tuple]) -> list[tuple[bool, Any]]:
    """Many calls of one function in one round trip, each its own statement
    (and so its own transaction): ``[(ok, result_or_error_text), ...]``."""
    if not arg_lists:
        return []
    sql, params = [], {}
    for i, args in enumerate(arg_lists):
        names = [f"s{i}_{j}" for j in range(len(args))]
        sql.append(f"RETURN {fn}({', '.join('$' + n for n in names)});")
        params.update(zip(names, args))
    raw = await conn.query_raw("\n".join(sql), params)
    if raw.get("error"):
        err = raw["error"]
        raise from_engine_error(RuntimeError(err.get("message", str(err)) if isinstance(err, dict) else str(err)))
    out = []
    for stmt in raw["result"]:
        ok = stmt.get("status") == "OK"
        out.append((ok, plain(stmt.get("result")) if ok else str(stmt.get("result"))))
    return out
