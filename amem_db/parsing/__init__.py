"""Turn files into canonical text plus structure (sections, transcript segments, links).

This package only does I/O-side work: it decodes bytes, runs a real parser for the
format and reports *where* structure sits in the text.  Chunking and ranking happen
in SurrealQL and index into :attr:`ParsedDocument.text` with ``char_start``/``char_end``
offsets, so every offset produced here is an exact index into that string
(``doc.text[s.char_start:s.char_end]``).

One module per format, each declaring a :class:`Format` (``FORMAT = Format(...)``);
:data:`FORMATS` below is the registry, an explicit list (importing a module
registers nothing). Supported formats (canonical MIME type -> module, parser):

=========================  ==============  ===========================================
``text/plain``             ``text``        UTF-8 (BOMs honoured; a few bad bytes replaced)
``text/markdown``          ``markdown``    ``markdown-it-py`` (CommonMark); text is the source
``text/html``              ``html``        BeautifulSoup with the stdlib ``html.parser``
``application/pdf``        ``pdf``         ``pypdf``; one section per page ("Page N")
``text/vtt``               ``transcript``  ``webvtt-py``
``application/x-subrip``   ``transcript``  ``webvtt-py`` (its SRT reader)
``application/jsonl``      ``jsonl``       ``json``; one document per ``{"_id","title","text"}`` line
=========================  ==============  ===========================================

To add a format (say ``.docx``): write ``amem_db/parsing/docx.py`` with a parser
``(data: bytes, label: str | None) -> list[ParsedDocument]`` and its ``FORMAT``,
add it to :data:`FORMATS`, and its MIME type to ``amem_db/constants.py``
(``KNOWN_MIME_TYPES``, which the query's index-only counts render from).

The MIME constants are ``amem_db.constants``' (one copy, shared with the SurrealQL).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..constants import (
    MIME_HTML,
    MIME_JSONL,
    MIME_MARKDOWN,
    MIME_PDF,
    MIME_SRT,
    MIME_TEXT,
    MIME_VTT,
)
from . import html, jsonl, markdown, pdf, text, transcript
from .base import (
    SUPPORTED_HINT,
    CorruptFileError,
    Format,
    Link,
    ParsedDocument,
    ParseError,
    Section,
    Segment,
    UnsupportedFormatError,
)
from .detect import detect, label

__all__ = [
    "FORMATS",
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
    "Format",
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

#: the registry: every format the parsers read (detection asks them in this order)
FORMATS: tuple[Format, ...] = (
    text.FORMAT,
    markdown.FORMAT,
    html.FORMAT,
    pdf.FORMAT,
    transcript.VTT,
    transcript.SRT,
    jsonl.FORMAT,
)

_BY_MIME: dict[str, Format] = {f.mime: f for f in FORMATS}
SUPPORTED_MIME_TYPES: tuple[str, ...] = tuple(_BY_MIME)
#: file extension (lower case, with dot) -> canonical MIME type
SUPPORTED_EXTENSIONS: dict[str, str] = {ext: f.mime for f in FORMATS for ext in f.extensions}
# other spellings accepted for the ``mime_type`` argument of :func:`parse`
_MIME_ALIASES: dict[str, str] = {alias: f.mime for f in FORMATS for alias in f.aliases}


def detect_mime_type(path_or_name: str | os.PathLike[str] | None, data: bytes) -> str:
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
    return detect(FORMATS, path_or_name, data)


def _canonical_mime(mime_type: str, name: str | None) -> str:
    mime = mime_type.split(";", 1)[0].strip().lower()
    mime = _MIME_ALIASES.get(mime, mime)
    if mime not in _BY_MIME:
        raise UnsupportedFormatError(
            f"MIME type {mime_type!r} is not supported", source=name, hint=SUPPORTED_HINT
        )
    return mime


def parse(data: bytes, *, name: str | None = None, mime_type: str | None = None) -> list[ParsedDocument]:
    """Parse one file's bytes into documents.

    ``name`` (a file name or path) is used for type detection and in error messages;
    ``mime_type`` skips detection.  Returns one document, or one per line for a JSONL
    corpus.  Raises :class:`UnsupportedFormatError` or :class:`CorruptFileError`
    (both :class:`ParseError`, an :class:`~amem_db.errors.AmemError`), whose messages
    name the file and say what to do.
    """
    if isinstance(data, str):
        raise TypeError("parse() takes the file's bytes; encode text first (e.g. text.encode('utf-8'))")
    data = bytes(data)
    name = label(name)
    mime = _canonical_mime(mime_type, name) if mime_type else detect_mime_type(name, data)
    return _BY_MIME[mime].parse(data, name)


def parse_file(path: str | os.PathLike[str], *, mime_type: str | None = None) -> list[ParsedDocument]:
    """Read ``path`` and :func:`parse` it (the path is used for detection and messages)."""
    p = Path(path)
    if p.is_symlink() and not p.exists():
        raise ParseError(f"a symbolic link to {os.readlink(p)}, which does not exist", source=str(p),
                         hint="fix or remove the link")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ParseError(
            f"the file could not be read ({exc.strerror or exc})",
            source=str(p),
            hint="check that the path exists and is a readable file",
        ) from exc
    return parse(data, name=str(p), mime_type=mime_type)
