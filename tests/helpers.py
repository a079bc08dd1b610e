"""What the test modules share: the hash-embedder ``Memory`` fixture, a
database for one test alone, and the fact builders.

Fixtures are imported by name (``from helpers import mem  # noqa: F401``), as
devserver_fixture's are; conftest.py keeps the per-module ``db``.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from amem_db import Memory
from amem_db.connection import Target, close_quietly, open_connection
from amem_db.embedding import get_embedder
from amem_db.migrator import Migrator

TEST_URL = os.environ.get("AMEM_TEST_URL")
#: the fast deterministic embedder most tests use (named explicitly: no model load)
HASH_SPEC = "hash:384"


def make_target(prefix: str = "t") -> Target:
    """A namespace of its own on the test engine (``mem://``, or ``AMEM_TEST_URL``)."""
    ns = f"{prefix}_{uuid.uuid4().hex[:10]}"
    return Target(
        url=TEST_URL or "mem://",
        ns=ns,
        db="test",
        user=os.environ.get("AMEM_TEST_USER", "root") if TEST_URL else None,
        password=os.environ.get("AMEM_TEST_PASS", "root") if TEST_URL else None,
    )


async def drop(conn: Any, target: Target) -> None:
    if target.url.startswith("mem://"):
        return  # the engine dies with the connection
    try:
        await conn.query(f"REMOVE NAMESPACE IF EXISTS {target.ns}")
    except Exception:
        pass


def hash_memory(conn: Any) -> Memory:
    """A ``Memory`` on ``conn`` with the hash embedder."""
    return Memory(conn, embedder=get_embedder(HASH_SPEC))


@pytest.fixture(scope="module")
async def mem(db):
    """The module's database as a hash-embedder ``Memory`` (the module's ``db`` underneath)."""
    return hash_memory(db)


async def migrated(prefix: str) -> AsyncIterator[Any]:
    """A migrated database of its own (namespace ``<prefix>_<random>``), dropped after."""
    target = make_target(prefix)
    conn = await open_connection(target)
    await Migrator(conn).migrate()
    yield conn
    await drop(conn, target)
    await close_quietly(conn)


@pytest.fixture
async def own_db():
    """A migrated database for this test alone: for assertions about everything a
    table holds, or settings (a key declared multi-valued, a retention cap) that
    would otherwise leak into the module's other tests."""
    async for conn in migrated("fn"):
        yield conn


# --- fact builders: the triples of fn::amem::facts::write --------------------------------
def attr(who: str, key: str, value: Any, *, type: str = "person", entity: dict | None = None, **fields: Any) -> dict:
    """An attribute triple of entity ``type``/``who``; ``entity`` adds fields (aliases) to the entity."""
    return {"entity": {"type": type, "name": who, **(entity or {})}, "key": key, "value": value, **fields}


def rel(who: str, key: str, target: str, *, ttype: str = "company", **fields: Any) -> dict:
    """A relation triple from person ``who`` to entity ``ttype``/``target``."""
    return {"entity": {"type": "person", "name": who}, "key": key, "target": {"type": ttype, "name": target}, **fields}


def older_release(tmp_path: Path, before: str) -> tuple[Path, Path]:
    """migrations/ and surql/ as a release before migration ``before`` (e.g. "0017"): the
    later migrations removed, and the desired-state lines that name a table only they define
    (``ALTER TABLE t``, ``... ON t``) or index a field only they define (``ON t FIELDS f``)
    dropped, since that release's surql/ did not have them."""
    from amem_db.migrator import bundled_dir, render_dir

    mig, surql = tmp_path / "migrations", tmp_path / "surql"
    shutil.copytree(bundled_dir("migrations"), mig)
    shutil.copytree(bundled_dir("surql"), surql)
    defined = re.compile(r"DEFINE TABLE (?:OVERWRITE |IF NOT EXISTS )?(\w+)")
    field = re.compile(r"DEFINE FIELD (?:OVERWRITE |IF NOT EXISTS )?(\w+) ON (?:TABLE )?(\w+)")
    kept, later, kept_fields, later_fields = set(), set(), set(), set()
    for script in render_dir(mig, "migration", {}):  # rendered: tables named in jinja loops count too
        (later if script.key >= before else kept).update(defined.findall(script.text))
        (later_fields if script.key >= before else kept_fields).update(field.findall(script.text))
        if script.key >= before:
            (mig / script.path.name).unlink()
    new = later - kept
    # an index over a field only a later migration defines (DEFINE INDEX ... ON t FIELDS f) goes too
    new_fields = {(f, t) for f, t in later_fields - kept_fields if t not in new}
    pats = ([rf"(?:ALTER TABLE|\bON) ({'|'.join(sorted(new))})\b"] if new else []) + [
        rf"\bON {t} FIELDS [^;]*\b{f}\b" for f, t in sorted(new_fields)]
    names = re.compile("|".join(pats)) if pats else None
    for p in surql.glob("*.j2") if names else []:
        p.write_text("".join(line for line in p.read_text().splitlines(keepends=True) if not names.search(line)))
    return mig, surql
