"""docs/FUNCTIONS.md is generated and current; every stored function is documented,
short (or says why not), and lives in the one file of its namespace."""

from __future__ import annotations

from amem_db.functions_doc import DOC_PATH, collect, render
from amem_db.migrator import bundled_dir

MAX_LINES = 60


def test_functions_md_is_current():
    path = bundled_dir("surql").parent / DOC_PATH
    want = render(collect())
    have = path.read_text() if path.exists() else ""
    assert have == want, f"{DOC_PATH} is stale: run `make functions` (python -m amem_db.functions_doc --write) and commit it"


def test_every_function_has_a_comment():
    missing = [f"{f.file}:{f.line} {f.name}" for f in collect() if not (f.comment or "").strip()]
    assert not missing, f"functions without a COMMENT: {missing}"


async def test_every_stored_function_has_a_comment_and_is_listed(db):
    (info,) = await db.query("INFO FOR DB")
    stored = {name: text for name, text in info["functions"].items() if name.startswith("amem::")}
    assert stored, "the migrated database defines no fn::amem::* function"
    assert [n for n, text in stored.items() if " COMMENT " not in text] == []
    assert {f"fn::{n}" for n in stored} == {f.name for f in collect()}


def test_function_bodies_are_short_or_say_why():
    long = [f"{f.file}:{f.line} {f.name} ({f.source_lines} lines)"
            for f in collect() if f.source_lines > MAX_LINES and not f.long_because]
    assert not long, f"over {MAX_LINES} lines without a `-- long because: ...` comment: {long}"


def test_one_namespace_per_file():
    files: dict[str, set[str]] = {}
    for f in collect():
        files.setdefault(f.namespace, set()).add(f.file)
    spread = {ns: sorted(fs) for ns, fs in files.items() if len(fs) > 1}
    assert not spread, f"namespaces defined in more than one file: {spread}"
    spaces: dict[str, set[str]] = {}
    for f in collect():
        spaces.setdefault(f.file, set()).add(f.namespace)
    mixed = {file: sorted(ns) for file, ns in spaces.items() if len(ns) > 1}
    assert not mixed, f"files defining more than one namespace: {mixed}"
