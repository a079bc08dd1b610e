"""Executes the permission matrix (tests/permission_matrix.py): every table and edge of
the migrated database, every verb (select, create, update of each writable field,
move out of the region, delete, relate), every principal, as raw SurrealQL over ws.

One world per module: the operator seeds rows in org/a (and a few in org/b) for every
table; each principal then runs all its statements in one request (one engine
transaction per statement), and the operator reads every row before and after. An
allowed cell must take effect (the row was read, created, changed to the new value,
deleted); a denied one must be refused or do nothing (the operator finds the row as it
was, and the statement returned nothing the principal may not select)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import pytest_asyncio
from devserver_fixture import dev_server, tenants  # noqa: F401
from permission_matrix import MATRIX, PRINCIPALS, REVOKED, VALUES

from amem_db import access

ORG_A, ORG_B, NO_SCOPES = "['org/a']", "['org/b']", "[]"
WRITER_ID = "'amem_principal:writer'"


def dump(value) -> str:
    return json.dumps(value, default=str, sort_keys=True, ensure_ascii=False)


def rid(table: str, name: str) -> str:
    return f"{table}:{table}_{name}"


def seed_sql(table: str, spec: dict, name: str, *, scopes: str = ORG_A, me: str = WRITER_ID,
             ends: tuple[str, str] | None = None) -> str:
    content = spec["seed"].replace("$S", scopes).replace("$me", me)
    src, dst = ends or spec.get("ends") or ("", "")
    # a row of org/b refers to rows of org/b; the `alt` rows (the new values of record
    # fields) refer to each other, so that e.g. entity_alt keeps a live name of its own
    twin = {ORG_B: "_bspare"}.get(scopes, "_alt" if name == "alt" else "")
    if twin:
        content, src, dst = (x.replace("_spare", twin) for x in (content, src, dst))
    if "ends" in spec:
        return f"RELATE {src}->{rid(table, name)}->{dst} CONTENT {content}"
    return f"CREATE {rid(table, name)} CONTENT {content}"


def seed_statements() -> list[str]:
    """Every row the cells read or change, created by the operator: normal tables first
    (edges need their ends)."""
    out = []
    for table, spec in sorted(MATRIX.items(), key=lambda kv: "ends" in kv[1]):
        out += [seed_sql(table, spec, "spare"), seed_sql(table, spec, "alt"), seed_sql(table, spec, "bspare", scopes=ORG_B)]
        for p in PRINCIPALS:
            if "target" not in spec:
                out.append(seed_sql(table, spec, f"upd_{p}"))
            out += [seed_sql(table, spec, f"del_{p}"), seed_sql(table, spec, f"dels_{p}")]
            if "delete_unscoped" in spec:
                out.append(seed_sql(table, spec, f"delu_{p}", scopes=NO_SCOPES))
    return out


# --- the writable fields of a table and a new value for each ---------------------------
def _strip_strings(definition: str) -> str:
    return re.sub(r"COMMENT '(?:[^'\\]|\\.)*'", "", definition)


def writable_fields(info: dict) -> dict[str, str]:
    """Top-level fields that are neither computed (VALUE) nor READONLY -> their definition."""
    out = {}
    for name, definition in info["fields"].items():
        d = _strip_strings(definition)
        if "." in name or "[" in name or re.search(r"\sVALUE\s", d) or " READONLY" in d:
            continue
        out[name.strip("`")] = d
    return out


def new_value(table: str, name: str, definition: str, current) -> str | None:
    """A SurrealQL literal the field accepts and that differs from `current`; None when the
    type gives none (the test then fails naming the field: give it in `values`)."""
    m = re.search(r"\sTYPE\s(.+?)(?:\s(?:FLEXIBLE|DEFAULT|ASSERT|PERMISSIONS|REFERENCE)\b|$)", definition)
    kind = (m.group(1) if m else "any").strip()
    kind = re.sub(r"^option<(.*)>$", r"\1", kind)
    kind = re.sub(r"^none \| ", "", kind)
    inside = re.search(r"INSIDE \[(.*?)\]", definition)
    if inside:
        choices = re.findall(r"'([^']*)'", inside.group(1))
        return next(f"'{c}'" for c in choices if c != current)
    record = re.match(r"record<(\w+)", kind)
    simple = {"bool": "false" if current else "true", "int": "8" if current == 7 else "7", "float": "0.25",
              "datetime": "d'2001-02-03T04:05:06Z'", "string": "'changed'", "any": "'changed'",
              "array<string>": "['changed']", "array<object>": "[{changed: 1}]", "object": "{changed: 1}",
              "geometry": "(1.5, 2.5)"}
    if record:
        return rid(record.group(1), "alt")
    if kind == "array" and "embedding" in name:
        return "$vec"
    return simple.get(kind)


# --- the cells -------------------------------------------------------------------------
@dataclass
class Cell:
    table: str
    verb: str
    principal: str
    allowed: bool
    sql: str
    row: str  # the record the operator reads to judge the effect
    field: str = ""
    value: str = ""  # update: the literal set
    response: object = None
    status: str = ""

    @property
    def name(self) -> str:
        what = f"{self.verb}[{self.field}]" if self.field else self.verb
        return f"{self.table}.{what} as {self.principal}"


@dataclass
class World:
    root: object
    conns: dict
    fields: dict  # table -> {field: definition}
    vec: list
    cells: list = field(default_factory=list)


def cells_for(w: World, p: str, before: dict) -> list[Cell]:
    """Every statement principal `p` runs, in order: reads, creates, updates (per table,
    `scopes` last, then the move out of the region), deletes."""
    out: list[Cell] = []
    for table, spec in MATRIX.items():
        out += _read_cells(table, spec, p) + _create_cells(table, spec, p)
        out += _update_cells(w, table, spec, p, before) + _delete_cells(table, spec, p)
    return out


def _target(table: str, spec: dict, p: str) -> str:
    return spec.get("target") or rid(table, f"upd_{p}")


def _read_cells(table: str, spec: dict, p: str) -> list[Cell]:
    row = spec.get("target") or rid(table, "spare")
    out = [Cell(table, "select", p, p in spec["select"], f"SELECT * FROM {row}", row),
           Cell(table, "select_scan", p, p in spec["select"],
                f"SELECT * FROM {table} WHERE record::id(id) = '{row.split(':', 1)[1]}'", row)]
    if "select_own" in spec:
        out.append(Cell(table, "select_own", p, p in spec["select_own"], f"SELECT * FROM {table}:{p}", f"{table}:{p}"))
    return out


def _create_cells(table: str, spec: dict, p: str) -> list[Cell]:
    me, out = f"'amem_principal:{p}'", []
    for verb, scopes in (("create", ORG_A), ("create_unscoped", NO_SCOPES)):
        if verb in spec:
            new = f"new_{verb}_{p}"
            out.append(Cell(table, verb, p, p in spec[verb], seed_sql(table, spec, new, scopes=scopes, me=me), rid(table, new)))
    if "ends" in spec:
        pairs = [("relate", 0, spec["ends"]), *(("relate_foreign", n, e) for n, e in enumerate(spec["foreign_ends"]))]
        for verb, n, ends in pairs:
            new = f"new_{verb}{n}_{p}"
            out.append(Cell(table, verb, p, p in spec[verb], seed_sql(table, spec, new, me=me, ends=ends), rid(table, new),
                            field="" if verb == "relate" else f"{ends[0].split(':')[1]}->{ends[1].split(':')[1]}"))
    return out


def _update_cells(w: World, table: str, spec: dict, p: str, before: dict) -> list[Cell]:
    target, out = _target(table, spec, p), []
    current = before.get(target) or {}
    for f in sorted(set(w.fields[table]) | set(spec.get("values", {})), key=lambda f: (f == "scopes", f)):
        literal = spec.get("values", {}).get(f) or VALUES.get(f) or new_value(table, f, w.fields[table].get(f, ""), current.get(f))
        assert literal is not None, f"{table}.{f}: no new value for its type; give one in permission_matrix MATRIX[{table!r}]['values']"
        allowed = p in spec.get("fields", {}).get(f, spec["update"])
        out.append(Cell(table, "update", p, allowed, f"UPDATE {target} SET `{f}` = {literal}", target, field=f, value=literal))
    if "move_out" in spec:
        out.append(Cell(table, "move_out", p, p in spec["move_out"], f"UPDATE {target} SET scopes = {ORG_B}", target,
                        field="scopes", value=ORG_B))
    return out


def _delete_cells(table: str, spec: dict, p: str) -> list[Cell]:
    out = []
    for verb, name in (("delete", "del"), ("delete_unscoped", "delu")):
        if verb in spec:
            out.append(Cell(table, verb, p, p in spec[verb], f"DELETE {rid(table, f'{name}_{p}')}", rid(table, f"{name}_{p}")))
    out.append(Cell(table, "delete_scan", p, p in spec["delete"], f"DELETE {table} WHERE record::id(id) = '{table}_dels_{p}'",
                    rid(table, f"dels_{p}")))
    return out


async def rows(root, ids: list[str]) -> dict:
    raw = await root.query_raw(";".join(f"SELECT * FROM {i}" for i in ids), {})
    return {i: (r["result"] or [None])[0] for i, r in zip(ids, raw["result"], strict=True)}


async def run_principal(w: World, p: str) -> list[str]:
    """Runs every cell of principal `p` in one request; returns the failures."""
    targets = sorted({_target(t, spec, p) for t, spec in MATRIX.items()})
    before = await rows(w.root, targets)
    cells = cells_for(w, p, before)
    raw = await w.conns[p].query_raw(";\n".join(c.sql for c in cells), {"vec": w.vec})
    for c, r in zip(cells, raw["result"], strict=True):
        c.status, c.response = r["status"], r["result"]
    values = await w.root.query_raw(";".join(f"RETURN {c.value}" for c in cells if c.verb in ("update", "move_out")), {"vec": w.vec})
    expected = iter(r["result"] for r in values["result"])
    after = await rows(w.root, sorted({c.row for c in cells}))
    w.cells += cells
    failures = []
    for c in cells:
        want = next(expected) if c.verb in ("update", "move_out") else None
        problem = judge(c, before, after, want)
        if problem:
            failures.append(f"{c.name}: expected {'allow' if c.allowed else 'deny'}, {problem}  [{c.sql[:160]}]")
    # a principal denied every field of a row leaves the whole row as it was
    for table, spec in MATRIX.items():
        target = _target(table, spec, p)
        if not any(c.allowed for c in cells if c.table == table and c.verb in ("update", "move_out")):
            if dump(before[target]) != dump(after[target]):
                failures.append(f"{table}: every update is denied to {p}, yet the row changed")
    return failures


def judge(c: Cell, before: dict, after: dict, want) -> str:
    """'' when the cell behaved as expected, else what happened."""
    ok = c.status == "OK"
    returned = c.response if ok and isinstance(c.response, list) else []
    spec = MATRIX[c.table]
    if c.verb.startswith("select"):  # select, select_scan, select_own
        got = [r for r in returned if str(r.get("id")) == c.row]
        leaked = [h for h in spec.get("hidden", []) for r in got if h in r]
        if leaked:
            return f"the row came back with hidden field(s) {leaked}"
        if c.allowed != bool(got):
            return "the row came back" if got else f"nothing came back ({c.status}: {str(c.response)[:120]})"
        return ""
    if not c.allowed and returned and p_cannot_select(c):
        return f"refused, but the statement returned {str(returned)[:120]}"
    if c.verb in ("create", "create_unscoped", "relate", "relate_foreign"):
        exists = after[c.row] is not None
        if c.allowed and not exists:
            return f"no row was created ({c.status}: {str(c.response)[:160]})"
        return "the row was created" if exists and not c.allowed else ""
    if c.verb.startswith("delete"):
        gone = after[c.row] is None
        if c.allowed and not gone:
            return f"the row is still there ({c.status}: {str(c.response)[:160]})"
        return "the row was deleted" if gone and not c.allowed else ""
    old, new = (before[c.row] or {}).get(c.field), (after[c.row] or {}).get(c.field)
    if c.verb == "move_out":  # after the update of `scopes` (allowed or not) in the same request
        moved = dump(new) == dump(want)
        return "" if moved == c.allowed else ("the row moved out" if moved else f"the row did not move ({c.status}: {str(c.response)[:120]})")
    if c.allowed:
        if dump(old) == dump(want):
            return "the new value equals the old one: the cell proves nothing"
        if dump(new) != dump(want):
            return f"the field is {dump(new)[:80]}, not {dump(want)[:80]} ({c.status}: {str(c.response)[:120]})"
        return ""
    return f"the field changed from {dump(old)[:60]} to {dump(new)[:60]}" if dump(new) != dump(old) else ""


def p_cannot_select(c: Cell) -> bool:
    spec = MATRIX[c.table]
    return c.principal not in spec["select"] and c.principal not in spec.get("select_own", ())


# --- the world and the tests -----------------------------------------------------------
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(dev_server):
    async with tenants(dev_server, "matrix", PRINCIPALS) as t:
        await access.revoke(t.root, REVOKED)  # after sign-in: its live session must be cut off
        (dim,) = await t.root.query("SELECT VALUE embedding_dim FROM ONLY amem_setting:schema")
        raw = await t.root.query_raw(";\n".join(seed_statements()), {"vec": [0.5] * dim})
        errors = [(s, r["result"]) for s, r in zip(seed_statements(), raw["result"], strict=True) if r["status"] != "OK"]
        assert errors == [], errors[:5]
        (info,) = await t.root.query("INFO FOR DB")
        fields = {}
        for table in info["tables"]:
            (ti,) = await t.root.query(f"INFO FOR TABLE {table}")
            fields[table] = writable_fields(ti)
        yield World(t.root, t.conns, fields, [0.25] * dim)


async def test_every_table_and_edge_has_a_row_in_the_matrix(world):
    (info,) = await world.root.query("INFO FOR DB")
    tables = set(info["tables"])
    missing, stale = sorted(tables - set(MATRIX)), sorted(set(MATRIX) - tables)
    assert not missing, f"tables without a row in tests/permission_matrix.py MATRIX: {missing} (say who may do what to them)"
    assert not stale, f"MATRIX rows for tables that do not exist: {stale}"
    for table, spec in MATRIX.items():
        edge = "RELATION" in info["tables"][table]
        assert edge == ("ends" in spec), f"{table}: an edge needs `ends` / `foreign_ends` and the relate verbs, a table none"
        for v in ("select", "update", "delete") + (("relate", "relate_foreign") if edge else ("create",)):
            assert v in spec, f"{table}: no expectation for {v}"
        unknown = set(spec.get("values", {})) - set(world.fields[table]) if world.fields[table] else set()
        assert not unknown, f"{table}: `values` for fields it does not have: {unknown}"
        assert not any(REVOKED in s for s in spec.values() if isinstance(s, frozenset)), f"{table}: a revoked principal may do nothing"


async def test_permission_matrix(world):
    failures = []
    for p in PRINCIPALS:
        failures += await run_principal(world, p)
    cells = world.cells
    by_verb: dict[str, int] = {}
    for c in cells:
        by_verb[c.verb] = by_verb.get(c.verb, 0) + 1
    allowed = sum(c.allowed for c in cells)
    print(f"\npermission matrix: {len(MATRIX)} tables x {len(PRINCIPALS)} principals, {len(cells)} cells "
          f"({allowed} allow, {len(cells) - allowed} deny): {by_verb}")
    assert len({c.table for c in cells}) == len(MATRIX)
    assert failures == [], f"{len(failures)} cells wrong:\n" + "\n".join(failures)
