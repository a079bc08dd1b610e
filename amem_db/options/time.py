"""The time options of every read (fn::amem::clock::options, surql/120): the three
clocks. docs/ARCHITECTURE.md "Time and space"."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import PlainValidator

from .. import _args
from ._base import ReadOptionsBase, Wire, option

__all__ = ["TimeOptions"]

When = Wire[datetime | str | None]


class TimeOptions(ReadOptionsBase):
    """``asOf`` (known time), ``atInstant`` (system time, versioned storage), and the
    valid-time options; datetimes or ISO 8601 strings. ``fn::amem::clock::keys()``
    lists the same keys (tests/test_options.py)."""

    function = "fn::amem::clock::options"

    as_of: When = option("rows known by then, each interval as believed then")
    at_instant: When = option("rows as stored then (surrealkv+versioned:// only)")
    valid_at: When = option("rows valid at that instant")
    valid_during: Annotated[list[datetime | str] | None, PlainValidator(lambda v: _args.pair("valid_during", v))] = option(
        "rows valid at some point of [from, to)", cli="--valid-during")
    valid_from: When = option("rows valid from then on", cli=False)
    valid_until: When = option("rows valid until then", cli=False)

    @classmethod
    def of(cls, **values: Any) -> dict[str, Any]:
        """The dumped time options of the given arguments (entity reads, facts.diff)."""
        return cls.pick(values).dump()
