"""Transcripts with ``webvtt-py`` (WebVTT, and SRT through its SRT reader): one
line per cue, cues joined by ``"\\n"``, a cue's own line breaks become spaces
and a WebVTT voice (``<v Alice>``) is written ``"Alice: "``; each cue is a
Segment with its start/end seconds. A WebVTT header line is the title."""

from __future__ import annotations

import html as _html
import re

from ..constants import MIME_SRT, MIME_VTT
from .base import CorruptFileError, Format, ParsedDocument, Segment, collapse, decode

_SRT_TIMING = re.compile(
    r"^\s*\d{1,2}:\d{1,2}:\d{1,2}[,.]\d{1,3}\s*-->\s*\d{1,2}:\d{1,2}:\d{1,2}[,.]\d{1,3}"
)


def _parse_transcript(data: bytes, label: str | None, mime: str) -> list[ParsedDocument]:
    import webvtt
    from webvtt.errors import MalformedCaptionError, MalformedFileError

    raw = decode(data, label)
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
        cue = collapse(caption.text)
        if mime == MIME_VTT:
            cue = collapse(_html.unescape(cue))
        if not cue:
            continue
        speaker = caption.voice if mime == MIME_VTT else None
        speaker = collapse(speaker) if speaker else None
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
        header = collapse(captions_file.header_text or "").lstrip("-– ").strip()
        title = header or None
    return [ParsedDocument(text="".join(parts), mime_type=mime, title=title, segments=segments)]


def _first_lines(text: str, n: int) -> list[str]:
    lines = []
    for line in text.split("\n"):
        line = line.strip()
        if line:
            lines.append(line)
            if len(lines) == n:
                break
    return lines


def looks_like_vtt(head: str) -> bool:
    s = head.lstrip("\ufeff")
    return s.startswith("WEBVTT") and (len(s) == 6 or s[6] in " \t\r\n")


def looks_like_srt(head: str) -> bool:
    lines = _first_lines(head, 2)
    return len(lines) == 2 and lines[0].isdigit() and bool(_SRT_TIMING.match(lines[1]))


def _parse_vtt(data: bytes, label: str | None) -> list[ParsedDocument]:
    return _parse_transcript(data, label, MIME_VTT)


def _parse_srt(data: bytes, label: str | None) -> list[ParsedDocument]:
    return _parse_transcript(data, label, MIME_SRT)


VTT = Format(MIME_VTT, _parse_vtt, extensions=(".vtt",), sniff=looks_like_vtt, sniff_first=True)
SRT = Format(MIME_SRT, _parse_srt, extensions=(".srt",), aliases=("text/srt", "text/x-srt", "application/srt"),
             sniff=looks_like_srt, sniff_first=True)
