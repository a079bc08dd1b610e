"""The README's examples run exactly as printed.

The Python example is executed as a script in a fresh interpreter (the
database comes from the environment, ``AMEM_URL=mem://``, as the README says
it may); the raw-SurrealQL example's statements run one by one against a
migrated database holding the sample corpus, as a user of another language
would send them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_target

from amem_db.client import Memory

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def blocks(section: str, lang: str) -> list[str]:
    """The fenced ``lang`` blocks under the ``## section`` heading."""
    m = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert m, f"README has no '## {section}' section"
    found = re.findall(rf"^```{lang}\n(.*?)^```", m.group(1), re.S | re.M)
    assert found, f"README section '{section}' has no ```{lang} block"
    return found


def statements(sql: str) -> list[str]:
    """Top-level statements of a block: one per line ending in ';' (comment lines skipped)."""
    lines = [ln for ln in sql.splitlines() if ln.strip() and not ln.strip().startswith("--")]
    return [ln.strip() for ln in lines]


def run_script(tmp_path: Path, script: str) -> str:
    path = tmp_path / "example.py"
    path.write_text(script)
    env = os.environ | {"AMEM_URL": "mem://"}
    done = subprocess.run([sys.executable, str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_python_examples_run_as_printed(tmp_path):
    async_example, sync_example = blocks("Python", "python")
    out = run_script(tmp_path, async_example).splitlines()
    # three hits, best first, from the two documents the example stored
    assert len(out) == 3, out
    scores = [float(line.split()[0]) for line in out]
    assert scores == sorted(scores, reverse=True) and 0 < scores[-1] <= scores[0] <= 1
    assert any("Returns" in line for line in out) and any("note-1" in line for line in out), out
    (line,) = run_script(tmp_path, sync_example).splitlines()
    assert line.endswith(" note-2") and float(line.split()[0]) == 1.0, line


async def test_raw_surrealql_example_runs_as_printed():
    (sql,) = blocks("Any language: raw SurrealQL", "sql")
    target = make_target("readme")
    async with await Memory.open(target.url, target.ns, target.db, target.user, target.password, migrate=True) as mem:
        await mem.documents.ingest_paths([ROOT / "examples" / "sample-corpus"])
        results = []
        for stmt in statements(sql):
            out = await mem.conn.query(stmt)
            results.append((stmt, out[-1] if isinstance(out, list) else out))  # one RETURN per statement
        for stmt, out in results:
            assert out, f"{stmt} returned nothing"
        by_fn = {re.search(r"fn::amem::[a-z_:]+", s).group(0): out for s, out in results}
        query = by_fn["fn::amem::documents::query"]
        assert query["results"], query
        assert any("MLWK3LL/A" in h["chunk"]["text"] for h in query["results"])
        assert by_fn["fn::amem::keywords::list"]["keywords"]
        assert by_fn["fn::amem::documents::prepare"]["chunks"]
        # what facts::write would embed: the entity name and the attribute rendering
        prepared = by_fn["fn::amem::facts::prepare"]
        assert [e["text"] for e in prepared["entities"]] == ["Alice Smith"] and len(prepared["attributes"]) == 1
        assert by_fn["fn::amem::entities::list"]["total"] == 0  # prepare writes nothing


@pytest.mark.parametrize("section", ["Two commands"])
def test_two_commands_are_the_ci_command(section):
    (sh,) = blocks(section, "sh")
    cmds = [ln.split("#")[0].strip() for ln in sh.splitlines() if ln.strip()]
    assert cmds == ["make demo", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.strip().splitlines()[-1] == "make test"
