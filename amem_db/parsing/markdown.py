"""Markdown with ``markdown-it-py`` (CommonMark + tables, strikethrough). The
text is the source itself (markup stays, so offsets point at what a person
reads); headings become sections, a YAML front matter ``title`` or the first
H1 the title, ``[text](href)`` the links."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..constants import MIME_MARKDOWN
from .base import Format, Link, ParsedDocument, collapse, decode, tile_sections

_md_parser: Any = None


def _markdown() -> Any:
    global _md_parser
    if _md_parser is None:
        from markdown_it import MarkdownIt

        _md_parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    return _md_parser


def _md_inline_text(children: Iterable[Any]) -> str:
    parts: list[str] = []
    for tok in children:
        if tok.type in ("text", "code_inline", "image"):
            parts.append(tok.content)  # an image's content is its alt text
        elif tok.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return collapse("".join(parts))


def _md_front_matter(text: str) -> tuple[int, str | None]:
    """Return (number of lines of a leading ``---`` YAML front matter block, its title)."""
    if not text.startswith("---\n"):
        return 0, None
    lines = text.split("\n")
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            title = None
            for line in lines[1:i]:
                key, sep, value = line.partition(":")
                if sep and key.strip().lower() == "title":
                    title = value.strip().strip("\"'").strip() or None
                    break
            return i + 1, title
    return 0, None


def _md_front_matter_location(text: str, fm_lines: int) -> str | None:
    """The front matter's ``location:`` value as written ("51.5, -0.12"; brackets and
    quotes dropped), checked later by fn::amem::geo::stored."""
    for line in text.split("\n")[1:max(fm_lines - 1, 1)]:
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "location":
            return value.strip().strip("\"'[]()").strip() or None
    return None


def _parse_markdown(data: bytes, label: str | None) -> list[ParsedDocument]:
    text = decode(data, label)
    fm_lines, fm_title = _md_front_matter(text)
    source = text
    if fm_lines:
        # blank out the front matter but keep its newlines, so line numbers match
        lines = text.split("\n")
        source = "\n" * fm_lines + "\n".join(lines[fm_lines:])

    # markdown-it counts lines on "\n" only (not str.splitlines' other separators)
    line_starts = [0]
    pos = text.find("\n")
    while pos >= 0:
        line_starts.append(pos + 1)
        pos = text.find("\n", pos + 1)

    tokens = _markdown().parse(source)
    headings: list[tuple[int, int, str]] = []
    links: list[Link] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map is not None:
            inline = tokens[i + 1]
            heading = _md_inline_text(inline.children or [])
            headings.append((line_starts[tok.map[0]], int(tok.tag[1:]), heading))
        elif tok.type == "inline" and tok.children:
            href: str | None = None
            parts: list[str] = []
            for child in tok.children:
                if child.type == "link_open":
                    href = str(child.attrGet("href") or "")
                    parts = []
                elif child.type == "link_close" and href is not None:
                    links.append(Link(href=href, text=_md_inline_text(parts)))
                    href = None
                elif href is not None:
                    parts.append(child)

    title = fm_title
    if title is None:
        title = next((h for _, level, h in headings if level == 1 and h), None)
    return [
        ParsedDocument(
            text=text,
            mime_type=MIME_MARKDOWN,
            title=title,
            location=_md_front_matter_location(text, fm_lines) if fm_lines else None,
            sections=tile_sections(headings, len(text)),
            links=links,
        )
    ]


FORMAT = Format(MIME_MARKDOWN, _parse_markdown, extensions=(".md", ".markdown"), aliases=("text/x-markdown",))
