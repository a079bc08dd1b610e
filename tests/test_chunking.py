"""fn::amem::chunk::split on the real engine: a case table, validation, and a
hypothesis property over random Unicode documents and section layouts.

Whitespace is the engine's: the Unicode White_Space property (Rust
``char::is_whitespace``, regex ``\\s``, ``string::trim``, ``string::words`` all
agree). It is Python's ``str.isspace`` minus U+001C..U+001F, which Python counts
as whitespace and the engine does not.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from surrealdb.errors import ThrownError

SPLIT = "RETURN fn::amem::chunk::split($text, $sections, $size, $overlap)"


def is_ws(ch: str) -> bool:
    return ch.isspace() and not ("\x1c" <= ch <= "\x1f")


async def split(db, text: str, sections=(), size: int = 800, overlap: int = 120) -> list[dict]:
    res = await db.query(SPLIT, {"text": text, "sections": list(sections), "size": size, "overlap": overlap})
    return res[0]


def sec(start: int, end: int, heading: str = "h") -> dict:
    return {"heading": heading, "level": 1, "heading_path": [heading], "char_start": start, "char_end": end}


def spans_of(n: int, sections) -> list[tuple[int, int, int | None]]:
    """[start, end, section index or None) covering [0, n), like the stored function."""
    spans, end = [], 0
    for i, s in enumerate(sections):
        if s["char_start"] > end:
            spans.append((end, s["char_start"], None))
        if s["char_end"] > s["char_start"]:
            spans.append((s["char_start"], s["char_end"], i))
        end = s["char_end"]
    if end < n:
        spans.append((end, n, None))
    return spans


def word_around(doc: str, lo: int, hi: int, i: int) -> int:
    """Length of the non-whitespace run of doc[lo:hi] containing index i."""
    a = i
    while a > lo and not is_ws(doc[a - 1]):
        a -= 1
    b = i
    while b < hi and not is_ws(doc[b]):
        b += 1
    return b - a


def reference_split(doc: str, sections, size: int, overlap: int) -> list[tuple[int, int, int | None]]:
    """The documented algorithm, written plainly (slow) in Python: (char_start, char_end, section)."""
    out = []
    for a, b, section in spans_of(len(doc), sections):
        p, prev = a, None  # prev: (chunk start, core start, core end) of the previous chunk in this span
        while True:
            while p < b and is_ws(doc[p]):
                p += 1
            if p >= b:
                break
            limit = size if prev is None else size - overlap
            c = 0  # longest run of whole words within the limit
            for e in range(p + 1, min(b, p + limit) + 1):
                if not is_ws(doc[e - 1]) and (e == b or is_ws(doc[e])):
                    c = e - p
            if c == 0:  # first word longer than the limit: whole if <= size, else hard split
                e = p
                while e < b and not is_ws(doc[e]):
                    e += 1
                c = min(e - p, size)
            start = p
            if prev is not None:
                chunk_start, core_start, core_end = prev
                budget = min(overlap, size - (p - core_end) - c)
                if budget > 0:
                    # the longest tail of the previous core that starts at a word start; the
                    # whole previous core only if its chunk began earlier (never repeat a chunk)
                    if core_end - core_start <= budget and chunk_start < core_start:
                        start = core_start
                    else:
                        lo = max(core_end - budget, core_start + 1)
                        starts = [q for q in range(lo, core_end) if is_ws(doc[q - 1]) and not is_ws(doc[q])]
                        start = starts[0] if starts else p
            out.append((start, p + c, section))
            prev, p = (start, p, p + c), p + c
    return out


def check_chunks(doc: str, sections, size: int, overlap: int, chunks: list[dict]) -> None:
    """Every invariant the function promises."""
    assert [c["position"] for c in chunks] == list(range(len(chunks)))
    spans = spans_of(len(doc), sections)
    by_span: dict[int, list[dict]] = {k: [] for k in range(len(spans))}
    for c in chunks:
        cs, ce, text = c["char_start"], c["char_end"], c["text"]
        assert 0 <= cs < ce <= len(doc), c
        assert doc[cs:ce] == text, c  # exact, in code points
        assert len(text) <= size, c  # hard split keeps even long words within size
        assert not is_ws(text[0]) and not is_ws(text[-1]), c
        home = [k for k, (a, b, _) in enumerate(spans) if a <= cs and ce <= b]
        assert len(home) == 1, ("chunk crosses a section boundary", c, spans)
        a, b, section = spans[home[0]]
        assert c.get("section") == section, (c, spans[home[0]])
        by_span[home[0]].append(c)
        # never inside a word, except the hard split of a word longer than size
        if cs > a and not is_ws(doc[cs - 1]):
            assert word_around(doc, a, b, cs) > size, ("starts inside a word", c)
        if ce < b and not is_ws(doc[ce]):
            assert word_around(doc, a, b, ce - 1) > size, ("ends inside a word", c)
    for i in range(1, len(chunks)):
        assert chunks[i]["char_start"] > chunks[i - 1]["char_start"]
        assert chunks[i]["char_end"] > chunks[i - 1]["char_end"]
    for k, (a, b, _) in enumerate(spans):
        mine = by_span[k]
        covered = bytearray(b - a)
        for c in mine:
            covered[c["char_start"] - a : c["char_end"] - a] = b"\x01" * (c["char_end"] - c["char_start"])
        missing = [i for i in range(a, b) if not is_ws(doc[i]) and not covered[i - a]]
        assert not missing, ("non-whitespace not covered", missing[:5], spans[k])
        for prev, cur in zip(mine, mine[1:]):
            assert prev["char_end"] - cur["char_start"] <= overlap, (prev, cur)


# --- case table -------------------------------------------------------------------

NUMBERS = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
HEADED = "intro text\n# A\nalpha beta\n# B\ngamma"
_SEPS = ["\u00a0", " ", "\u2028", "\u3000"]
UNICODE_WORDS = "".join(w + _SEPS[i % 4] for i, w in enumerate(["🙂x", "中文字", "e\u0301\u0301", "👩‍👧", "déjà"] * 5)).rstrip()


async def test_defaults(db):
    assert (await db.query("RETURN fn::amem::chunk::defaults()"))[0] == {"size": 800, "overlap": 120}


CASES = [
    pytest.param(
        "no sections, fits", "alpha beta  gamma", [], 50, 10,
        [(0, 17, None)], id="fits-in-one",
    ),
    pytest.param(
        "greedy with overlap", NUMBERS, [], 50, 10,
        # cores of <= 50 then <= 40 chars; each later chunk repeats <= 10 chars of the one before
        [(0, 48, None), (40, 88, None), (81, 96, None)], id="overlap",
    ),
    pytest.param(
        "no overlap", NUMBERS, [], 50, 0,
        [(0, 48, None), (49, 96, None)], id="no-overlap",
    ),
    pytest.param(
        "text before the first heading", HEADED, [sec(11, 26, "A"), sec(26, 35, "B")], 50, 10,
        [(0, 10, None), (11, 25, 0), (26, 35, 1)], id="sections-and-preamble",
    ),
    pytest.param(
        "gaps between sections and after the last", "pre A-body mid B-body post",
        [sec(4, 10), sec(15, 21)], 50, 10,
        [(0, 3, None), (4, 10, 0), (11, 14, None), (15, 21, 1), (22, 26, None)], id="gaps",
    ),
    pytest.param(
        "a section boundary inside a word cuts it", "abcdef ghi", [sec(0, 3), sec(3, 10)], 50, 0,
        [(0, 3, 0), (3, 10, 1)], id="boundary-in-word",
    ),
    pytest.param(
        "word longer than size: hard split into size-long pieces", "x" * 120 + " tail end", [], 50, 10,
        [(0, 50, None), (50, 100, None), (100, 129, None)], id="long-word",
    ),
    pytest.param(
        "word longer than the overlap-reduced limit but within size stays whole",
        "a " + "y" * 49 + " b", [], 50, 10,
        [(0, 1, None), (2, 51, None), (52, 53, None)], id="word-between-limits",
    ),
    pytest.param("exactly size", "a" * 50, [], 50, 0, [(0, 50, None)], id="exact-size"),
    pytest.param("size + 1 with a space", "a" * 49 + " b", [], 50, 0, [(0, 49, None), (50, 51, None)], id="size-plus-one"),
    pytest.param("exactly size with a space", "a" * 48 + " b", [], 50, 0, [(0, 50, None)], id="exact-with-space"),
    pytest.param("leading/trailing blanks trimmed", "  \n hello world \t\n", [], 50, 0, [(4, 15, None)], id="trim"),
    pytest.param("empty", "", [], 800, 120, [], id="empty"),
    pytest.param("whitespace only", " \n\t\u00a0\u3000 ", [], 800, 120, [], id="whitespace-only"),
    pytest.param(
        "whitespace-only section", "body\n\n   \nmore", [sec(0, 4), sec(4, 10), sec(10, 14)], 50, 0,
        [(0, 4, 0), (10, 14, 2)], id="whitespace-only-section",
    ),
    pytest.param(
        "unicode: emoji, ZWJ, CJK, combining marks, NBSP/U+3000 are whitespace, U+001C is not",
        "héllo 🙂🙂 👩‍👩‍👧 中文字 e\u0301t\u00e9\u00a0nbsp\u3000ideo\x1cfs", [], 50, 0,
        [(0, 36, None)], id="unicode",
    ),
    pytest.param(
        "unicode offsets across chunks (code points, not bytes or UTF-16 units)", UNICODE_WORDS, [], 50, 10,
        [(0, 50, None), (40, 90, None), (80, 99, None)], id="unicode-split",
    ),
]


@pytest.mark.parametrize("label, text, sections, size, overlap, expected", CASES)
async def test_cases(db, label, text, sections, size, overlap, expected):
    chunks = await split(db, text, sections, size, overlap)
    got = [(c["char_start"], c["char_end"], c.get("section")) for c in chunks]
    assert got == expected, label
    assert got == reference_split(text, sections, size, overlap)
    check_chunks(text, sections, size, overlap, chunks)


async def test_tiny_size_long_text(db):
    words = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"] * 40
    text = " ".join(words)
    chunks = await split(db, text, [], 50, 25)
    check_chunks(text, [], 50, 25, chunks)
    assert len(chunks) > 10
    # with short words the overlap is close to the requested one
    overlaps = [a["char_end"] - b["char_start"] for a, b in zip(chunks, chunks[1:])]
    assert min(overlaps) >= 25 - len("consectetur") - 1


async def test_same_input_same_chunks(db):
    text = " ".join(f"w{i}" for i in range(3000))
    a = await split(db, text, [], 200, 40)
    b = await split(db, text, [], 200, 40)
    assert a == b
    check_chunks(text, [], 200, 40, a)


# --- validation -------------------------------------------------------------------

BAD = [
    pytest.param("abc", [], 49, 0, "size", id="size-too-small"),
    pytest.param("abc", [], 20001, 0, "size", id="size-too-large"),
    pytest.param("abc", [], 100, -1, "overlap", id="overlap-negative"),
    pytest.param("abc", [], 100, 51, "overlap", id="overlap-over-half"),
    pytest.param("abc", [sec(0, 4)], 100, 10, "sections[0]", id="section-past-end"),
    pytest.param("abc", [sec(-1, 2)], 100, 10, "sections[0]", id="section-negative"),
    pytest.param("abcdef", [sec(3, 2)], 100, 10, "sections[0]", id="section-reversed"),
    pytest.param("abcdef", [sec(0, 4), sec(3, 6)], 100, 10, "sections[1]", id="sections-overlap"),
    pytest.param("abcdef", [sec(3, 6), sec(0, 2)], 100, 10, "sections[1]", id="sections-unordered"),
    pytest.param("abcdef", [{"heading": "h", "char_start": "0", "char_end": 3}], 100, 10, "sections[0]", id="section-offset-not-int"),
    pytest.param("abcdef", [{"heading": "h"}], 100, 10, "sections[0]", id="section-offsets-missing"),
]


@pytest.mark.parametrize("text, sections, size, overlap, field", BAD)
async def test_invalid_input(db, text, sections, size, overlap, field):
    with pytest.raises(ThrownError) as info:
        await split(db, text, sections, size, overlap)
    # the engine prefixes THROW messages with "An error occurred: "
    message = str(info.value).split("An error occurred: ", 1)[-1]
    assert message.startswith("amem:invalid_input:"), message
    assert field in message, message


async def test_boundary_values_accepted(db):
    for size, overlap in [(50, 0), (50, 25), (20000, 10000), (801, 400)]:
        check_chunks("a b c", [], size, overlap, await split(db, "a b c", [], size, overlap))


# --- property ---------------------------------------------------------------------

WORDS = st.one_of(
    st.sampled_from(["the", "a", "memory", "agent", "retrieval", "SurrealDB", "x", "déjà", "naïve",
                     "🙂", "👩‍👩‍👧", "🇺🇳", "中文", "字", "日本語のテキスト", "e\u0301", "\u200bzw", "fs\x1csep",
                     "العربية", "ÅÄÖ", "—", "...", "(x)"]),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=8)
    .map(lambda s: "".join(ch for ch in s if not is_ws(ch)) or "w"),
    st.integers(40, 400).map(lambda n: "L" * n),  # sometimes longer than size
)
SEPARATORS = st.sampled_from([" ", " ", " ", "  ", "\n", "\n\n", "\t", "\u00a0", "\u3000", "\u2028", " \n ",
                              " " * 60, "\n" * 120, " \u00a0" * 200])  # runs longer than size, too


@st.composite
def documents(draw):
    words = draw(st.lists(WORDS, min_size=0, max_size=120))
    parts = []
    for w in words:
        parts.append(w)
        parts.append(draw(SEPARATORS))
    lead = draw(st.sampled_from(["", " ", "\n\n"]))
    doc = lead + "".join(parts)
    n = len(doc)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    sections, i = [], 0
    while i + 1 < len(cuts):
        if draw(st.booleans()):  # sometimes leave a gap (text outside any section)
            sections.append(sec(cuts[i], cuts[i + 1]))
        i += draw(st.sampled_from([1, 2]))
    size = draw(st.sampled_from([50, 51, 64, 100, 150, 300]))
    overlap = draw(st.integers(0, size // 2))
    return doc, sections, size, overlap


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=documents())
async def test_property_random_documents(db, case):
    doc, sections, size, overlap = case
    chunks = await split(db, doc, sections, size, overlap)
    check_chunks(doc, sections, size, overlap, chunks)
    got = [(c["char_start"], c["char_end"], c.get("section")) for c in chunks]
    assert got == reference_split(doc, sections, size, overlap)


async def test_walk_doubles_a_short_first_guess(db):
    """split guesses the number of steps; run with a far too small guess (one batch of one step) must give the same chunks."""
    text = " ".join(f"w{i}" for i in range(2500)) + " " + "L" * 130 + "  end"
    sections = [sec(0, 4000), sec(4100, len(text))]
    expected = await split(db, text, sections, 50, 10)
    got = (await db.query(
        "RETURN fn::amem::chunk::run($text, fn::amem::chunk::plan_spans($sections, string::len($text)), 50, 10, 1, 1)",
        {"text": text, "sections": sections},
    ))[0]
    assert got == expected
    check_chunks(text, sections, 50, 10, got)


async def test_many_sections(db):
    text = "".join(f"# H{i}\nbody of section {i} with some words\n" for i in range(1500))
    starts = [i for i in range(len(text)) if text.startswith("# H", i)]
    sections = [sec(a, b) for a, b in zip(starts, starts[1:] + [len(text)])]
    chunks = await split(db, text, sections, 800, 120)
    assert len(chunks) == len(sections)
    check_chunks(text, sections, 800, 120, chunks)


# --- a large document (its speed: scripts/measure/chunk_split_timings.py) ---------


async def test_100kb_document_is_cut_whole(db):
    words = ["memory", "agents", "retrieve", "chunks", "of", "text", "über", "中文", "🙂", "a"]
    parts, n, i = [], 0, 0
    while n < 100_000:
        w = words[(i * 7) % len(words)] + ("\n\n" if i % 97 == 0 else " ")
        parts.append(w)
        n += len(w)
        i += 1
    text = "".join(parts)[:100_000]
    headings = [sec(k * 10_000, (k + 1) * 10_000) for k in range(10)]
    chunks = await split(db, text, headings, 800, 120)
    check_chunks(text, headings, 800, 120, chunks)
