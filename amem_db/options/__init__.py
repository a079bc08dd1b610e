"""Read options as typed models (issue 29): the shared read options, documents.query's,
recall's, the time and the geo options. Field names are the Python arguments, aliases
the stored function's camelCase keys, ``dump()`` the object the function takes:

    from amem_db.options import RecallOptions
    RecallOptions(k=5, as_of="2024-01-01", page_size=3).dump()
    # {'asOf': '2024-01-01', 'k': 5, 'pageSize': 3}

The models are the one list of option names: SurrealQL's known-keys checks render
``QueryOptions.wire_keys()`` / ``RecallOptions.wire_keys()`` (surql/400, surql/450),
tests/test_hostile.py fuzzes them, and tests/test_options.py checks the client's
signatures and the CLI flags against them. Values are checked by the stored functions.
"""

from __future__ import annotations

from ._base import ReadOptionsBase, option
from .geo import GeoOptions, Near, Nearest
from .query import QueryOptions
from .read import ReadOptions
from .recall import RecallOptions
from .time import TimeOptions

__all__ = ["GeoOptions", "Near", "Nearest", "QueryOptions", "ReadOptions", "ReadOptionsBase", "RecallOptions", "TimeOptions",
           "option", "render_context"]


def render_context() -> dict[str, list[str]]:
    """The option key lists the migrator renders into surql/ (constants.RENDER_CONTEXT)."""
    return {"query_option_keys": QueryOptions.wire_keys(), "recall_option_keys": RecallOptions.wire_keys()}
