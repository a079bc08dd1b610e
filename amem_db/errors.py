"""The amem error tree.

Stored functions raise domain errors as ``THROW "amem:<code>: <message>"``; the
SDK delivers them as ``surrealdb.errors.ThrownError`` carrying that string.
``from_engine_error`` maps the code, once, to a typed exception here, so callers
catch ``amem_db.InvalidInput`` rather than parsing messages.

The tree is closed: everything the client raises on purpose is an
``AmemError`` (a wrong argument *type* is a ``TypeError``, as in any Python
API). Engine failures that are not one of our codes split the way the
surrealdb SDK splits them: ``TransportError`` (the request may not have
reached the database; retrying may succeed) and ``ServerError`` (the database
decided; retrying the same request will not help), with one exception:
``WriteConflict``, a ``ServerError`` that is ``retryable``: the engine aborted a
transaction because a concurrent one wrote the same keys (nothing of it was
applied), and the same request may succeed next time. ``db.call`` retries it
itself (bounded backoff with jitter) before raising it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

__all__ = [
    "AmemError",
    "AuthenticationFailed",
    "ConnectionFailed",
    "DatabaseInUse",
    "DimensionChangeRefused",
    "EmbeddingMismatch",
    "EngineTooOld",
    "IdempotencyConflict",
    "InvalidInput",
    "MigrationDrift",
    "MigrationError",
    "MigrationLocked",
    "MigrationMissing",
    "MigrationOutOfOrder",
    "NotFound",
    "NotImplementedMode",
    "NotVersioned",
    "NotMigrated",
    "PermissionDenied",
    "ServerError",
    "TransportError",
    "UnknownEmbedder",
    "UnknownUrlScheme",
    "WriteConflict",
]

_THROWN = re.compile(r"amem:(?P<code>[a-z_]+): (?P<message>.*)", re.S)


class AmemError(Exception):
    """Base of every error amem-db raises on purpose."""

    code = "error"
    #: True when the same call may succeed if tried again (a transport failure)
    retryable = False

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


# --- transport vs server (the surrealdb SDK's split) ---------------------------
class TransportError(AmemError):
    """The request did not complete (connection lost, timeout, bad frame): it
    may not have reached the database, so retrying may succeed."""

    code = "transport"
    retryable = True


class ServerError(AmemError):
    """The database answered with an error that is not one of amem's codes
    (``kind`` is the engine's error kind, e.g. ``"Internal"``): don't retry."""

    code = "server"

    def __init__(self, message: str, *, code: str | None = None, kind: str | None = None) -> None:
        super().__init__(message, code=code)
        self.kind = kind


class WriteConflict(ServerError):
    """The engine aborted the transaction because another one wrote the same
    records at the same moment ("Transaction conflict: Write conflict ... This
    transaction can be retried"). Nothing of the aborted transaction was applied,
    so the same request may succeed if tried again: ``retryable``. The client
    already retried it (``amem_db.db.WRITE_RETRY``) before raising this."""

    code = "write_conflict"
    retryable = True


# --- where the database is -------------------------------------------------
class ConnectionFailed(TransportError):
    """The server could not be reached (or the embedded engine not opened)."""

    code = "connection_failed"


class AuthenticationFailed(AmemError):
    code = "authentication_failed"


class UnknownUrlScheme(AmemError):
    code = "unknown_url_scheme"


class DatabaseInUse(AmemError):
    """Another process holds the embedded database files."""

    code = "database_in_use"


class EngineTooOld(AmemError):
    code = "engine_too_old"


# --- migrations --------------------------------------------------------------
class MigrationError(AmemError):
    code = "migration"


class MigrationDrift(MigrationError):
    code = "migration_drift"


class MigrationMissing(MigrationError):
    code = "migration_missing"


class MigrationOutOfOrder(MigrationError):
    code = "migration_out_of_order"


class MigrationLocked(MigrationError):
    code = "migration_locked"


class DimensionChangeRefused(MigrationError):
    code = "dimension_change"


class NotMigrated(MigrationError):
    """The database has no (or not all) amem functions: it was never migrated."""

    code = "not_migrated"


# --- domain errors thrown by stored functions --------------------------------
class InvalidInput(AmemError):
    code = "invalid_input"

    @classmethod
    def from_validation(cls, exc: ValidationError, *, what: str = "", model: type[BaseModel] | None = None) -> InvalidInput:
        """A pydantic ValidationError in one line: per field its name, the rule it
        broke with the limit, and the value given. With ``model``, a bounded
        field says both bounds: ``hnsw_m must be between 4 and 128 (got 2)``."""
        parts = []
        for e in exc.errors(include_url=False):
            field = ".".join(str(x) for x in e.get("loc", ())) or what or "value"
            got = f" (got {e['input']!r})" if "input" in e else ""
            if e.get("type") == "extra_forbidden":
                known = f"; known: {', '.join(model.model_fields)}" if model else ""
                parts.append(f"{field}: not a known setting{known}")
                continue
            meta = model.model_fields[field].metadata if model and field in model.model_fields else []
            low = next((m.ge for m in meta if hasattr(m, "ge")), None)
            high = next((m.le for m in meta if hasattr(m, "le")), None)
            if low is not None and high is not None and e.get("type") in ("greater_than_equal", "less_than_equal"):
                parts.append(f"{field} must be between {low} and {high}{got}")
            elif e.get("type") == "value_error":
                parts.append(f"{e.get('ctx', {}).get('error', e.get('msg'))}{got}")
            else:
                parts.append(f"{field}: {e.get('msg', 'invalid')}{got}")
        prefix = f"{what}: " if what else ""
        return cls(prefix + "; ".join(parts))

    @classmethod
    def from_unicode(cls, exc: UnicodeEncodeError, *, what: str = "a text argument") -> InvalidInput:
        """A str holding a lone UTF-16 surrogate ("\\ud800") cannot travel as UTF-8: bad input, said in one line."""
        return cls(f"{what} holds a lone surrogate {exc.object[exc.start:exc.end]!r} at position {exc.start}: not valid Unicode text")


class UnknownEmbedder(InvalidInput, ValueError):
    """An embedder spec that names no embedder (the message lists the valid
    ones). Also a ValueError, as it was before the error tree was closed."""

    code = "unknown_embedder"


class NotFound(AmemError):
    code = "not_found"


class EmbeddingMismatch(AmemError):
    code = "embedding_mismatch"


class PermissionDenied(AmemError):
    code = "permission_denied"


class IdempotencyConflict(InvalidInput):
    """A memory write repeated an idempotency key used within 24 h for a
    different request (the same request would have returned the stored response)."""

    code = "idempotency_conflict"


class NotImplementedMode(AmemError):
    code = "not_implemented"


class NotVersioned(AmemError):
    """``atInstant`` (system time) on storage that keeps no versions: open the
    database as ``surrealkv+versioned://PATH`` (MEMORY.md section 3)."""

    code = "not_versioned"


# THROW codes -> classes. A code not listed still arrives as an AmemError with
# its code set, so adding a THROW never needs a Python change to be caught.
_BY_CODE: dict[str, type[AmemError]] = {
    "invalid_input": InvalidInput,
    "not_found": NotFound,
    "embedding_mismatch": EmbeddingMismatch,
    "dimension_change": DimensionChangeRefused,
    "permission_denied": PermissionDenied,
    "idempotency_conflict": IdempotencyConflict,
    "not_implemented": NotImplementedMode,
    "not_migrated": NotMigrated,
    "not_versioned": NotVersioned,
}


def error_for(code: str, message: str) -> AmemError:
    """The typed error for a code (an unknown code still gives an AmemError)."""
    return _BY_CODE.get(code, AmemError)(message, code=code)


def from_thrown(text: str) -> AmemError | None:
    """Parse ``amem:<code>: <message>`` (anywhere in ``text``) into a typed error."""
    idx = text.find("amem:")
    if idx < 0:
        return None
    m = _THROWN.match(text[idx:])
    if not m:
        return None
    return error_for(m["code"], m["message"].strip())


# A stored function the database does not have: the database is not migrated
# (or migrated by an older amem-db). The engine says
# "Function 'fn::amem::x' not found: The function 'fn::amem::x' does not exist".
_FN_MISSING = re.compile(r"The function '(?P<fn>fn::amem::[\w:]+)' does not exist")
NOT_MIGRATED_HINT = "run `amem-db migrate` or `await mem.migrate()`"


def not_migrated(fn: str) -> NotMigrated:
    return NotMigrated(f"this database has no {fn}: it is not migrated (or migrated by an older amem-db); {NOT_MIGRATED_HINT}")


# The engine's own refusal to run a function (DEFINE FUNCTION ... PERMISSIONS,
# e.g. an admin function called with a scoped key) is a permission error too.
_FN_DENIED = re.compile(r"You don't have permission to run the (fn::[\w:]+) function")
_BAD_ARGUMENT = re.compile(r"Incorrect arguments for function (?P<fn>fn::amem::[\w:]+)\(\)\. (?P<why>.*)", re.S)
_BAD_FIELD = re.compile(r"Couldn't coerce value for field `[^`]+` of `[^`]*`: .*", re.S)
# found by the hostile fuzzer once an untyped ServerError counted as a finding (issue 27)
_BAD_ID = re.compile(r"Found .{0,200}? for the Record ID but this is not a valid id", re.S)
_TOO_BIG = re.compile(r"Output must not exceed \d+ bytes")
# 3.2.4: "There was a problem with the key-value store: Transaction conflict: Write
# conflict, retry the transaction. This transaction can be retried"
_CONFLICT = re.compile(r"Transaction conflict|Write conflict|This transaction can be retried", re.I)
WRITE_CONFLICT_MESSAGE = ("the database aborted the write: a concurrent transaction wrote the same records "
                          "(nothing of this one was applied); it may succeed if retried")


def from_engine_text(text: str) -> AmemError | None:
    """The typed error for an engine error message we recognise, else None."""
    typed = from_thrown(text)
    if typed is None and _CONFLICT.search(text):
        typed = WriteConflict(WRITE_CONFLICT_MESSAGE, kind="Conflict")
    if typed is None and (m := _FN_MISSING.search(text)):
        typed = not_migrated(m["fn"])
    if typed is None and (m := _FN_DENIED.search(text)):
        typed = PermissionDenied(f"this credential may not call {m[1]} (admin only: root, or a key granted --admin)")
    if typed is None and (m := _BAD_ARGUMENT.search(text)):
        # the engine checked a declared parameter type of one of our functions
        typed = InvalidInput(f"{m['fn']}: {m['why'].strip()}")
    if typed is None and (m := _BAD_ID.search(text)):
        # an id that names no record ('⟨⟩', an empty key): the engine refuses to build it
        typed = InvalidInput(f"not a valid record id: {m[0].strip()}")
    if typed is None and _TOO_BIG.search(text):
        # a built-in string / array function refused to produce more than 1 MiB (docs/ENGINE-ISSUES.md #14)
        typed = InvalidInput("an argument is too large for the database's string and array functions "
                             "(their output is capped at 1 MiB); send less text")
    if typed is None and "RecursionLimitExceeded" in text:
        # the engine refuses to decode a request nested too deeply (before any function runs)
        typed = InvalidInput("the request nests lists/objects too deeply for the database to decode; flatten the input")
    if typed is None and (m := _BAD_FIELD.search(text)):
        # a value the schema refuses (the statement, and its transaction, did not happen)
        typed = InvalidInput(f"the database refused a value: {m[0].strip()}")
    return typed


def from_engine_error(exc: BaseException) -> BaseException:
    """The typed amem error for an engine/SDK exception. An SDK error we do not
    recognise becomes a ``TransportError`` or a ``ServerError`` as the SDK
    classifies it; anything else (a bug, KeyboardInterrupt ...) is returned as is."""
    if isinstance(exc, AmemError):
        return exc
    typed = from_engine_text(str(exc))
    if typed is not None:
        return typed
    from surrealdb import errors as sdk

    if isinstance(exc, sdk.TransportError | ConnectionError | TimeoutError) or type(exc).__module__.startswith("websockets"):
        return TransportError(f"the request to the database did not complete: {_first_line(exc)}")
    if isinstance(exc, sdk.ServerError):
        return ServerError(f"the database refused the request: {exc}", kind=exc.kind)
    if isinstance(exc, sdk.SurrealError):
        return ServerError(f"the database client failed: {exc}")
    return exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def server_error(message: str, *, kind: Any = None) -> AmemError:
    """An engine error that arrived as text (a statement of a multi-statement query)."""
    return from_engine_text(message) or ServerError(f"the database refused the request: {message}", kind=kind)
