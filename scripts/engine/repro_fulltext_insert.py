"""What a full-text entry costs on insert (docs/ENGINE-ISSUES.md #36): 16 rows of 20 random words
a statement into a table with a FULLTEXT index and into one without, ms a row (median of 6) at
0 .. N rows already indexed. URL: the store (default mem://; a surrealkv path must not exist).

    PYTHONPATH=. python scripts/engine/repro_fulltext_insert.py 10000
    URL=surrealkv://<scratch folder>/ftkv PYTHONPATH=. python scripts/engine/repro_fulltext_insert.py 10000
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import time

from amem_db.connection import Target, open_connection

SCHEMA = """
DEFINE ANALYZER a TOKENIZERS class FILTERS lowercase, snowball(english);
DEFINE TABLE f SCHEMAFULL; DEFINE FIELD t ON f TYPE string; DEFINE INDEX ft ON f FIELDS t FULLTEXT ANALYZER a BM25(1.2,0.75);
DEFINE TABLE p SCHEMAFULL; DEFINE FIELD t ON p TYPE string;
"""


async def main() -> None:
    upto = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    conn = await open_connection(Target(url=os.environ.get("URL", "mem://"), ns="repro", db="fulltext_insert"))
    await conn.query(SCHEMA)
    rng = random.Random(1)
    words = [f"w{i}" for i in range(3000)]

    def rows(k: int) -> list[dict[str, str]]:
        return [{"t": " ".join(rng.choice(words) for _ in range(20))} for _ in range(k)]

    done = 0
    for mark in [m for m in (0, 1000, 2500, 5000, 10000, 20000) if m <= upto]:
        while done < mark:  # fill both tables alike
            await conn.query("INSERT INTO f $r RETURN NONE; INSERT INTO p $r RETURN NONE", {"r": rows(256)})
            done += 256
        ms: dict[str, list[float]] = {"f": [], "p": []}
        for _ in range(6):
            for table in ("f", "p"):
                batch = rows(16)
                t0 = time.perf_counter()
                await conn.query(f"INSERT INTO {table} $r RETURN NONE", {"r": batch})
                ms[table].append((time.perf_counter() - t0) * 1000 / 16)
            done += 8
        print(f"{done:6d} rows indexed: full-text {statistics.median(ms['f']):.3f} ms a row, "
              f"plain {statistics.median(ms['p']):.3f} (load {os.getloadavg()[0]:.1f})", flush=True)
    os._exit(0)  # the native engine may abort at exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    asyncio.run(main())
