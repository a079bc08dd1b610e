"""``recall``'s options (fn::amem::recall, surql/450; the tier ladder's, surql/455)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import PlainValidator

from ._base import Wire, option, strs_of
from .read import ReadOptions

__all__ = ["RecallOptions"]


def _floats(value: Any) -> Any:
    return list(value) if value is not None else None


class RecallOptions(ReadOptions):
    """Add a field here and it is a recall option everywhere: the SurrealQL known-keys
    check renders ``wire_keys()``, the fuzzer sends it, and tests/test_options.py asks
    for the client argument and the CLI flag (or ``cli=False``)."""

    function = "fn::amem::recall"

    include: Annotated[list[str] | None, strs_of("include")] = option("facts and/or passages")
    labels: Annotated[list[str] | None, strs_of("labels")] = option("only rows carrying every label", cli="--label")
    graph_weight: Wire[float | None] = option("the graph leg's RRF weight", cli=False)
    graph_depth: Wire[int | None] = option("relation hops from the named entities")
    # the query window (surql/460)
    query_window: Wire[bool | None] = option("read time words in the query", cli="--no-query-window")
    strict_window: Wire[bool | None] = option("keep only rows in the query window")
    window_weight: Wire[float | None] = option("boost of rows in the query window")
    now: Wire[datetime | str | None] = option("the instant relative time words count from")
    # the session-adjacency signal (surql/450, issue 26)
    adjacent_weight: Wire[float | None] = option("the share of a strong memory passage's score its session neighbours get (hybrid; 0 = off)")
    # the speaker signal (surql/465_speakers, issue 26)
    speaker_weight: Wire[float | None] = option("boost of memory passages linked to an entity the query names, e.g. its speaker (hybrid; 0 = off)")
    # the tier ladder (surql/455_tiers: fn::amem::tiers::keys())
    reuse: Wire[bool | None] = option("tier 2: a stored answer that still holds")
    reuse_max_age: Wire[float | None] = option("seconds a stored answer stays fresh", cli=False)
    confidence_floor: Wire[float | None] = option("tier 4 under this best score")
    hyde_embedding: Annotated[list[float] | None, PlainValidator(_floats)] = option("tier 4's HyDE embedding", cli=False)
    ladder: Wire[bool | None] = option("False: tier 3 alone", cli="--no-ladder")
