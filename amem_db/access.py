"""Credentials: record users of the ``amem`` record access (docs/SECURITY.md).

A credential is a row of ``amem_principal`` (migrations/0002_access) with read,
write and forget grants (scope paths; forget: migrations/0006), an admin flag and an argon2 hash of a random
secret. The secret is made here (``secrets``), shown once, and never stored.
Minting, listing and revoking need an owner/root connection (the table is
``PERMISSIONS NONE`` for record users, except a principal's own row).

An application connects with ``NAME:SECRET``::

    await conn.signin({"access": "amem", "namespace": ns, "database": db,
                       "variables": {"name": NAME, "key": SECRET}})
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any, cast

from .db import plain
from .errors import InvalidInput, NotFound, PermissionDenied, from_engine_error

ACCESS = "amem"
MAX_GRANTS = 16

_GRANT = """
LET $read = $read_in.map(|$p| fn::amem::scope::check_path($p, 'read'));
LET $write = $write_in.map(|$p| fn::amem::scope::check_path($p, 'write'));
LET $forget = $forget_in.map(|$p| fn::amem::scope::check_path($p, 'forget'));
LET $id = type::record('amem_principal', $name);
IF (SELECT VALUE id FROM ONLY $id) != NONE {
    THROW 'amem:invalid_input: a credential named ' + $name + ' exists (revoked ones included): choose another name';
};
CREATE $id CONTENT {
    name: $name, key_hash: crypto::argon2::generate($secret),
    read: array::distinct(array::concat($read, $write)), write: array::distinct($write), forget: array::distinct($forget), admin: $admin,
} RETURN NONE;
RETURN (SELECT id, name, read, write, forget, admin, revoked, created_at FROM ONLY $id);
"""


def _within(path: str, grants: Sequence[str]) -> bool:
    return any(path == g or path.startswith(g + "/") for g in grants)


def _check(name: str, read: Sequence[str], write: Sequence[str], forget: Sequence[str] = ()) -> None:
    import re

    for what, paths in (("read", read), ("write", write), ("forget", forget)):
        if isinstance(paths, str | bytes) or not isinstance(paths, Sequence) or not all(isinstance(p, str) for p in paths):
            raise TypeError(f"{what} must be a list of scope paths, not {type(paths).__name__}: {what}=[...]")
    if not re.fullmatch(r"[A-Za-z0-9_.@-]{1,64}", name or ""):
        raise InvalidInput("a credential name is 1-64 letters, digits, _ . @ -")
    if len(read) > MAX_GRANTS or len(write) > MAX_GRANTS or len(forget) > MAX_GRANTS:
        raise InvalidInput(f"at most {MAX_GRANTS} read, {MAX_GRANTS} write and {MAX_GRANTS} forget grants")
    if not read and not write:
        raise InvalidInput("give at least one --read or --write scope path")
    # a forget changes rows: the table rules test the write region too (surql/050)
    outside = [p for p in forget if not _within(p, write)]
    if outside:
        raise InvalidInput(f"forget grant {outside[0]} must lie within a write grant (--write {outside[0]} or a path above it)")


async def _who_am_i(conn: Any) -> Any:
    (auth,) = await conn.query("RETURN $auth")
    return auth


async def _require_owner(conn: Any) -> None:
    if await _who_am_i(conn) is not None:
        raise PermissionDenied("managing credentials needs a root/owner connection (--user/--pass or the embedded owner), not a key")


async def grant(conn: Any, name: str, *, read: Sequence[str], write: Sequence[str], forget: Sequence[str] = (),
                admin: bool = False) -> tuple[dict[str, Any], str]:
    """Mint a credential. Returns (principal row, key "NAME:SECRET"); the secret is not stored.
    ``forget``: paths (each within a write grant) under which it may forget and purge memory."""
    _check(name, read, write, forget)
    await _require_owner(conn)
    secret = secrets.token_urlsafe(32)
    try:
        res = await conn.query(_GRANT, {"name": name, "read_in": list(read), "write_in": list(write),
                                        "forget_in": list(forget), "admin": bool(admin), "secret": secret})
    except Exception as exc:
        raise from_engine_error(exc) from exc
    row = res[-1] if isinstance(res, list) else res
    return cast(dict[str, Any], plain(row)), f"{name}:{secret}"


async def list_keys(conn: Any) -> list[dict[str, Any]]:
    await _require_owner(conn)
    (rows,) = await conn.query(
        "SELECT name, read, write, forget ?? [] AS forget, admin, revoked, created_at, revoked_at FROM amem_principal ORDER BY name")
    return cast(list[dict[str, Any]], plain(rows or []))


async def revoke(conn: Any, name: str) -> dict[str, Any]:
    """Revoke: sign-in refused, and every permission check of live sessions fails at once."""
    await _require_owner(conn)
    (rows,) = await conn.query(
        "UPDATE type::record('amem_principal', $name) SET revoked = true, revoked_at = revoked_at ?? time::now() "
        "RETURN name, revoked, revoked_at", {"name": name})
    if not rows:
        raise NotFound(f"no credential named {name}")
    return cast(dict[str, Any], plain(rows[0] if isinstance(rows, list) else rows))
