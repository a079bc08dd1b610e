"""The thin async client. Every read is one round trip to one stored function.

    async with await Memory.open(migrate=True) as mem:      # the embedded default
        await mem.documents.ingest_file("docs/returns.md", scopes=["org/acme"])
        await mem.documents.ingest_text("Gift cards cannot be returned.", source="faq#gift-cards")
        response = await mem.documents.query("return window", mode="hybrid", k=5)
        for hit in response.results:
            print(hit.score, hit.document.title, hit.chunk.text[:80])

A path is never guessed from a string: ``ingest_file`` reads a file,
``ingest_text`` stores text, ``ingest_paths`` walks files and folders. Where a
list belongs (``scopes``, ``lens`` clauses, ``graph_edges``, id lists, paths) a
str is a ``TypeError``, never a list of its characters. Results are the
pydantic models of ``amem_db.models``. ``amem_db.SyncMemory`` is the same
surface without ``await``.
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import pydantic

from .answers import Answers
from .concurrent import DEFAULT_CONCURRENCY, run_many
from .connection import WAL_REOPEN_BYTES, Target, close_quietly, open_connection, resolve_target, wal_bytes
from .constants import FACTS_BATCH_MAX, FACTS_PER_TRANSACTION, MAINTAIN_MIN_ROWS, MAINTAIN_THRESHOLD
from .db import call, call_each
from .embedding.base import Embedder
from .errors import AmemError, InvalidInput, NotMigrated, ServerError, TransportError, error_for, from_engine_error, server_error
from .fact_syntax import parse_fact
from .geometry import with_polygons
from .ingest import IngestReport, Item, Progress, doc_object, ingest_items, ingest_paths, items_from_file
from .llm import ChatProvider, provider_from_env, rewrite_options
from .maintain import maintain as maintain_indexes
from .maintain import status as maintain_status
from .migrator import Migrator, Plan
from .models import (
    ChunkPage,
    Deleted,
    Document,
    DocumentKeywords,
    DocumentPage,
    DocumentStatus,
    DocumentVersion,
    EntityDetail,
    EntityPage,
    FactBatch,
    FactBatchError,
    FactDiff,
    FactHistory,
    FactKey,
    FactsPrepared,
    FactWrite,
    ForgetResult,
    IndexStatus,
    IngestResult,
    Inspection,
    KeywordDetail,
    KeywordPage,
    KeywordSearch,
    KeywordSort,
    LinkCounts,
    MaintainReport,
    QueryMode,
    QueryResponse,
    RecallInclude,
    RecallMode,
    RecallResponse,
)
from .parsing import ParsedDocument, parse
from .rerank import Reranker, rerank_documents, rerank_recall_step, resolve_reranker
from .traces import Traces

__all__ = ["Documents", "Entities", "Facts", "Keywords", "Lens", "Memory", "QueryFilter"]

_M = TypeVar("_M", bound=pydantic.BaseModel)

#: a DNF scope selector: OR of clauses, each an AND of scope paths: [["org/a"], ["org/b", "clearance/x"]]
Lens = Sequence[Sequence[str]]
When = datetime | str | None  # a time option: a datetime or an ISO 8601 string
#: a stored location: {"lat", "lng"}, (lat, lng), "LAT,LNG", or a GeoJSON Point (checked in SurrealQL)
Location = Mapping[str, Any] | tuple[float, float] | str


class QueryFilter(TypedDict, total=False):
    """``filter`` of documents.query (the spec's keys; any other key is reported and ignored)."""

    mimeType: Sequence[str]
    documentIds: Sequence[str]


class Memory:
    """A connection plus the embedder. ``Memory.open(...)`` resolves where the
    database is; ``Memory(conn, embedder=...)`` wraps a connection you opened."""

    def __init__(self, conn: Any, *, embedder: Embedder | str | None = None, target: Target | None = None) -> None:
        self.conn = conn
        self.target = target
        if embedder is None or isinstance(embedder, str):
            from .embedding import get_embedder

            embedder = get_embedder(embedder)  # an unknown name fails here (UnknownEmbedder), models load on first use
            self._cache = True
        else:
            self._cache = False
        self._inner: Embedder = embedder
        self._embedder: Embedder | None = None
        self.documents = Documents(self)
        self.facts = Facts(self)
        self.entities = Entities(self)
        self.traces = Traces(self)
        self.answers = Answers(self)  # recall's tier 2 (amem_db/answers.py)

    @classmethod
    async def open(
        cls,
        url: str | None = None,
        ns: str | None = None,
        db: str | None = None,
        user: str | None = None,
        password: str | None = None,
        *,
        key: str | None = None,
        embedder: Embedder | str | None = None,
        migrate: bool = False,
    ) -> Memory:
        """Connect (options > ``AMEM_*`` environment > the embedded default in
        ``./.amem/data``). ``key``: a ``NAME:SECRET`` credential from ``amem-db
        grant`` (reads and writes limited by its grants, as ``--key``).
        ``embedder``: an Embedder, or a spec such as "minilm", "e5-small",
        "openai:URL:MODEL". ``migrate=True`` applies pending migrations first."""
        target = resolve_target(url, ns, db, user, password, key)
        mem = cls(None, embedder=embedder, target=target)
        mem.conn = await open_connection(target)
        if migrate:
            try:
                await mem.migrate()
            except BaseException:
                await mem.close()
                raise
        return mem

    async def migrate(self, /, *, dry_run: bool = False, **settings: Any) -> Plan:
        """Apply pending migrations and changed SurrealQL, as ``amem-db migrate``
        does; returns the plan that ran. ``settings`` are the schema settings
        (``embedding_dim``, ``hnsw_m``, ``hnsw_efc``, ``candidate_pool``,
        ``analyzer_language``); ones not given keep their recorded values.
        ``dry_run`` checks the plan inside a cancelled transaction."""
        try:
            # an unknown or out-of-range setting is InvalidInput from the plan, before any write
            return await Migrator(self.conn).migrate(settings, dry_run=dry_run)
        except AmemError:
            raise
        except Exception as exc:
            typed = from_engine_error(exc)
            if typed is exc:
                raise
            raise typed from exc

    @property
    def embedder(self) -> Embedder:
        """The embedding model (loaded on first use), behind the on-disk cache."""
        if self._embedder is None:
            if self._cache:
                from .embedding import CachedEmbedder

                self._embedder = CachedEmbedder(self._inner)
            else:
                self._embedder = self._inner
        return self._embedder

    async def reopen_if_wal_full(self) -> Any:
        """Close and reopen an embedded surrealkv database whose write-ahead log
        nears the size at which 3.2.4 hangs (docs/BACKENDS.md); returns the connection."""
        if self.target is not None and self.target.embedded and wal_bytes(self.target.url) > WAL_REOPEN_BYTES:
            await close_quietly(self.conn)
            self.conn = await open_connection(self.target)
        return self.conn

    async def embed_query(self, text: str) -> list[float]:
        """The query vector of ``text`` (in a worker thread)."""
        if not isinstance(text, str):
            raise TypeError(f"a query is a str, not {type(text).__name__}")
        return await asyncio.to_thread(self.embedder.embed_query, text)

    # --- recall ---------------------------------------------------------------------
    async def recall(
        self,
        query: str,
        *,
        mode: RecallMode = "hybrid",
        k: int = 10,
        include: Sequence[RecallInclude] | None = None,
        lens: Lens | None = None,
        labels: Sequence[str] | None = None,
        threshold: float | None = None,
        vector_weight: float | None = None,
        graph_weight: float | None = None,
        rrf_k: float | None = None,
        graph_depth: int | None = None,
        expand_context: bool | None = None,
        as_of: When = None,
        at_instant: When = None,
        valid_at: When = None,
        valid_during: Sequence[datetime | str] | None = None,
        valid_from: When = None,
        valid_until: When = None,
        location: Mapping[str, Any] | None = None,
        query_window: bool | None = None,
        strict_window: bool | None = None,
        window_weight: float | None = None,
        adjacent_weight: float | None = None,
        now: datetime | str | None = None,
        feedback: bool | None = None,
        reuse: bool | None = None,
        reuse_max_age: float | None = None,
        confidence_floor: float | None = None,
        hyde_embedding: Sequence[float] | None = None,
        ladder: bool | None = None,
        use_reranker: bool | None = None,
        reranker: Reranker | str | None = None,
        rerank_depth: int | None = None,
        hyde: bool | None = None,
        llm: ChatProvider | None = None,
        page_size: int | None = None,
        cursor: str | None = None,
    ) -> RecallResponse:
        """Facts and passages ranked together for ``query`` (MEMORY.md section 2):
        embeds it (unless mode is bm25 or graph), then ONE round trip to
        ``fn::amem::recall``. ``k`` is 1..50 (more is an InvalidInput: recall does
        not clamp); ``include`` keeps ``facts`` and/or ``passages`` in the response.
        The time options (those of ``entities.get``) recall what was believed, stored
        or valid then; document passages have no history yet and are read as they
        are now (``at_instant``: today's indexes find the candidates, each judged by
        its row as stored then).

        Time words in the query ("in May 2023", "last week") become ``query_window``
        (echoed as ``response.query_window``), relative to ``now`` (default ``as_of``, else the clock),
        a boost of ``window_weight`` for rows observed in it; ``strict_window`` keeps
        only those, ``query_window=False`` turns it off. ``feedback=False`` ignores the
        verdicts of ``mem.traces.feedback`` (on by default). ``adjacent_weight`` (hybrid,
        default 0.3, 0 = off): the share of a strong memory passage's score that its
        neighbours in the same session get (the trace ledger's ``adjacent`` row).

        The tier ladder (``response.tier``, ``response.tiers``): ``reuse=True`` returns a
        stored answer (``mem.answers.remember``) that still holds, younger than
        ``reuse_max_age`` seconds (3600), as ``tier == "cache"``; a thin or unsure
        tier 3 (best score under ``confidence_floor``, 0.40) escalates to tier 4
        (``escalated``: doubled pool, one more graph hop, ``hyde_embedding`` when given);
        ``ladder=False`` runs tier 3 alone. ``page_size`` freezes the top 50 hits in the
        trace and returns the first page with a ``cursor``; ``cursor`` returns the next page
        of that frozen set (re-read at the first page's clock; no ranking, the query unused).

        ``use_reranker``: the hits (``rerank_depth`` of them, default k, at most 50)
        are re-scored by ``reranker`` (a :class:`~amem_db.rerank.Reranker`, ``"endpoint"``,
        a URL, ``"cross-encoder:PATH"``; default ``AMEM_RERANK_URL``) after the round
        trip, the top k kept, the scores recorded in the trace. A response the tier
        ladder marks ``escalated`` is reranked when a reranker is configured and
        ``use_reranker`` is not False. ``hyde``: as ``documents.query`` (the vector leg
        ranks by an LLM's hypothetical answer; without ``llm`` / ``AMEM_LLM_URL`` the
        query runs as given and ``trace.options.hyde`` says why)."""
        if not isinstance(query, str):
            raise TypeError(f"a query is a str, not {type(query).__name__}")
        clock = time_options(as_of=as_of, at_instant=at_instant, valid_at=valid_at, valid_during=valid_during,
                             valid_from=valid_from, valid_until=valid_until)
        opts = _clean({
            "mode": mode, "k": k, "include": _strs("include", include), "lens": _lens(lens),
            "labels": _strs("labels", labels), "threshold": threshold, "vectorWeight": vector_weight,
            "graphWeight": graph_weight, "rrfK": rrf_k, "graphDepth": graph_depth, "expandContext": expand_context,
            **clock,
            "location": location,
            "queryWindow": query_window, "strictWindow": strict_window, "windowWeight": window_weight, "now": now,
            "adjacentWeight": adjacent_weight, "feedback": feedback,
            "reuse": reuse, "reuseMaxAge": reuse_max_age, "confidenceFloor": confidence_floor,
            "hydeEmbedding": list(hyde_embedding) if hyde_embedding is not None else None, "ladder": ladder,
            "pageSize": page_size, "cursor": cursor,
        })
        if cursor is not None:
            return _model(RecallResponse, await call(self.conn, "fn::amem::recall", query, None, opts))
        external = resolve_reranker(reranker) if use_reranker is not False and reranker != "rescore" else None
        if use_reranker and external is not None:
            opts["k"] = max(k, min(rerank_depth or k, 50))
        if hyde:
            opts.update(await rewrite_options(llm or provider_from_env(), self.embedder, query,
                                              mode="bm25" if mode in ("bm25", "graph") else mode, hyde=True, decompose=False))
        embedding = None if mode in ("bm25", "graph") else await self.embed_query(query)
        if embedding is not None:
            opts["embeddingModel"] = self.embedder.name
        raw = await call(self.conn, "fn::amem::recall", query, embedding, opts)
        if use_reranker or (use_reranker is None and raw.get("escalated")):
            raw = await rerank_recall_step(self.conn, external, query, raw, k)
        return _model(RecallResponse, raw)

    # --- remember: the commonest write in one call (fn::amem::facts::write) -----------------
    async def remember(
        self,
        text: str = "",
        *,
        facts: Sequence[str | Mapping[str, Any]] = (),
        session_id: str | None = None,
        observed_at: When = None,
        scopes: Sequence[str] | None = None,
        category: str | None = None,
        confidence: float | None = None,
        valid_from: When = None,
        valid_until: When = None,
        role: str | None = None,
        labels: Sequence[str] | None = None,
        location: Location | None = None,
        source: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> FactWrite:
        """Remember ``text`` (kept as memory passages) and ``facts`` in one transaction,
        as ``amem-db remember``: ``mem.remember("Alice is our CTO now.", facts=["person:Alice
        role=CTO", "person:Alice works_at->organisation:Acme"])``. A fact is the CLI's string
        (amem_db/fact_syntax.py) or a write triple dict; the other options are those of the
        ``facts.write`` request. Text, facts or both; nothing at all is an InvalidInput."""
        if not isinstance(text, str):
            raise TypeError(f"text is a str, not {type(text).__name__}")
        if isinstance(facts, str | bytes) or not isinstance(facts, Sequence):
            raise TypeError(f"facts must be a list of fact strings or triples, not {type(facts).__name__}: facts=[{facts!r}]")
        if not text.strip() and not facts:
            raise InvalidInput("nothing to remember: give text, facts, or both")
        triples = [parse_fact(f, what="fact") if isinstance(f, str) else dict(f) for f in facts]
        request = _clean({
            "triples": triples or None, "text": text or None, "scopes": _strs("scopes", scopes), "category": category,
            "confidence": confidence, "observed_at": observed_at, "valid_from": valid_from, "valid_until": valid_until,
            "session_id": session_id, "role": role, "labels": _strs("labels", labels), "location": _location(location),
            "source": dict(source) if source is not None else None, "idempotency_key": idempotency_key,
        })
        return await self.facts.write(request)

    # --- forget and inspect (fn::amem::forget, fn::amem::inspect) -------------------------
    async def forget(
        self,
        ids: Sequence[str] | None = None,
        *,
        query: Mapping[str, Any] | None = None,
        scopes: Sequence[str] | None = None,
        dry_run: bool = False,
        purge: bool = False,
    ) -> ForgetResult:
        """Forget typed memory by ``ids`` (attribute, relation, memory_chunk, entity)
        and/or ``query`` (``{entity: {type, name}, key?, write?, session_id?, labels?}``),
        in one transaction. Soft by default (gone from reads and recall, kept for
        audit); ``dry_run`` counts only; ``purge`` erases rows, history, uncertainty,
        edges and passages. ``scopes``: only rows wholly inside these paths. A
        credential needs a forget grant (``amem-db grant --forget PATH``)."""
        if query is not None and not isinstance(query, Mapping):
            raise TypeError(f"query is a dict such as {{'entity': {{'type': 'person', 'name': 'Alice'}}}}, not {type(query).__name__}")
        request = _clean({"ids": _strs("ids", ids), "query": dict(query) if query is not None else None,
                          "scopes": _strs("scopes", scopes), "dryRun": dry_run or None, "purge": purge or None})
        return _model(ForgetResult, await call(self.conn, "fn::amem::forget", request))

    async def inspect(self, ref: str | Mapping[str, str], *, lens: Lens | None = None) -> Inspection | None:
        """One record by reference (an id such as ``attribute:01KB...``, or an entity
        ``{"type": "person", "name": "Alice"}``) with what explains it; None when it
        is absent, unreadable, forgotten or outside ``lens``."""
        if not isinstance(ref, str | Mapping):
            raise TypeError(f"a reference is an id str or an entity {{'type', 'name'}}, not {type(ref).__name__}")
        row = await call(self.conn, "fn::amem::inspect", ref if isinstance(ref, str) else dict(ref), _clean({"lens": _lens(lens)}))
        return _model(Inspection, row) if row else None

    async def maintain(self, *, auto: bool = True, threshold: float = MAINTAIN_THRESHOLD, min_rows: int = MAINTAIN_MIN_ROWS,
                       indexes: Sequence[str] | None = None) -> MaintainReport:
        """Rebuild the HNSW graphs the embedded engine never builds (amem_db/maintain.py):
        with ``auto`` those whose unbuilt share passed ``threshold``, else every one with
        unbuilt rows. Vector reads of a table being rebuilt answer exactly meanwhile."""
        return await maintain_indexes(self.conn, auto=auto, threshold=threshold, min_rows=min_rows, indexes=indexes)

    async def index_status(self, *, threshold: float = MAINTAIN_THRESHOLD, min_rows: int = MAINTAIN_MIN_ROWS) -> list[IndexStatus]:
        """Each maintained HNSW index: rows, rows written since its last build, due or not."""
        return await maintain_status(self.conn, threshold=threshold, min_rows=min_rows)

    async def close(self) -> None:
        """Close the connection (an embedded engine is released)."""
        if self.conn is not None:
            await close_quietly(self.conn)

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


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
        items = items_from_file(p, title=title, source=source, scopes=_strs("scopes", scopes), mime_type=mime_type,
                                location=_location(location))
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
        doc = doc_object(parsed[0], source=source, title=title, scopes=_strs("scopes", scopes), location=_location(location))
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
                                  scopes=_strs("scopes", scopes), mime_type=mime_type, batch_size=batch_size,
                                  progress=progress, after_batch=self.mem.reopen_if_wal_full, location=_location(location))

    async def get(self, id: str) -> Document | None:
        """One document (without its text, with its keywords), or None."""
        row = await call(self.mem.conn, "fn::amem::documents::get", _id(id))
        return _model(Document, row) if row else None

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
        mime = mime_type if isinstance(mime_type, str) else _strs("mime_type", mime_type)
        opts = {"status": status, "mimeType": mime, "lens": _lens(lens), "limit": limit, "offset": offset}
        return _model(DocumentPage, await call(self.mem.conn, "fn::amem::documents::list", _clean(opts)))

    async def chunks(self, id: str, *, limit: int = 50, offset: int = 0) -> ChunkPage:
        """A document's chunks (and transcript passages) in order, paged."""
        return _model(ChunkPage, await call(self.mem.conn, "fn::amem::documents::chunks", _id(id), {"limit": limit, "offset": offset}))

    async def delete(self, id: str) -> Deleted:
        """Delete a document with its chunks, sections, keyword edges and links."""
        return _model(Deleted, await call(self.mem.conn, "fn::amem::documents::delete", _id(id)))

    async def reprocess(self, id: str) -> IngestResult:
        """Re-chunk, re-extract keywords and re-embed a document from its stored text."""
        doc = await call(self.mem.conn, "fn::amem::documents::source_of", _id(id))
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
        opts = _clean({
            "mode": mode, "k": k, "threshold": threshold, "vectorWeight": vector_weight, "rrfK": rrf_k,
            "filter": _filter(filter), "lens": _lens(lens), "expandContext": expand_context, "graphAlpha": graph_alpha,
            "graphDepth": graph_depth, "graphEdges": _strs("graph_edges", graph_edges), "expandGraph": expand_graph,
            "useHyde": use_hyde, "decomposeQuery": decompose_query, "useReranker": use_reranker,
            "location": location, "feedback": feedback, "pageSize": page_size, "cursor": cursor,
            "fusion": fusion, "identifierVectorWeight": identifier_vector_weight, "bm25MaxDf": bm25_max_df,
            **time_options(as_of=as_of, at_instant=at_instant),
            "reranker": "client" if external is not None else None, "rerankDepth": rerank_depth, "rerankMix": rerank_mix,
        })
        if cursor is None and (hyde or use_hyde or decompose or decompose_query):
            opts.update(await rewrite_options(llm or provider_from_env(), self.mem.embedder, query, mode=mode,
                                              hyde=bool(hyde or use_hyde), decompose=bool(decompose or decompose_query)))
        embedding = None if mode == "bm25" or cursor is not None else await self.mem.embed_query(query)
        if embedding is not None:
            opts["embeddingModel"] = self.mem.embedder.name
        raw = await call(self.mem.conn, "fn::amem::documents::query", query, embedding, opts)
        if external is not None:
            raw = await rerank_documents(self.mem.conn, external, query, raw)
        return _model(QueryResponse, raw)

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
        rows = await call(self.mem.conn, "fn::amem::versions::of", _id(id))
        return [_model(DocumentVersion, r) for r in rows]

    async def recompute_links(self) -> LinkCounts:
        """Rebuild the links between documents from the links stored with each."""
        return _model(LinkCounts, await call(self.mem.conn, "fn::amem::documents::recompute_links"))


class Keywords:
    """``mem.documents.keywords``: the RAKE keyphrase reads."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    async def for_document(self, id: str, *, lens: Lens | None = None) -> DocumentKeywords:
        """A document's keyphrases with their RAKE scores."""
        return _model(DocumentKeywords, await call(self.mem.conn, "fn::amem::keywords::for_document", _id(id), _lens(lens)))

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
        opts = {"minDocumentCount": min_document_count, "sort": sort, "limit": limit, "offset": offset, "lens": _lens(lens)}
        return _model(KeywordPage, await call(self.mem.conn, "fn::amem::keywords::list", _clean(opts)))

    async def get(self, text: str, *, lens: Lens | None = None) -> KeywordDetail:
        """A keyword by its normalised form (any case), with its documents."""
        return _model(KeywordDetail, await call(self.mem.conn, "fn::amem::keywords::get", text, _lens(lens)))

    async def search(self, query: str, k: int = 10, *, lens: Lens | None = None) -> KeywordSearch:
        """Keywords nearest in meaning to ``query`` (keyword embeddings)."""
        checked = _lens(lens)
        vector = await self.mem.embed_query(query)
        return _model(KeywordSearch, await call(self.mem.conn, "fn::amem::keywords::search", vector, k, checked))


class Facts:
    """``mem.facts``: the typed-memory write path (fn::amem::facts::*). A request
    is the stored function's object: ``{triples: [{entity: {type, name,
    aliases?}, key, value? | target?: {type, name}, retract?, category?,
    confidence?, valid_from?, valid_until?}], text?, scopes?, observed_at?,
    valid_from?, valid_until?, session_id?, role?, source?, category?,
    confidence?, labels?, idempotency_key?}`` (docs/MEMORY-DESIGN.md)."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    async def prepare(self, request: Mapping[str, Any]) -> FactsPrepared:
        """Validate a write and return the texts ``write`` embeds (no writes)."""
        return _model(FactsPrepared, await call(self.mem.conn, "fn::amem::facts::prepare", _request(request)))

    async def write(self, request: Mapping[str, Any], *, embed: bool = True) -> FactWrite:
        """Store a memory write in one transaction: prepare, embed the prepared
        texts with ``mem.embedder`` (unless ``embed=False``), then ``facts::write``."""
        body = with_polygons(_request(request))
        vectors: dict[str, Any] | None = None
        if embed:
            p = await call(self.mem.conn, "fn::amem::facts::prepare", body)
            parts = {part: [x["text"] for x in p[part]] for part in ("entities", "attributes", "passages")}
            flat = [t for texts in parts.values() for t in texts]
            embedded = await asyncio.to_thread(self.mem.embedder.embed_documents, flat) if flat else []
            vectors, at = {"model": self.mem.embedder.name}, 0  # in prepare's order, one list per part
            for part, texts in parts.items():
                vectors[part], at = embedded[at: at + len(texts)], at + len(texts)
        return _model(FactWrite, await call(self.mem.conn, "fn::amem::facts::write", body, vectors))

    async def write_many(
        self, requests: Sequence[Mapping[str, Any]], *, embed: bool = True, per_transaction: int = FACTS_PER_TRANSACTION,
        atomic: bool = False, progress: Callable[[int, int], None] | None = None,
    ) -> FactBatch:
        """Store many memory writes, in order, each exactly as ``write`` stores it (a later
        request reconciles against an earlier one's rows). One ``prepare`` round trip for
        all, one embedder call for every text, then ``fn::amem::facts::write_many`` per
        group of ``per_transaction`` requests: one transaction per group. A group that
        fails is written again one request per transaction, so a bad request is reported
        in ``errors`` (nothing of it stored) and the others land. ``atomic=True``: the
        whole batch in one transaction (at most FACTS_BATCH_MAX requests); any error
        is raised and nothing is stored. ``progress(done, total)`` after each group."""
        if isinstance(requests, Mapping | str | bytes):
            raise TypeError("requests must be a list of memory writes (dicts), not a single one")
        bodies = [with_polygons(_request(r)) for r in requests]
        if atomic and len(bodies) > FACTS_BATCH_MAX:
            raise InvalidInput(f"an atomic batch holds at most {FACTS_BATCH_MAX} requests, got {len(bodies)}")
        failed: dict[int, AmemError] = {}
        vectors: list[dict[str, Any] | None] = [None] * len(bodies)
        if embed and bodies:
            plans = await call_each(self.mem.conn, "fn::amem::facts::prepare", [(b,) for b in bodies])
            failed = {i: server_error(p) for i, (ok, p) in enumerate(plans) if not ok}
            if atomic and failed:
                raise failed[min(failed)]
            vectors = await self._embed_plans([p if ok else None for ok, p in plans])
        todo = [i for i in range(len(bodies)) if i not in failed]
        size = len(todo) if atomic else max(1, min(per_transaction, FACTS_BATCH_MAX))
        writes: list[Any] = [None] * len(bodies)
        transactions, refused = 0, len(bodies) - len(todo)  # refused: by prepare, before any write
        for at in range(0, len(todo), max(size, 1)):
            group = todo[at: at + size]
            transactions += 1
            try:
                answers = await call(self.mem.conn, "fn::amem::facts::write_many", [bodies[i] for i in group], [vectors[i] for i in group])
                for i, a in zip(group, answers):
                    writes[i] = a
            except (TransportError, NotMigrated):
                raise
            except AmemError:
                if atomic:
                    raise
                # nothing of the group was stored: its requests one by one, before the next group
                singles = await call_each(self.mem.conn, "fn::amem::facts::write", [(bodies[i], vectors[i]) for i in group])
                transactions += len(group)
                for i, (ok, a) in zip(group, singles):
                    if ok:
                        writes[i] = a
                    else:
                        failed[i] = server_error(a)
            if progress:
                progress(refused + at + len(group), len(bodies))
        results = [None if w is None else _model(FactWrite, w) for w in writes]
        return FactBatch(
            writes=results, transactions=transactions,
            errors=[FactBatchError(index=i, code=e.code, message=e.message) for i, e in sorted(failed.items())],
            facts=sum(len(w.triples) for w in results if w is not None),
            passages=sum(len(w.passages) for w in results if w is not None))

    async def _embed_plans(self, plans: Sequence[Mapping[str, Any] | None]) -> list[dict[str, Any] | None]:
        """The ``vectors`` argument of each prepared write (None for a failed plan), from
        one embedder call over every text of every plan, in prepare's order."""
        parts = ("entities", "attributes", "passages")
        flat = [x["text"] for p in plans if p is not None for part in parts for x in p[part]]
        embedded = await asyncio.to_thread(self.mem.embedder.embed_documents, flat) if flat else []
        out: list[dict[str, Any] | None] = []
        at = 0
        for p in plans:
            if p is None:
                out.append(None)
                continue
            v: dict[str, Any] = {"model": self.mem.embedder.name}
            for part in parts:
                v[part], at = embedded[at: at + len(p[part])], at + len(p[part])
            out.append(v)
        return out

    async def diff(
        self, t1: datetime | str, t2: datetime | str, *, lens: Lens | None = None,
        entity: tuple[str, str] | None = None, key: str | None = None,
    ) -> FactDiff:
        """Facts added, changed and closed between known times ``t1 < t2``: the current
        read at each compared; ``entity=(type, name)`` and ``key`` narrow it."""
        ent = {"type": entity[0], "name": entity[1]} if entity is not None else None
        opts = _clean({"lens": _lens(lens), "entity": ent, "key": key})
        return _model(FactDiff, await call(self.mem.conn, "fn::amem::facts::diff", t1, t2, opts))

    async def declare_key(self, key: str, *, multi_valued: bool = True, scopes: Sequence[str] | None = None) -> FactKey:
        """Declare ``key`` multi-valued (several current values) or, with False, single-valued."""
        opts = _clean({"multi_valued": multi_valued, "scopes": _strs("scopes", scopes)})
        return _model(FactKey, await call(self.mem.conn, "fn::amem::facts::declare_key", key, opts))


class Entities:
    """``mem.entities``: the entity reads (fn::amem::entities::*), lens-gated."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    async def list(
        self, *, type: str | None = None, lens: Lens | None = None, limit: int = 50, offset: int = 0,
        as_of: When = None, at_instant: When = None,
    ) -> EntityPage:
        """Entities reached through readable facts, by name, paged (limit <= 500), as known at ``as_of``."""
        opts = _clean({"type": type, "lens": _lens(lens), "limit": limit, "offset": offset, "asOf": as_of, "atInstant": at_instant})
        return _model(EntityPage, await call(self.mem.conn, "fn::amem::entities::list", opts))

    async def get(
        self, type: str, name: str, *, lens: Lens | None = None, as_of: When = None, at_instant: When = None,
        valid_at: When = None, valid_during: Sequence[datetime | str] | None = None, valid_from: When = None,
        valid_until: When = None,
    ) -> EntityDetail | None:
        """One entity with its aliases, attributes and relations, or None. Current by
        default; the time options (datetimes or ISO strings) read what was believed
        (``as_of``), stored (``at_instant``, versioned storage only) or valid
        (``valid_at``, ``valid_during=(from, to)``, ``valid_from``, ``valid_until``)
        then: docs/MEMORY-DESIGN.md "Time"."""
        clock = time_options(as_of=as_of, at_instant=at_instant, valid_at=valid_at, valid_during=valid_during,
                             valid_from=valid_from, valid_until=valid_until)
        row = await call(self.mem.conn, "fn::amem::entities::get", type, name, _clean({"lens": _lens(lens), **clock}))
        return _model(EntityDetail, row) if row else None

    async def history(
        self, type: str, name: str, key: str, *, lens: Lens | None = None, as_of: When = None, at_instant: When = None,
        valid_at: When = None, valid_during: Sequence[datetime | str] | None = None, valid_from: When = None,
        valid_until: When = None,
    ) -> FactHistory:
        """Every row of one key of an entity, newest first, with both clocks; with
        ``as_of`` the history as it stood then (the time options of ``get``, except that
        no valid-time option means every interval)."""
        clock = time_options(as_of=as_of, at_instant=at_instant, valid_at=valid_at, valid_during=valid_during,
                             valid_from=valid_from, valid_until=valid_until)
        opts = _clean({"lens": _lens(lens), **clock})
        return _model(FactHistory, await call(self.mem.conn, "fn::amem::entities::history", type, name, key, opts))


def time_options(
    *, as_of: When = None, at_instant: When = None, valid_at: When = None,
    valid_during: Sequence[datetime | str] | None = None, valid_from: When = None, valid_until: When = None,
) -> dict[str, Any]:
    """The time options of a read (fn::amem::clock::options) under their stored names."""
    if isinstance(valid_during, str | bytes):
        raise TypeError("valid_during must be a pair (from, to), not a string")
    return _clean({
        "asOf": as_of, "atInstant": at_instant, "validAt": valid_at,
        "validDuring": list(valid_during) if valid_during is not None else None,
        "validFrom": valid_from, "validUntil": valid_until,
    })


def _request(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"a memory write is a dict such as {{'triples': [...], 'text': ...}}, not {type(value).__name__}")
    return dict(value)


# --- argument checks: a str is never a list of its characters --------------------------
def _strs(name: str, value: object) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes):
        raise TypeError(f"{name} must be a list of strings, not a {type(value).__name__}: {name}=[{value!r}]")
    if not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of strings, not {type(value).__name__}")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise TypeError(f"{name}[{i}] must be a str, not {type(v).__name__}")
    return list(value)


def _lens(value: object) -> list[list[str]] | None:
    if value is None:
        return None
    example = 'lens=[["org/acme"]] (OR of clauses, each an AND of scope paths)'
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise TypeError(f"lens must be a list of clauses, not {type(value).__name__}: {example}")
    clauses = []
    for i, clause in enumerate(value):
        if isinstance(clause, str | bytes) or not isinstance(clause, Sequence):
            raise TypeError(f"lens[{i}] must be a clause (a list of scope paths), not {type(clause).__name__}: {example}")
        clauses.append(_strs(f"lens[{i}]", clause) or [])
    return clauses


def _filter(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f'filter must be a dict such as {{"mimeType": ["application/pdf"]}}, not {type(value).__name__}')
    out = dict(value)
    for key in ("mimeType", "documentIds"):
        if out.get(key) is not None:
            out[key] = _strs(f"filter.{key}", out[key])
    return out


def _location(value: object) -> str | dict[str, Any] | None:
    """A stored location as the engine takes it; (lat, lng) becomes {lat, lng}. The
    values are checked by fn::amem::geo::stored (typed errors naming the field)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        return {"lat": value[0], "lng": value[1]}
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f'location must be {{"lat": ..., "lng": ...}}, (lat, lng) or "LAT,LNG", not {type(value).__name__}')


def _id(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"an id is a str such as 'document:01hx...', not {type(value).__name__}")
    return value


def _model(model: type[_M], data: Any) -> _M:
    """A stored function's result as its model. A result that does not fit is
    the database's fault, not the caller's: a ServerError naming the field."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ServerError(f"unexpected result shape for {model.__name__}: {exc.errors()[0].get('loc')}: {exc.errors()[0].get('msg')}") from exc


def _clean(opts: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in opts.items() if v is not None}
