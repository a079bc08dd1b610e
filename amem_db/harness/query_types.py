"""The query-type heuristic (spec 001: exact-identifier / paraphrase / mixed /
no-answer) and the lexical-overlap bucket, documented in docs/EVALUATION.md."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from amem_db.constants import QUERY_STOPWORDS

from .datasets import Dataset

QUERY_TYPES = ("identifier", "mixed", "paraphrase", "no-answer")
OVERLAP_BUCKETS = ("low-overlap", "high-overlap")
# the same stop words the BM25 leg drops (fn::amem::query::terms)
_STOPWORDS = frozenset(QUERY_STOPWORDS)
_STRIP = ".,;:!?()[]{}\"'`"
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def identifier_tokens(text: str) -> list[str]:
    """Tokens that look like identifiers (codes, gene/product names, acronyms).

    A whitespace token (surrounding punctuation stripped) is an identifier when
    it mixes letters and digits (``ERR-482``, ``MLWK3LL/A``, ``p53``, ``IL-6``,
    ``H1N1``) or carries at least two upper-case letters (``DNA``, ``PrP``,
    ``TNF-alpha``). Plain numbers (``5``, ``1990``) are quantities, not identifiers.
    """
    out = []
    for raw in text.split():
        tok = raw.strip(_STRIP)
        if len(tok) < 2:
            continue
        letters = sum(c.isalpha() for c in tok)
        digits = sum(c.isdigit() for c in tok)
        upper = sum(c.isupper() for c in tok)
        if (letters and digits) or upper >= 2:
            out.append(tok)
    return out

def content_words(text: str) -> list[str]:
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in _STOPWORDS]

def _stem(word: str) -> str:
    # crude, documented: a 5-character prefix stands in for a stemmer
    return word[:5]

def lexical_overlap(query: str, relevant_texts: Iterable[str]) -> float | None:
    """Share of the query's content words (prefix-5 match) found in any relevant document."""
    words = {_stem(w) for w in content_words(query)}
    if not words:
        return None
    vocab = {_stem(w) for t in relevant_texts for w in content_words(t)}
    return len(words & vocab) / len(words)

def tag_query(text: str, relevant_texts: list[str]) -> dict[str, Any]:
    """The query type (spec 001: exact-identifier / paraphrase / mixed / no-answer)
    and the lexical-overlap bucket. Heuristic, documented in docs/EVALUATION.md:

    * ``no-answer``: no judged relevant document (every qrel score <= 0, or none);
    * ``identifier``: at least one identifier token and at most 3 other content words;
    * ``mixed``: identifier token(s) plus more than 3 other content words;
    * ``paraphrase``: natural language with no identifier token.

    Second axis, independent of the first: ``low-overlap`` when fewer than half
    of the query's content words occur in its relevant documents (the wording
    differs: a paraphrase in the strict sense), else ``high-overlap``.
    """
    ids = identifier_tokens(text)
    id_words = {w for t in ids for w in content_words(t)}
    others = [w for w in content_words(text) if w not in id_words]
    if not relevant_texts:
        qtype = "no-answer"
    elif ids and len(others) <= 3:
        qtype = "identifier"
    elif ids:
        qtype = "mixed"
    else:
        qtype = "paraphrase"
    overlap = lexical_overlap(text, relevant_texts) if relevant_texts else None
    bucket = None if overlap is None else ("low-overlap" if overlap < 0.5 else "high-overlap")
    return {"type": qtype, "identifiers": ids, "overlap": overlap, "overlap_bucket": bucket}

def tag_queries(ds: Dataset) -> dict[str, dict[str, Any]]:
    tags = {}
    for qid, text in ds.queries.items():
        rel = [f"{ds.titles.get(d, '')} {ds.texts.get(d, '')}" for d in ds.relevant(qid) if d in ds.texts]
        tags[qid] = tag_query(text, rel)
    return tags

def tag_table(tags: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Counts per query type and overlap bucket."""
    counts = {t: 0 for t in QUERY_TYPES + OVERLAP_BUCKETS}
    for t in tags.values():
        counts[t["type"]] += 1
        if t["overlap_bucket"]:
            counts[t["overlap_bucket"]] += 1
    return counts
