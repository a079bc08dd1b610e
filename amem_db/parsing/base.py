"""What every format module shares: the results (ParsedDocument and its
Section / Segment / Link), the errors, and the text helpers (decoding,
newline normalisation, whitespace collapsing, sections tiled from headings).

Offsets are exact indexes into :attr:`ParsedDocument.text`
(``doc.text[s.char_start:s.char_end]``): chunking happens in SurrealQL and
relies on them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import AmemError

SUPPORTED_HINT = (
    "supported files are .txt, .md, .html, .pdf, .vtt, .srt and .jsonl; "
    "convert it to one of those (e.g. export as PDF or plain text) and ingest that instead"
)

_MAX_REPLACED_FRACTION = 0.2  # more replaced bytes than this: not UTF-8 text


# --------------------------------------------------------------------------- errors


class ParseError(AmemError):
    """A file could not be turned into text.

    ``str(err)`` reads ``"<file>: <problem> — <what to do>"``; the parts are kept as
    attributes (``source``, ``problem``, ``hint``) for callers that format their own.
    An :class:`~amem_db.errors.AmemError` with code ``unreadable_file`` (the code an
    ingest report gives such a file).
    """

    code = "unreadable_file"

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
    #: where the document applies, as the file gave it (a JSONL ``location`` field, a
    #: Markdown front matter ``location:``); parsed and checked by fn::amem::geo::stored
    location: str | dict[str, Any] | None = None



# --------------------------------------------------------------------------- formats

#: a parser: (the file's bytes, its label for messages) -> documents
Parser = Callable[[bytes, "str | None"], "list[ParsedDocument]"]


@dataclass(frozen=True, slots=True)
class Format:
    """One supported format, as a format module declares it (``FORMAT = Format(...)``)
    and ``amem_db.parsing.FORMATS`` lists it.

    Detection (``amem_db.parsing.detect``) asks, in order: ``magic`` (content that
    starts with these bytes is this format, whatever the name), ``sniff`` with
    ``sniff_first`` (a text head this format recognises beats the extension), the
    ``extensions``, then ``sniff`` without ``sniff_first`` (only for unknown
    extensions). ``binary`` formats are not text: a file with their extension goes
    to their parser even when it does not look like text (it reports the damage).
    """

    mime: str
    parse: Parser
    extensions: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other spellings accepted for ``mime_type``
    magic: bytes | None = None
    sniff: Callable[[str], bool] | None = None
    sniff_first: bool = False
    binary: bool = False


# --------------------------------------------------------------------------- helpers


def bom_encoding(data: bytes) -> tuple[str | None, int]:
    if data.startswith(b"\xef\xbb\xbf"):
        return "utf-8", 3
    if data.startswith(b"\xff\xfe"):
        return "utf-16-le", 2
    if data.startswith(b"\xfe\xff"):
        return "utf-16-be", 2
    return None, 0


def normalize_newlines(text: str) -> str:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def decode(data: bytes, label: str | None) -> str:
    """Decode text bytes: BOM if any, else UTF-8, replacing a few bad bytes.

    Raises :class:`CorruptFileError` if most of it is not UTF-8.
    """
    encoding, skip = bom_encoding(data)
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
    return normalize_newlines(text)


def collapse(s: str) -> str:
    return " ".join(s.split())


def tile_sections(headings: list[tuple[int, int, str]], text_len: int) -> list[Section]:
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

