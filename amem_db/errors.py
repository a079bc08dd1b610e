"""The amem error tree.

Stored functions raise domain errors as ``THROW "amem:<code>: <message>"``; the
SDK delivers them as ``surrealdb.errors.ThrownError`` carrying that string.
``from_engine_error`` maps the code, once, to a typed exception here, so callers
catch ``amem_db.InvalidInput`` rather than parsing messages.
"""

from __future__ import annotations

import re

_THROWN = re.compile(r"amem:(?P<code>[a-z_]+): (?P<message>.*)", re.S)


class AmemError(Exception):
    """Base of every error amem-db raises on purpose."""

    code = "error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


# --- where the database is -------------------------------------------------
class ConnectionFailed(AmemError):
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
    code = "not_migrated"


# --- domain errors thrown by stored functions --------------------------------
class InvalidInput(AmemError):
    code = "invalid_input"


class NotFound(AmemError):
    code = "not_found"


class EmbeddingMismatch(AmemError):
    code = "embedding_mismatch"


class PermissionDenied(AmemError):
    code = "permission_denied"


class NotImplementedMode(AmemError):
    code = "not_implemented"


# THROW codes -> classes. A code not listed still arrives as an AmemError with
# its code set, so adding a THROW never needs a Python change to be caught.
_BY_CODE: dict[str, type[AmemError]] = {
    "invalid_input": InvalidInput,
    "not_found": NotFound,
    "embedding_mismatch": EmbeddingMismatch,
    "dimension_change": DimensionChangeRefused,
    "permission_denied": PermissionDenied,
    "not_implemented": NotImplementedMode,
    "not_migrated": NotMigrated,
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


# The engine's own refusal to run a function (DEFINE FUNCTION ... PERMISSIONS,
# e.g. an admin function called with a scoped key) is a permission error too.
_FN_DENIED = re.compile(r"You don't have permission to run the (fn::[\w:]+) function")
_BAD_ARGUMENT = re.compile(r"Incorrect arguments for function (?P<fn>fn::amem::[\w:]+)\(\)\. (?P<why>.*)", re.S)
_BAD_FIELD = re.compile(r"Couldn't coerce value for field `[^`]+` of `[^`]*`: .*", re.S)


def from_engine_error(exc: BaseException) -> BaseException:
    """Return the typed amem error for an engine/SDK exception, else ``exc``."""
    text = str(exc)
    typed = from_thrown(text)
    if typed is None and (m := _FN_DENIED.search(text)):
        typed = PermissionDenied(f"this credential may not call {m[1]} (admin only: root, or a key granted --admin)")
    if typed is None and (m := _BAD_ARGUMENT.search(text)):
        # the engine checked a declared parameter type of one of our functions
        typed = InvalidInput(f"{m['fn']}: {m['why'].strip()}")
    if typed is None and "RecursionLimitExceeded" in text:
        # the engine refuses to decode a request nested too deeply (before any function runs)
        typed = InvalidInput("the request nests lists/objects too deeply for the database to decode; flatten the input")
    if typed is None and (m := _BAD_FIELD.search(text)):
        # a value the schema refuses (the statement, and its transaction, did not happen)
        typed = InvalidInput(f"the database refused a value: {m[0].strip()}")
    return typed if typed is not None else exc
