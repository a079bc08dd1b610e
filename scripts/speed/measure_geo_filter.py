"""What a geo filter costs: the geohash cell-key pruning (fn::amem::geo::ids_entity,
surql/320_geo) against a plain scan with the same exact test, at N rows.

Usage: python scripts/speed/measure_geo_filter.py 10000 100000 [--runs 5]

Per size, one fresh ``mem://`` database (migrated), N located ``entity`` rows inserted
directly (uniform over a Europe-sized box, lng -10..30, lat 35..60; entity has no
full-text copy, so the insert measures nothing else), then for each filter
(near 1 / 10 / 100 / 1000 km round Paris, within a ~1 and a ~10 degree box) the median of
``--runs`` calls of each path. Both paths must return the same ids (checked), so a
figure is never the price of a wrong answer. Timings are wall clock on whatever the
machine is doing: say so beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from amem_db.connection import Target, close_quietly, open_connection
from amem_db.migrator import Migrator

PLAIN_SCAN = """
LET $g = fn::amem::geo::option($loc);
LET $gk = $g.kind; LET $gpt = $g.point; LET $gm = $g.meters; LET $gpoly = $g.poly; LET $gbox = $g.box;
RETURN SELECT VALUE id FROM entity WHERE geometry != NONE AND (IF $gk = 'near' {
    (geo::distance(geometry, $gpt) ?? (IF $gpt INSIDE geometry { 0.0 } ELSE { geo::distance(geo::centroid(geometry), $gpt) })) <= $gm
} ELSE { (geometry.coordinates[0] >= $gbox.w AND geometry.coordinates[0] <= $gbox.e AND geometry.coordinates[1] >= $gbox.s
          AND geometry.coordinates[1] <= $gbox.n) AND fn::amem::geo::inside(geometry, $gpoly) });
"""
PRUNED = "RETURN fn::amem::geo::ids_entity(fn::amem::geo::option($loc));"
FILTERS = {
    "near 1 km": {"near": {"lat": 48.8566, "lng": 2.3522, "radiusKm": 1}},
    "near 10 km": {"near": {"lat": 48.8566, "lng": 2.3522, "radiusKm": 10}},
    "near 100 km": {"near": {"lat": 48.8566, "lng": 2.3522, "radiusKm": 100}},
    "near 1000 km": {"near": {"lat": 48.8566, "lng": 2.3522, "radiusKm": 1000}},
    "within 1 deg box": {"within": "POLYGON((2 48, 3 48, 3 49, 2 49, 2 48))"},
    "within 10 deg box": {"within": "POLYGON((0 40, 10 40, 10 50, 0 50, 0 40))"},
}


async def timed(conn, sql: str, params: dict) -> tuple[float, list]:
    t = time.perf_counter()
    result = await conn.query(sql, params)
    return (time.perf_counter() - t) * 1000, result[-1] if isinstance(result, list) else result


async def measure(n: int, runs: int) -> None:
    conn = await open_connection(Target(url="mem://", ns="geo_bench", db=f"n{n}"))
    try:
        await Migrator(conn).migrate()
        rng = random.Random(n)
        t0 = time.perf_counter()
        for start in range(0, n, 1000):
            rows = [{"id": f"e{i}", "name": f"place {i}", "name_norm": f"place {i}", "type": "location",
                     "lng": rng.uniform(-10, 30), "lat": rng.uniform(35, 60)} for i in range(start, min(n, start + 1000))]
            await conn.query("FOR $r IN $rows { CREATE type::record('entity', $r.id) SET name = $r.name, name_norm = $r.name_norm, "
                             "type = $r.type, geometry = <geometry<point>> [$r.lng, $r.lat] RETURN NONE; };", {"rows": rows})
        print(f"\n{n} rows inserted in {time.perf_counter() - t0:.1f} s (geo_cell computed by the VALUE clause)")
        print(f"| rows | filter | matches | cell pruning ms (median of {runs}) | plain scan ms (median of {runs}) |")
        print("| ---: | --- | ---: | ---: | ---: |")
        for name, loc in FILTERS.items():
            pruned, plain = [], []
            for _ in range(runs):
                ms, ids_p = await timed(conn, PRUNED, {"loc": loc})
                pruned.append(ms)
                ms, ids_s = await timed(conn, PLAIN_SCAN, {"loc": loc})
                plain.append(ms)
                if sorted(map(str, ids_p)) != sorted(map(str, ids_s)):
                    raise SystemExit(f"{name}: the pruned path returned {len(ids_p)} ids, the scan {len(ids_s)}")
            print(f"| {n} | {name} | {len(ids_p)} | {statistics.median(pruned):.1f} | {statistics.median(plain):.1f} |")
    finally:
        await close_quietly(conn)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[10000])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    for n in args.sizes:
        await measure(n, args.runs)


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)  # the native engine can abort at exit (docs/ENGINE-ISSUES.md #4)
