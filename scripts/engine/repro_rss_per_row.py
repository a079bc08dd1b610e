"""How much resident memory one written row costs the embedded engine, by what the
row carries (docs/ENGINE-ISSUES.md, the RSS entry; issue 25's RSS goal).

Each variant writes N rows of one shape into a fresh surrealkv store, in batches of
50 (as the bench's bulk load), and prints the growth of VmRSS per row; then closes and
reopens the store and prints it again (what one open keeps, what a reopen frees).

    python scripts/engine/repro_rss_per_row.py 5000 text            # a 600-character text
    python scripts/engine/repro_rss_per_row.py 5000 vector          # + a 384-float vector, no index
    python scripts/engine/repro_rss_per_row.py 5000 vector-hnsw     # + an HNSW index on it
    python scripts/engine/repro_rss_per_row.py 5000 text-fts        # text + a full-text index

One variant per process, so that each starts from the same RSS."""

from __future__ import annotations

import asyncio
import ctypes
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

SCHEMAS = {
    "text": "",
    "vector": "",
    "vector-hnsw": "DEFINE INDEX v ON t FIELDS embedding HNSW DIMENSION 384 DIST COSINE TYPE F32;",
    "text-fts": ("DEFINE ANALYZER a TOKENIZERS blank FILTERS lowercase;"
                 "DEFINE INDEX f ON t FIELDS text FULLTEXT ANALYZER a BM25;"),
}


def rss_mb(field: str = "VmRSS:") -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    return 0.0


async def main(n: int, variant: str) -> None:
    from surrealdb import AsyncSurreal

    path = Path(tempfile.gettempdir()) / "repro-rss" / variant
    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    url = f"surrealkv://{path}{sys.argv[3] if len(sys.argv) > 3 else ''}"  # e.g. ?surrealkv_max_memtable_size=...
    rnd = random.Random(7)
    words = [f"w{i}" for i in range(5000)]

    async def opened():
        db = AsyncSurreal(url)
        await db.connect()
        await db.use("r", "r")
        return db

    db = await opened()
    await db.query(SCHEMAS[variant])
    base = rss_mb()
    t0 = time.perf_counter()
    for at in range(0, n, 50):
        rows = []
        for i in range(at, min(at + 50, n)):
            row = {"id": i, "text": " ".join(rnd.choice(words) for _ in range(100))}
            if variant.startswith("vector"):
                row["embedding"] = [rnd.uniform(-1, 1) for _ in range(384)]
            rows.append(row)
        await db.query("INSERT INTO t $rows RETURN NONE", {"rows": rows})
    written = rss_mb()
    print(f"{variant:12s} {n} rows in {time.perf_counter() - t0:.1f}s: RSS +{written - base:.0f} MB "
          f"= {(written - base) * 1024 / n:.1f} KB a row while open", flush=True)
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    print(f"{'':12s} trimmed while open {rss_mb() - base:+.0f} MB", flush=True)
    await db.close()
    closed = rss_mb()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # give freed heap pages back: what is still in use
    trimmed = rss_mb()
    db = await opened()
    await db.query("SELECT count() FROM t GROUP ALL")
    print(f"{'':12s} after close {closed - base:+.0f} MB, trimmed {trimmed - base:+.0f} MB, "
          f"reopened and counted {rss_mb() - base:+.0f} MB; peak {rss_mb('VmHWM:'):.0f} MB", flush=True)
    await db.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
