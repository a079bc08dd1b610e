"""Plain text: UTF-8 (BOMs honoured; a few bad bytes are replaced), line
endings normalised to ``"\\n"``. Also the fallback for text of no known kind."""

from __future__ import annotations

from ..constants import MIME_TEXT
from .base import Format, ParsedDocument, decode


def parse_text(data: bytes, label: str | None) -> list[ParsedDocument]:
    return [ParsedDocument(text=decode(data, label), mime_type=MIME_TEXT)]


FORMAT = Format(MIME_TEXT, parse_text, extensions=(".txt", ".text"))
