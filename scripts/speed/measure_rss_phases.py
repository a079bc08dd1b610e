"""Where the bench's peak RSS comes from: VmRSS / VmHWM (peak) after each phase
of the ``amem`` bench worker's load (documents, chunk batches, each HNSW rebuild,
the BM25 lists, the reopen, the timed queries), on the same cached bench data.

    python scripts/speed/measure_rss_phases.py 10000 results/bench-s12/data
    python scripts/speed/measure_rss_phases.py 10000 results/bench-s12/data --memory  # + the recall store

Prints one line per phase; the peak of the whole run is what ``amem-db bench``
reports as peak_rss_mb (ru_maxrss)."""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def mem() -> str:
    fields = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                fields[k] = int(v.split()[0]) // 1024
    return f"rss {fields['VmRSS']:6d} MB  peak {fields['VmHWM']:6d} MB"


async def main(n: int, data: str, with_memory: bool) -> None:
    from amem_db import bm25lists
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.harness.bench import load as load_module
    from amem_db.harness.bench.data import corpus_of
    from amem_db.harness.bench.load import Reopener, chunk_row, document_rows, sendable
    from amem_db.harness.bench.recall import write_memory
    from amem_db.maintain import maintain as maintain_indexes
    from amem_db.maintain import status
    from amem_db.migrator import Migrator

    if os.environ.get("WAL_REOPEN_MB"):  # try another reopen threshold (amem_db/connection.py)
        load_module.WAL_REOPEN_BYTES = int(os.environ["WAL_REOPEN_MB"]) * 1024 * 1024
    data_dir = Path(data)  # a bench run's cached passages and vectors (<out>/data)
    t0 = time.perf_counter()

    def phase(name: str) -> None:
        print(f"{time.perf_counter() - t0:7.1f}s  {name:28s} {mem()}", flush=True)

    phase("start")
    rows, vecs, qtexts, qvecs, _ = corpus_of(data_dir, n)
    phase("bench data in Python")
    db_path = Path(os.environ.get("RSS_DB") or Path(tempfile.gettempdir()) / "rss-phases") / f"amem-{n}"
    shutil.rmtree(db_path, ignore_errors=True)
    target = Target(url=f"surrealkv://{db_path}", ns="bench", db="b")
    db = Reopener(target, await open_connection(target))
    await Migrator(db.conn).migrate({"embedding_dim": int(vecs.shape[1])})
    phase("migrated")
    # finer lines: every reopen, and the steps of the BM25 list build (where the 100k peak is)
    reopen = db.reopen

    async def logged_reopen() -> object:
        phase(f"before reopen {db.reopens + 1}")
        conn = await reopen()
        phase(f"after reopen {db.reopens}")
        return conn
    db.reopen = logged_reopen  # type: ignore[method-assign]
    for name in ("_lists_of", "_store"):
        step = getattr(bm25lists, name)

        def logged(*args: object, _step: object = step, _name: str = name) -> object:
            async def run() -> object:
                out = await _step(*args)  # type: ignore[operator]
                phase(f"  lists: {_name} {args[2] if _name == '_store' else args[1]}")
                return out
            return run()
        setattr(bm25lists, name, logged)
    count = bm25lists.termstats.count_with_df

    async def logged_count(*args: object) -> object:
        out = await count(*args)  # type: ignore[arg-type]
        phase("  lists: term stats counted")
        return out
    bm25lists.termstats.count_with_df = logged_count  # type: ignore[assignment]
    # bulk_load's steps one by one (bench/load.py), a phase line after each
    doc_rows = document_rows(rows, vecs)
    for i in range(0, len(doc_rows), 500):
        await (await db.if_wal_full()).query("INSERT INTO document $rows RETURN NONE", {"rows": sendable(doc_rows[i:i + 500])})
    del doc_rows
    phase("documents inserted")
    for i in range(0, n, 50):
        part = [chunk_row(rows[j], vecs[j]) for j in range(i, min(i + 50, n))]
        await (await db.if_wal_full()).query("INSERT INTO chunk $rows RETURN NONE", {"rows": part})
    phase(f"chunks inserted ({db.reopens} reopens so far)")
    for s in await status(db.conn):
        if s.unbuilt > 0:
            await maintain_indexes(await db.if_wal_full(), auto=False, indexes=[s.index])
            phase(f"rebuilt {s.index}")
    await bm25lists.refresh(await db.if_wal_full(), auto=True)
    phase("BM25 lists built")
    await db.reopen()
    phase(f"reopened ({db.reopens} reopens in all)")
    times = []
    for text, v in [(qtexts[0], qvecs[0])] * 2 + list(zip(qtexts[:20], qvecs[:20])):  # 2 warm-up
        t = time.perf_counter()
        await db.conn.query("RETURN fn::amem::documents::query($q, $e, $o);",
                            {"q": text, "e": v.tolist(), "o": {"mode": "hybrid", "k": 10}})
        times.append((time.perf_counter() - t) * 1000)
    phase(f"20 hybrid queries, p50 {statistics.median(times[2:]):.1f} ms")
    if with_memory:  # the recall store of the bench: n passages + n facts through write_many (bench/recall.py)
        written = await write_memory(db, rows, vecs, "bench", phase)
        phase(f"memory written + rebuilt ({written['passages_per_s']} passages/s, {written['facts_per_s']} facts/s)")
        for text, v in zip(qtexts[:20], qvecs[:20]):
            await db.conn.query("RETURN fn::amem::recall($q, $e, $o);",
                                {"q": text, "e": v.tolist(), "o": {"mode": "hybrid", "k": 10, "embeddingModel": "bench"}})
        phase("20 recalls")
    await close_quietly(db.conn)
    phase("closed")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000,
                     sys.argv[2] if len(sys.argv) > 2 else "results/bench-s12/data", "--memory" in sys.argv))
