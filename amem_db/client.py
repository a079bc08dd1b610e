"""The thin async client. Every read is one round trip to one stored function.

    async with await Memory.open() as mem:             # the embedded default
        await mem.documents.ingest("docs/returns.md", scopes=["org/acme"])
        page = await mem.documents.keywords.list(min_document_count=3)
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from .connection import WAL_REOPEN_BYTES, Target, close_quietly, open_connection, resolve_target, wal_bytes
from .db import call
from .errors import InvalidInput, error_for
from .ingest import IngestReport, Item, doc_object, ingest_items, ingest_paths, items_from_file
from .models import (
    ChunkPage,
    Document,
    DocumentKeywords,
    DocumentPage,
    IngestResult,
    KeywordDetail,
    KeywordPage,
    KeywordSearch,
    QueryResponse,
)
from .parsing import ParsedDocument, parse


class Memory:
    def __init__(self, conn: Any, *, embedder: Any | str | None = None, target: Target | None = None) -> None:
        self.conn = conn
        self.target = target
        self._embedder_spec = embedder
        self._embedder: Any | None = None if isinstance(embedder, (str, type(None))) else embedder
        self.documents = Documents(self)

    @classmethod
    async def open(
        cls,
        url: str | None = None,
        ns: str | None = None,
        db: str | None = None,
        user: str | None = None,
        password: str | None = None,
        *,
        embedder: Any | str | None = None,
    ) -> Memory:
        """Connect (options > AMEM_* environment > embedded default). ``embedder``:
        an Embedder, or a spec such as "minilm", "e5-small", "openai:URL:MODEL"."""
        target = resolve_target(url, ns, db, user, password)
        return cls(await open_connection(target), embedder=embedder, target=target)

    @property
    def embedder(self) -> Any:
        """The embedding model (loaded on first use), behind the on-disk cache."""
        if self._embedder is None:
            from .embedding import CachedEmbedder, get_embedder

            self._embedder = CachedEmbedder(get_embedder(self._embedder_spec))
        return self._embedder

    async def reopen_if_wal_full(self) -> Any:
        """Close and reopen an embedded surrealkv database whose write-ahead log
        nears the size at which 3.2.4 hangs (docs/BACKENDS.md); returns the connection."""
        if self.target is not None and self.target.embedded and wal_bytes(self.target.url) > WAL_REOPEN_BYTES:
            await close_quietly(self.conn)
            self.conn = await open_connection(self.target)
        return self.conn

    async def embed_query(self, text: str) -> list[float]:
        return await asyncio.to_thread(self.embedder.embed_query, text)

    async def close(self) -> None:
        await close_quietly(self.conn)

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class Documents:
    def __init__(self, mem: Memory) -> None:
        self.mem = mem
        self.keywords = Keywords(mem)

    async def ingest(
        self,
        content: str | Path | bytes,
        *,
        title: str | None = None,
        source: str | None = None,
        scopes: list[str] | None = None,
        mime_type: str | None = None,
        embed: bool = True,
    ) -> IngestResult:
        """Ingest one document from a path, raw bytes, or text. Raises the typed
        error on failure (nothing is stored then)."""
        if isinstance(content, Path) or (isinstance(content, str) and "\n" not in content and len(content) < 4096 and Path(content).is_file()):
            items = items_from_file(Path(content), title=title, source=source, scopes=scopes, mime_type=mime_type)
        else:
            data = content if isinstance(content, bytes) else content.encode()
            if mime_type is None and isinstance(content, str):
                mime_type = "text/plain"
            parsed: list[ParsedDocument] = parse(data, name=source, mime_type=mime_type)
            items = [Item(source or "text", doc_object(p, source=source, title=title, scopes=scopes)) for p in parsed]
        if len(items) != 1:
            raise InvalidInput(f"{len(items)} documents in one input (a JSONL corpus?): use documents.ingest_paths")
        report = await ingest_items(self.mem.conn, self.mem.embedder if embed else None, items)
        result = report.results[0]
        if result.status == "failed":
            raise error_for(result.error_code or "error", result.error or "ingest failed")
        return result

    async def ingest_paths(self, paths: list[str | Path], *, progress: Any = None, **kw: Any) -> IngestReport:
        """Ingest files and folders (recursively); per-file failures are reported, not raised."""
        return await ingest_paths(self.mem.conn, self.mem.embedder, paths, progress=progress,
                                  after_batch=self.mem.reopen_if_wal_full, **kw)

    async def get(self, id: str) -> Document | None:
        row = await call(self.mem.conn, "fn::amem::documents::get", id)
        return Document(**row) if row else None

    async def list(self, *, status: str | None = None, mime_type: str | list[str] | None = None,
                   lens: list[list[str]] | None = None, limit: int = 20, offset: int = 0) -> DocumentPage:
        opts = {"status": status, "mimeType": mime_type, "lens": lens, "limit": limit, "offset": offset}
        return DocumentPage(**await call(self.mem.conn, "fn::amem::documents::list", _clean(opts)))

    async def chunks(self, id: str, *, limit: int = 50, offset: int = 0) -> ChunkPage:
        return ChunkPage(**await call(self.mem.conn, "fn::amem::documents::chunks", id, {"limit": limit, "offset": offset}))

    async def delete(self, id: str) -> dict:
        return await call(self.mem.conn, "fn::amem::documents::delete", id)

    async def reprocess(self, id: str) -> IngestResult:
        """Re-chunk, re-extract keywords and re-embed a document from its stored text."""
        doc = await call(self.mem.conn, "fn::amem::documents::source_of", id)
        doc["force"] = True
        report = await ingest_items(self.mem.conn, self.mem.embedder, [Item(doc.get("source") or id, doc)])
        return report.results[0]

    async def query(
        self,
        query: str,
        *,
        mode: str = "hybrid",
        k: int = 10,
        threshold: float | None = None,
        vector_weight: float | None = None,
        rrf_k: float | None = None,
        filter: dict | None = None,
        lens: list[list[str]] | None = None,
        expand_context: bool | None = None,
        graph_alpha: float | None = None,
        graph_depth: int | None = None,
        graph_edges: list[str] | None = None,
        expand_graph: bool | None = None,
        use_hyde: bool | None = None,
        decompose_query: bool | None = None,
        use_reranker: bool | None = None,
    ) -> QueryResponse:
        """Ranked passages for ``query``: embeds it (unless mode is bm25), then ONE
        round trip to ``fn::amem::documents::query``. Options and defaults as the spec."""
        embedding = None if mode == "bm25" else await self.mem.embed_query(query)
        opts = _clean({
            "mode": mode, "k": k, "threshold": threshold, "vectorWeight": vector_weight, "rrfK": rrf_k,
            "filter": filter, "lens": lens, "expandContext": expand_context, "graphAlpha": graph_alpha,
            "graphDepth": graph_depth, "graphEdges": graph_edges, "expandGraph": expand_graph,
            "useHyde": use_hyde, "decomposeQuery": decompose_query, "useReranker": use_reranker,
            "embeddingModel": self.mem.embedder.name if embedding is not None else None,
        })
        return QueryResponse(**await call(self.mem.conn, "fn::amem::documents::query", query, embedding, opts))

    async def recompute_links(self) -> dict:
        return await call(self.mem.conn, "fn::amem::documents::recompute_links")


class Keywords:
    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    async def for_document(self, id: str, *, lens: list[list[str]] | None = None) -> DocumentKeywords:
        return DocumentKeywords(**await call(self.mem.conn, "fn::amem::keywords::for_document", id, lens))

    async def list(self, *, min_document_count: int = 1, sort: str = "-document_count", limit: int = 50,
                   offset: int = 0, lens: list[list[str]] | None = None) -> KeywordPage:
        opts = {"minDocumentCount": min_document_count, "sort": sort, "limit": limit, "offset": offset, "lens": lens}
        return KeywordPage(**await call(self.mem.conn, "fn::amem::keywords::list", _clean(opts)))

    async def get(self, text: str, *, lens: list[list[str]] | None = None) -> KeywordDetail:
        return KeywordDetail(**await call(self.mem.conn, "fn::amem::keywords::get", text, lens))

    async def search(self, query: str, k: int = 10, *, lens: list[list[str]] | None = None) -> KeywordSearch:
        vector = await self.mem.embed_query(query)
        return KeywordSearch(**await call(self.mem.conn, "fn::amem::keywords::search", vector, k, lens))


def _clean(opts: dict) -> dict:
    return {k: v for k, v in opts.items() if v is not None}
