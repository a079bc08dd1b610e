"""docs/FUNCTIONS.md: every ``fn::amem::*`` stored function, where it is written, its
signature and its COMMENT, grouped by file.

``python -m amem_db.functions_doc`` prints it, ``--write`` writes it (``make functions``);
tests/test_functions_doc.py fails when the committed file is stale.

Names, signatures and COMMENTs come from the rendered ``surql/`` (default settings:
per-table functions rendered by a jinja loop appear once per table); the line
is that of the ``DEFINE FUNCTION`` in the ``.surql.j2`` source. The same parse
gives each function's source length, which the tests hold to ~60 lines unless
the body says ``-- long because: ...``.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .migrator import bundled_dir, render_dir
from .settings import SchemaSettings

DOC_PATH = Path("docs") / "FUNCTIONS.md"
DEFINE = "DEFINE FUNCTION OVERWRITE "
_NAME = re.compile(r"DEFINE FUNCTION OVERWRITE (fn::amem::[^\s(]+)\(")
_COMMENT = re.compile(r"\}\s*COMMENT\s+('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
_LONG_BECAUSE = "-- long because:"


@dataclass(frozen=True)
class StoredFunction:
    name: str  # fn::amem::area::verb
    signature: str  # ($a: type, ...) -> type
    comment: str | None
    file: str  # surql/NNN_x.surql.j2
    line: int  # of the DEFINE in the source template
    source_lines: int  # DEFINE .. closing "} COMMENT" in the source template
    long_because: str | None  # the reason given for a long body, if any

    @property
    def namespace(self) -> str:
        # an entry point fn::amem::recall lives with its steps fn::amem::recall::*
        parts = self.name.split("::")
        return self.name if len(parts) == 3 else "::".join(parts[:-1])


def _source_defines(text: str) -> list[tuple[re.Pattern[str], int, int, str | None]]:
    """(name pattern, line, length, long-because reason) of every DEFINE FUNCTION in a template."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        at = line.find(DEFINE + "fn::amem::")
        if at < 0:
            continue
        raw = line[at + len(DEFINE):].split("(", 1)[0]
        # a templated name (fn::amem::query::vector_{{ t }}) matches each rendered one
        parts = re.split(r"\{\{.*?\}\}", raw)
        # (an empty one too: recall renders its legs twice, the second with the suffix _wide)
        pattern = re.compile("[A-Za-z0-9_]*".join(re.escape(p) for p in parts) + r"$")
        end = next((j for j in range(i, len(lines)) if lines[j].lstrip().startswith("} COMMENT")), i)
        body = lines[i:end + 1]
        reason = next((b.split(_LONG_BECAUSE, 1)[1].strip() for b in body if _LONG_BECAUSE in b), None)
        out.append((pattern, i + 1, end - i + 1, reason))
    return out


def _signature(text: str, start: int) -> str:
    """``(args) -> type`` after the name at ``start`` (up to the body's opening brace)."""
    depth, i = 0, start
    while i < len(text):
        ch = text[i]
        if text.startswith("->", i):
            i += 2
            continue
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        elif ch == "{" and depth == 0:
            break
        i += 1
    return " ".join(text[start:i].split())


def _unquote(literal: str) -> str:
    return re.sub(r"\\(.)", r"\1", literal[1:-1])


def collect(surql_dir: Path | None = None) -> list[StoredFunction]:
    """Every fn::amem::* function of the rendered surql/, in file order."""
    directory = surql_dir or bundled_dir("surql")
    settings = SchemaSettings()
    scripts = render_dir(directory, "desired", settings.model_dump() | {"hnsw_ef": settings.hnsw_ef})
    found: list[StoredFunction] = []
    for script in scripts:
        defines = _source_defines(script.path.read_text())
        text = script.text
        for m in _NAME.finditer(text):
            name = m.group(1)
            src = next((d for d in defines if d[0].match(name)), None)
            if src is None:
                raise ValueError(f"{name}: rendered from {script.path.name} but no DEFINE in its source matches")
            close = _COMMENT.search(text, m.end())
            nxt = text.find(DEFINE, m.end())
            comment = _unquote(close.group(1)) if close and (nxt < 0 or close.start() < nxt) else None
            found.append(StoredFunction(
                name=name, signature=_signature(text, m.end() - 1), comment=comment,
                file=f"surql/{script.path.name}", line=src[1], source_lines=src[2], long_because=src[3],
            ))
    return found


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def render(functions: list[StoredFunction]) -> str:
    out = [
        "# Stored functions",
        "",
        "Every `fn::amem::*` function, grouped by the file that defines it (one namespace per",
        "file). Generated from the rendered `surql/` (default settings) by",
        "`python -m amem_db.functions_doc --write` (`make functions`); do not edit by hand:",
        "`tests/test_functions_doc.py` fails when this file is stale.",
        "",
    ]
    by_file: dict[str, list[StoredFunction]] = {}
    for f in functions:
        by_file.setdefault(f.file, []).append(f)
    for file, fns in by_file.items():
        spaces = ", ".join(f"`{ns}::*`" for ns in dict.fromkeys(f.namespace for f in fns))
        out += [f"## {file} ({spaces})", "", "| function | line | COMMENT |", "| --- | --- | --- |"]
        for f in fns:
            out.append(f"| `{_cell(f.name + f.signature)}` | [{f.line}](../{file}#L{f.line}) | {_cell(f.comment or '(none)')} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m amem_db.functions_doc", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {DOC_PATH} (default: print it)")
    args = parser.parse_args(argv)
    text = render(collect())
    if args.write:
        path = bundled_dir("surql").parent / DOC_PATH
        path.write_text(text)
        print(f"wrote {path}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
