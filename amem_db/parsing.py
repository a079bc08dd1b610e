"""Turn files into canonical text plus structure (sections, transcript segments, links).

This module only does I/O-side work: it decodes bytes, runs a real parser for the
format and reports *where* structure sits in the text.  Chunking and ranking happen
in SurrealQL and index into :attr:`ParsedDocument.text` with ``char_start``/``char_end``
offsets, so every offset produced here is an exact index into that string
(``doc.text[s.char_start:s.char_end]``).

Supported formats (canonical MIME type -> parser):

=========================  ===================================================
``text/plain``             UTF-8 (BOMs honoured; a few bad bytes are replaced)
``text/markdown``          ``markdown-it-py`` (CommonMark); text is the source
``text/html``              BeautifulSoup with the stdlib ``html.parser``
``application/pdf``        ``pypdf``; one section per page ("Page N")
``text/vtt``               ``webvtt-py``
``application/x-subrip``   ``webvtt-py`` (its SRT reader)
``application/jsonl``      ``json``; one document per ``{"_id","title","text"}`` line
=========================  ===================================================

Canonical text, per format:

* plain text / Markdown / JSONL ``text``: the decoded source, line endings normalised
  to ``"\\n"`` and a leading BOM dropped; nothing else is changed (Markdown markup
  stays, so offsets point at the source a person would read).
* HTML: readable text built block by block (headings, paragraphs, list items,
  table rows ...), blocks separated by a blank line (list items and table rows by a
  single newline), whitespace collapsed except inside ``<pre>``.
* PDF: the text of each page (``pypdf``'s ``extract_text``), pages joined by a blank
  line; pages without text are skipped but keep their number.
* Transcripts: one line per cue, cues joined by ``"\\n"``; a cue's own line breaks
  become spaces and a WebVTT voice (``<v Alice>``) is written as ``"Alice: "``.
* JSONL: ``text`` is the line's ``text`` field only; ``title`` is kept separately in
  :attr:`ParsedDocument.title` and ``_id`` in :attr:`ParsedDocument.source_id`, so
  offsets index the body alone and the caller decides how to weigh the title.
"""

from __future__ import annotations

import html as _html
import io
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MIME_HTML",
    "MIME_JSONL",
    "MIME_MARKDOWN",
    "MIME_PDF",
    "MIME_SRT",
    "MIME_TEXT",
    "MIME_VTT",
    "SUPPORTED_EXTENSIONS",
    "SUPPORTED_MIME_TYPES",
    "CorruptFileError",
    "Link",
    "ParseError",
    "ParsedDocument",
    "Section",
    "Segment",
    "UnsupportedFormatError",
    "detect_mime_type",
    "parse",
    "parse_file",
]

MIME_TEXT = "text/plain"
MIME_MARKDOWN = "text/markdown"
MIME_HTML = "text/html"
MIME_PDF = "application/pdf"
MIME_VTT = "text/vtt"
MIME_SRT = "application/x-subrip"
MIME_JSONL = "application/jsonl"

SUPPORTED_MIME_TYPES: tuple[str, ...] = (
    MIME_TEXT,
    MIME_MARKDOWN,
    MIME_HTML,
    MIME_PDF,
    MIME_VTT,
    MIME_SRT,
    MIME_JSONL,
)

#: file extension (lower case, with dot) -> canonical MIME type
SUPPORTED_EXTENSIONS: dict[str, str] = {
    ".txt": MIME_TEXT,
    ".text": MIME_TEXT,
    ".md": MIME_MARKDOWN,
    ".markdown": MIME_MARKDOWN,
    ".html": MIME_HTML,
    ".htm": MIME_HTML,
    ".pdf": MIME_PDF,
    ".vtt": MIME_VTT,
    ".srt": MIME_SRT,
    ".jsonl": MIME_JSONL,
    ".ndjson": MIME_JSONL,
}

# other spellings accepted for the ``mime_type`` argument of :func:`parse`
_MIME_ALIASES: dict[str, str] = {
    "text/x-markdown": MIME_MARKDOWN,
    "application/xhtml+xml": MIME_HTML,
    "application/x-pdf": MIME_PDF,
    "text/srt": MIME_SRT,
    "text/x-srt": MIME_SRT,
    "application/srt": MIME_SRT,
    "application/x-jsonlines": MIME_JSONL,
    "application/jsonlines": MIME_JSONL,
    "application/x-ndjson": MIME_JSONL,
    "application/ndjson": MIME_JSONL,
}

_SUPPORTED_HINT = (
    "supported files are .txt, .md, .html, .pdf, .vtt, .srt and .jsonl; "
    "convert it to one of those (e.g. export as PDF or plain text) and ingest that instead"
)


# --------------------------------------------------------------------------- errors


class ParseError(Exception):
    """A file could not be turned into text.

    ``str(err)`` reads ``"<file>: <problem> — <what to do>"``; the parts are kept as
    attributes (``source``, ``problem``, ``hint``) for callers that format their own.
    """

    def __init__(self, problem: str, *, source: str | None = None, hint: str = "") -> None:
        self.source = source
        self.problem = problem
        self.hint = hint
        label = source if source else "<unnamed input>"
        message = f"{label}: {problem}"
        if hint:
            message += f" — {hint}"
        super().__init__(message)


class UnsupportedFormatError(ParseError):
    """The file is of a kind this engine does not read (an image, an archive, binary data ...)."""


class CorruptFileError(ParseError):
    """The file claims a supported format but its content cannot be read."""


# --------------------------------------------------------------------------- results


@dataclass(slots=True)
class Section:
    """A heading and the span of text it governs (up to the next heading of any level)."""

    heading: str
    level: int
    heading_path: list[str]
    char_start: int
    char_end: int


@dataclass(slots=True)
class Segment:
    """One transcript cue: its time span and where its text sits in the document text."""

    start_s: float
    end_s: float
    text: str
    char_start: int
    char_end: int
    speaker: str | None = None


@dataclass(slots=True)
class Link:
    """A hyperlink found in the document (Markdown or HTML), for document-link detection."""

    href: str
    text: str


@dataclass(slots=True)
class ParsedDocument:
    """Canonical text of one document plus the structure found in it.

    ``sections`` are in text order, do not overlap, and tile the text from the first
    heading to the end (text before the first heading belongs to no section).
    """

    text: str
    mime_type: str
    title: str | None = None
    source_id: str | None = None
    sections: list[Section] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)


# --------------------------------------------------------------------------- detection

# Binary formats we recognise by their magic bytes, to say what the file actually is.
_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"PK\x03\x04", "a ZIP archive (or a .docx/.xlsx/.pptx/.epub, which are ZIP files)"),
    (b"PK\x05\x06", "an empty ZIP archive"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"BZh", "a bzip2-compressed file"),
    (b"\xfd7zXZ\x00", "an xz-compressed file"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Microsoft Office file (.doc/.xls/.ppt)"),
    (b"\x7fELF", "an executable program"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"ID3", "an MP3 audio file"),
    (b"OggS", "an Ogg audio/video file"),
    (b"fLaC", "a FLAC audio file"),
    (b"RIFF", "a RIFF media file (WAV/AVI/WebP)"),
    (b"\x1aE\xdf\xa3", "a Matroska/WebM video"),
)

_SNIFF_BYTES = 8192
_SRT_TIMING = re.compile(
    r"^\s*\d{1,2}:\d{1,2}:\d{1,2}[,.]\d{1,3}\s*-->\s*\d{1,2}:\d{1,2}:\d{1,2}[,.]\d{1,3}"
)
# C0 control characters that do not occur in text files (tab, LF, VT, FF, CR, ESC,
# backspace are fine)
_CONTROL_CHARS = frozenset(chr(c) for c in range(32)) - set("\t\n\x0b\x0c\r\x1b\x08")
_MAX_REPLACED_FRACTION = 0.2  # more replaced bytes than this: not UTF-8 text
_MAX_CONTROL_FRACTION = 0.05  # more control characters than this: binary


def _label(path_or_name: str | None) -> str | None:
    return os.fspath(path_or_name) if path_or_name else None


def _extension(path_or_name: str | None) -> str:
    if not path_or_name:
        return ""
    return Path(os.fspath(path_or_name)).suffix.lower()


def _binary_kind(data: bytes) -> str | None:
    for magic, kind in _BINARY_MAGIC:
        if data.startswith(magic):
            return kind
    if data[4:8] == b"ftyp":
        return "an MP4/QuickTime media file"
    return None


def _bom_encoding(data: bytes) -> tuple[str | None, int]:
    if data.startswith(b"\xef\xbb\xbf"):
        return "utf-8", 3
    if data.startswith(b"\xff\xfe"):
        return "utf-16-le", 2
    if data.startswith(b"\xfe\xff"):
        return "utf-16-be", 2
    return None, 0


def _sniff_text(data: bytes) -> str | None:
    """Decode the head of ``data`` if it is text (in any encoding), else return None.

    Binary means NUL bytes (without a UTF-16 BOM) or many C0 control characters.
    Text in an encoding other than UTF-8 still counts as text here; :func:`_decode`
    reports it when parsing.
    """
    encoding, skip = _bom_encoding(data)
    head = data[skip : skip + _SNIFF_BYTES]
    if encoding is None:
        if b"\x00" in head:
            return None
        encoding = "utf-8"
    text = head.decode(encoding, errors="replace")
    if len(data) - skip > _SNIFF_BYTES:
        text = text[:-4]  # the cut may split a multi-byte character
    controls = sum(1 for ch in text if ch in _CONTROL_CHARS)
    if controls > _MAX_CONTROL_FRACTION * len(text):
        return None
    return text


def _first_lines(text: str, n: int) -> list[str]:
    lines = []
    for line in text.split("\n"):
        line = line.strip()
        if line:
            lines.append(line)
            if len(lines) == n:
                break
    return lines


def _looks_like_html(head: str) -> bool:
    s = head.lstrip()
    # skip an XML declaration and leading comments (common in XHTML and exports)
    for _ in range(8):
        if s.startswith("<?"):
            end = s.find("?>")
            s = s[end + 2 :].lstrip() if end >= 0 else ""
        elif s.startswith("<!--"):
            end = s.find("-->")
            s = s[end + 3 :].lstrip() if end >= 0 else ""
        else:
            break
    low = s[:64].lower()
    if low.startswith("<!doctype html"):
        return True
    return low.startswith("<html") and (len(low) == 5 or low[5] in " \t\r\n>")


def _looks_like_vtt(head: str) -> bool:
    s = head.lstrip("\ufeff")
    return s.startswith("WEBVTT") and (len(s) == 6 or s[6] in " \t\r\n")


def _looks_like_srt(head: str) -> bool:
    lines = _first_lines(head, 2)
    return len(lines) == 2 and lines[0].isdigit() and bool(_SRT_TIMING.match(lines[1]))


def _looks_like_jsonl(head: str) -> bool:
    lines = _first_lines(head, 1)
    if not lines or not lines[0].startswith("{"):
        return False
    try:
        obj = json.loads(lines[0])
    except ValueError:
        return False
    return isinstance(obj, dict) and isinstance(obj.get("text"), str)


def detect_mime_type(path_or_name: str | None, data: bytes) -> str:
    """Return the canonical MIME type of a file from its content and its name.

    Content wins where it is unambiguous: a ``%PDF-`` header, a ``WEBVTT`` header,
    an SRT cue (index line then ``00:00:01,000 --> ...``), an HTML document start
    (``<!doctype html`` / ``<html``), or the magic bytes of a known binary format.
    Otherwise the extension decides (``.md``/``.markdown``, ``.html``/``.htm``,
    ``.txt``, ``.pdf``, ``.vtt``, ``.srt``, ``.jsonl``).  A file with no or an unknown
    extension is ``application/jsonl`` if its first line is a JSON object with a
    ``"text"`` field, ``text/plain`` if it decodes as text, and unsupported otherwise.

    Raises :class:`UnsupportedFormatError` for binary or otherwise unreadable kinds.
    """
    label = _label(path_or_name)
    data = bytes(data)
    ext = _extension(path_or_name)
    ext_mime = SUPPORTED_EXTENSIONS.get(ext)

    kind = _binary_kind(data)
    if kind is not None:
        raise UnsupportedFormatError(f"this is {kind}, not a document with text", source=label, hint=_SUPPORTED_HINT)
    if data.lstrip()[:5] == b"%PDF-":
        return MIME_PDF

    head = _sniff_text(data)
    if head is None:
        if ext_mime == MIME_PDF:
            # named .pdf but without a PDF header: let the PDF parser call it corrupt
            return MIME_PDF
        what = f"it has a {ext} extension but" if ext_mime else "it"
        raise UnsupportedFormatError(
            f"{what} contains binary data, not text", source=label, hint=_SUPPORTED_HINT
        )
    if _looks_like_vtt(head):
        return MIME_VTT
    if _looks_like_html(head):
        return MIME_HTML
    if _looks_like_srt(head):
        return MIME_SRT
    if ext_mime is not None:
        return ext_mime
    if _looks_like_jsonl(head):
        return MIME_JSONL
    return MIME_TEXT


# --------------------------------------------------------------------------- helpers


def _normalize_newlines(text: str) -> str:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _decode(data: bytes, label: str | None) -> str:
    """Decode text bytes: BOM if any, else UTF-8, replacing a few bad bytes.

    Raises :class:`CorruptFileError` if most of it is not UTF-8.
    """
    encoding, skip = _bom_encoding(data)
    body = data[skip:]
    if encoding is None:
        encoding = "utf-8"
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError:
        text = body.decode(encoding, errors="replace")
        bad = text.count("\ufffd")
        if bad > _MAX_REPLACED_FRACTION * max(len(text), 1):
            raise CorruptFileError(
                f"{bad} of its {len(text)} characters are not valid {encoding.upper()}",
                source=label,
                hint=(
                    "it is probably in another encoding or not text at all; convert it to UTF-8 "
                    "(e.g. `iconv -f WINDOWS-1252 -t UTF-8 in.txt > out.txt`) and ingest it again"
                ),
            ) from None
    return _normalize_newlines(text)


def _collapse(s: str) -> str:
    return " ".join(s.split())


def _tile_sections(headings: list[tuple[int, int, str]], text_len: int) -> list[Section]:
    """Build sections from ``(char_start, level, heading)`` in text order.

    Each section runs to the start of the next heading (of any level) or to the end
    of the text; ``heading_path`` nests by level.
    """
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    for i, (start, level, heading) in enumerate(headings):
        end = headings[i + 1][0] if i + 1 < len(headings) else text_len
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        sections.append(
            Section(
                heading=heading,
                level=level,
                heading_path=[h for _, h in stack],
                char_start=start,
                char_end=end,
            )
        )
    return sections


# --------------------------------------------------------------------------- plain text


def _parse_text(data: bytes, label: str | None) -> list[ParsedDocument]:
    return [ParsedDocument(text=_decode(data, label), mime_type=MIME_TEXT)]


# --------------------------------------------------------------------------- markdown

_md_parser = None


def _markdown():
    global _md_parser
    if _md_parser is None:
        from markdown_it import MarkdownIt

        _md_parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    return _md_parser


def _md_inline_text(children: Iterable) -> str:
    parts: list[str] = []
    for tok in children:
        if tok.type in ("text", "code_inline", "image"):
            parts.append(tok.content)  # an image's content is its alt text
        elif tok.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return _collapse("".join(parts))


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


def _parse_markdown(data: bytes, label: str | None) -> list[ParsedDocument]:
    text = _decode(data, label)
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
            sections=_tile_sections(headings, len(text)),
            links=links,
        )
    ]


# --------------------------------------------------------------------------- HTML

_HTML_DROP = frozenset(
    {
        "script", "style", "nav", "aside", "noscript", "template", "head", "title",
        "meta", "link", "iframe", "svg", "math", "canvas", "object", "embed", "button",
        "select", "textarea", "input", "audio", "video", "map",
    }
)  # fmt: skip
_HTML_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_HTML_SECTIONING = frozenset({"article", "main", "section"})
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HTML_BLOCKS = frozenset(
    {
        "address", "article", "blockquote", "body", "caption", "center", "dd", "details",
        "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
        "header", "hgroup", "hr", "html", "legend", "li", "main", "menu", "ol", "p",
        "section", "summary", "table", "tbody", "tfoot", "thead", "tr", "ul",
    }
)  # fmt: skip
_JOIN_TIGHT = frozenset({"li", "tr", "dl"})  # consecutive blocks of these kinds: one newline


class _HtmlText:
    """Builds the canonical HTML text one block at a time, tracking offsets."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.length = 0
        self.prev_kind: str | None = None
        self.inline: list[str] = []
        self.block_kind = "p"
        self.prefix = ""  # list marker waiting for the list item's first block
        self.list_counters: dict[int, int] = {}
        self.headings: list[tuple[int, int, str]] = []
        self.links: list[Link] = []

    def emit(self, block: str, kind: str) -> int:
        """Append a finished block; return its start offset."""
        if self.out:
            sep = "\n" if (kind in _JOIN_TIGHT and kind == self.prev_kind) else "\n\n"
            self.out.append(sep)
            self.length += len(sep)
        start = self.length
        self.out.append(block)
        self.length += len(block)
        self.prev_kind = kind
        return start

    def add_text(self, s: str) -> None:
        if not s:
            return
        core = _collapse(s)
        lead = " " if s[0].isspace() else ""
        trail = " " if core and s[-1].isspace() else ""
        self.inline.append(lead + core + trail)

    def line_break(self) -> None:
        self.inline.append("\n")

    def flush(self) -> None:
        if self.inline:
            lines = [_collapse(line) for line in "".join(self.inline).split("\n")]
            block = "\n".join(line for line in lines if line)
            if block:
                if self.prefix:
                    block, self.prefix = self.prefix + block, ""
                self.emit(block, self.block_kind)
        self.inline = []

    def text(self) -> str:
        self.flush()
        return "".join(self.out)


def _html_is_dropped(tag) -> bool:
    name = tag.name
    if name in _HTML_DROP:
        return True
    attrs = tag.attrs or {}
    if "hidden" in attrs or str(attrs.get("aria-hidden", "")).lower() == "true":
        return True
    if str(attrs.get("role", "")).lower() in _HTML_DROP_ROLES:
        return True
    if name in ("header", "footer"):
        # the page banner/footer goes; an <article>'s own header (with its h1) stays
        return not any(p.name in _HTML_SECTIONING for p in tag.parents)
    return False


def _html_inline_text(tag) -> str:
    from bs4 import NavigableString, Tag

    parts: list[str] = []

    def walk(node) -> None:
        for child in node.children:
            if isinstance(child, Tag):
                if _html_is_dropped(child):
                    continue
                if child.name == "br" or child.name in _HTML_BLOCKS:
                    parts.append(" ")
                    walk(child)
                    parts.append(" ")
                elif child.name == "img":
                    parts.append(str(child.get("alt") or ""))
                else:
                    walk(child)
            elif type(child) is NavigableString or child.__class__.__name__ == "CData":
                parts.append(str(child))

    walk(tag)
    return _collapse("".join(parts))


def _html_list_marker(li, b: _HtmlText) -> str:
    lst = li.find_parent(["ol", "ul", "menu"])
    if lst is None or lst.name != "ol":
        return "- "
    key = id(lst)
    if key not in b.list_counters:
        try:
            b.list_counters[key] = int(str(lst.get("start", "1"))) - 1
        except ValueError:
            b.list_counters[key] = 0
    b.list_counters[key] += 1
    return f"{b.list_counters[key]}. "


def _html_walk(node, b: _HtmlText) -> None:
    from bs4 import NavigableString, Tag

    for child in node.children:
        if not isinstance(child, Tag):
            # skip comments, doctypes, processing instructions (subclasses)
            if type(child) is NavigableString or child.__class__.__name__ == "CData":
                b.add_text(str(child))
            continue
        name = child.name
        if _html_is_dropped(child):
            continue
        if name in _HTML_HEADINGS:
            b.flush()
            heading = _html_inline_text(child)
            for a in child.find_all("a", href=True):
                b.links.append(Link(href=str(a["href"]), text=_html_inline_text(a)))
            if heading:
                start = b.emit(heading, "h")
                b.headings.append((start, _HTML_HEADINGS[name], heading))
        elif name == "pre":
            b.flush()
            block = child.get_text().strip("\n").rstrip()
            for a in child.find_all("a", href=True):
                b.links.append(Link(href=str(a["href"]), text=_html_inline_text(a)))
            if block.strip():
                b.emit(block, "pre")
        elif name == "br":
            b.line_break()
        elif name == "img":
            alt = str(child.get("alt") or "").strip()
            if alt:
                b.add_text(f" {alt} ")
        elif name in ("td", "th"):
            if b.inline and child.find_previous_sibling(["td", "th"]) is not None:
                b.add_text(" | ")
            _html_walk(child, b)
        elif name in _HTML_BLOCKS:
            b.flush()
            saved_kind = b.block_kind
            if name == "li":
                b.block_kind = "li"
                b.prefix = _html_list_marker(child, b)
            elif name == "tr":
                b.block_kind = "tr"
            elif name in ("dt", "dd"):
                b.block_kind = "dl"
            _html_walk(child, b)
            b.flush()
            b.block_kind = saved_kind
            if name == "li":
                b.prefix = ""  # an empty item leaves no marker behind
        elif name == "a":
            _html_walk(child, b)
            href = child.get("href")
            if href is not None:
                b.links.append(Link(href=str(href), text=_html_inline_text(child)))
        else:
            _html_walk(child, b)


def _parse_html(data: bytes, label: str | None) -> list[ParsedDocument]:
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:  # pragma: no cover - dependency missing
        raise UnsupportedFormatError(
            "reading HTML needs the beautifulsoup4 package", source=label,
            hint="install it with `pip install beautifulsoup4` and try again",
        ) from exc
    try:
        soup = BeautifulSoup(data, "html.parser")
    except Exception as exc:  # html.parser is lenient; this is a last resort
        raise CorruptFileError(
            f"the HTML could not be parsed ({type(exc).__name__}: {exc})", source=label,
            hint="open it in a browser and save it again, or export it as PDF, then ingest that",
        ) from exc

    title = None
    if soup.title is not None:
        title = _collapse(soup.title.get_text()) or None

    b = _HtmlText()
    try:
        _html_walk(soup, b)
    except RecursionError:
        raise CorruptFileError(
            "the HTML is nested too deeply to read", source=label,
            hint="open it in a browser and save it again, or export it as PDF, then ingest that",
        ) from None
    text = b.text()
    if title is None:
        title = next((h for _, level, h in b.headings if level == 1), None)
    return [
        ParsedDocument(
            text=text,
            mime_type=MIME_HTML,
            title=title,
            sections=_tile_sections(b.headings, len(text)),
            links=b.links,
        )
    ]


# --------------------------------------------------------------------------- PDF


def _pdf_corrupt(label: str | None, problem: str) -> CorruptFileError:
    return CorruptFileError(
        problem,
        source=label,
        hint=(
            "the file looks damaged or truncated; re-download or re-export it "
            "(e.g. 'Print to PDF'), check it opens in a PDF viewer, and ingest it again"
        ),
    )


def _parse_pdf(data: bytes, label: str | None) -> list[ParsedDocument]:
    import logging

    from pypdf import PasswordType, PdfReader

    if data.lstrip()[:5] != b"%PDF-":
        raise _pdf_corrupt(label, "this is not a PDF file (it has no %PDF- header)")

    # pypdf logs every recoverable oddity of real-world PDFs as a warning; keep quiet
    pypdf_logger = logging.getLogger("pypdf")
    previous_level = pypdf_logger.level
    pypdf_logger.setLevel(logging.ERROR)
    try:
        try:
            reader = PdfReader(io.BytesIO(data), strict=False)
        except Exception as exc:
            raise _pdf_corrupt(label, f"the PDF could not be read ({type(exc).__name__}: {exc})") from exc

        if reader.is_encrypted:
            try:
                opened = reader.decrypt("") != PasswordType.NOT_DECRYPTED
            except Exception:
                opened = False
            if not opened:
                raise CorruptFileError(
                    "the PDF is encrypted (password-protected), so its text cannot be read",
                    source=label,
                    hint=(
                        "save an unprotected copy (e.g. `qpdf --decrypt --password=PASSWORD in.pdf out.pdf`) "
                        "and ingest that"
                    ),
                )

        try:
            n_pages = len(reader.pages)
        except Exception as exc:
            raise _pdf_corrupt(label, f"the PDF's page tree is broken ({type(exc).__name__}: {exc})") from exc

        title = None
        try:
            meta = reader.metadata
            if meta is not None and isinstance(meta.title, str):
                title = _collapse(meta.title) or None
        except Exception:
            title = None

        parts: list[str] = []
        headings: list[tuple[int, int, str]] = []
        length = 0
        for number in range(1, n_pages + 1):
            try:
                page_text = reader.pages[number - 1].extract_text() or ""
            except Exception as exc:
                raise _pdf_corrupt(
                    label, f"page {number} could not be read ({type(exc).__name__}: {exc})"
                ) from exc
            page_text = _normalize_newlines(page_text).strip()
            if not page_text:
                continue
            if parts:
                parts.append("\n\n")
                length += 2
            headings.append((length, 1, f"Page {number}"))
            parts.append(page_text)
            length += len(page_text)
    finally:
        pypdf_logger.setLevel(previous_level)

    text = "".join(parts)
    if not text:
        raise UnsupportedFormatError(
            f"the PDF has no extractable text in its {n_pages} page(s); it is probably scanned images",
            source=label,
            hint="run OCR on it first (e.g. `ocrmypdf in.pdf out.pdf`) and ingest the result",
        )
    return [
        ParsedDocument(
            text=text,
            mime_type=MIME_PDF,
            title=title,
            sections=_tile_sections(headings, len(text)),
        )
    ]


# --------------------------------------------------------------------------- transcripts


def _parse_transcript(data: bytes, label: str | None, mime: str) -> list[ParsedDocument]:
    import webvtt
    from webvtt.errors import MalformedCaptionError, MalformedFileError

    raw = _decode(data, label)
    fmt = "WebVTT" if mime == MIME_VTT else "SRT"
    try:
        if mime == MIME_VTT:
            captions_file = webvtt.WebVTT.from_string(raw)
        else:
            captions_file = webvtt.WebVTT.from_buffer([raw], format="srt")
    except (MalformedFileError, MalformedCaptionError, ValueError) as exc:
        expected = (
            'start with a "WEBVTT" line, then cues like "00:00:01.000 --> 00:00:04.000" and their text'
            if mime == MIME_VTT
            else 'be cues of an index line, a "00:00:01,000 --> 00:00:04,000" line and the text'
        )
        raise CorruptFileError(
            f"this is not a valid {fmt} file ({exc})",
            source=label,
            hint=f"a {fmt} file must {expected}; fix the file (or its extension) and ingest it again",
        ) from exc

    parts: list[str] = []
    segments: list[Segment] = []
    length = 0
    for caption in captions_file.captions:
        cue = _collapse(caption.text)
        if mime == MIME_VTT:
            cue = _collapse(_html.unescape(cue))
        if not cue:
            continue
        speaker = caption.voice if mime == MIME_VTT else None
        speaker = _collapse(speaker) if speaker else None
        line = f"{speaker}: {cue}" if speaker else cue
        if parts:
            parts.append("\n")
            length += 1
        segments.append(
            Segment(
                start_s=caption.start_time.in_milliseconds() / 1000.0,
                end_s=caption.end_time.in_milliseconds() / 1000.0,
                text=line,
                char_start=length,
                char_end=length + len(line),
                speaker=speaker,
            )
        )
        parts.append(line)
        length += len(line)

    title = None
    if mime == MIME_VTT:
        header = _collapse(captions_file.header_text or "").lstrip("-– ").strip()
        title = header or None
    return [ParsedDocument(text="".join(parts), mime_type=mime, title=title, segments=segments)]


# --------------------------------------------------------------------------- JSONL


def _parse_jsonl(data: bytes, label: str | None) -> list[ParsedDocument]:
    raw = _decode(data, label)
    docs: list[ParsedDocument] = []
    seen: dict[str, int] = {}
    shape = 'one JSON object per line, like {"_id": "1", "title": "...", "text": "..."}'
    for lineno, line in enumerate(raw.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            detail = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise CorruptFileError(
                f"line {lineno} is not valid JSON ({detail})",
                source=label,
                hint=f"fix or remove line {lineno} ({shape}) and ingest the file again",
            ) from exc
        if not isinstance(obj, dict):
            raise CorruptFileError(
                f"line {lineno} is a JSON {type(obj).__name__}, not an object",
                source=label,
                hint=f"the file must hold {shape}; fix line {lineno} and ingest it again",
            )
        body = obj.get("text")
        if not isinstance(body, str):
            raise CorruptFileError(
                f'line {lineno} has no "text" string field',
                source=label,
                hint=f'add the document text as "text" on line {lineno} ({shape}) and ingest it again',
            )
        raw_id = obj.get("_id", obj.get("id"))
        source_id = None if raw_id is None else str(raw_id)
        if source_id is not None:
            if source_id in seen:
                raise CorruptFileError(
                    f'lines {seen[source_id]} and {lineno} have the same "_id" {source_id!r}',
                    source=label,
                    hint="give every line a unique _id (or drop the duplicate line) and ingest it again",
                )
            seen[source_id] = lineno
        title = obj.get("title")
        title = _collapse(title) or None if isinstance(title, str) else None
        docs.append(
            ParsedDocument(
                text=_normalize_newlines(body), mime_type=MIME_JSONL, title=title, source_id=source_id
            )
        )
    return docs


# --------------------------------------------------------------------------- entry points


def _canonical_mime(mime_type: str, label: str | None) -> str:
    mime = mime_type.split(";", 1)[0].strip().lower()
    mime = _MIME_ALIASES.get(mime, mime)
    if mime not in SUPPORTED_MIME_TYPES:
        raise UnsupportedFormatError(
            f"MIME type {mime_type!r} is not supported", source=label, hint=_SUPPORTED_HINT
        )
    return mime


def parse(data: bytes, *, name: str | None = None, mime_type: str | None = None) -> list[ParsedDocument]:
    """Parse one file's bytes into documents.

    ``name`` (a file name or path) is used for type detection and in error messages;
    ``mime_type`` skips detection.  Returns one document, or one per line for a JSONL
    corpus.  Raises :class:`UnsupportedFormatError` or :class:`CorruptFileError`
    (both :class:`ParseError`), whose messages name the file and say what to do.
    """
    if isinstance(data, str):
        raise TypeError("parse() takes the file's bytes; encode text first (e.g. text.encode('utf-8'))")
    data = bytes(data)
    label = _label(name)
    mime = _canonical_mime(mime_type, label) if mime_type else detect_mime_type(name, data)
    if mime == MIME_TEXT:
        return _parse_text(data, label)
    if mime == MIME_MARKDOWN:
        return _parse_markdown(data, label)
    if mime == MIME_HTML:
        return _parse_html(data, label)
    if mime == MIME_PDF:
        return _parse_pdf(data, label)
    if mime in (MIME_VTT, MIME_SRT):
        return _parse_transcript(data, label, mime)
    if mime == MIME_JSONL:
        return _parse_jsonl(data, label)
    raise AssertionError(f"unhandled MIME type {mime}")  # pragma: no cover


def parse_file(path: str | os.PathLike[str], *, mime_type: str | None = None) -> list[ParsedDocument]:
    """Read ``path`` and :func:`parse` it (the path is used for detection and messages)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ParseError(
            f"the file could not be read ({exc.strerror or exc})",
            source=str(p),
            hint="check that the path exists and is a readable file",
        ) from exc
    return parse(data, name=str(p), mime_type=mime_type)
