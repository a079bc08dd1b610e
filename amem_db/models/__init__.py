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

One module per area: documents, keywords, query, facts, recall, forget, traces,
maintain; the bases, ``Tier`` and ``validated`` (the one way a result becomes its
model: a wrong shape is a ``ServerError``) in ``_base``. Import from here.
"""

from __future__ import annotations

from ._base import Tier, validated
from .documents import (
    Chunk,
    ChunkPage,
    Deleted,
    Document,
    DocumentPage,
    DocumentRef,
    DocumentStatus,
    DocumentVersion,
    IngestResult,
    IngestStatus,
    Keyword,
    LinkCounts,
)
from .facts import (
    DiffRow,
    Entity,
    EntityDetail,
    EntityPage,
    FactBatch,
    FactBatchError,
    FactChange,
    FactDiff,
    FactHistory,
    FactKey,
    FactOutcome,
    FactOutcomeKind,
    FactRow,
    FactsPrepared,
    FactWrite,
    PreparedText,
)
from .forget import (
    ForgetCounts,
    ForgetResult,
    Inspection,
    InspectKind,
)
from .keywords import (
    DocumentKeywords,
    KeywordCount,
    KeywordDetail,
    KeywordDocument,
    KeywordMatch,
    KeywordPage,
    KeywordSearch,
    KeywordSort,
)
from .maintain import (
    DoctorCheck,
    DoctorReport,
    IndexStatus,
    MaintainReport,
)
from .query import (
    ContextHit,
    GraphEvidence,
    Hit,
    QueryMode,
    QueryResponse,
)
from .recall import (
    QueryWindow,
    RecallHit,
    RecallInclude,
    RecallMode,
    RecallResponse,
    RecallSource,
    ReusedAnswer,
    SeedEntity,
    StoredAnswer,
)
from .traces import (
    LatencyStats,
    LedgerRow,
    ModeStats,
    Trace,
    TraceExplanation,
    TraceFeedback,
    TracePage,
    TraceRetention,
    TraceStats,
    TraceSummary,
    TraceVerdict,
)

__all__ = [
    "Chunk",
    "ChunkPage",
    "ContextHit",
    "Deleted",
    "DiffRow",
    "DoctorCheck",
    "DoctorReport",
    "Document",
    "DocumentKeywords",
    "DocumentPage",
    "DocumentRef",
    "DocumentStatus",
    "DocumentVersion",
    "Entity",
    "EntityDetail",
    "EntityPage",
    "FactBatch",
    "FactBatchError",
    "FactChange",
    "FactDiff",
    "FactHistory",
    "FactKey",
    "FactOutcome",
    "FactOutcomeKind",
    "FactRow",
    "FactWrite",
    "FactsPrepared",
    "ForgetCounts",
    "ForgetResult",
    "GraphEvidence",
    "Hit",
    "IndexStatus",
    "IngestResult",
    "IngestStatus",
    "InspectKind",
    "Inspection",
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
    "MaintainReport",
    "ModeStats",
    "PreparedText",
    "QueryMode",
    "QueryResponse",
    "QueryWindow",
    "RecallHit",
    "RecallInclude",
    "RecallMode",
    "RecallResponse",
    "RecallSource",
    "ReusedAnswer",
    "SeedEntity",
    "StoredAnswer",
    "Tier",
    "Trace",
    "TraceExplanation",
    "TraceFeedback",
    "TracePage",
    "TraceRetention",
    "TraceStats",
    "TraceSummary",
    "TraceVerdict",
    "validated",
]
