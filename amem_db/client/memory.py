"""`Memory`: the connection, the embedder, and the top-level calls (recall, remember,
forget, inspect, maintain); the namespaces hang off it (documents, facts, entities,
traces, answers)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..connection import WAL_REOPEN_BYTES, Target, close_quietly, open_connection, resolve_target, wal_bytes
from ..constants import MAINTAIN_MIN_ROWS, MAINTAIN_THRESHOLD
from ..db import call
from ..embedding.base import Embedder
from ..errors import AmemError, InvalidInput, from_engine_error
from ..fact_syntax import parse_fact
from ..llm import ChatProvider
from ..maintain import maintain as maintain_indexes
from ..maintain import status as maintain_status
from ..migrator import Migrator, Plan
from ..models import FactWrite, ForgetResult, IndexStatus, Inspection, MaintainReport, RecallInclude, RecallMode, RecallResponse
from ..options import RecallOptions
from ..rerank import Reranker, rerank_recall_step, resolve_reranker
from . import _call, _read
from ._call import Lens, Location, When
from .answers import Answers
from .documents import Documents
from .entities import Entities
from .facts import Facts
from .traces import Traces

__all__ = ["Memory"]


class Memory:
    """A connection plus the embedder. ``Memory.open(...)`` resolves where the
    database is; ``Memory(conn, embedder=...)`` wraps a connection you opened."""

    def __init__(self, conn: Any, *, embedder: Embedder | str | None = None, target: Target | None = None) -> None:
        self.conn = conn
        self.target = target
        if embedder is None or isinstance(embedder, str):
            from ..embedding import get_embedder

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
        self.answers = Answers(self)  # recall's tier 2 (amem_db/client/answers.py)

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
                from ..embedding import CachedEmbedder

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
        speaker_weight: float | None = None,
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
        default 0.4, 0 = off): the share of a strong memory passage's score that its
        neighbours in the same session get (the trace ledger's ``adjacent`` row).
        ``speaker_weight`` (hybrid): the boost of memory passages linked to an entity the
        query names, their speaker's or a name in their text (the ledger's ``speaker`` row).

        The tier ladder (``response.tier``, ``response.tiers``): ``reuse=True`` returns a
        stored answer (``mem.answers.remember``) that still holds, younger than
        ``reuse_max_age`` seconds (3600), as ``tier == Tier.CACHE`` (2, "cache" on the wire); a thin or unsure
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
        # every recall option by its argument name (amem_db/options/recall.py; the CLI, the
        # SurrealQL known keys and the fuzzer use the same model)
        opts = RecallOptions.pick(locals()).dump()
        if cursor is not None:  # the next page of a frozen set: nothing to rewrite, embed or rerank
            return _call.validated(RecallResponse, await _read.read(self, "fn::amem::recall", query, opts, embed=False, mode=mode))
        external = resolve_reranker(reranker) if use_reranker is not False and reranker != "rescore" else None
        if use_reranker and external is not None:
            opts["k"] = max(k, min(rerank_depth or k, 50))

        async def second_stage(raw: dict[str, Any]) -> dict[str, Any]:
            # asked for, or (not refused) a response the tier ladder escalated
            if use_reranker or (use_reranker is None and raw.get("escalated")):
                return await rerank_recall_step(self.conn, external, query, raw, k)
            return raw

        vector = mode not in ("bm25", "graph")
        raw = await _read.read(self, "fn::amem::recall", query, opts, embed=vector, mode=mode if vector else "bm25",
                               hyde=bool(hyde), llm=llm, second_stage=second_stage)
        return _call.validated(RecallResponse, raw)

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
        request = _call.clean({
            "triples": triples or None, "text": text or None, "scopes": _call.strs("scopes", scopes), "category": category,
            "confidence": confidence, "observed_at": observed_at, "valid_from": valid_from, "valid_until": valid_until,
            "session_id": session_id, "role": role, "labels": _call.strs("labels", labels), "location": _call.location(location),
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
        request = _call.clean({"ids": _call.strs("ids", ids), "query": dict(query) if query is not None else None,
                          "scopes": _call.strs("scopes", scopes), "dryRun": dry_run or None, "purge": purge or None})
        return _call.validated(ForgetResult, await call(self.conn, "fn::amem::forget", request))

    async def inspect(self, ref: str | Mapping[str, str], *, lens: Lens | None = None) -> Inspection | None:
        """One record by reference (an id such as ``attribute:01KB...``, or an entity
        ``{"type": "person", "name": "Alice"}``) with what explains it; None when it
        is absent, unreadable, forgotten or outside ``lens``."""
        if not isinstance(ref, str | Mapping):
            raise TypeError(f"a reference is an id str or an entity {{'type', 'name'}}, not {type(ref).__name__}")
        row = await call(self.conn, "fn::amem::inspect", ref if isinstance(ref, str) else dict(ref), _call.clean({"lens": _call.lens(lens)}))
        return _call.validated(Inspection, row) if row else None

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


