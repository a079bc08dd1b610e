"""The README's examples run exactly as printed.

The Python example is executed as a script in a fresh interpreter (the
database comes from the environment, ``AMEM_URL=mem://``, as the README says
it may); the raw-SurrealQL example's statements run one by one against a
migrated database holding the sample corpus, as a user of another language
would send them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import make_target

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


# The native engine's abort at interpreter exit (docs/ENGINE-ISSUES.md #4), after the
# program has finished: exit -6 / 134 with nothing on stderr, or with only the runtime's
# panic report. Anything else on stderr is a real failure; the output is checked in full.
_EXIT_ABORT = re.compile(r"thread '.*' \(\d+\) panicked at .*|panic in a function that cannot unwind|stack backtrace:"
                         r"|note: Some details are omitted.*|thread caused non-unwinding panic\. aborting\.|\s*\d+: .*|\s+at .*")


def clean_exit(done: subprocess.CompletedProcess[str]) -> bool:
    """Exit 0, or the engine's exit-time abort and nothing else (ENGINE-ISSUES #4)."""
    if done.returncode == 0:
        return True
    return done.returncode in (-6, 134) and all(_EXIT_ABORT.fullmatch(ln) for ln in done.stderr.splitlines() if ln.strip())


def run_script(tmp_path: Path, script: str) -> str:
    path = tmp_path / "example.py"
    path.write_text(script)
    env = os.environ | {"AMEM_URL": "mem://"}
    done = subprocess.run([sys.executable, str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert clean_exit(done), done.stderr[-3000:]
    return done.stdout


def test_python_examples_run_as_printed(tmp_path):
    async_example, sync_example, memory_example = blocks("Python", "python")
    out = run_script(tmp_path, async_example).splitlines()
    # three hits, best first, from the two documents the example stored
    assert len(out) == 3, out
    scores = [float(line.split()[0]) for line in out]
    assert scores == sorted(scores, reverse=True) and 0 < scores[-1] <= scores[0] <= 1
    assert any("Returns" in line for line in out) and any("note-1" in line for line in out), out
    (line,) = run_script(tmp_path, sync_example).splitlines()
    assert line.endswith(" note-2") and float(line.split()[0]) == 1.0, line
    # typed memory: the current role first, with its validity; the history chain newest first
    assert run_script(tmp_path, memory_example).splitlines() == [
        "attribute Carol Diaz: role = head of data 2025-02-01", "head of data <- analyst"]


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
        assert by_fn["fn::amem::facts::write"]["triples"][0]["outcome"] == "added"
        recall = by_fn["fn::amem::recall"]
        assert recall["hits"][0]["text"] == "Alice Smith: role = CTO" and recall["classificationKind"] == "direct_lookup"
        assert [a["value"] for a in by_fn["fn::amem::facts::diff"]["added"]] == ["CTO"]


@pytest.mark.parametrize("section", ["Two commands"])
def test_two_commands_are_the_ci_command(section):
    (sh,) = blocks(section, "sh")
    cmds = [ln.split("#")[0].strip() for ln in sh.splitlines() if ln.strip()]
    assert cmds == ["make demo", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.strip().splitlines()[-1] == "make test"


def subsection_sh(title: str) -> list[str]:
    """The command lines of the ```sh blocks under the ``### title`` heading (continuations joined, comments dropped)."""
    m = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^##|\Z)", README, re.S | re.M)
    assert m, f"README has no '### {title}'"
    text = "\n".join(re.findall(r"^```sh\n(.*?)^```", m.group(1), re.S | re.M)).replace("\\\n", " ")
    return [shlex.split(ln, comments=True) for ln in text.splitlines() if ln.strip()]


@pytest.mark.slow  # one process per command (engine start, model load): ~1 min
def test_memory_cli_examples_run_as_printed(tmp_path):
    """The remember / entities / recall examples, in order, against one embedded database."""
    env = os.environ | {"AMEM_URL": f"surrealkv://{tmp_path / 'db'}", "COLUMNS": "200"}
    cmds = subsection_sh("`amem-db remember` and `amem-db entities` (typed memory)") + subsection_sh(
        "`amem-db recall` (facts and passages, ranked together)")
    assert [c[0] for c in cmds] == ["amem-db"] * len(cmds) and len(cmds) == 10
    outputs = []
    for args in [["amem-db", "migrate"], *cmds]:
        done = subprocess.run([sys.executable, "-m", "amem_db", *args[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        outputs.append(done.stdout)
    role, oslo, acme = outputs[-3:]
    first = next(ln for ln in role.splitlines() if ln.startswith("│ 1 "))
    assert "Bob Jones: role = country director" in first and "2025-06-01 .. open" in first, role
    assert "office manager" not in role and "runs the Oslo office" in oslo
    works = json.loads(acme)
    assert [h["text"] for h in works["hits"] if h["source"] == "relation"] == ["Bob Jones works_at Acme"] or \
        {"Alice Smith works_at Acme", "Bob Jones works_at Acme"} == {h["text"] for h in works["hits"] if h["source"] == "relation"}


@pytest.mark.slow  # one process per command: ~1 min
def test_time_and_space_cli_examples_run_as_printed(tmp_path):
    """The README's Time and Space examples, in order, against one embedded database, with what their comments claim."""
    env = os.environ | {"AMEM_URL": f"surrealkv://{tmp_path / 'db'}", "COLUMNS": "200"}
    cmds = subsection_sh("Time: what held when, and what we believed when") + subsection_sh("Space: where a fact applies")
    assert len(cmds) == 11 and all(c[0] == "amem-db" for c in cmds)
    outputs = []
    for args in [["amem-db", "migrate"], *cmds]:
        done = subprocess.run([sys.executable, "-m", "amem_db", *args[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert clean_exit(done), (args, done.stderr[-2000:])
        outputs.append(done.stdout)
    now_2021, then_2021, diff, recall_then, windowed, _oslo_fact, _bergen_fact, oslo, bergen = outputs[3:]
    assert "Carol Reyes" in now_2021 and "Bob Stone" not in now_2021
    assert "Bob Stone" in then_2021 and "Carol Reyes" not in then_2021
    assert "0 added, 1 changed, 0 closed" in diff and "Bob Stone" in diff and "Carol Reyes" in diff
    assert "Bob Stone" in recall_then and "Carol Reyes" not in recall_then
    first = next(ln for ln in windowed.splitlines() if ln.startswith("│ 1 "))
    assert "Carol Reyes" in first and "window 'in september 2022' 2022-09-01 .. 2022-10-01" in windowed, windowed
    assert "Karl Johans" in oslo and "Bryggen" not in oslo
    first = next(ln for ln in bergen.splitlines() if ln.startswith("│ 1 "))
    assert "Bergen" in first, bergen
