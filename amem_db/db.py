"""Calling stored functions: one round trip each, errors mapped once.

Every stored-function call of the client goes through ``call`` or
``call_each``, so an engine error is mapped here, once, into the typed
``AmemError`` tree (``errors.py``): an amem THROW code to its class, a missing
``fn::amem::*`` function to ``NotMigrated``, anything else to
``TransportError`` (may retry) or ``ServerError`` (don't).

A ``WriteConflict`` (two transactions wrote the same records at once; the
engine aborted one, applying nothing of it) is retried here, with bounded
exponential backoff and full jitter (``WRITE_RETRY``), before it is raised.
That is safe: the aborted transaction left nothing behind, and a memory write
repeated after an unseen commit is answered from its idempotency row
(``idempotency_key``, docs/SECURITY.md "Concurrent writers").
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from surrealdb import RecordID

from .errors import InvalidInput, TransportError, WriteConflict, from_engine_error, server_error


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a call is repeated after a ``WriteConflict``:
    at most ``attempts`` tries in all; before try n+1 a sleep drawn uniformly from
    [0, min(cap_s, base_s * 2**n)] ("full jitter": writers that collided once do
    not collide again in step)."""

    attempts: int = 12
    base_s: float = 0.02
    cap_s: float = 1.0

    def delay(self, attempt: int) -> float:
        return random.uniform(0.0, min(self.cap_s, self.base_s * 2 ** attempt))


#: the client's policy: at most 12 tries, at most ~7.6 s of sleeping in all (expected ~3.8 s)
WRITE_RETRY = RetryPolicy()


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


def _mapped(exc: BaseException) -> BaseException:
    # a failed SDK call raises its own SurrealError tree, or the socket /
    # timeout errors of the transport it wraps; anything else is a bug: as is
    if isinstance(exc, UnicodeEncodeError):  # the SDK could not encode a parameter: bad input, not a bug
        return InvalidInput.from_unicode(exc)
    if isinstance(exc, RecursionError):  # the SDK's encoder recurses per nesting level (issue 27 item 8)
        return InvalidInput("an argument nests lists/objects too deeply to send (Python's recursion limit); flatten the input")
    typed = from_engine_error(exc)
    if typed is exc and isinstance(exc, OSError):
        return TransportError(f"the request to the database did not complete: {exc}")
    return typed


async def call(conn: Any, fn: str, *args: Any, retry: RetryPolicy | None = None) -> Any:
    """``RETURN fn::...($a0, $a1, ...)`` with the arguments as parameters; a
    ``WriteConflict`` is retried under ``retry`` (default ``WRITE_RETRY``)."""
    policy = retry or WRITE_RETRY
    for attempt in range(policy.attempts):
        try:
            (result,) = await conn.query(call_sql(fn, len(args)), {f"a{i}": a for i, a in enumerate(args)})
            return plain(result)
        except Exception as exc:
            typed = _mapped(exc)
            if isinstance(typed, WriteConflict) and attempt + 1 < policy.attempts:
                await asyncio.sleep(policy.delay(attempt))
                continue
            if typed is exc:
                raise
            raise typed from exc
    raise AssertionError("unreachable: the last attempt returns or raises")


async def call_each(conn: Any, fn: str, arg_lists: Sequence[tuple[Any, ...]]) -> list[tuple[bool, Any]]:
    """Many calls of one function in one round trip, each its own statement
    (and so its own transaction): ``[(ok, result_or_error_text), ...]``.

    A statement that failed because the function does not exist raises
    ``NotMigrated`` (no statement of the batch could succeed)."""
    if not arg_lists:
        return []
    sql: list[str] = []
    params: dict[str, Any] = {}
    for i, args in enumerate(arg_lists):
        names = [f"s{i}_{j}" for j in range(len(args))]
        sql.append(f"RETURN {fn}({', '.join('$' + n for n in names)});")
        params.update(zip(names, args))
    try:
        raw = await conn.query_raw("\n".join(sql), params)
    except Exception as exc:
        typed = _mapped(exc)
        if typed is exc:
            raise
        raise typed from exc
    if raw.get("error"):
        err = raw["error"]
        message = err.get("message", str(err)) if isinstance(err, dict) else str(err)
        raise server_error(message, kind=err.get("kind") if isinstance(err, dict) else None)
    out: list[tuple[bool, Any]] = []
    for args, stmt in zip(arg_lists, raw["result"], strict=True):
        ok = stmt.get("status") == "OK"
        if not ok:
            typed = server_error(str(stmt.get("result")), kind=stmt.get("kind"))
            if typed.code == "not_migrated":
                raise typed
            if isinstance(typed, WriteConflict):
                # its own transaction was aborted, nothing applied: try that one again, alone
                try:
                    out.append((True, await call(conn, fn, *args)))
                except WriteConflict as again:
                    out.append((False, str(again)))
                continue
        out.append((ok, plain(stmt.get("result")) if ok else str(stmt.get("result"))))
    return out
