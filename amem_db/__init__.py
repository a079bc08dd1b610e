"""amem-db: agent-memory retrieval inside SurrealDB (thin client)."""

__version__ = "0.1.0"

from .errors import *  # noqa: E402,F401,F403  (the typed error tree is public API)

from .client import Memory  # noqa: E402,F401
