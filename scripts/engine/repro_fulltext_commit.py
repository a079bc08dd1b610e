"""A new full-text document commits a transaction of its own (docs/ENGINE-ISSUES.md #41): rows
a second into a table with and without a FULLTEXT index, on fresh ``surrealkv://`` stores, by
one and by two writers in flight on one connection, and by the store's sync mode. Groups of 16
rows an INSERT; the text one word and a number (``--words``) or a 28-word note.

    PYTHONPATH=. python scripts/engine/repro_fulltext_commit.py <scratch folder> [--rows 1600]

Opens the SDK's URL as given (``?sync=...``), not through amem_db.connection, which adds the
product's own sync (connection.DEFAULT_SYNC). ``strace -f -c -e trace=fsync`` on a run shows one
fsync a row under ``sync=every`` (the document id's sequence, written and committed per
document, surrealdb core idx/seqdocids.rs and kvs/sequences.rs ``Sequence::next``).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import time
from pathlib import Path

from surrealdb import AsyncSurreal

WORDS = "memory agent store recall fact passage index vector graph entity session turn note user".split()


async def rate(folder: Path, sync: str, fulltext: bool, writers: int, words: int, rows: int) -> tuple[float, float]:
    """rows/s and process CPU ms a row."""
    path = folder / f"{sync}-{int(fulltext)}-{writers}-{words}"
    shutil.rmtree(path, ignore_errors=True)
    db = AsyncSurreal(f"surrealkv://{path}?sync={sync}")
    await db.connect()
    await db.use("repro", "fulltext_commit")
    await db.query("DEFINE ANALYZER a TOKENIZERS blank, class FILTERS lowercase, snowball(english); DEFINE TABLE t SCHEMALESS;")
    if fulltext:
        await db.query("DEFINE INDEX t_text ON t FIELDS text FULLTEXT ANALYZER a BM25(1.2,0.75);")
    rng = random.Random(1)
    texts = [f"note {i} " + " ".join(rng.choice(WORDS) for _ in range(words)) for i in range(rows)]
    groups = [[{"text": t} for t in texts[i:i + 16]] for i in range(0, rows, 16)]

    async def writer() -> None:
        while groups:
            await db.query("INSERT INTO t $rows RETURN NONE", {"rows": groups.pop()})

    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(writer() for _ in range(writers)))
    return rows / (time.perf_counter() - t0), 1000 * (time.process_time() - c0) / rows


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--rows", type=int, default=1600)
    a = ap.parse_args()
    print("| sync | index | words | 1 writer: rows/s (CPU ms a row) | 2 writers |\n|---|---|---|---|---|")
    for sync in ("every", "1s", "never"):
        for fulltext in (False, True):
            for words in (1, 28):
                one = await rate(a.folder, sync, fulltext, 1, words, a.rows)
                two = await rate(a.folder, sync, fulltext, 2, words, a.rows)
                print(f"| {sync} | {'FULLTEXT' if fulltext else 'none'} | {words + 2} | {one[0]:,.0f} ({one[1]:.3f}) | {two[0]:,.0f} ({two[1]:.3f}) |", flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")
    os._exit(0)  # the native engine may abort at exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    asyncio.run(main())
