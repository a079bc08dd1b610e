"""amem-db: agent-memory retrieval inside SurrealDB (thin client).

    from amem_db import Memory, SyncMemory, NotMigrated

``Memory`` is the async client, ``SyncMemory`` the same surface without
``await``; results are the models of ``amem_db.models``; every error raised
on purpose is an ``AmemError`` (the tree in ``amem_db.errors``).
"""

__version__ = "0.1.0"

from .client import Memory
from .errors import (
    AmemError,
    AuthenticationFailed,
    ConnectionFailed,
    DatabaseInUse,
    DimensionChangeRefused,
    EmbeddingMismatch,
    EngineTooOld,
    IdempotencyConflict,
    InvalidInput,
    MigrationDrift,
    MigrationError,
    MigrationLocked,
    MigrationMissing,
    MigrationOutOfOrder,
    NotFound,
    NotImplementedMode,
    NotMigrated,
    PermissionDenied,
    ServerError,
    TransportError,
    UnknownEmbedder,
    UnknownUrlScheme,
)
from .models import Chunk, ContextHit, Document, DocumentRef, Hit, IngestResult, QueryResponse
from .parsing import ParseError
from .sync import SyncMemory

__all__ = [
    "AmemError",
    "AuthenticationFailed",
    "Chunk",
    "ConnectionFailed",
    "ContextHit",
    "DatabaseInUse",
    "DimensionChangeRefused",
    "Document",
    "DocumentRef",
    "EmbeddingMismatch",
    "EngineTooOld",
    "Hit",
    "IdempotencyConflict",
    "IngestResult",
    "InvalidInput",
    "Memory",
    "MigrationDrift",
    "MigrationError",
    "MigrationLocked",
    "MigrationMissing",
    "MigrationOutOfOrder",
    "NotFound",
    "NotImplementedMode",
    "NotMigrated",
    "ParseError",
    "PermissionDenied",
    "QueryResponse",
    "ServerError",
    "SyncMemory",
    "TransportError",
    "UnknownEmbedder",
    "UnknownUrlScheme",
    "__version__",
]
