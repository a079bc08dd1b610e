"""amem-db: agent-memory retrieval inside SurrealDB (thin client)."""

__version__ = "0.1.0"

from .client import Memory  # noqa: F401
from .errors import *  # noqa: F403  (the typed error tree is public API)
