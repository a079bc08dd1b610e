"""Ingest end to end with a cold embedding cache against the embedding time alone (issue 25's
goal: within 1.5x). Both runs in one process, the default model loaded and warmed first:

* alone: the texts ingest embeds for these files (``documents::prepare`` on a scratch ``mem://``
  database, ``texts_to_embed``), embedded by the model in the batches ingest uses, nothing else;
* end to end: ``ingest_items`` into a fresh ``surrealkv://`` store with the product's disk cache
  pointed at an empty folder (every text computed, the cache written), prepare, embedding and
  store overlapping as they do for ``amem-db ingest``.

    PYTHONPATH=. python scripts/speed/measure_cold_ingest.py FILE.jsonl [--scratch DIR]

Prints both times and their ratio; the scratch folder (default: a temporary one) is removed.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from amem_db.connection import Target, close_quietly, open_connection
from amem_db.db import call_each
from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.ingest import IngestReport, ingest_items, items_from_file, texts_to_embed
from amem_db.migrator import Migrator

BATCH = 16  # documents a batch, as `amem-db ingest` sends them


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--scratch", default=None)
    a = ap.parse_args()
    scratch = Path(a.scratch or tempfile.mkdtemp(prefix="amem-cold-"))
    scratch.mkdir(parents=True, exist_ok=True)
    items = items_from_file(Path(a.file))
    model = get_embedder(None)
    model.embed_documents(["warm the model up"])

    conn = await open_connection(Target(url="mem://", ns="cold", db="prepare"))
    await Migrator(conn).migrate()
    texts: list[list[str]] = []
    for at in range(0, len(items), BATCH):
        batch = items[at: at + BATCH]
        prepared = await call_each(conn, "fn::amem::documents::prepare", [(it.doc,) for it in batch])
        texts.append([t for it, (ok, p) in zip(batch, prepared) if ok for part in texts_to_embed(p, it.doc).values() for t in part])
    await close_quietly(conn)
    t0 = time.perf_counter()
    for batch_texts in texts:
        model.embed_documents(batch_texts)
    alone = time.perf_counter() - t0

    store = scratch / "store"
    conn = await open_connection(Target(url=f"surrealkv://{store}", ns="cold", db="ingest"))
    await Migrator(conn).migrate()
    embedder = CachedEmbedder(model, scratch / "embeddings.sqlite")
    report = IngestReport()
    t0 = time.perf_counter()
    await ingest_items(conn, embedder, items, batch_size=BATCH, report=report)
    total = time.perf_counter() - t0
    await close_quietly(conn)
    shutil.rmtree(scratch, ignore_errors=True)
    n = sum(len(t) for t in texts)
    print(f"{len(items)} documents, {report.chunks} chunks, {n} texts embedded; load {os.getloadavg()[0]:.1f}")
    print(f"embedding alone {alone:.1f} s; ingest end to end, cold cache {total:.1f} s "
          f"(its embedder calls {report.embed_seconds:.1f} s); ratio {total / alone:.2f} (goal <= 1.5)")
    os._exit(0)  # the native engine may abort at exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    asyncio.run(main())
