"""JSONL corpora: one document per ``{"_id", "title", "text"}`` line. ``text``
is the line's text only; ``title`` and ``_id`` (:attr:`ParsedDocument.source_id`)
are kept apart, so offsets index the body and the caller decides how to weigh
the title."""

from __future__ import annotations

import json

from ..constants import MIME_JSONL
from .base import CorruptFileError, Format, ParsedDocument, collapse, decode, normalize_newlines


def _parse_jsonl(data: bytes, label: str | None) -> list[ParsedDocument]:
    raw = decode(data, label)
    docs: list[ParsedDocument] = []
    seen: dict[str, int] = {}
    shape = 'one JSON object per line, like {"_id": "1", "title": "...", "text": "..."}'
    for lineno, line in enumerate(raw.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except RecursionError as exc:  # Python's decoder recurses per nesting level
            raise CorruptFileError(
                f"line {lineno} nests arrays or objects deeper than the JSON decoder allows",
                source=label,
                hint=f"flatten or remove line {lineno} ({shape}) and ingest the file again",
            ) from exc
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
        bad = next((k for k in ("text", "title") if isinstance(obj.get(k), str) and not _encodable(obj[k])), None)
        if bad:
            raise CorruptFileError(
                f'line {lineno} has a lone UTF-16 surrogate escape (such as \\ud800) in "{bad}": it is not text',
                source=label,
                hint=f"fix the escape on line {lineno} (a surrogate pair, or the character itself) and ingest the file again",
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
        title = collapse(title) or None if isinstance(title, str) else None
        docs.append(
            ParsedDocument(
                text=normalize_newlines(body), mime_type=MIME_JSONL, title=title, source_id=source_id,
                location=obj.get("location"),
            )
        )
    return docs


def _encodable(text: str) -> bool:
    """False for a string holding a lone surrogate (JSON allows the escape; UTF-8 cannot carry it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def looks_like_jsonl(head: str) -> bool:
    lines = [line.strip() for line in head.split("\n") if line.strip()][:1]
    if not lines or not lines[0].startswith("{"):
        return False
    try:
        obj = json.loads(lines[0])
    except ValueError:
        return False
    return isinstance(obj, dict) and isinstance(obj.get("text"), str)


FORMAT = Format(MIME_JSONL, _parse_jsonl, extensions=(".jsonl", ".ndjson"),
                aliases=("application/x-jsonlines", "application/jsonlines", "application/x-ndjson", "application/ndjson"),
                sniff=looks_like_jsonl)
