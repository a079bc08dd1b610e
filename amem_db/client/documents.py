"""`mem.documents`: ingest, read and query passages (fn::amem::documents::*)."""

from __future__ import annotations

import builtins
import functools
import inspect
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ..concurrent import DEFAULT_CONCURRENCY, run_many
from ..db import call
from ..errors import InvalidInput, error_for
from ..ingest import IngestReport, Item, Progress, doc_object, ingest_items, ingest_paths, items_from_file
from ..llm import ChatProvider
from ..models import (
    ChunkPage,
    Deleted,
    Document,
    DocumentPage,
    DocumentStatus,
    DocumentVersion,
    IngestResult,
    LinkCounts,
    QueryMode,
    QueryResponse,
)
from ..options import QueryOptions
from ..parsing import ParsedDocument, parse
from ..rerank import Reranker, rerank_documents, resolve_reranker
from . import _call, _read
from ._call import Lens, Location, When
from .keywords import Keywords

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["Documents", "QueryFilter"]


class QueryFilter(TypedDict, total=False):
    """``filter`` of documents.query (the spec's keys; any other key is reported and ignored)."""

    mimeType: Sequence[str]
    documentIds: Sequence[str]


class Documents:
    """``mem.documents``: ingest, read, query passages."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem
        self.keywords = Keywords(mem)

    async def ingest_file(
        self,
        path: str | os.PathLike[str],
        *,
        title: str | None = None,
        source: str | None = None,
        scopes: Sequence[str] | None = None,
        mime_type: str | None = None,
        embed: bool = True,
        location: Location | None = None,
    ) -> IngestResult:
        """Ingest one file (format detected from its content and name unless
        ``mime_type`` is given; ``source`` defaults to the path). Raises the
        typed error on failure (nothing is stored then): ParseError for an
        unreadable file, InvalidInput for a folder or a multi-document corpus
        (use ``ingest_paths``)."""
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"ingest_file takes a path (str or os.PathLike), not {type(path).__name__}; for text use ingest_text")
        p = Path(path)
        if p.is_dir():
            raise InvalidInput(f"{p} is a folder: use documents.ingest_paths([path]) for folders")
        items = items_from_file(p, title=title, source=source, scopes=_call.strs("scopes", scopes), mime_type=mime_type,
                                location=_call.location(location))
        if len(items) != 1:
            raise InvalidInput(f"{p} holds {len(items)} documents (a JSONL corpus): use documents.ingest_paths([path])")
        return await self._ingest_one(items[0], embed)

    async def ingest_text(
        self,
        text: str,
        *,
        title: str | None = None,
        source: str | None = None,
        scopes: Sequence[str] | None = None,
        mime_type: str = "text/plain",
        embed: bool = True,
        location: Location | None = None,
    ) -> IngestResult:
        """Ingest ``text`` itself as one document (``mime_type`` e.g.
        "text/markdown" to get its sections). ``source`` identifies it: the same
        source with changed text replaces the stored document."""
        if not isinstance(text, str):
            raise TypeError(f"ingest_text takes a str, not {type(text).__name__}; for a file use ingest_file(path)")
        if not isinstance(mime_type, str):
            raise TypeError(f"mime_type is a str, not {type(mime_type).__name__}")
        try:
            data = text.encode()
        except UnicodeEncodeError as exc:
            raise InvalidInput.from_unicode(exc, what="text") from None
        parsed: list[ParsedDocument] = parse(data, name=source, mime_type=mime_type)
        if len(parsed) != 1:
            raise InvalidInput(f"{len(parsed)} documents in one text (a JSONL corpus?): use documents.ingest_paths")
        doc = doc_object(parsed[0], source=source, title=title, scopes=_call.strs("scopes", scopes), location=_call.location(location))
        return await self._ingest_one(Item(source or "text", doc), embed)

    async def _ingest_one(self, item: Item, embed: bool) -> IngestResult:
        report = await ingest_items(self.mem.conn, self.mem.embedder if embed else None, [item])
        result = report.results[0]
        if result.status == "failed":
            raise error_for(result.error_code or "error", result.error or "ingest failed")
        return result

    async def ingest_paths(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        title: str | None = None,
        source: str | None = None,
        scopes: Sequence[str] | None = None,
        mime_type: str | None = None,
        batch_size: int = 16,
        progress: Progress | None = None,
        location: Location | None = None,
    ) -> IngestReport:
        """Ingest files and folders (recursively, hidden files skipped); a file
        that fails is reported in the result, the rest go on."""
        if isinstance(paths, str | bytes | os.PathLike) or not isinstance(paths, Sequence):
            raise TypeError(f"paths must be a list of paths, not {type(paths).__name__}: ingest_paths([{paths!r}])")
        for i, p in enumerate(paths):
            if not isinstance(p, str | os.PathLike):
                raise TypeError(f"paths[{i}] must be a path (str or os.PathLike), not {type(p).__name__}")
        return await ingest_paths(self.mem.conn, self.mem.embedder, [Path(p) for p in paths], title=title, source=source,
                                  scopes=_call.strs("scopes", scopes), mime_type=mime_type, batch_size=batch_size,
                                  progress=progress, after_batch=self.mem.reopen_if_wal_full, location=_call.location(location))

    async def get(self, id: str) -> Document | None:
        """One document (without its text, with its keywords), or None."""
        row = await call(self.mem.conn, "fn::amem::documents::get", _call.record_id(id))
        return _call.validated(Document, row) if row else None

    async def list(
        self,
        *,
        status: DocumentStatus | None = None,
        mime_type: str | Sequence[str] | None = None,
        lens: Lens | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> DocumentPage:
        """Documents, newest first, paged."""
        mime = mime_type if isinstance(mime_type, str) else _call.strs("mime_type", mime_type)
        opts = {"status": status, "mimeType": mime, "lens": _call.lens(lens), "limit": limit, "offset": offset}
        return _call.validated(DocumentPage, await call(self.mem.conn, "fn::amem::documents::list", _call.clean(opts)))

    async def chunks(self, id: str, *, limit: int = 50, offset: int = 0) -> ChunkPage:
        """A document's chunks (and transcript passages) in order, paged."""
        return _call.validated(ChunkPage, await call(self.mem.conn, "fn::amem::documents::chunks", _call.record_id(id), {"limit": limit, "offset": offset}))

    async def delete(self, id: str) -> Deleted:
        """Delete a document with its chunks, sections, keyword edges and links."""
        return _call.validated(Deleted, await call(self.mem.conn, "fn::amem::documents::delete", _call.record_id(id)))

    async def reprocess(self, id: str) -> IngestResult:
        """Re-chunk, re-extract keywords and re-embed a document from its stored text."""
        doc = await call(self.mem.conn, "fn::amem::documents::source_of", _call.record_id(id))
        doc["force"] = True
        report = await ingest_items(self.mem.conn, self.mem.embedder, [Item(doc.get("source") or id, doc)])
        return report.results[0]

    async def query(
        self,
        query: str,
        *,
        mode: QueryMode = "hybrid",
        k: int = 10,
        threshold: float | None = None,
        vector_weight: float | None = None,
        rrf_k: float | None = None,
        filter: QueryFilter | None = None,
        lens: Lens | None = None,
        expand_context: bool | None = None,
        graph_alpha: float | None = None,
        graph_depth: int | None = None,
        graph_edges: Sequence[str] | None = None,
        expand_graph: bool | None = None,
        use_hyde: bool | None = None,
        decompose_query: bool | None = None,
        use_reranker: bool | None = None,
        location: Mapping[str, Any] | None = None,
        as_of: When = None,
        at_instant: When = None,
        feedback: bool | None = None,
        page_size: int | None = None,
        cursor: str | None = None,
        reranker: Reranker | str | None = None,
        rerank_depth: int | None = None,
        rerank_mix: float | None = None,
        hyde: bool | None = None,
        decompose: bool | None = None,
        llm: ChatProvider | None = None,
        fusion: str | None = None,
        identifier_vector_weight: float | None = None,
        bm25_max_df: float | bool | None = None,
    ) -> QueryResponse:
        """Ranked passages for ``query``: embeds it (unless mode is bm25), then ONE
        round trip to ``fn::amem::documents::query``. Options and defaults as the spec.

        ``use_reranker``: a second stage over the top ``rerank_depth`` (default 50)
        fused candidates. ``reranker`` None / ``"rescore"``: in the database (BM25 +
        cosine z-mix, ``rerank_mix`` the cosine share; an ``AMEM_RERANK_URL`` endpoint
        when set); a :class:`~amem_db.rerank.Reranker`, ``"endpoint"``, a URL or
        ``"cross-encoder:PATH"``: scored here after the round trip and recorded in the
        same trace (amem_db/rerank.py). ``hyde`` (= ``use_hyde``) / ``decompose``
        (= ``decompose_query``) ask ``llm`` (default: ``AMEM_LLM_URL``, amem_db/llm.py);
        without one, or when it fails, a single query runs and the trace says why.
        ``as_of`` / ``at_instant`` (versioned storage only): the passages stored by
        then and not replaced by then, with the replaced versions a database migrated
        with ``document_history=True`` keeps (those hits carry ``chunk.replaced_at``).
        ``feedback=False`` ignores the verdicts of ``mem.traces.feedback``.
        ``page_size`` freezes the fused candidates (in the trace) and returns their first
        page with a ``cursor``; ``cursor`` (of a previous response) returns the next page
        of that frozen set, without embedding or ranking again (the query is not used).
        ``bm25_max_df``: the BM25 leg drops query words held by more than this share of
        the passages (never identifier-like words, never the rarest; ``1.0`` / ``False``:
        off; default amem_db/constants.py DEFAULT_BM25_MAX_DF; surql/310_termstats)."""
        if not isinstance(query, str):
            raise TypeError(f"a query is a str, not {type(query).__name__}")
        external = resolve_reranker(reranker) if use_reranker else None
        # every option by its argument name (amem_db/options/query.py); "reranker": "client" tells
        # the stored function the client reranks after the round trip
        opts = QueryOptions.pick({**locals(), "reranked_in_client": "client" if external is not None else None}).dump()
        fresh = cursor is None  # a cursor pages a frozen set: nothing to rewrite or embed
        raw = await _read.read(
            self.mem, "fn::amem::documents::query", query, opts, embed=fresh and mode != "bm25", mode=mode,
            hyde=fresh and _read.either(use_hyde, hyde), decompose=fresh and _read.either(decompose_query, decompose), llm=llm,
            second_stage=None if external is None else functools.partial(rerank_documents, self.mem.conn, external, query))
        return _call.validated(QueryResponse, raw)

    async def query_many(self, queries: Sequence[str], /, *, concurrency: int = DEFAULT_CONCURRENCY,
                         **options: Any) -> builtins.list[QueryResponse | Exception]:
        """``query`` for each of ``queries`` (same keyword ``options``), with up to
        ``concurrency`` requests in flight on this connection (one round trip each,
        amem_db/concurrent.py). Results in input order; a query that failed has its
        exception (an ``AmemError``, or ``TypeError`` for a query that is not a str) in
        its slot instead of a response, so one bad query loses none of the others.
        An unknown option raises ``TypeError`` at once, before any query runs."""
        inspect.signature(self.query).bind("", **options)
        if isinstance(queries, str):
            raise TypeError("queries is a sequence of str, not one str")
        return await run_many(lambda q: self.query(q, **options), builtins.list(queries), concurrency)

    async def versions(self, id: str) -> builtins.list[DocumentVersion]:
        """A document's versions, the current one first, then each replaced version
        kept by document history (newest first)."""
        rows = await call(self.mem.conn, "fn::amem::versions::of", _call.record_id(id))
        return [_call.validated(DocumentVersion, r) for r in rows]

    async def recompute_links(self) -> LinkCounts:
        """Rebuild the links between documents from the links stored with each."""
        return _call.validated(LinkCounts, await call(self.mem.conn, "fn::amem::documents::recompute_links"))


