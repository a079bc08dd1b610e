"""The RAKE keyphrase reads (fn::amem::keywords::*, snake_case keys)."""

from __future__ import annotations

from typing import Literal

from ._base import _Returned
from .documents import Keyword

__all__ = [
    "DocumentKeywords",
    "KeywordCount",
    "KeywordDetail",
    "KeywordDocument",
    "KeywordMatch",
    "KeywordPage",
    "KeywordSearch",
    "KeywordSort",
]


#: orderings of fn::amem::keywords::list
KeywordSort = Literal["-document_count", "document_count", "text", "-text"]


class DocumentKeywords(_Returned):
    document: str
    keywords: list[Keyword]


class KeywordCount(_Returned):
    text: str
    normalised: str
    document_count: int


class KeywordPage(_Returned):
    keywords: list[KeywordCount]
    total: int
    limit: int
    offset: int


class KeywordDocument(_Returned):
    id: str
    title: str | None = None
    score: float


class KeywordDetail(_Returned):
    text: str
    normalised: str
    document_count: int
    documents: list[KeywordDocument]


#: a keyword nearest in meaning to a query (``keywords.search``): the same shape as a
#: document's ``Keyword`` (text, normalised, score), so the same class
KeywordMatch = Keyword


class KeywordSearch(_Returned):
    results: list[KeywordMatch]
