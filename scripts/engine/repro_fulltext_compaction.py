"""docs/ENGINE-ISSUES.md #21: full-text indexes are never compacted in the embedded engine,
and REBUILD INDEX does not compact them either.

A full-text index keeps per-document length / count deltas that the background
compaction task (`Datastore::index_compaction`, not started by surrealdb-embedded)
would fold; `search::score` sets up its scorer by reading them, so a query for a term
in ONE document costs time proportional to the table. Measured: the same rare-term
query on tables of growing size, then after `REBUILD INDEX` and the storage COMPACT
statements (the latter are refused on mem://).

Usage: python scripts/engine/repro_fulltext_compaction.py      (~1-2 min: the inserts)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time

from surrealdb import AsyncSurreal, RecordID

SIZES = (2000, 8000, 16000)


async def rare_query_ms(db: AsyncSurreal, table: str, score: bool = True) -> float:
    sql = (f"SELECT id, search::score(1) AS s FROM {table} WHERE text @1@ 'zzrare' ORDER BY s DESC LIMIT 10" if score
           else f"SELECT id FROM {table} WHERE text @1@ 'zzrare' LIMIT 10")
    times = []
    for _ in range(15):
        t = time.perf_counter()
        await db.query(sql)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


async def main() -> None:
    db = AsyncSurreal("mem://")
    await db.connect()
    await db.use("p", "p")
    await db.query("DEFINE ANALYZER an TOKENIZERS blank FILTERS lowercase;")
    for n in SIZES:
        t = f"t{n}"
        await db.query(f"DEFINE TABLE {t} SCHEMALESS; DEFINE INDEX {t}_x ON {t} FIELDS text FULLTEXT ANALYZER an BM25(1.2,0.75);")
        for i in range(0, n, 500):
            rows = [{"id": RecordID(t, j), "text": f"common w{j % 97} w{j % 89}"} for j in range(i, min(n, i + 500))]
            await db.query(f"INSERT INTO {t} $rows RETURN NONE", {"rows": rows})
        await db.query(f"CREATE {t}:rare SET text = 'zzrare common'")
        print(f"{n:6} rows: rare term (1 match) median {await rare_query_ms(db, t):6.2f} ms with search::score, "
              f"{await rare_query_ms(db, t, score=False):6.2f} ms without", flush=True)
    t = f"t{SIZES[-1]}"
    s = time.perf_counter()
    await db.query(f"REBUILD INDEX {t}_x ON {t}")
    print(f"REBUILD INDEX {t}_x: {time.perf_counter() - s:.1f} s; rare term now {await rare_query_ms(db, t):6.2f} ms")
    for stmt in (f"ALTER TABLE {t} COMPACT", "ALTER DATABASE COMPACT"):
        try:
            await db.query(stmt)
            print(f"{stmt}: ok")
        except Exception as exc:
            print(f"{stmt}: {str(exc)[:90]}")
    print(f"after those: rare term {await rare_query_ms(db, t):6.2f} ms")
    await db.close()
    os._exit(0)  # docs/ENGINE-ISSUES.md #4


if __name__ == "__main__":
    asyncio.run(main())
