"""Mentions (issue 11, surql/280_mentions): passage -> entity edges with the character
span, kept when a passage is written after the names and when names (canonical or
alias) are written after the passage, on the real engine. Word bounds, punctuation,
multi-word names and spans against a plain Python reference (hypothesis); no
duplicates; the scope rule (owner session here; record users in tests/test_security.py);
all or nothing; document replacement and deletion take their edges along.

One migrated database for the module: each test names its own entities and scopes."""

from __future__ import annotations

import itertools
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem_db.constants import LENS_SLOTS
from amem_db.db import call
from amem_db.errors import AmemError

_n = itertools.count()
# the punctuation class of surql/280_mentions and migrations/0007
PUNCT = set(".,;:!?\"'()[]{}<>«»“”„‘’‚…–—/\\|*_~-")


def key(record) -> str:
    """A record id's key, however the driver spells the record (RecordID, "t:k", "t:⟨k⟩")."""
    return str(record).split(":", 1)[1].strip("⟨⟩`")


def uid() -> str:
    """A word no other test uses (letters only: digits would be words of their own)."""
    n = next(_n)
    return "z" + "".join("abcdefghij"[int(d)] for d in str(n)) + "q"


async def write_fact(db, name: str, *, type_: str = "person", aliases: list[str] | None = None,
                     scopes: list[str] | None = None, text: str | None = None) -> dict:
    entity = {"type": type_, "name": name, **({"aliases": aliases} if aliases else {})}
    req = {"triples": [{"entity": entity, "key": "note", "value": "x"}], "scopes": scopes or ["org/m"]}
    if text:
        req["text"] = text
    return await call(db, "fn::amem::facts::write", req, None)


async def write_text(db, text: str, scopes: list[str] | None = None) -> list[str]:
    out = await call(db, "fn::amem::facts::write", {"text": text, "scopes": scopes or ["org/m"]}, None)
    return [key(p) for p in out["passages"]]


async def ingest(db, text: str, scopes: list[str] | None = None, source: str | None = None) -> str:
    out = await call(db, "fn::amem::documents::ingest",
                     {"text": text, "mime_type": "text/plain", "source": source or uid(), "scopes": scopes or ["org/m"]}, None)
    return str(out["document"]["id"])


async def edges(db, entity_name: str, type_: str = "person") -> list[dict]:
    """Edges to one entity: [{passage, table, span (text[start:end]), start, end, scopes}]."""
    (rows,) = await db.query(
        "SELECT in AS passage, record::tb(in) AS tb, in.text AS text, char_start, char_end, scopes FROM mentions "
        "WHERE out = type::record('entity', $id) ORDER BY passage, char_start",
        {"id": f"{type_}/{' '.join(entity_name.lower().split())}"})
    return [{"passage": key(r["passage"]), "table": r["tb"], "span": r["text"][r["char_start"]:r["char_end"]],
             "start": r["char_start"], "end": r["char_end"], "scopes": r["scopes"]} for r in rows]


async def count_edges(db) -> int:
    (rows,) = await db.query("SELECT count() FROM mentions GROUP ALL")
    return rows[0]["count"] if rows else 0


# --- the key ------------------------------------------------------------------------------
async def test_key_function_equals_the_stored_field(db):
    """fn::amem::mentions::key must stay equal to the VALUE of entity_name.mention_key (migrations/0007)."""
    names = ["Acme Inc.", "O'Brien", "Dr. J.R.R. Tolkien", "Wi-Fi  Alliance", "C++", "AT&T", "(Al)", "«Zoë» Ünal",
             "a/b|c*d_e~f", "   spaced   out  "]
    for n in names:
        await write_fact(db, n + " " + uid(), type_="topic")
    (rows,) = await db.query("SELECT name_norm, mention_key, fn::amem::mentions::key(name_norm) AS fresh FROM entity_name")
    assert len(rows) >= len(names)
    for r in rows:
        assert r["mention_key"] == r["fresh"], r
    keys = {r["name_norm"].rsplit(" ", 1)[0]: r["mention_key"].rsplit(" ", 1)[0] for r in rows}
    assert keys["acme inc."] == "acme inc" and keys["o'brien"] == "o brien" and keys["c++"] == "c++"
    assert keys["dr. j.r.r. tolkien"] == "dr j r r tolkien" and keys["wi-fi alliance"] == "wi fi alliance"


# --- direction 1: the passage is written after the names -------------------------------------
async def test_chunk_written_after_the_entity_gets_edges_with_spans(db):
    who = f"Alice {uid()}"
    await write_fact(db, who)
    text = f"Minutes.\n{who} opened; later {who.upper()}, and again ({who}). {who}'s plan was approved."
    await ingest(db, text)
    got = await edges(db, who)
    assert [e["span"] for e in got] == [who, who.upper(), who, who]
    assert all(e["table"] == "chunk" and e["scopes"] == ["org/m"] for e in got)


async def test_memory_passage_written_after_the_entity_gets_edges(db):
    who = f"Bob {uid()}"
    await write_fact(db, who, aliases=["Bobby " + uid()])
    (passage,) = await write_text(db, f"Yesterday {who} called about the invoice.")
    got = await edges(db, who)
    assert [(e["passage"], e["span"]) for e in got] == [(passage, who)]
    assert got[0]["table"] == "memory_chunk"


async def test_one_write_with_entity_and_text_links_its_own_passage(db):
    who = f"Carol {uid()}"
    out = await write_fact(db, who, text=f"{who} moved to the Berlin office.")
    got = await edges(db, who)
    assert [(e["passage"], e["span"]) for e in got] == [(key(out["passages"][0]), who)]


# --- direction 2: the names are written after the passage --------------------------------------
async def test_entity_written_after_the_passages_gets_edges(db):
    who = f"Dave {uid()}"
    await ingest(db, f"The report by {who} is due. Nothing else.")
    (passage,) = await write_text(db, f"Ask {who} about it.")
    assert await edges(db, who) == []
    await write_fact(db, who)
    got = await edges(db, who)
    assert sorted((e["table"], e["span"]) for e in got) == [("chunk", who), ("memory_chunk", who)]
    assert passage in [e["passage"] for e in got]


async def test_alias_written_after_the_passage_gets_edges(db):
    who, alias = f"Erin {uid()}", f"E {uid()}"
    await write_fact(db, who)
    await ingest(db, f"Notes: {alias} signed the contract; {alias.lower()} also paid.")
    assert await edges(db, who) == []
    await write_fact(db, who, aliases=[alias])
    assert [e["span"] for e in await edges(db, who)] == [alias, alias.lower()]


async def test_repeated_writes_make_no_duplicates(db):
    who = f"Frank {uid()}"
    await write_fact(db, who, aliases=[f"Frankie {uid()}"])
    await ingest(db, f"{who} and {who}.")
    await write_text(db, f"{who} again.")
    n = await count_edges(db)
    assert len(await edges(db, who)) == 3
    for _ in range(2):
        await write_fact(db, who)
        await write_fact(db, who, aliases=[who.upper()])  # an alias equal to the name is dropped
    (linked,) = await db.query(
        "RETURN fn::amem::mentions::of_passages((SELECT VALUE in FROM mentions WHERE out = type::record('entity', $id)))",
        {"id": "person/" + who.lower()})
    assert linked == 0 and await count_edges(db) == n


# --- what "names" means ---------------------------------------------------------------------
async def test_word_bounds_punctuation_and_multi_word_names(db):
    tag = uid()
    al, full, acme, obrien = f"Al{tag}", f"Alice{tag} Smith", f"Acme{tag} Inc.", f"O'Brien{tag}"
    for n in (al, full, obrien):
        await write_fact(db, n)
    await write_fact(db, acme, type_="organisation")
    text = (f"{al}ice is not {al}. Neither is X{al} nor {al}2, but ({al}), \"{al}\" and {al}'s are. "
            f"{full.split()[0]}\n   Smith wrote; {full.split()[0]}. Smith did not. "
            f"Acme{tag} Inc., rival of ACME{tag} INC and of Acme{tag}, Inc. {obrien}'s dog; O Brien{tag} is someone else.")
    await ingest(db, text)
    assert [e["span"] for e in await edges(db, al)] == [al, al, al, al]
    assert [e["span"] for e in await edges(db, full)] == [f"{full.split()[0]}\n   Smith"]
    # edge punctuation of a name is not required (the span stops at the word), inner punctuation is
    assert [e["span"] for e in await edges(db, acme, "organisation")] == [f"Acme{tag} Inc", f"ACME{tag} INC"]
    assert [e["span"] for e in await edges(db, obrien)] == [obrien]


def reference_spans(text: str, name: str) -> list[tuple[int, int]]:
    """The matching rules of surql/280_mentions in plain Python (ASCII text)."""
    norm = " ".join(name.split()).lower()
    key = " ".join("".join(" " if c in PUNCT else c for c in norm).split())
    n = len(key.split())
    if n == 0 or n > 4:
        return []
    want = norm.strip("".join(PUNCT)).strip()
    cut = "".join(" " if c in PUNCT or c.isspace() else c for c in text)
    words = [(m.start(), m.end(), m.group().lower()) for m in re.finditer(r"[^ ]+", cut)]
    out = []
    for i in range(len(words) - n + 1):
        if " ".join(w for _, _, w in words[i:i + n]) == key:
            s, e = words[i][0], words[i + n - 1][1]
            if " ".join(text[s:e].split()).lower() == want:
                out.append((s, e))
    return out


VOCAB = ["al", "Al", "alice", "Al.", "(al)", "al's", "smith", "Smith,", "o'brien", "O", "brien", "x-al", "-", ".", "al-smith"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=14),
       seps=st.lists(st.sampled_from([" ", "  ", "\n", " \t "]), min_size=14, max_size=14),
       name=st.sampled_from(["Al", "al smith", "O'Brien", "Smith", "Al-Smith", "al. smith", "(Al)"]))
async def test_spans_equal_a_python_reference(db, words, seps, name):
    """Random passages over a vocabulary of near misses: the stored function finds exactly
    the spans the reference finds, and each span is the name as written (case aside)."""
    text = "".join(w + s for w, s in zip(words, seps, strict=False)).strip()
    row = {"entity": "entity:x", "name_norm": " ".join(name.split()).lower(), "scope_keys": []}
    (_, got) = await db.query("LET $r = object::extend($row, { mention_key: fn::amem::mentions::key($row.name_norm), want: fn::amem::mentions::want($row.name_norm) });"
                            "RETURN fn::amem::mentions::matches(fn::amem::mentions::words([$t]), [$r])",
                            {"row": row, "t": text})
    assert [(s["start"], s["end"]) for s in got] == reference_spans(text, name)
    assert all(" ".join(text[s["start"]:s["end"]].split()).lower() == name.lower().strip("(). ") for s in got)


# --- scopes (owner session: the rule itself; record users: tests/test_security.py) ----------------
async def test_scope_rule_needs_every_reader_of_the_passage_to_read_a_matching_name(db):
    who = f"Gail {uid()}"
    await write_fact(db, who, scopes=["org/s/a"])
    cases = {  # passage scopes -> is there an edge
        ("org/s/a",): True, ("org/s",): True,  # org/s readers read names in org/s/a (below their grant)
        ("org/s/a/team",): False,  # a team reader cannot read the org/s/a name
        ("org/s/b",): False, ("org/s/a", "org/s/b"): False,
    }
    for scopes in cases:
        await write_text(db, f"{who} at {'+'.join(scopes)}.", list(scopes))
    got = {tuple(e["scopes"]) for e in await edges(db, who)}
    assert got == {s for s, want in cases.items() if want}
    # a name row in org/s/b too: the passage in both scopes is now covered by the union
    await write_fact(db, who, scopes=["org/s/b"])
    got = {tuple(e["scopes"]) for e in await edges(db, who)}
    assert got == {("org/s/a",), ("org/s",), ("org/s/b",), ("org/s/a", "org/s/b")}
    assert all(e["span"] == who for e in await edges(db, who))


async def test_an_alias_in_another_scope_makes_no_edge(db):
    who, secret = f"Hank {uid()}", f"Secret{uid()}"
    await write_fact(db, who, scopes=["org/x"])
    await write_fact(db, who, aliases=[secret], scopes=["org/y"])  # the alias lives in org/y only
    await ingest(db, f"{who} is {secret}.", scopes=["org/x"])
    assert [e["span"] for e in await edges(db, who)] == [who]


# --- one transaction; replacement and deletion ------------------------------------------------------
async def test_a_failed_write_leaves_no_edges(db):
    who = f"Ivan {uid()}"
    await ingest(db, f"{who} wrote this.")
    before = await count_edges(db)
    # the write (and its mentions) runs, then the transaction fails: nothing stays
    raw = await db.query_raw("BEGIN; LET $out = fn::amem::facts::write($r, NONE);"
                             "THROW 'amem:internal: edges ' + <string> array::len(SELECT id FROM mentions WHERE out = type::record('entity', $eid)); COMMIT;",
                             {"r": {"triples": [{"entity": {"type": "person", "name": who}, "key": "k", "value": "v"}],
                                    "text": f"{who} again", "scopes": ["org/m"]}, "eid": "person/" + who.lower()})
    statuses = [(r["status"], str(r["result"])) for r in raw["result"]]
    # inside the transaction the write had linked the old chunk and its own passage
    assert statuses[2] == ("ERR", "An error occurred: amem:internal: edges 2") and statuses[3][0] == "ERR"
    assert await count_edges(db) == before and await edges(db, who) == []
    with pytest.raises(AmemError):  # an invalid write fails before anything is written
        await call(db, "fn::amem::facts::write", {"triples": [{"entity": {"type": "person", "name": who}, "key": "k",
                                                               "value": "v"}], "text": f"{who}", "role": "boss"}, None)
    assert await count_edges(db) == before


async def test_replacing_and_deleting_a_document_removes_its_edges(db):
    who, source = f"Jill {uid()}", uid()
    await write_fact(db, who)
    doc = await ingest(db, f"{who} one. {who} two.", source=source)
    assert len(await edges(db, who)) == 2
    assert await ingest(db, f"Now only {who}.", source=source) == doc  # replaced: fresh chunks
    got = await edges(db, who)
    assert [e["span"] for e in got] == [who] and got[0]["start"] == len("Now only ")
    await call(db, "fn::amem::documents::delete", doc)
    assert await edges(db, who) == []
    (dangling,) = await db.query("SELECT count() FROM mentions WHERE in.id = NONE GROUP ALL")
    assert dangling in ([], [{"count": 0}])


async def test_a_long_document_is_linked_across_batches(db):
    """More than one batch of passages (32) and pieces past every power of two of the
    offset scan: the spans of the first and last chunks are still exact."""
    who = f"Kim {uid()}"
    await write_fact(db, who)
    filler = " ".join(f"word{'abcdefghij'[i % 10]}, (x) -" for i in range(2400))
    text = f"{who} opens.\n\n{filler}\n\nClosing remark by {who.lower()}; and  {who}."
    doc = await ingest(db, text)
    (chunks,) = await db.query("SELECT count() FROM chunk WHERE document = type::record($d) GROUP ALL", {"d": doc})
    assert chunks[0]["count"] > 32
    got = await edges(db, who)
    assert [e["span"] for e in got[:1]] == [who] and sorted(e["span"] for e in got[1:]) == [who, who.lower()]
    (starts,) = await db.query("SELECT VALUE char_start FROM chunk WHERE document = type::record($d) ORDER BY position", {"d": doc})
    assert got[0]["start"] == 0 and starts[0] == 0


async def test_every_edge_of_a_corpus_equals_the_reference(db):
    """Many documents and names (half written before the documents, half after: both
    directions, several batches): the stored edges are exactly the reference spans."""
    rnd = random.Random(5)
    tag = uid()
    vocab = [f"{w}{tag}" for w in ("ab", "cd", "ef", "gh", "ij", "kl")] + ["the", "of", "Al", "Alice"]
    punct = ["", "", "", ",", ".", "'s", ")", ";"]
    names = list(dict.fromkeys(" ".join(rnd.sample(vocab, rnd.randint(1, 3))) for _ in range(14)))
    docs = [" ".join(("(" if rnd.random() < 0.1 else "") + rnd.choice(vocab) + rnd.choice(punct) for _ in range(rnd.randint(50, 400)))
            for _ in range(8)]
    scope = [f"org/c{tag}"]
    for n in names[:7]:
        await write_fact(db, n, type_="concept", scopes=scope)
    ids = [await ingest(db, d, scopes=scope) for d in docs]
    for n in names[7:]:
        await write_fact(db, n, type_="concept", scopes=scope)
    (chunks,) = await db.query("SELECT id, text FROM chunk WHERE document IN array::map($d, |$x| type::record($x))", {"d": ids})
    (rows,) = await db.query("SELECT in, out, char_start, char_end FROM mentions WHERE in IN $c", {"c": [c["id"] for c in chunks]})
    got = {(key(r["in"]), key(r["out"]), r["char_start"], r["char_end"]) for r in rows}
    want = {(key(c["id"]), "concept/" + " ".join(n.lower().split()), s, e)
            for c in chunks for n in names for s, e in reference_spans(c["text"], n)}
    assert len(chunks) > 8 and len(want) > 50
    assert got == want


async def test_the_document_graph_signal_reads_document_passages_only(db):
    """graph::mention_signal (hybrid_graph of documents.query) follows mentions to chunks;
    a memory passage that names the entity is recall's, never a document hit."""
    who = f"Lou {uid()}"
    await write_fact(db, who, text=f"{who} called.")
    await ingest(db, f"{who} signed the policy.")
    (_, sig) = await db.query(
        "LET $f = object::extend(fn::amem::query::filter(NONE), { clauses: array::repeat([], $slots) });"
        "RETURN fn::amem::graph::mention_signal([{ id: type::record('entity', $e), match: 1.0 }], $f)", {"e": "person/" + who.lower(), "slots": LENS_SLOTS})
    assert sorted({e["table"] for e in await edges(db, who)}) == ["chunk", "memory_chunk"]
    assert [str(r["id"]).split(":")[0] for r in sig["rows"]] == ["chunk"]
    assert all(str(r["id"]).startswith("chunk:") for r in sig["reached"])
