"""Polygon locations as the engine's geometry values (issue 12, docs/ENGINE-ISSUES.md #16).

SurrealDB 3.2.4 builds no polygon from data: a WKT string or a GeoJSON object sent as a
parameter stays a string or an object, and ``fn::amem::geo::stored`` refuses it (raw
SurrealQL callers write a geometry literal). A geometry *value*, the SDK's
``GeometryPolygon`` sent as a CBOR geometry, is stored as given. So the client turns a
closed WKT ``POLYGON`` or GeoJSON ``Polygon`` into that value before the call; the
database still checks it (closed, simple rings: surql/320_geo). Anything else
(points, an unclosed ring, text it cannot read) passes through unchanged, for the
database to parse or to refuse with a typed error naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from surrealdb import GeometryLine, GeometryPoint, GeometryPolygon

_WKT_POLYGON = re.compile(r"^\s*POLYGON\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)
_RING = re.compile(r"\(([^()]*)\)")


def _wkt_rings(body: str) -> list[list[list[float]]] | None:
    try:
        return [[[float(n) for n in pair.split()] for pair in ring.split(",")] for ring in _RING.findall(body)]
    except ValueError:
        return None


def _closed(ring: Any) -> bool:
    return (isinstance(ring, Sequence) and len(ring) >= 4 and all(isinstance(p, Sequence) and len(p) == 2 for p in ring)
            and list(ring[0]) == list(ring[-1]))


def polygon_value(value: Any) -> Any:
    """``value``, or the SDK geometry of the polygon it writes as WKT or GeoJSON."""
    rings: Any = None
    if isinstance(value, str) and (m := _WKT_POLYGON.match(value)):
        rings = _wkt_rings(m.group(1))
    elif isinstance(value, Mapping) and value.get("type") == "Polygon":
        rings = value.get("coordinates")
    if not rings or not isinstance(rings, Sequence) or not all(_closed(r) for r in rings):
        return value
    try:
        lines = [GeometryLine(*(GeometryPoint(float(x), float(y)) for x, y in ring)) for ring in rings]
    except (TypeError, ValueError):
        return value
    return GeometryPolygon(*lines)


def with_polygons(request: Mapping[str, Any]) -> dict[str, Any]:
    """A memory write with its ``location`` values (the request's and each triple's) converted."""
    body = dict(request)
    if "location" in body:
        body["location"] = polygon_value(body["location"])
    triples = body.get("triples")
    if isinstance(triples, list):
        body["triples"] = [
            {**t, "location": polygon_value(t["location"])} if isinstance(t, Mapping) and "location" in t else t for t in triples
        ]
    return body
