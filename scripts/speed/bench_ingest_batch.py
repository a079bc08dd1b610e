"""Ingest batching (issue 14 item 5): chunks/s of the product path against the
bulk-INSERT floor on the same documents, chunks and vectors, interleaved batch by
batch in one process (so both sides share the machine's load), engine time only
(embeddings computed before the clock starts, from the cache).

    nice -n 10 python scripts/speed/bench_ingest_batch.py --chunks 1000 [--datasets scifact,cranfield,cisi]

Three fresh mem:// databases: `batch` (prepare + fn::amem::ingest::batch, what
ingest_items does now), `single` (prepare + fn::amem::documents::ingest per document,
the path before), `floor` (INSERT INTO chunk of the same chunk rows with their
vectors, 50 a statement, both indexes and the chunk events in place; the documents
inserted beforehand, untimed, as the bench does).
"""
import argparse
import asyncio
import os
import time

from amem_db.connection import Target, open_connection
from amem_db.db import call_each
from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.harness.paths import datasets_root
from amem_db.ingest import items_from_file, texts_to_embed
from amem_db.ingest_batch import ingest_batch
from amem_db.migrator import Migrator

DATA = datasets_root()  # $AMEM_DATASETS, else ../shared/datasets beside the repository


def vectors(emb, p, d):
    parts = texts_to_embed(p, d)
    vecs = emb.embed_documents([t for part in parts.values() for t in part])
    v, pos = {"model": emb.name}, 0
    for key, part in parts.items():
        v[key], pos = vecs[pos:pos + len(part)], pos + len(part)
    return v


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--per-transaction", default="1,4,16", help="documents per transaction of the batch path, one side each")
    ap.add_argument("--datasets", default="scifact,cranfield,cisi")
    a = ap.parse_args()
    per = [items_from_file(DATA / n / "corpus.jsonl") for n in a.datasets.split(",")]
    items = [it for group in zip(*per) for it in group if it.doc["text"].strip()]
    emb = CachedEmbedder(get_embedder("minilm"))
    conns = {}
    sides = ["single"] + [f"tx{n}" for n in a.per_transaction.split(",")]
    for name in sides + ["floor"]:
        conns[name] = await open_connection(Target(url="mem://", ns="b", db=name))
        await Migrator(conns[name]).migrate({"embedding_dim": emb.dimension})
    secs = {f"{s}_{k}": 0.0 for s in sides for k in ("prepare", "store")} | {"floor": 0.0}
    # CPU seconds of this process (the engine is in-process): much less sensitive than
    # wall time to the other processes on a loaded machine
    cpu = {s: 0.0 for s in sides} | {"floor": 0.0}
    chunks = docs = keywords = 0
    pos = 0
    while chunks < a.chunks and pos < len(items):
        batch = items[pos:pos + a.batch]
        pos += len(batch)
        for side in sides:
            conn = conns[side]
            t0, c0 = time.perf_counter(), time.process_time()
            prepared = await call_each(conn, "fn::amem::documents::prepare", [(it.doc,) for it in batch])
            secs[side + "_prepare"] += time.perf_counter() - t0
            cpu[side] += time.process_time() - c0
            vs = [vectors(emb, p, it.doc) for it, (_ok, p) in zip(batch, prepared)]  # cached: off the clock
            t0, c0 = time.perf_counter(), time.process_time()
            if side != "single":
                out = await ingest_batch(conn, [(it.doc, p["keywords"], v) for it, (_ok, p), v in zip(batch, prepared, vs)],
                                         per_transaction=int(side[2:]))
            else:
                out = await call_each(conn, "fn::amem::documents::ingest", [(it.doc, v) for it, v in zip(batch, vs)])
            secs[side + "_store"] += time.perf_counter() - t0
            cpu[side] += time.process_time() - c0
            assert all(ok for ok, _ in out), [o for ok, o in out if not ok][:1]
        # the floor: the same chunk rows and vectors the product just stored
        rows = [{"id": f"{p['content_hash'][:16]}_{c['position']}", "text": c["text"], "position": c["position"],
                 "char_start": c["char_start"], "char_end": c["char_end"], "embedding": v["chunks"][j],
                 "mime_type": it.doc["mime_type"], "scopes": [], "doc": p["content_hash"][:16]}
                for it, (_ok, p), v in zip(batch, prepared, vs) for j, c in enumerate(p["chunks"])]
        await conns["floor"].query("INSERT INTO document $d RETURN NONE", {"d": [
            {"id": p["content_hash"][:16], "title": it.doc.get("title"), "source": it.doc["source"], "mime_type": it.doc["mime_type"],
             "content_hash": p["content_hash"], "text": "", "status": "ready", "chunk_count": len(p["chunks"]), "scopes": [],
             "summary_embedding": v["chunks"][0] if v["chunks"] else None}
            for it, (_ok, p), v in zip(batch, prepared, vs)]})
        t0, c0 = time.perf_counter(), time.process_time()
        for j in range(0, len(rows), 50):
            await conns["floor"].query(
                "INSERT INTO chunk $rows.map(|$r| object::extend(object::remove(object::remove($r, 'id'), 'doc'),"
                " { id: type::record('chunk', $r.id), document: type::record('document', $r.doc) })) RETURN NONE",
                {"rows": rows[j:j + 50]})
        secs["floor"] += time.perf_counter() - t0
        cpu["floor"] += time.process_time() - c0
        chunks += len(rows)
        docs += len(batch)
        keywords += sum(len(p["keywords"]) for _ok, p in prepared)
    f = secs["floor"]
    load = os.getloadavg()
    print(f"{docs} documents, {chunks} chunks, {keywords} keyword edges, batches of {a.batch}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"floor (bulk INSERT, both indexes, vectors given): {chunks / f:7.1f} chunks/s wall, {chunks / cpu['floor']:7.1f} per CPU second")
    single = secs["single_prepare"] + secs["single_store"]
    for side in sides:
        t = secs[side + "_prepare"] + secs[side + "_store"]
        print(f"{side:7s} prepare {secs[side + '_prepare']:6.1f} s + store {secs[side + '_store']:6.1f} s: {chunks / t:6.1f} chunks/s"
              f" = {f / t:.2f}x floor, {single / t:.2f}x single | CPU {cpu[side]:6.1f} s: {chunks / cpu[side]:6.1f} chunks per CPU s"
              f" = {cpu['floor'] / cpu[side]:.2f}x floor, {cpu['single'] / cpu[side]:.2f}x single")
    os._exit(0)


asyncio.run(main())
