"""What reading a surrealkv store costs in resident memory (docs/ENGINE-ISSUES.md #37): a store
of 60,000 rows of ~2 KB is written and closed, then opened again and scanned three times; the
process's anonymous memory grows by about the store's size, and the same with the block cache
capacity asked for in the URL or in SURREAL_SURREALKV_BLOCK_CACHE_CAPACITY (neither reaches
the engine of surrealdb-embedded 3.0.0b10). A close, then ``malloc_trim``, gives it back.

    PYTHONPATH=. python scripts/engine/repro_read_cache.py
    SURREAL_SURREALKV_BLOCK_CACHE_CAPACITY=16777216 PYTHONPATH=. python scripts/engine/repro_read_cache.py '?surrealkv_block_cache_capacity=16777216'
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

from amem_db.connection import Target, close_quietly, open_connection


def rss() -> str:
    f = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile"):
                f[k] = int(v.split()[0]) // 1024
    return f"{f['VmRSS']} MB (anonymous {f['RssAnon']}, file-backed {f['RssFile']})"


async def main(query: str) -> None:
    path = Path(tempfile.gettempdir()) / "amem-repro-read-cache"
    shutil.rmtree(path, ignore_errors=True)
    conn = await open_connection(Target(url=f"surrealkv://{path}", ns="repro", db="read_cache"))
    for _ in range(30):
        await conn.query("FOR $i IN array::range(0, 2000) { CREATE t CONTENT { text: string::repeat('memory block cache ', 100) + <string> rand::uuid() } RETURN NONE }")
    await close_quietly(conn)
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) // 2**20
    conn = await open_connection(Target(url=f"surrealkv://{path}{query}", ns="repro", db="read_cache"))
    print(f"store {size} MB; opened with {query or 'no options'!r}: {rss()}")
    for _ in range(3):
        await conn.query("RETURN math::sum(SELECT VALUE string::len(text) FROM t)")
    print(f"after 3 full scans: {rss()}")
    await close_quietly(conn)
    print(f"after close_quietly (close + malloc_trim): {rss()}")
    shutil.rmtree(path, ignore_errors=True)
    os._exit(0)  # the native engine may abort at exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else ""))
