"""amem-db: agent-memory retrieval inside SurrealDB (thin client).

    from amem_db import Memory, SyncMemory, NotMigrated

``Memory`` is the async client, ``SyncMemory`` the same surface without
``await``; results are the models of ``amem_db.models``; every error raised
on purpose is an ``AmemError`` (the tree in ``amem_db.errors``).
"""

__version__ = "0.1.0"

from . import errors
from .client import Memory
from .errors import *  # noqa: F403  (the typed error tree is public API; its names are errors.__all__)
from .models import Chunk, ContextHit, Document, DocumentRef, Hit, IngestResult, QueryResponse, RecallHit, RecallResponse
from .parsing import ParseError
from .sync import SyncMemory

__all__ = [
    *errors.__all__,
    "Chunk",
    "ContextHit",
    "Document",
    "DocumentRef",
    "Hit",
    "IngestResult",
    "Memory",
    "ParseError",
    "QueryResponse",
    "RecallHit",
    "RecallResponse",
    "SyncMemory",
    "__version__",
]
