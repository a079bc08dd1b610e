"""The geo option ``location`` of both reads (fn::amem::geo::option, surql/320):
``near`` / ``within`` filter inside every leg, ``nearest`` is one more ranked leg."""

from __future__ import annotations

from typing import Any

from ._base import ReadOptionsBase, Wire, option

__all__ = ["GeoOptions", "Nearest", "Near"]


class Near(ReadOptionsBase):
    lat: Wire[float | None] = option()
    lng: Wire[float | None] = option()
    radius_km: Wire[float | None] = option("kilometres")


class Nearest(ReadOptionsBase):
    lat: Wire[float | None] = option()
    lng: Wire[float | None] = option()
    k: Wire[int | None] = option("the rows nearest the point ranked")
    weight: Wire[float | None] = option("the leg's RRF weight")


class GeoOptions(ReadOptionsBase):
    """``location``: ``{"near": {lat, lng, radiusKm}, "within": WKT or GeoJSON polygon,
    "nearest": {lat, lng, k, weight}}``; a dict of the same keys is sent as given."""

    function = "fn::amem::geo::option"

    near: Wire[Near | dict[str, Any] | None] = option(cli="--near")
    within: Wire[str | dict[str, Any] | None] = option(cli="--within")
    nearest: Wire[Nearest | dict[str, Any] | None] = option(cli="--nearest")
