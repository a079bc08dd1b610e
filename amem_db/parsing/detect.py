"""Which format a file is, from its content and its name (see
:func:`detect_mime_type`); the formats themselves are ``amem_db.parsing.FORMATS``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..constants import MIME_TEXT
from .base import SUPPORTED_HINT, Format, UnsupportedFormatError, bom_encoding

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
# C0 control characters that do not occur in text files (tab, LF, VT, FF, CR, ESC,
# backspace are fine)
_CONTROL_CHARS = frozenset(chr(c) for c in range(32)) - set("\t\n\x0b\x0c\r\x1b\x08")
_MAX_CONTROL_FRACTION = 0.05  # more control characters than this: binary


def label(path_or_name: str | os.PathLike[str] | None) -> str | None:
    return os.fspath(path_or_name) if path_or_name else None


def extension(path_or_name: str | os.PathLike[str] | None) -> str:
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


def _sniff_text(data: bytes) -> str | None:
    """Decode the head of ``data`` if it is text (in any encoding), else return None.

    Binary means NUL bytes (without a UTF-16 BOM) or many C0 control characters.
    Text in an encoding other than UTF-8 still counts as text here; :func:`~amem_db.parsing.base.decode`
    reports it when parsing.
    """
    encoding, skip = bom_encoding(data)
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


def detect(formats: Sequence[Format], path_or_name: str | os.PathLike[str] | None, data: bytes) -> str:
    """``amem_db.parsing.detect_mime_type`` over the registry ``formats`` (the rules are in its docstring)."""
    name = label(path_or_name)
    data = bytes(data)
    ext = extension(path_or_name)
    by_ext = next((f for f in formats if ext in f.extensions), None)

    kind = _binary_kind(data)
    if kind is not None:
        raise UnsupportedFormatError(f"this is {kind}, not a document with text", source=name, hint=SUPPORTED_HINT)
    start = data.lstrip()
    for f in formats:
        if f.magic is not None and start[: len(f.magic)] == f.magic:
            return f.mime

    head = _sniff_text(data)
    if head is None:
        if by_ext is not None and by_ext.binary:
            # named .pdf but without a PDF header: let its parser call it corrupt
            return by_ext.mime
        what = f"it has a {ext} extension but" if by_ext else "it"
        raise UnsupportedFormatError(
            f"{what} contains binary data, not text", source=name, hint=SUPPORTED_HINT
        )
    for f in formats:
        if f.sniff is not None and f.sniff_first and f.sniff(head):
            return f.mime
    if by_ext is not None:
        return by_ext.mime
    for f in formats:
        if f.sniff is not None and not f.sniff_first and f.sniff(head):
            return f.mime
    return MIME_TEXT
