"""An `option<array>` field processes every element of its value (docs/ENGINE-ISSUES.md #35):
16 rows of one 384-float vector a statement into scratch tables whose vector field is
`option<array>` (with the `e.*` child the engine defines beside it), the same with the child
removed, and `array`; median ms a row over --rounds statements each, interleaved (`mem://`).

    PYTHONPATH=. python scripts/engine/repro_vector_field.py --rounds 30
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time

from amem_db.connection import Target, open_connection

TABLES = """
DEFINE TABLE a SCHEMAFULL; DEFINE FIELD e ON a TYPE option<array>; DEFINE FIELD t ON a TYPE string;
DEFINE TABLE r SCHEMAFULL; DEFINE FIELD e ON r TYPE option<array>; DEFINE FIELD t ON r TYPE string; REMOVE FIELD e.* ON r;
DEFINE TABLE w SCHEMAFULL; DEFINE FIELD e ON w TYPE array; DEFINE FIELD t ON w TYPE string;
"""


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    a = ap.parse_args()
    conn = await open_connection(Target(url="mem://", ns="repro", db="vector_field"))
    await conn.query(TABLES)
    for t in "arw":
        print(t, sorted((await conn.query(f"INFO FOR TABLE {t}"))[0]["fields"]))
    rng = random.Random(1)
    res: dict[str, list[float]] = {}
    for rnd in range(a.rounds):
        rows = [{"t": f"r{rnd}_{j}", "e": [rng.gauss(0, 1) for _ in range(384)]} for j in range(16)]
        for name, sql in [("parameter only (RETURN array::len)", "RETURN array::len($rows)"),
                          ("option<array> (with e.*)", "INSERT INTO a $rows RETURN NONE"),
                          ("option<array>, e.* removed", "INSERT INTO r $rows RETURN NONE"),
                          ("array", "INSERT INTO w $rows RETURN NONE")]:
            t0 = time.perf_counter()
            await conn.query(sql, {"rows": rows})
            res.setdefault(name, []).append((time.perf_counter() - t0) * 1000 / 16)
    print(f"load {os.getloadavg()[0]:.1f}")
    for name, v in res.items():
        print(f"  {name:36s} {statistics.median(v):.3f} ms a row")
    (kept,) = await conn.query("SELECT VALUE array::len(e) FROM r LIMIT 1")
    print("a vector stored without the child keeps", kept[0], "elements")
    os._exit(0)  # the native engine may abort at exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    asyncio.run(main())
