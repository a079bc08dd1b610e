"""``mem.traces`` lives in amem_db/client/traces.py; this name is kept for imports."""

from .client.traces import Traces

__all__ = ["Traces"]
