"""`amem-db grant`, `amem-db keys list`, `amem-db keys revoke` (docs/SECURITY.md).

Run them with an owner connection (the embedded default, or --user/--pass on a
server); a --key connection is refused.
"""

from __future__ import annotations

import typer
from rich.table import Table

from .. import access
from .app import Session, err, json_option, out, print_json


async def grant(
    session: Session,
    name: str = typer.Argument(..., help="credential name (1-64 letters, digits, _ . @ -)"),
    read: list[str] = typer.Option([], "--read", help="scope path it may read, e.g. org/acme (repeatable)"),
    write: list[str] = typer.Option([], "--write", help="scope path it may write (and read) (repeatable)"),
    forget: list[str] = typer.Option([], "--forget", help="scope path it may forget and purge memory under; within a --write path (repeatable)"),
    admin: bool = typer.Option(False, "--admin", help="may call admin functions (documents::recompute_links)"),
    json_output: bool = json_option("print {principal, key} as JSON"),
) -> None:
    """Mint a credential and print its key (NAME:SECRET) once; only an argon2 hash is stored.

    Example: amem-db grant support-bot --read org/acme --write org/acme/team/support --forget org/acme/team/support
    """
    row, key = await access.grant(await session.connection(), name, read=read, write=write, forget=forget, admin=admin)
    if json_output:
        return print_json({"principal": row, "key": key})
    out.print(f"credential [bold]{row['name']}[/]  read {', '.join(row['read']) or '-'}  write {', '.join(row['write']) or '-'}"
              + (f"  forget {', '.join(row['forget'])}" if row.get("forget") else "") + ("  admin" if row["admin"] else ""), highlight=False)
    out.print("key (shown once, store it now; connect with --key or AMEM_KEY):", highlight=False)
    print(key)


async def list_keys(session: Session, json_output: bool = json_option()) -> None:
    """List credentials (never their secrets). Example: amem-db keys list"""
    rows = await access.list_keys(await session.connection())
    if json_output:
        return print_json(rows)
    table = Table("name", "read", "write", "forget", "admin", "state", "created")
    for r in rows:
        table.add_row(r["name"], ", ".join(r["read"]), ", ".join(r["write"]), ", ".join(r.get("forget") or []), "yes" if r["admin"] else "",
                      f"revoked {r.get('revoked_at') or ''}" if r["revoked"] else "active", str(r["created_at"]))
    out.print(table)


async def revoke(session: Session, name: str = typer.Argument(..., help="credential name")) -> None:
    """Revoke a credential: sign-in refused, live sessions lose every permission at once.

    Example: amem-db keys revoke support-bot
    """
    row = await access.revoke(await session.connection(), name)
    err.print(f"revoked {row['name']} at {row['revoked_at']}", highlight=False)
