"""The docs' cross-references hold: every `FILE.md "Section"` named anywhere in the
tree (docs, code comments, SurrealQL, scripts) is a heading of that file, every
relative Markdown link points at a file, and scripts/README.md lists every script.
EVALUATION.md and BENCHMARKS.md were cut to their current figures with the history
moved to *-HISTORY.md (issue 29): these keep the names and links working."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECTION_REF = re.compile(r'(?:docs/)?([A-Z][A-Z0-9-]+\.md)\s+"([^"]{3,120})"')
MD_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def tree_files() -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                                check=True, timeout=60).stdout.decode().split()
        return [ROOT / p for p in listed if (ROOT / p).is_file()]
    except (OSError, subprocess.CalledProcessError):
        return [p for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts and ".venv" not in p.parts]


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def headings(doc: str) -> list[str] | None:
    path = next((p for p in (ROOT / "docs" / doc, ROOT / doc) if p.is_file()), None)
    if path is None:
        return None
    return [squash(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")]


TEXT_FILES = [p for p in tree_files() if p.suffix in (".md", ".py", ".j2", ".toml") or p.name == "Makefile"]


def test_every_named_section_is_a_heading_of_its_file():
    broken = []
    for path in TEXT_FILES:
        for m in SECTION_REF.finditer(path.read_text(errors="ignore")):
            doc, name = m.group(1), squash(m.group(2))
            found = headings(doc)
            if found is not None and not any(h.startswith(name) or name in h for h in found):
                broken.append(f'{path.relative_to(ROOT)}: {doc} "{name}"')
    assert not broken, "section references without a heading:\n" + "\n".join(broken)


@pytest.mark.parametrize("doc", ["docs/EVALUATION.md", "docs/BENCHMARKS.md", "docs/EVALUATION-HISTORY.md",
                                 "docs/BENCHMARKS-HISTORY.md", "scripts/README.md", "README.md"])
def test_relative_markdown_links_point_at_files(doc):
    text = (ROOT / doc).read_text()
    missing = [t for t in MD_LINK.findall(text) if "://" not in t and not ((ROOT / doc).parent / t).is_file()]
    assert not missing, f"{doc} links to missing files: {missing}"


def test_scripts_readme_lists_every_script_once():
    readme = (ROOT / "scripts" / "README.md").read_text()
    on_disk = sorted(f"{p.parent.name}/{p.name}" for p in (ROOT / "scripts").glob("*/*.py"))
    listed = []
    for section in re.split(r"^## ", readme, flags=re.M)[1:]:
        folder = section.split("/", 1)[0].strip()
        listed += [f"{folder}/{name}" for name in re.findall(r"^\| `([a-z0-9_]+\.py)` \|", section, re.M)]
    assert sorted(listed) == on_disk
    assert not list((ROOT / "scripts").glob("*.py")), "scripts/ holds only folders by purpose (and this README)"


def test_the_long_docs_lead_with_the_current_figures():
    for doc, first in (("EVALUATION.md", "Current figures"), ("BENCHMARKS.md", "Current run")):
        found = headings(doc)
        assert found is not None and found[1].startswith(first), found[:3]  # [0] is the title
        assert len((ROOT / "docs" / doc).read_text().splitlines()) <= 450, f"{doc}: the history belongs in its -HISTORY.md"
