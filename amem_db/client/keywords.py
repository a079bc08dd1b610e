"""`mem.documents.keywords`: the RAKE keyphrase reads (fn::amem::keywords::*)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..db import call
from ..models import DocumentKeywords, KeywordDetail, KeywordPage, KeywordSearch, KeywordSort
from . import _call
from ._call import Lens

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["Keywords"]


class Keywords:
    """``mem.documents.keywords``: the RAKE keyphrase reads."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    async def for_document(self, id: str, *, lens: Lens | None = None) -> DocumentKeywords:
        """A document's keyphrases with their RAKE scores."""
        return _call.validated(DocumentKeywords, await call(self.mem.conn, "fn::amem::keywords::for_document", _call.record_id(id), _call.lens(lens)))

    async def list(
        self,
        *,
        min_document_count: int = 1,
        sort: KeywordSort = "-document_count",
        limit: int = 50,
        offset: int = 0,
        lens: Lens | None = None,
    ) -> KeywordPage:
        """Keywords across the corpus, paged."""
        opts = {"minDocumentCount": min_document_count, "sort": sort, "limit": limit, "offset": offset, "lens": _call.lens(lens)}
        return _call.validated(KeywordPage, await call(self.mem.conn, "fn::amem::keywords::list", _call.clean(opts)))

    async def get(self, text: str, *, lens: Lens | None = None) -> KeywordDetail:
        """A keyword by its normalised form (any case), with its documents."""
        return _call.validated(KeywordDetail, await call(self.mem.conn, "fn::amem::keywords::get", text, _call.lens(lens)))

    async def search(self, query: str, k: int = 10, *, lens: Lens | None = None) -> KeywordSearch:
        """Keywords nearest in meaning to ``query`` (keyword embeddings)."""
        checked = _call.lens(lens)
        vector = await self.mem.embed_query(query)
        return _call.validated(KeywordSearch, await call(self.mem.conn, "fn::amem::keywords::search", vector, k, checked))


