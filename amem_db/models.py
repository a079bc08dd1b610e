"""Typed results of the stored functions (pydantic).

Attributes are snake_case; each field's alias is the key the stored function
returns, so ``model.model_dump(by_alias=True)`` is exactly the JSON the
function returned (the spec's shapes): camelCase for the query read path
(``charStart``, ``contextHits``, ``queryMs``, ``graphEvidence``; alias
generator ``to_camel``), snake_case for the document and keyword reads
(``mime_type``, ``document_count``, as the spec prints them). A field the
function left out stays out of the dump, and keys the client does not model
(``trace`` details, ``graph`` ...) are kept (``extra="allow"``) and dumped as
they came. Construct by alias or by name (``populate_by_name``). Ids are
plain strings such as ``document:01hx...``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializationInfo, SerializerFunctionWrapHandler, model_serializer
from pydantic.alias_generators import to_camel

__all__ = [
    "Chunk",
    "DiffRow",
    "DoctorCheck",
    "DoctorReport",
    "DocumentVersion",
    "FactChange",
    "FactDiff",
    "IndexStatus",
    "MaintainReport",
    "QueryWindow",
    "ChunkPage",
    "ContextHit",
    "Deleted",
    "Document",
    "DocumentKeywords",
    "DocumentPage",
    "DocumentRef",
    "DocumentStatus",
    "Entity",
    "EntityDetail",
    "EntityPage",
    "FactHistory",
    "FactBatch",
    "FactBatchError",
    "FactKey",
    "FactOutcome",
    "FactOutcomeKind",
    "FactRow",
    "FactsPrepared",
    "FactWrite",
    "ForgetCounts",
    "ForgetResult",
    "InspectKind",
    "Inspection",
    "PreparedText",
    "GraphEvidence",
    "Hit",
    "IngestResult",
    "IngestStatus",
    "Keyword",
    "KeywordCount",
    "KeywordDetail",
    "KeywordDocument",
    "KeywordMatch",
    "KeywordPage",
    "KeywordSearch",
    "KeywordSort",
    "LatencyStats",
    "LedgerRow",
    "LinkCounts",
    "ModeStats",
    "QueryMode",
    "QueryResponse",
    "RecallHit",
    "RecallInclude",
    "RecallMode",
    "RecallResponse",
    "RecallSource",
    "ReusedAnswer",
    "SeedEntity",
    "StoredAnswer",
    "Trace",
    "TraceExplanation",
    "TraceFeedback",
    "TracePage",
    "TraceRetention",
    "TraceStats",
    "TraceSummary",
    "TraceVerdict",
]

#: the retrieval modes of fn::amem::documents::query (spec: "Query modes")
QueryMode = Literal["hybrid", "vector", "bm25", "hybrid_graph"]
#: the modes of fn::amem::recall (MEMORY.md section 2)
RecallMode = Literal["hybrid", "vector", "bm25", "graph"]
#: what a recall response keeps (retrieval and reinforcement see both)
RecallInclude = Literal["facts", "passages"]
#: the record a recall hit is
RecallSource = Literal["entity", "attribute", "relation", "memory_chunk", "chunk", "audio_chunk", "section", "passage_version"]
#: orderings of fn::amem::keywords::list
KeywordSort = Literal["-document_count", "document_count", "text", "-text"]
#: a verdict on a trace hit (fn::amem::traces::feedback)
TraceVerdict = Literal["useful", "wrong"]
DocumentStatus = Literal["processing", "ready", "failed"]
IngestStatus = Literal["added", "replaced", "unchanged", "failed"]


class _Model(BaseModel):
    """A record the client builds itself: every field is dumped."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class _Returned(_Model):
    """A stored function's result: the dump holds exactly the keys it returned."""

    @model_serializer(mode="wrap")
    def _as_returned(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name, field in type(self).model_fields.items():
                if name not in self.model_fields_set:
                    data.pop(field.alias if info.by_alias and field.alias else name, None)
        return data


class _Camel(_Returned):
    """A result of the query read path, whose keys are camelCase."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel)


# --- documents and keywords (snake_case keys) ------------------------------------
class Keyword(_Returned):
    text: str
    normalised: str
    score: float


class Document(_Returned):
    """A document without its text (``documents.get``); ``documents.list``
    returns the listing fields only."""

    id: str
    title: str | None = None
    source: str | None = None
    source_id: str | None = None
    mime_type: str
    content_hash: str | None = None
    status: DocumentStatus
    chunk_count: int = 0
    embedding_model: str | None = None
    summary: str | None = None
    metadata: dict[str, Any] | None = None
    scopes: list[str] = []
    created_at: datetime | None = None
    updated_at: datetime | None = None
    keywords: list[Keyword] = []


class DocumentPage(_Returned):
    documents: list[Document]
    total: int
    limit: int
    offset: int


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


class KeywordMatch(_Returned):
    text: str
    normalised: str
    score: float


class KeywordSearch(_Returned):
    results: list[KeywordMatch]


class Deleted(_Returned):
    """``documents.delete``: the id deleted and how many chunks went with it."""

    deleted: str
    chunks: int


class LinkCounts(_Returned):
    """``documents.recompute_links``: links rebuilt across how many documents."""

    links: int
    documents: int


class IngestResult(_Model):
    """One document's outcome: added / replaced / unchanged, or failed with an error."""

    status: IngestStatus
    name: str
    document: Document | None = None
    error: str | None = None
    error_code: str | None = None


# --- passages and the query read path (camelCase keys) ----------------------------
class Chunk(_Camel):
    """A passage: a text chunk, or a transcript passage with ``start_s``/``end_s``
    seconds. ``text == document.text[char_start:char_end]``. In a hit it names
    its ``document``; in a ``ChunkPage`` the page does."""

    id: str
    document: str | None = None
    text: str
    section: str | None = None
    position: int
    char_start: int
    char_end: int
    start_s: float | None = None
    end_s: float | None = None
    # a kept passage of a replaced document version (an asOf / atInstant read with
    # document history): when it was stored and when its document was replaced
    recorded_at: datetime | None = None
    replaced_at: datetime | None = None


class DocumentVersion(_Camel):
    """One version of a document (``documents.versions``): the current one, or a
    replaced one kept by document history (``replaced_at`` set)."""

    content_hash: str
    title: str | None = None
    recorded_at: datetime | None = None
    replaced_at: datetime | None = None
    passages: int = 0
    current: bool = False


class ChunkPage(_Camel):
    document: str
    chunks: list[Chunk]
    total: int
    limit: int
    offset: int


class DocumentRef(_Camel):
    """A hit's provenance: the document's id, title and source."""

    id: str
    title: str | None = None
    source: str | None = None


class GraphEvidence(_Camel):
    """One graph signal's part in a hybrid_graph score (``edge_kind``
    ``hybrid_graph`` is the merged evidence); ``via`` names the records."""

    edge_kind: str
    contribution: float
    signal: float | None = None
    via: list[Any] = []


class Hit(_Camel):
    """A ranked passage: its chunk, score in [0, 1], and its document."""

    chunk: Chunk
    score: float
    document: DocumentRef
    graph_evidence: list[GraphEvidence] | None = None


class ContextHit(_Camel):
    """A same-section sibling of the ranked hit ``expands`` (not counted against k)."""

    chunk: Chunk
    document: DocumentRef
    expands: str


class QueryResponse(_Camel):
    """``fn::amem::documents::query``: ranked ``results``, ``context_hits``,
    ``query_ms``, ``warnings`` (e.g. the HyDE / decomposition / reranker
    fall-backs) and the ``trace`` written to ``retrieval_trace``. A paged query
    (``page_size``) also has ``cursor`` (None: the last page) and ``candidates``
    (the size of the frozen candidate set)."""

    results: list[Hit]
    context_hits: list[ContextHit] = []
    query_ms: float = 0.0
    warnings: list[str] = []
    trace: dict[str, Any] | None = None
    cursor: str | None = None
    candidates: int | None = None


# --- typed memory: facts and entities (snake_case keys, as the write request) ----------
#: what reconciliation did with one triple (fn::amem::facts::apply)
FactOutcomeKind = Literal["added", "unchanged", "coexists", "superseded", "uncertain", "late", "retracted", "nothing_to_retract"]


class PreparedText(_Returned):
    """One text ``facts.prepare`` asks to embed (``id`` for entities,
    ``triple`` for attribute renderings, offsets for passages)."""

    text: str
    id: str | None = None
    triple: int | None = None
    position: int | None = None
    char_start: int | None = None
    char_end: int | None = None


class FactsPrepared(_Returned):
    entities: list[PreparedText]
    attributes: list[PreparedText]
    passages: list[PreparedText]


class FactOutcome(_Returned):
    triple: int
    outcome: FactOutcomeKind
    id: str | None = None
    supersedes: list[str] = []
    uncertain_with: list[str] = []
    retracted: list[str] = []


class FactWrite(_Returned):
    """The result of ``facts.write`` (a repeat with the same idempotency key returns it again)."""

    write: str
    scopes: list[str]
    observed_at: datetime
    triples: list[FactOutcome]
    passages: list[str]


class FactBatchError(_Model):
    """A request of ``facts.write_many`` that was not stored: nothing of it was
    written (its own transaction rolled back); ``code`` is the ``AmemError`` code."""

    index: int
    code: str
    message: str

    def exception(self) -> Exception:
        """The typed ``AmemError`` a single ``facts.write`` of this request raises."""
        from .errors import error_for

        return error_for(self.code, self.message)


class FactBatch(_Model):
    """The result of ``facts.write_many``: ``writes[i]`` is request i's ``FactWrite``
    (a replayed idempotency key gives the stored one), None where ``errors`` names it."""

    writes: list[FactWrite | None]
    errors: list[FactBatchError] = []
    #: engine transactions the batch ran, committed or not (its groups, plus one per request of a failed group)
    transactions: int = 0
    facts: int = 0
    passages: int = 0


class FactRow(_Returned):
    """An attribute (``value``) or relation (``target``) row with its three clocks."""

    id: str
    key: str
    value: Any = None
    target: str | None = None
    text: str | None = None
    category: str
    confidence: float
    importance: float
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    observed_at: datetime | None = None
    recorded_at: datetime | None = None
    superseded_at: datetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    retracted: bool = False
    current: bool
    session_id: str | None = None
    role: str | None = None
    source: dict[str, Any] | None = None
    labels: list[str] = []
    scopes: list[str] = []


class Entity(_Returned):
    id: str
    type: str
    name: str
    name_norm: str | None = None
    category: str | None = None
    importance: float | None = None
    created_at: datetime | None = None


class EntityDetail(Entity):
    """``entities.get``: the entity with its aliases and current facts."""

    aliases: list[str] = []
    attributes: list[FactRow] = []
    relations: list[FactRow] = []


class EntityPage(_Returned):
    entities: list[Entity]
    total: int
    limit: int
    offset: int


class FactKey(_Returned):
    key: str
    multi_valued: bool
    scopes: list[str]


class FactHistory(_Returned):
    """``entities.history``: every row of one key, newest first."""

    entity: str
    key: str
    rows: list[FactRow]
    clock: dict[str, Any] = {}


class DiffRow(FactRow):
    """A fact row of ``facts.diff``, as believed at the end it belongs to."""

    entity: str
    key_norm: str


class FactChange(_Returned):
    """An entity + key (+ scopes) whose facts were replaced between the two times."""

    entity: str
    key: str
    before: list[DiffRow]
    after: list[DiffRow]


class FactDiff(_Returned):
    """``facts.diff``: what the current read showed at ``t1`` and at ``t2``, compared."""

    t1: datetime
    t2: datetime
    added: list[DiffRow]
    changed: list[FactChange]
    closed: list[DiffRow]


# --- unified recall (camelCase keys, as the query read path) ---------------------------
class RecallHit(_Camel):
    """One ranked fact or passage. ``citation`` says where it came from: for a fact
    ``{fact, entity, key, value, target, write, confidence, recordedAt, source}``,
    for a memory passage ``{memoryPassage, write, charStart, charEnd, sessionId,
    role, source}`` (``source`` is the write's ``{kind, ref, span}``), for a document
    passage ``{document, title, chunk, section, charStart, charEnd}``, for an entity
    ``{entity, type, name}``."""

    id: str
    text: str
    source: RecallSource
    score: float
    occurred_at: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    importance: float | None = None
    citation: dict[str, Any] = {}


class SeedEntity(_Camel):
    """An entity the query names (by name or alias): the graph leg starts there."""

    id: str
    name: str
    type: str
    named: list[str] = []
    # tier 1: the keys of this entity whose current rows recall read by key
    keys: list[str] = []


class QueryWindow(_Camel):
    """The time window recall read from the query's words (surql/460): ``from_``
    inclusive, ``to`` exclusive, UTC; None on a side = open ("since 2021")."""

    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None
    phrase: str


class ReusedAnswer(_Camel):
    """The answer a tier-2 recall reused: its text, the query it was made for, the ids
    it cited (each still current) and the cosine of the two queries."""

    id: str
    query: str
    text: str
    cited: list[str]
    created_at: datetime
    similarity: float


class RecallResponse(_Camel):
    """``fn::amem::recall``: one ranked ``hits`` list over facts and passages,
    ``context_hits`` (section siblings of document hits, outside k),
    ``seed_entities``, ``classification_kind``, ``query_window`` (None when the
    query has no time words or it is off), ``tier`` / ``tier_reason``,
    ``query_ms``, ``warnings`` and the ``trace`` (per hit, per signal)."""

    hits: list[RecallHit]
    context_hits: list[ContextHit] = []
    seed_entities: list[SeedEntity] = []
    classification_kind: Literal["direct_lookup", "hybrid", "full_context"] = "hybrid"
    clock: dict[str, Any] = {}
    query_window: QueryWindow | None = None
    # the tier ladder (surql/455_tiers): 3, 4 or "cache"; ``tiers``: what each tier did and why
    tier: int | str = 3
    tier_reason: str | None = None
    escalated: bool = False
    tiers: dict[str, Any] = {}
    # tier 2 only: the stored answer reused (``mem.answers.remember``)
    reused_from: str | None = None
    answer: ReusedAnswer | None = None
    query_ms: float = 0.0
    warnings: list[str] = []
    trace: dict[str, Any] | None = None
    # stable pagination (``page_size`` / ``cursor``): the next page's cursor (None: last),
    # how many hits the frozen set holds, the page size
    cursor: str | None = None
    candidates: int | None = None
    page_size: int | None = None


class StoredAnswer(_Camel):
    """``mem.answers.remember``: the stored answer's id, when, and the ids it cites."""

    id: str
    created_at: datetime
    cited: list[str]

# --- forget and inspect (fn::amem::forget, fn::amem::inspect) ----------------------------
class ForgetCounts(_Returned):
    """Rows per table a forget changed (soft: forgotten_at set; purge: erased; dryRun: would)."""

    attribute: int = 0
    relation: int = 0
    memory_chunk: int = 0
    entity_name: int = 0
    uncertainty: int = 0
    mentions: int = 0
    attribute_fts: int = 0
    memory_chunk_fts: int = 0


class ForgetResult(_Returned):
    """``mem.forget``: the counts, whether rows were erased, and the ids the request
    named or matched (``missing``: ids that do not exist or that the caller cannot read)."""

    forgotten: ForgetCounts
    purged: bool
    dry_run: bool = Field(alias="dryRun")
    ids: list[str] = []
    missing: list[str] = []


#: what ``fn::amem::inspect`` can show
InspectKind = Literal["entity", "attribute", "relation", "memory_chunk", "chunk", "audio_chunk", "retrieval_trace"]


class Inspection(_Returned):
    """``mem.inspect``: one record (``record``, in its read shape) and what explains it;
    which of the other fields are set depends on ``kind`` (docs/MEMORY-DESIGN.md "Inspect")."""

    kind: InspectKind
    id: str
    record: dict[str, Any]
    # entity
    aliases: list[str] | None = None
    attributes: list[FactRow] | None = None
    relations: list[FactRow] | None = None
    incoming: list[FactRow] | None = None
    # attribute / relation
    entity: str | None = None
    supersedes: FactRow | None = None
    superseded_by: FactRow | None = None
    uncertainty: list[dict[str, Any]] | None = None
    # memory_chunk
    mentions: list[dict[str, Any]] | None = None
    # chunk / audio_chunk
    document: dict[str, Any] | None = None
    span: dict[str, Any] | None = None


# --- traces (fn::amem::traces::*, surql/470_traces) ----------------------------------------
class TraceSummary(_Camel):
    """One row of ``mem.traces.list``: what a query or recall asked, how it ran, what came first."""

    id: str
    query: str
    mode: str
    created_at: datetime = Field(alias="created_at")
    caller: str | None = None
    tier: int = 3
    escalated: bool = False
    cache_hit: bool = False
    k: int | None = None
    hits: int = 0
    top_hit: str | None = None
    top_score: float | None = None
    total_ms: float | None = None
    feedback: int = 0


class TracePage(_Camel):
    """``mem.traces.list``: newest first; ``next`` is the ``until`` of the next page (None: last page)."""

    traces: list[TraceSummary]
    next: datetime | None = None


class Trace(_Camel):
    """``mem.traces.get``: the stored trace (options, legs, per-hit signals, timings) with
    its tier, ``escalated`` and ``cache_hit`` read from it (absent = tier 3)."""

    id: str
    query: str
    mode: str
    options: dict[str, Any] = {}
    legs: dict[str, Any] = {}
    hits: list[dict[str, Any]] = []
    timings: dict[str, Any] = {}
    caller: str | None = None
    scopes: list[str] = []
    created_at: datetime = Field(alias="created_at")
    tier: int = 3
    escalated: bool = False
    cache_hit: bool = False


class LatencyStats(_Camel):
    p50_ms: float | None = Field(default=None, alias="p50Ms")
    p95_ms: float | None = Field(default=None, alias="p95Ms")
    max_ms: float | None = None


class ModeStats(LatencyStats):
    count: int


class TraceStats(_Camel):
    """``mem.traces.stats`` over the newest traces selected (``truncated``: older ones left out)."""

    traces: int
    truncated: bool
    since: datetime
    until: datetime
    modes: dict[str, ModeStats] = {}
    tiers: dict[str, int] = {}
    cache_hit_rate: float | None = None
    escalation_rate: float | None = None
    latency: LatencyStats


class LedgerRow(_Camel):
    """One signal's part in a hit's rank: its rank in that signal, the raw measure, weight, RRF contribution."""

    signal: str
    rank: int | None = None
    measure: str
    value: float | None = None
    weight: float | None = None
    contribution: float | None = None
    note: str | None = None


class TraceExplanation(_Camel):
    """``mem.traces.explain``: why one hit of a trace ranked where it did."""

    trace: str
    query: str
    mode: str
    tier: int = 3
    hit: dict[str, Any]
    rrf_k: float | None = None
    ledger: list[LedgerRow]
    decisions: list[str] = []
    # a reranked hit: {method, model, mix, before {rank, score}, after {rank, score}, rankDelta, scoreDelta, ...}
    rerank: dict[str, Any] | None = None


class TraceFeedback(_Camel):
    """``mem.traces.feedback``: the verdict stored for one hit of one trace."""

    id: str
    trace: str
    hit: str
    verdict: Literal["useful", "wrong"]
    rank: int | None = None
    caller: str | None = None
    created_at: datetime = Field(alias="created_at")


class TraceRetention(_Camel):
    """``mem.traces.retention``: the limits enforced on every trace write (None = no limit)."""

    max_age: str | None = None
    max_count: int | None = None
    per_write: int
class IndexStatus(_Returned):
    """One HNSW index of ``fn::amem::maintain::status`` (amem_db/maintain.py): rows of its
    table, rows written since its last build (``unbuilt``: the pending queue every KNN
    scans, docs/ENGINE-ISSUES.md #19), their share, whether a rebuild is ``due``."""

    index: str
    table: str
    field: str
    rows: int
    unbuilt: int
    share: float
    due: bool
    building: bool
    started_at: datetime | None = None
    built_at: datetime | None = None
    built_rows: int | None = None
    seconds: float | None = None
    builds: int = 0


class MaintainReport(_Model):
    """``mem.maintain``: the indexes rebuilt (their status after the build) and the
    status of every index before, with the threshold that chose them."""

    threshold: float
    min_rows: int
    rebuilt: list[IndexStatus] = []
    before: list[IndexStatus] = []
    seconds: float = 0.0
    # the term statistics counted by this pass (amem_db/termstats.py count), None: not due
    term_stats: dict[str, Any] | None = None
    # the BM25 champion lists built by this pass (amem_db/bm25lists.py build), None: not due
    bm25_lists: dict[str, Any] | None = None


class DoctorCheck(_Model):
    """One check of ``amem-db doctor``: ``ok`` (the hazard is absent), ``handled``
    (present, and amem-db works around it: ``handling`` says how), ``unhandled``
    (present and not worked around: doctor exits 1), ``error`` (the check could not run)."""

    name: str
    status: Literal["ok", "handled", "unhandled", "error"]
    finding: str
    handling: str = ""
    details: dict[str, Any] = {}


class DoctorReport(_Model):
    """``amem-db doctor``: the engine version and every check; ``healthy`` unless one
    is unhandled or failed to run."""

    engine: str
    checks: list[DoctorCheck]
    healthy: bool
