"""No path of the machine the code was written on, anywhere in the tree: a
default that points into one developer's filesystem points nowhere on anyone
else's (datasets come from ``AMEM_DATASETS`` or ``../shared/datasets``,
amem_db/harness/paths.py)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from amem_db.errors import AmemError
from amem_db.harness.paths import REPO_ROOT, datasets_root, require_collections

# built from parts so this file does not match itself
MACHINE_ROOTS = ["/" + name + "/" for name in ("work", "root", "home", "Users")]
ABSOLUTE = re.compile("|".join(re.escape(r) for r in MACHINE_ROOTS))
SKIP_DIRS = {".git", ".venv", "results", ".amem", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


def tree_files() -> list[Path]:
    """The tracked files (a clone's tree); without git, every file outside caches and outputs."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True, timeout=60).stdout
        return [REPO_ROOT / p for p in listed.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        return [p for p in REPO_ROOT.rglob("*") if p.is_file() and not SKIP_DIRS & set(p.relative_to(REPO_ROOT).parts)]


def test_the_tree_holds_no_absolute_machine_path():
    offenders = []
    for path in tree_files():
        if not path.is_file():  # deleted in the work tree, not yet committed
            continue
        text = path.read_bytes().decode("utf-8", errors="ignore")
        for number, line in enumerate(text.splitlines(), 1):
            if ABSOLUTE.search(line):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()[:120]}")
    assert not offenders, "absolute machine paths:\n" + "\n".join(offenders)


def test_the_pattern_catches_what_it_is_for():
    assert ABSOLUTE.search("DATA = '" + MACHINE_ROOTS[0] + "shared/datasets'")
    assert not ABSOLUTE.search("DATA = '../shared/datasets'")


def test_datasets_default_beside_the_repository_or_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("AMEM_DATASETS", raising=False)
    assert datasets_root() == REPO_ROOT.parent / "shared" / "datasets"
    monkeypatch.setenv("AMEM_DATASETS", str(tmp_path))
    assert datasets_root() == tmp_path


def test_a_missing_collection_is_one_line_naming_the_fix(tmp_path):
    (tmp_path / "scifact").mkdir()
    (tmp_path / "scifact" / "corpus.jsonl").write_text("{}\n")
    assert require_collections(tmp_path, ("scifact",)) == tmp_path
    with pytest.raises(AmemError, match=r"^no cisi under .*: set AMEM_DATASETS or pass --data-root") as caught:
        require_collections(tmp_path, ("scifact", "cisi"))
    assert caught.value.code == "datasets_not_found" and os.linesep not in str(caught.value)


def test_no_default_points_into_this_machines_temp_directory():
    """A scratch default is the system temp directory (tempfile.gettempdir()) or a variable,
    never a literal /tmp path written into the product or its scripts (docs/BACKENDS.md)."""
    literal = re.compile(r"""["']/""" + "tmp" + r"""[/"']""")
    offenders = [f"{p.relative_to(REPO_ROOT)}:{n}: {line.strip()[:120]}"
                 for p in tree_files() if p.suffix == ".py" and p.is_file() and p.parts[len(REPO_ROOT.parts)] in ("amem_db", "scripts")
                 for n, line in enumerate(p.read_text(errors="ignore").splitlines(), 1) if literal.search(line)]
    assert not offenders, "literal /tmp defaults:\n" + "\n".join(offenders)
