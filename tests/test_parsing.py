"""Tests for amem_db.parsing: format detection, parsers, offsets and error messages."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem_db.parsing import (
    MIME_HTML,
    MIME_JSONL,
    MIME_MARKDOWN,
    MIME_PDF,
    MIME_SRT,
    MIME_TEXT,
    MIME_VTT,
    CorruptFileError,
    ParsedDocument,
    ParseError,
    UnsupportedFormatError,
    detect_mime_type,
    parse,
    parse_file,
)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "sample-corpus"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "parsing"

PDF_BYTES = (SAMPLE / "battery-safety-guide.pdf").read_bytes()
VTT_BYTES = b"WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nhello\n"
SRT_BYTES = b"1\n00:00:01,000 --> 00:00:02,000\nhello\n"
JSONL_BYTES = b'{"_id": "1", "title": "t", "text": "body"}\n'
PNG_BYTES = (FIXTURES / "image-named-notes.md").read_bytes()
JUNK_BYTES = (FIXTURES / "binary-junk.bin").read_bytes()


def one(data: bytes, name: str | None = None, **kw) -> ParsedDocument:
    docs = parse(data, name=name, **kw)
    assert len(docs) == 1
    return docs[0]


def sample(name: str) -> ParsedDocument:
    return one((SAMPLE / name).read_bytes(), name=name)


def assert_sections_tile(doc: ParsedDocument) -> None:
    """Sections are in order, contiguous, in bounds, and run to the end of the text."""
    secs = doc.sections
    for a, b in itertools.pairwise(secs):
        assert a.char_end == b.char_start
    for s in secs:
        assert 0 <= s.char_start < s.char_end <= len(doc.text)
        assert s.heading_path[-1] == s.heading
    if secs:
        assert secs[-1].char_end == len(doc.text)


def assert_segments_exact(doc: ParsedDocument) -> None:
    assert doc.segments
    assert doc.text == "\n".join(seg.text for seg in doc.segments)
    for seg in doc.segments:
        assert doc.text[seg.char_start : seg.char_end] == seg.text
        assert 0 <= seg.start_s <= seg.end_s
    starts = [seg.start_s for seg in doc.segments]
    assert starts == sorted(starts)


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        # by extension
        ("notes.md", b"# Title\n\ntext", MIME_MARKDOWN),
        ("notes.markdown", b"plain words", MIME_MARKDOWN),
        ("NOTES.MD", b"# upper-case extension", MIME_MARKDOWN),
        ("page.html", b"<p>a fragment</p>", MIME_HTML),
        ("page.htm", b"<p>a fragment</p>", MIME_HTML),
        ("readme.txt", b"hello", MIME_TEXT),
        ("doc.pdf", PDF_BYTES, MIME_PDF),
        ("subs.vtt", VTT_BYTES, MIME_VTT),
        ("subs.srt", SRT_BYTES, MIME_SRT),
        ("corpus.jsonl", JSONL_BYTES, MIME_JSONL),
        ("/some/dir/corpus.ndjson", JSONL_BYTES, MIME_JSONL),
        ("utf16.txt", "\ufeffhéllo".encode("utf-16-le"), MIME_TEXT),
        # content wins in clear cases
        ("report.txt", PDF_BYTES, MIME_PDF),
        ("captions.txt", VTT_BYTES, MIME_VTT),
        ("page.md", b"<!DOCTYPE html><html><body><p>x</p></body></html>", MIME_HTML),
        ("page.txt", b"  <html lang='en'><body>x</body></html>", MIME_HTML),
        ("page.md", b"<?xml version='1.0'?>\n<!-- c -->\n<!doctype html><p>x", MIME_HTML),
        ("captions.txt", SRT_BYTES, MIME_SRT),
        ("captions.md", b"\n\n3\n01:02:03.500 --> 01:02:04.000\nhi\n", MIME_SRT),
        # ... but not in unclear ones: the extension decides
        ("notes.md", b"WEBVTTish is not a header", MIME_MARKDOWN),
        ("notes.md", b"<htmlish> tag talk", MIME_MARKDOWN),
        ("notes.txt", b"# looks like markdown", MIME_TEXT),
        ("data.txt", JSONL_BYTES, MIME_TEXT),
        ("fake.pdf", b"hello, not a pdf", MIME_PDF),  # parsing reports it (see below)
        # no or unknown extension: content only
        (None, b"<html><body>x</body></html>", MIME_HTML),
        (None, b"just some words", MIME_TEXT),
        (None, PDF_BYTES, MIME_PDF),
        (None, VTT_BYTES, MIME_VTT),
        (None, SRT_BYTES, MIME_SRT),
        (None, JSONL_BYTES, MIME_JSONL),
        (None, b'{"no_text_field": 1}\n', MIME_TEXT),
        ("NOTES", b"plain text without extension", MIME_TEXT),
        ("table.csv", b"a,b\n1,2\n", MIME_TEXT),
        ("empty", b"", MIME_TEXT),
        ("win.txt", "café au lait".encode("cp1252"), MIME_TEXT),  # text, just not UTF-8
    ],
)
def test_detect_mime_type(name, data, expected):
    assert detect_mime_type(name, data) == expected


@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        (None, JUNK_BYTES, "binary data"),
        ("blob.bin", JUNK_BYTES, "binary data"),
        ("photo.png", PNG_BYTES, "PNG image"),
        ("notes.md", PNG_BYTES, "PNG image"),  # content wins over the extension
        ("report.docx", b"PK\x03\x04" + b"\x00" * 40, "ZIP archive"),
        ("notes.md", b"abc\x00\x01\x02def" * 10, "binary data"),
        ("clip.mp4", b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 20, "MP4"),
    ],
)
def test_detect_rejects_binary(name, data, needle):
    with pytest.raises(UnsupportedFormatError) as info:
        detect_mime_type(name, data)
    message = str(info.value)
    assert needle in message
    assert message.startswith(f"{name}: " if name else "<unnamed input>: ")
    assert "supported files are" in message  # says what to do


# --------------------------------------------------------------------------- plain text


def test_plain_text_sample():
    raw = (SAMPLE / "support-hours.txt").read_text(encoding="utf-8")
    doc = sample("support-hours.txt")
    assert doc.mime_type == MIME_TEXT
    assert doc.text == raw
    assert doc.title is None and doc.sections == [] and doc.segments == []
    assert "MLWK3LL/A" in doc.text


def test_plain_text_newlines_bom_and_stray_bytes():
    doc = one(b"\xef\xbb\xbfline one\r\nline two\rline three\n", name="a.txt")
    assert doc.text == "line one\nline two\nline three\n"
    utf16 = one("\ufeffzwei\r\nZeilen".encode("utf-16-le"), name="b.txt")
    assert utf16.text == "zwei\nZeilen"
    # a few bytes of another encoding are replaced rather than rejected
    mixed = one(b"mostly ascii with one caf\xe9 in it", name="c.txt")
    assert mixed.text == "mostly ascii with one caf\ufffd in it"


def test_plain_text_mostly_undecodable_is_corrupt():
    path = FIXTURES / "windows-1251.txt"
    with pytest.raises(CorruptFileError) as info:
        parse_file(path)
    message = str(info.value)
    assert str(path) in message
    assert "UTF-8" in message and "iconv" in message


# --------------------------------------------------------------------------- Markdown


MD_FILES = [
    "returns-policy.md",
    "warranty.md",
    "shipping-faq.md",
    "loom-keyboard-setup.md",
    "firmware-release-notes.md",
]


@pytest.mark.parametrize("name", MD_FILES)
def test_markdown_sample_sections_are_exact(name):
    raw = (SAMPLE / name).read_text(encoding="utf-8")
    doc = sample(name)
    assert doc.mime_type == MIME_MARKDOWN
    assert doc.text == raw  # the Markdown source, unchanged
    assert doc.title and doc.sections
    assert doc.title == doc.sections[0].heading
    assert doc.sections[0].level == 1
    assert_sections_tile(doc)
    for s in doc.sections:
        first_line = doc.text[s.char_start : s.char_end].split("\n", 1)[0]
        assert first_line == "#" * s.level + " " + s.heading
        assert len(s.heading_path) <= s.level
    assert 300 <= len(doc.text.split()) <= 800


def test_markdown_heading_paths_and_links():
    doc = sample("returns-policy.md")
    by_heading = {s.heading: s for s in doc.sections}
    assert by_heading["Holiday purchases"].heading_path == [
        "Returns Policy",
        "Return window",
        "Holiday purchases",
    ]
    assert by_heading["Holiday purchases"].level == 3
    assert by_heading["Refunds"].heading_path == ["Returns Policy", "Refunds"]
    # text before the first heading belongs to no section (here there is none)
    assert doc.sections[0].char_start == 0
    hrefs = {link.href for link in doc.links}
    assert {"warranty.md", "shipping-faq.md", "warranty.md#what-is-covered"} <= hrefs
    assert any(link.text == "Limited Warranty" for link in doc.links)
    section = by_heading["Headphones and hygiene"]
    assert "TRN-EC7" in doc.text[section.char_start : section.char_end]


def test_markdown_sample_is_cross_linked():
    targets = {name: {link.href.split("#")[0] for link in sample(name).links} for name in MD_FILES}
    assert "warranty.md" in targets["returns-policy.md"]
    assert "returns-policy.md" in targets["warranty.md"]
    assert "firmware-release-notes.md" in targets["loom-keyboard-setup.md"]
    assert "repair-centers.html" in targets["warranty.md"]


def test_markdown_preamble_setext_front_matter_and_inline_markup():
    src = (
        "---\ntitle: 'Front Title'\nauthor: x\n---\n"
        "Intro paragraph before any heading.\n\n"
        "Setext *Heading*\n================\n\nBody with [a link](other.md \"t\").\n\n"
        "> # quoted heading is not a section\n\n"
        "- # neither is a heading in a list\n\n"
        "    # nor an indented code line\n\n"
        "## The `MLWK3LL/A` model ##\r\nText.\r\n"
    )
    doc = one(src.encode(), name="x.md")
    assert doc.title == "Front Title"
    assert doc.text == src.replace("\r\n", "\n")
    assert [s.heading for s in doc.sections] == ["Setext Heading", "The MLWK3LL/A model"]
    assert [s.level for s in doc.sections] == [1, 2]
    assert doc.sections[1].heading_path == ["Setext Heading", "The MLWK3LL/A model"]
    first = doc.sections[0]
    assert doc.text[: first.char_start].endswith("Intro paragraph before any heading.\n\n")
    assert doc.text[first.char_start :].startswith("Setext *Heading*\n====")
    assert doc.text[doc.sections[1].char_start :].startswith("## The `MLWK3LL/A` model ##")
    assert_sections_tile(doc)
    assert [(link.href, link.text) for link in doc.links] == [("other.md", "a link")]


def test_markdown_without_headings():
    doc = one(b"just a paragraph\n\nand another", name="n.md")
    assert doc.sections == [] and doc.title is None


# --------------------------------------------------------------------------- HTML


def test_html_sample_strips_chrome_and_scripts():
    doc = sample("repair-centers.html")
    assert doc.mime_type == MIME_HTML
    assert doc.title == "Authorized Repair Centers | Brightwater Electronics"
    for gone in (
        "SCRIPT_SHOULD_NOT_APPEAR",  # inline script
        "dataLayer",  # script in <head>
        "font-family",  # style
        "Cart (0)",  # nav
        "Search",  # page header with its search form
        "Spring sale",  # aside
        "Privacy",  # footer
        "BW-TRACKING",
    ):
        assert gone not in doc.text
    assert doc.text.startswith("Authorized Repair Centers\n\nAuthorized repair centers can")
    assert "MLWK3LL/A and MLWK3B/A" in doc.text
    assert "- Proof of purchase or the order number." in doc.text
    assert "Key switch replacement (per key) | $12" in doc.text
    assert "Oranienstraße 24" in doc.text
    assert "  " not in doc.text  # whitespace collapsed


def test_html_sample_sections_and_links():
    doc = sample("repair-centers.html")
    assert_sections_tile(doc)
    assert doc.sections[0].char_start == 0
    for s in doc.sections:
        assert doc.text[s.char_start : s.char_end].startswith(s.heading)
    by_heading = {s.heading: s for s in doc.sections}
    assert by_heading["Berlin, Germany"].heading_path == [
        "Authorized Repair Centers",
        "Europe",
        "Berlin, Germany",
    ]
    assert by_heading["Berlin, Germany"].level == 3
    berlin = by_heading["Berlin, Germany"]
    assert "MLWK3D/A" in doc.text[berlin.char_start : berlin.char_end]
    # only content links: nav and footer links are gone with their elements
    assert [(link.href, link.text) for link in doc.links] == [
        ("warranty.md", "Limited Warranty"),
        ("returns-policy.md", "Returns Policy"),
    ]


def test_html_structure_details():
    page = (
        b"<html><body><header><h1>Site banner</h1></header>"
        b"<article><header><h1>Post <em>title</em></h1></header>"
        b"<p>Para   one\n with <b>bold</b>&nbsp;text<br>and a break.</p>"
        b"<div hidden>hidden div</div><p aria-hidden='true'>aria hidden</p>"
        b"<div role='navigation'>role nav</div>"
        b"<ol><li>first<li>second</ol>"
        b"<h2>Code</h2><pre>  indented\n    more</pre>"
        b"<!-- a comment --><h3></h3><p>after empty heading</p></article></body></html>"
    )
    doc = one(page, name="post.html")
    assert doc.title == "Post title"  # no <title>: the first <h1> left
    assert "Site banner" not in doc.text  # the page header is dropped ...
    assert [s.heading for s in doc.sections] == ["Post title", "Code"]  # ... the article's is not
    assert "Para one with bold text\nand a break." in doc.text
    for gone in ("hidden div", "aria hidden", "role nav", "a comment"):
        assert gone not in doc.text
    assert "1. first\n2. second" in doc.text
    assert "  indented\n    more" in doc.text
    assert_sections_tile(doc)


# --------------------------------------------------------------------------- PDF


def test_pdf_sample_pages():
    doc = sample("battery-safety-guide.pdf")
    assert doc.mime_type == MIME_PDF
    assert doc.title == "Battery Safety and Recycling Guide"
    assert [s.heading for s in doc.sections] == ["Page 1", "Page 2", "Page 3"]
    assert [s.heading_path for s in doc.sections] == [["Page 1"], ["Page 2"], ["Page 3"]]
    assert_sections_tile(doc)
    pages = [doc.text[s.char_start : s.char_end] for s in doc.sections]
    assert pages[0].startswith("Battery Safety and Recycling Guide")
    assert pages[1].startswith("Charging safely")
    assert pages[2].startswith("Recycling and take-back")
    assert "MLWK3LL/A" in pages[0]
    assert "100 Wh" in pages[1]
    assert "take-back" in pages[2] and "Charging safely" not in pages[2]


def _pdf_writer_bytes(writer) -> bytes:
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def test_pdf_encrypted_is_corrupt_with_clear_message():
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=io.BytesIO(PDF_BYTES))
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    with pytest.raises(CorruptFileError) as info:
        parse(_pdf_writer_bytes(writer), name="locked.pdf")
    message = str(info.value)
    assert message.startswith("locked.pdf: ")
    assert "encrypted" in message and "qpdf --decrypt" in message


def test_pdf_with_empty_user_password_opens():
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=io.BytesIO(PDF_BYTES))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    doc = one(_pdf_writer_bytes(writer), name="owner-only.pdf")
    assert len(doc.sections) == 3


def test_pdf_without_text_is_unsupported():
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    with pytest.raises(UnsupportedFormatError) as info:
        parse(_pdf_writer_bytes(writer), name="scan.pdf")
    assert "scan.pdf" in str(info.value) and "OCR" in str(info.value)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("truncated.pdf", (FIXTURES / "truncated.pdf").read_bytes()),
        ("fake.pdf", b"hello, not a pdf"),
        ("junk.pdf", b"%PDF-1.7\n" + JUNK_BYTES),
        ("junk.pdf", JUNK_BYTES),  # binary without a PDF header, named .pdf
    ],
)
def test_pdf_corrupt(name, data):
    with pytest.raises(CorruptFileError) as info:
        parse(data, name=name)
    message = str(info.value)
    assert message.startswith(f"{name}: ")
    assert "re-download or re-export" in message


# --------------------------------------------------------------------------- transcripts


def test_vtt_sample_segments():
    doc = sample("support-call-2024-03-14.vtt")
    assert doc.mime_type == MIME_VTT
    assert doc.title == "Support call 2024-03-14: Loom keyboard types letters twice"
    assert_segments_exact(doc)
    assert len(doc.segments) == 15
    first, second = doc.segments[0], doc.segments[1]
    assert (first.start_s, first.end_s) == (0.0, 4.2)
    assert first.speaker == "Priya"
    assert first.text == "Priya: Thanks for calling Brightwater support, this is Priya. How can I help?"
    # a two-line cue becomes one line
    assert second.text == (
        "Daniel: Hi. My Loom keyboard has started typing some letters twice. "
        "It's the US one, model MLWK3LL/A."
    )
    assert doc.segments[7].start_s == 112.0  # 00:01:52.000
    assert "replace it & you" in doc.text  # character references decoded
    assert "Recorded with the customer's consent" not in doc.text  # NOTE blocks are comments
    assert doc.sections == []


def test_srt_sample_segments():
    doc = sample("tern-h700-webinar.srt")
    assert doc.mime_type == MIME_SRT
    assert_segments_exact(doc)
    assert len(doc.segments) == 15
    assert (doc.segments[0].start_s, doc.segments[0].end_s) == (1.0, 6.5)
    assert doc.segments[-1].end_s == 120.0
    sixth = doc.segments[5]
    assert sixth.text == "Battery life is about 38 hours with noise cancelling on and about 45 hours with it off."
    assert "<b>" not in doc.text
    assert "TRN-H700-BLK" in doc.text
    assert all(seg.speaker is None for seg in doc.segments)


def test_transcript_crlf_and_empty_cues():
    srt = b"1\r\n00:00:00,500 --> 00:00:01,250\r\nfirst\r\n\r\n2\r\n00:00:02,000 --> 00:00:03,000\r\n<i></i>\r\n\r\n3\r\n00:00:04,000 --> 00:00:05,000\r\nthird\r\n"
    doc = one(srt, name="x.srt")
    assert [s.text for s in doc.segments] == ["first", "third"]
    assert doc.segments[0].start_s == 0.5 and doc.segments[0].end_s == 1.25
    assert_segments_exact(doc)


def test_vtt_without_header_is_corrupt():
    path = FIXTURES / "no-header.vtt"
    with pytest.raises(CorruptFileError) as info:
        parse_file(path)
    assert str(path) in str(info.value) and "WEBVTT" in str(info.value)


# --------------------------------------------------------------------------- JSONL


def test_jsonl_sample_one_document_per_line():
    path = SAMPLE / "scifact-sample.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    docs = parse(path.read_bytes(), name=path.name)
    assert len(docs) == len(lines) == 50
    for doc, row in zip(docs, lines):
        assert doc.mime_type == MIME_JSONL
        assert doc.source_id == row["_id"]
        assert doc.title == row["title"]
        assert doc.text == row["text"]  # the title is kept separately, not prepended
    assert "31715818" in {d.source_id for d in docs}


def test_jsonl_sample_is_taken_from_scifact():
    from amem_db.harness.paths import datasets_root

    corpus = datasets_root() / "scifact" / "corpus.jsonl"
    if not corpus.exists():
        pytest.skip("shared/datasets/scifact is not present")
    wanted = set((SAMPLE / "scifact-sample.jsonl").read_bytes().splitlines())
    found = {line for line in corpus.read_bytes().splitlines() if line in wanted}
    assert found == wanted


def test_jsonl_variants():
    data = (
        b'\n{"_id": 7, "title": "  ", "text": "a\\r\\nb"}\n\n'
        b'{"id": "x", "text": "no title"}\n'
        b'{"text": "no id", "metadata": {"k": 1}}\n'
    )
    docs = parse(data, name="c.jsonl")
    assert [(d.source_id, d.title, d.text) for d in docs] == [
        ("7", None, "a\nb"),
        ("x", None, "no title"),
        (None, None, "no id"),
    ]


@pytest.mark.parametrize(
    ("data", "needles"),
    [
        ((FIXTURES / "bad-line.jsonl").read_bytes(), ["line 3 is not valid JSON", "fix or remove line 3"]),
        (b'{"text": "ok"}\n[1, 2]\n', ["line 2 is a JSON list, not an object"]),
        (b'{"text": "ok"}\n{"title": "t"}\n', ['line 2 has no "text" string field']),
        (b'{"_id": "1", "text": "a"}\n{"_id": "1", "text": "b"}\n', ["lines 1 and 2", "_id"]),
        # hostile inputs that used to escape the error tree (RecursionError, UnicodeEncodeError later on)
        (b'{"_id": "1", "text": "ok"}\n{"_id": "2", "text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", ["line 2", "nests"]),
        (b'{"_id": "1", "text": "bad \\ud800 here"}\n', ["line 1", "lone UTF-16 surrogate", '"text"']),
        (b'{"_id": "1", "title": "\\udc00", "text": "fine"}\n', ["line 1", '"title"']),
    ],
)
def test_jsonl_bad_lines(data, needles):
    with pytest.raises(CorruptFileError) as info:
        parse(data, name="corpus.jsonl")
    message = str(info.value)
    assert message.startswith("corpus.jsonl: ")
    for needle in needles:
        assert needle in message


# --------------------------------------------------------------------------- whole sample / API


EXPECTED_SAMPLE = {
    "returns-policy.md": MIME_MARKDOWN,
    "warranty.md": MIME_MARKDOWN,
    "shipping-faq.md": MIME_MARKDOWN,
    "loom-keyboard-setup.md": MIME_MARKDOWN,
    "firmware-release-notes.md": MIME_MARKDOWN,
    "support-hours.txt": MIME_TEXT,
    "repair-centers.html": MIME_HTML,
    "battery-safety-guide.pdf": MIME_PDF,
    "support-call-2024-03-14.vtt": MIME_VTT,
    "tern-h700-webinar.srt": MIME_SRT,
    "scifact-sample.jsonl": MIME_JSONL,
}


def test_every_sample_file_parses():
    files = sorted(p.name for p in SAMPLE.iterdir() if p.is_file())
    assert files == sorted(EXPECTED_SAMPLE)
    for name, mime in EXPECTED_SAMPLE.items():
        data = (SAMPLE / name).read_bytes()
        assert detect_mime_type(name, data) == mime
        assert detect_mime_type(None, data) in (mime, MIME_TEXT)  # .md/.txt look alike
        for doc in parse_file(SAMPLE / name):
            assert doc.mime_type == mime
            assert doc.text.strip()
            assert_sections_tile(doc)


def test_identifiers_are_present_across_formats():
    docs = {name: parse_file(SAMPLE / name) for name in EXPECTED_SAMPLE}
    with_code = {name for name, ds in docs.items() if any("MLWK3LL/A" in d.text for d in ds)}
    assert len(with_code) >= 6
    assert any("RMA-2024-00417" in d.text for d in docs["support-call-2024-03-14.vtt"])


def test_mime_type_argument():
    assert one(b"# Hi", mime_type="text/x-markdown").sections[0].heading == "Hi"
    assert one(b"# Hi", mime_type="text/plain; charset=utf-8").sections == []
    assert one(SRT_BYTES, mime_type="text/srt").segments[0].text == "hello"
    with pytest.raises(UnsupportedFormatError) as info:
        parse(b"x", name="a.docx", mime_type="application/msword")
    assert str(info.value).startswith("a.docx: MIME type 'application/msword' is not supported")


def test_errors_share_a_base_and_keep_their_parts():
    assert issubclass(UnsupportedFormatError, ParseError)
    assert issubclass(CorruptFileError, ParseError)
    with pytest.raises(ParseError) as info:
        parse(JUNK_BYTES, name="blob.bin")
    err = info.value
    assert err.source == "blob.bin" and err.problem and err.hint
    with pytest.raises(ParseError) as missing:
        parse_file(FIXTURES / "does-not-exist.md")
    assert "does-not-exist.md" in str(missing.value) and "check that the path exists" in str(missing.value)
    with pytest.raises(TypeError):
        parse("a str, not bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fixture",
    ["truncated.pdf", "binary-junk.bin", "image-named-notes.md", "bad-line.jsonl", "windows-1251.txt", "no-header.vtt"],
)
def test_every_broken_fixture_names_the_file(fixture):
    path = FIXTURES / fixture
    with pytest.raises(ParseError) as info:
        parse_file(path)
    assert str(info.value).startswith(f"{path}: ")
    assert info.value.hint


# --------------------------------------------------------------------------- properties

# Text that cannot start or form Markdown block syntax: letters (any script), marks,
# digits, symbols such as emoji, and inner spaces.
_SAFE_CHARS = st.characters(categories=["L", "M", "N", "So"], exclude_characters="\x00")
_safe_text = st.builds(
    lambda first, rest: first + rest,
    st.characters(categories=["L", "So"]),
    st.text(alphabet=st.one_of(_SAFE_CHARS, st.just(" ")), max_size=30),
).map(str.rstrip)

_block = st.one_of(
    st.tuples(st.just("h"), st.integers(min_value=1, max_value=6), _safe_text),
    st.tuples(st.just("p"), st.just(0), _safe_text),
)


def _expected_paths(headings: list[tuple[int, str]]) -> list[list[str]]:
    paths, stack = [], []
    for level, text in headings:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        paths.append([t for _, t in stack])
    return paths


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.lists(_block, max_size=12), newline=st.sampled_from(["\n", "\r\n", "\r"]), trailing=st.booleans())
def test_property_markdown_headings_become_exact_sections(blocks, newline, trailing):
    lines = ["#" * level + " " + text if kind == "h" else text for kind, level, text in blocks]
    source = (newline + newline).join(lines) + (newline if trailing else "")
    doc = one(source.encode("utf-8"), name="random.md")
    assert doc.text == source.replace("\r\n", "\n").replace("\r", "\n")
    headings = [(level, " ".join(text.split())) for kind, level, text in blocks if kind == "h"]
    assert [(s.level, s.heading) for s in doc.sections] == headings
    assert [s.heading_path for s in doc.sections] == _expected_paths(headings)
    assert_sections_tile(doc)
    for s, (kind_level, text) in zip(doc.sections, [(b[1], b[2]) for b in blocks if b[0] == "h"]):
        assert doc.text[s.char_start :].startswith("#" * kind_level + " " + text)
    if doc.sections:
        before = doc.text[: doc.sections[0].char_start]
        assert "#" not in before.split("\n")[-1]


_markdownish_line = st.one_of(
    st.text(max_size=20),  # any Unicode, incl. controls, NUL, U+2028, BOM ...
    st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 7), st.text(max_size=15)),
    st.builds(lambda i, t: " " * i + "# " + t, st.integers(0, 5), st.text(max_size=10)),
    st.sampled_from(["===", "---", "***", "```", "~~~", "> # quote", "- # item", "1. x", "<div>", "|a|b|", "\ufeff", "\u2028", "\x0c", ""]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_markdownish_line, max_size=25), newline=st.sampled_from(["\n", "\r\n", "\r"]))
def test_property_random_markdown_sections_tile(lines, newline):
    source = newline.join(lines)
    doc = one(source.encode("utf-8"), mime_type="text/markdown")
    expected = source.replace("\r\n", "\n").replace("\r", "\n")
    assert doc.text == expected.removeprefix("\ufeff")
    assert_sections_tile(doc)
    text = doc.text
    for s in doc.sections:
        assert s.char_start == 0 or text[s.char_start - 1] == "\n"  # headings start lines
        assert 1 <= s.level <= 6
        body = text[s.char_start : s.char_end].split("\n")
        atx = body[0].lstrip(" ").startswith("#")
        setext = any(line.strip() and set(line.strip()) <= {"=", "-"} for line in body[1:])
        assert atx or setext


# --- the package layout: one module per format, one explicit registry ---------------------
def test_every_format_module_is_in_the_registry():
    """A format module (amem_db/parsing/<name>.py with a Format) that is not
    listed in FORMATS would silently never be used: registration is explicit."""
    import importlib
    import pkgutil

    from amem_db import constants, parsing
    from amem_db.parsing.base import Format

    declared = []
    for info in pkgutil.iter_modules(parsing.__path__):
        module = importlib.import_module(f"amem_db.parsing.{info.name}")
        declared += [v for v in vars(module).values() if isinstance(v, Format)]
    assert declared and set(declared) == set(parsing.FORMATS)
    assert len({f.mime for f in parsing.FORMATS}) == len(parsing.FORMATS)
    # what the parsers produce is what the SurrealQL counts by literal (one copy, in constants)
    assert set(parsing.SUPPORTED_MIME_TYPES) <= set(constants.KNOWN_MIME_TYPES)
    for name in ("MIME_TEXT", "MIME_MARKDOWN", "MIME_HTML", "MIME_PDF", "MIME_VTT", "MIME_SRT", "MIME_JSONL"):
        assert getattr(parsing, name) is getattr(constants, name)


def test_no_second_copy_of_the_mime_types():
    from amem_db import constants, parsing

    for path in Path(parsing.__file__).parent.glob("*.py"):
        source = path.read_text()
        for mime in constants.KNOWN_MIME_TYPES:
            assert f'"{mime}"' not in source and f"'{mime}'" not in source, (path.name, mime)


def test_parse_error_is_an_amem_error():
    from amem_db.errors import AmemError

    assert issubclass(ParseError, AmemError)
    assert ParseError("x").code == "unreadable_file"
