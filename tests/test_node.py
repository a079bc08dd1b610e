"""Raw SurrealQL from another language: Node.js applies the same migration plan
to its own embedded engine (npm @surrealdb/node) and calls stored functions;
the answers equal the Python client's on the same calls."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from amem_db.db import plain
from amem_db.migrator import Migrator

NODE_DIR = Path(__file__).parent / "node"

CALLS = [
    {"sql": "RETURN fn::amem::scope::closure($p)", "vars": {"p": ["org/acme/team/support", "x"]}},
    {"sql": "RETURN fn::amem::scope::matches(fn::amem::scope::closure(['org/a/b']), [['org/a'], ['org/z']])", "vars": {}},
    {"sql": "RETURN fn::amem::keywords::normalise('  Return   POLICY ')", "vars": {}},
    {"sql": "RETURN fn::amem::meta::settings().embedding_dim", "vars": {}},
]


@pytest.fixture(scope="module")
def node_modules():
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js/npm not installed: install Node.js 20+ to run the cross-language check")
    if not (NODE_DIR / "node_modules" / "@surrealdb" / "node").exists():
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=NODE_DIR,
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            pytest.skip(f"npm install failed (offline registry?): {done.stderr.strip()[:200]}")
    return NODE_DIR


async def test_node_applies_the_plan_and_gets_the_same_answers(node_modules, fresh_db, tmp_path):
    m = Migrator(fresh_db)
    plan_sql = "\n".join(m.plan_sql(await m.plan()))
    (tmp_path / "plan.surql").write_text(plan_sql)
    (tmp_path / "calls.json").write_text(json.dumps(CALLS))
    run = subprocess.run(["node", "raw_surrealql.mjs", str(tmp_path / "plan.surql"), str(tmp_path / "calls.json")],
                         cwd=node_modules, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    node = json.loads(run.stdout.strip().splitlines()[-1])
    assert node["version"]["version"].startswith("surrealdb-3.")

    await m.migrate()
    python = [plain((await fresh_db.query(c["sql"], c["vars"]))[0]) for c in CALLS]
    assert node["results"] == python
    assert python[0] == ["org", "org/acme", "org/acme/team", "org/acme/team/support", "x"]
