"""Recall's BM25 over memory in the three states of a memory table the BM25 lists may or may not
cover (session 17; docs/QUERY-DESIGN.md "BM25 at scale"), on copies of a kept bench store:

* ``before``: lists built over empty memory tables and every memory row in the recent copies
  (what a store that wrote its memory after a build over empty memory tables had before session
  17): the memory lists dropped, n 0 published for them, the copies' rows copied into the recent
  tables;
* ``left_out``: the memory tables left out of the published build (session 17: the engine's
  statement reads them);
* ``listed``: the store as kept (the bench rebuilds the lists after its memory writes).

Each copy is profiled by ``profile_recall_stages.py --store`` (the bench's queries and options),
the copies in turn, ``--rounds`` times; prints the round trip and ``bm25.memory`` p50 of each.

    cp -r results/bench-sN/db/amem-10000 <scratch>/kept   # a bench run with --keep-db
    PYTHONPATH=. python scripts/speed/ab_bm25_unlisted.py <scratch>/kept results/bench-sN/data <scratch>
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

from amem_db.connection import Target, close_quietly, open_connection

STATES = {
    "before": """
        DELETE bm25_list WHERE id[1] IN ['memory_chunk_fts', 'attribute_fts'] RETURN NONE;
        INSERT INTO memory_chunk_fts_recent (SELECT VALUE object::extend($this, { id: type::record('memory_chunk_fts_recent', record::id(id)), written_at: time::now() }) FROM memory_chunk_fts) RETURN NONE;
        INSERT INTO attribute_fts_recent (SELECT VALUE object::extend($this, { id: type::record('attribute_fts_recent', record::id(id)), written_at: time::now() }) FROM attribute_fts) RETURN NONE;
        DEFINE PARAM OVERWRITE $amem_bm25 VALUE object::extend($amem_bm25, { tables: object::extend($amem_bm25.tables, {
            memory_chunk_fts: object::extend($amem_bm25.tables.memory_chunk_fts, { n: 0, avgdl: 0.0 }),
            attribute_fts: object::extend($amem_bm25.tables.attribute_fts, { n: 0, avgdl: 0.0 }) }) }) PERMISSIONS FULL;""",
    "left_out": """
        DEFINE PARAM OVERWRITE $amem_bm25 VALUE object::extend($amem_bm25, { tables: { chunk_fts: $amem_bm25.tables.chunk_fts } }) PERMISSIONS FULL;""",
    "listed": "",
}
ROWS = ("round trip", "bm25.memory")


async def prepare(path: Path, sql: str) -> None:
    if not sql:
        return
    conn = await open_connection(Target(url=f"surrealkv://{path}", ns="bench", db="b"))
    await conn.query(sql)
    await close_quietly(conn)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store", help="a kept bench store (surrealkv folder; it is copied, not written)")
    ap.add_argument("data", help="the bench run's data folder")
    ap.add_argument("scratch", help="a folder for the copies")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    copies = {}
    for state, sql in STATES.items():
        copies[state] = Path(a.scratch) / f"bm25-{state}"
        shutil.rmtree(copies[state], ignore_errors=True)
        shutil.copytree(a.store, copies[state])
        asyncio.run(prepare(copies[state], sql))
    here = Path(__file__).resolve().parent
    for r in range(a.rounds):
        for state, path in copies.items():
            out = subprocess.run([sys.executable, str(here / "profile_recall_stages.py"), "--store", str(path), "--data", a.data],
                                 capture_output=True, text=True, check=True).stdout
            got = [line.split()[-2] for line in out.splitlines() if line.startswith(ROWS)]
            print(f"round {r + 1} {state:9s} " + "  ".join(f"{name} {v} ms" for name, v in zip(ROWS, got)), flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
