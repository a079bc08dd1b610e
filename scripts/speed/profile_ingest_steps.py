"""Where a document's ingest time goes, step by step, inside the engine (issue 14
item 5). Defines a throw-away instrumented copy of fn::amem::documents::ingest
(time::now() between steps) in a scratch database, ingests the first N documents
of a dataset with cached embeddings, and prints mean ms per document per step.
Also times the bare chunk INSERT (the bulk floor's statement) of the same chunks
and vectors, with and without the chunk events, in the same process.

    nice -n 10 python scripts/speed/profile_ingest_steps.py ../shared/datasets/scifact --docs 200
"""
import argparse
import asyncio
import os
import time
from collections import defaultdict

from amem_db.connection import Target, open_connection
from amem_db.db import call_each
from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.harness.database import corpus_items
from amem_db.harness.datasets import load_dataset
from amem_db.ingest import texts_to_embed
from amem_db.migrator import Migrator

STEPS = """
DEFINE FUNCTION OVERWRITE fn::prof::ingest($doc: any, $vectors: option<object>) -> object {
    LET $t0 = time::now();
    LET $d = object::extend(fn::amem::documents::check($doc), { recorded_at: time::now() });
    LET $hash = crypto::sha256($d.text);
    LET $existing = fn::amem::documents::existing($d.source, $hash);
    LET $t1 = time::now();
    LET $p = fn::amem::documents::prepare($d);
    LET $t2 = time::now();
    LET $v = fn::amem::documents::check_vectors($p, $vectors);
    LET $t3 = time::now();
    LET $id = type::record('document', rand::ulid());
    LET $fields = {
        title: $d.title, source: $d.source, source_id: $d.source_id, mime_type: $d.mime_type,
        content_hash: $hash, text: $d.text, summary: string::trim(string::slice($d.text, 0, 300)),
        summary_embedding: fn::amem::documents::mean_vector(array::concat($v.chunks, $v.audio)),
        status: 'ready', error: NONE, chunk_count: array::len($p.chunks) + array::len($p.audio),
        embedding_model: $v.model, metadata: $d.metadata, scopes: $d.scopes, geometry: $d.geometry,
        structure: { sections: $d.sections, segments: $d.segments, links: $d.links, chunk_size: $d.chunk_size, chunk_overlap: $d.chunk_overlap },
    };
    CREATE $id CONTENT $fields RETURN NONE;
    LET $t4 = time::now();
    LET $key = record::id($id);
    LET $gen = rand::ulid();
    INSERT INTO chunk $p.chunks.map(|$c, $i| {
        id: type::record('chunk', $key + '_' + $gen + '_' + <string> $c.position), document: $id,
        text: $c.text, position: $c.position, char_start: $c.char_start, char_end: $c.char_end,
        embedding: $v.chunks[$i], mime_type: $d.mime_type, scopes: $d.scopes, geometry: $d.geometry, recorded_at: $d.recorded_at,
    }) RETURN NONE;
    LET $t5 = time::now();
    fn::amem::mentions::of_passages($p.chunks.map(|$c| type::record('chunk', $key + '_' + $gen + '_' + <string> $c.position)));
    LET $t6 = time::now();
    fn::amem::keywords::attach($id, $p.keywords, $v.keywords, $d.scopes);
    LET $t7 = time::now();
    fn::amem::documents::link($id);
    LET $t8 = time::now();
    LET $got = fn::amem::documents::get($id);
    LET $t9 = time::now();
    LET $ms = |$a, $b| duration::millis($b - $a) + (duration::micros($b - $a) % 1000) / 1000.0;
    RETURN { check_existing: $ms($t0, $t1), prepare_again: $ms($t1, $t2), check_vectors: $ms($t2, $t3),
             document_create: $ms($t3, $t4), chunk_insert_with_events: $ms($t4, $t5), mentions: $ms($t5, $t6),
             keywords_attach: $ms($t6, $t7), links: $ms($t7, $t8), get: $ms($t8, $t9), total: $ms($t0, $t9) };
} PERMISSIONS FULL;
"""


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--docs", type=int, default=200)
    ap.add_argument("--batch", type=int, default=16)
    a = ap.parse_args()
    ds = load_dataset(a.dataset)
    items = [it for it in corpus_items(ds, "separate") if it.doc["text"].strip()][: a.docs]
    emb = CachedEmbedder(get_embedder("minilm"))
    conns = {}
    for name in ("steps", "floor", "bare"):
        conns[name] = await open_connection(Target(url="mem://", ns="p", db=name))
        await Migrator(conns[name]).migrate({"embedding_dim": emb.dimension})
    await conns["steps"].query(STEPS)
    await conns["bare"].query("REMOVE EVENT chunk_fts_sync ON chunk; REMOVE EVENT amem_index_written ON chunk;")
    sums: dict[str, float] = defaultdict(float)
    t_prep = t_floor = t_bare = 0.0
    n_chunks = n_kw = 0
    for i in range(0, len(items), a.batch):
        batch = items[i:i + a.batch]
        t0 = time.perf_counter()
        prepared = await call_each(conns["steps"], "fn::amem::documents::prepare", [(it.doc,) for it in batch])
        t_prep += time.perf_counter() - t0
        calls, rows = [], []
        for it, (ok, p) in zip(batch, prepared):
            assert ok, p
            parts = texts_to_embed(p, it.doc)
            n_chunks += len(parts["chunks"])
            n_kw += len(parts["keywords"])
            vecs = emb.embed_documents([t for part in parts.values() for t in part])
            v, pos = {"model": emb.name}, 0
            for key, part in parts.items():
                v[key], pos = vecs[pos:pos + len(part)], pos + len(part)
            calls.append((it.doc, v))
            rows += [{"text": c["text"], "position": c["position"], "char_start": c["char_start"], "char_end": c["char_end"],
                      "embedding": v["chunks"][j], "mime_type": "text/plain", "scopes": [], "key": f"{i}_{len(rows) + j}"}
                     for j, c in enumerate(p["chunks"])]
        out = await call_each(conns["steps"], "fn::prof::ingest", calls)
        for ok, r in out:
            assert ok, r
            for k, ms in r.items():
                sums[k] += ms
        for name in ("floor", "bare"):
            t0 = time.perf_counter()
            for j in range(0, len(rows), 50):
                await conns[name].query("INSERT INTO chunk $rows.map(|$r| object::extend(object::remove($r, 'key'), "
                                        "{id: type::record('chunk', $r.key), document: document:floor})) RETURN NONE", {"rows": rows[j:j + 50]})
            dt = time.perf_counter() - t0
            if name == "floor":
                t_floor += dt
            else:
                t_bare += dt
    n = len(items)
    print(f"{n} docs, {n_chunks} chunks, {n_kw} keywords; mean ms per document (engine clock, loaded machine):")
    print(f"  prepare round trip (client side)   {1000 * t_prep / n:7.2f}")
    for k, ms in sums.items():
        print(f"  {k:34s} {ms / n:7.2f}")
    print(f"floor: bulk INSERT of the same chunks+vectors, batch 50: {1000 * t_floor / n:.2f} ms/doc = {n_chunks / t_floor:.0f} chunks/s")
    print(f"       the same without the chunk events (fts copy, index log): {1000 * t_bare / n:.2f} ms/doc = {n_chunks / t_bare:.0f} chunks/s")
    os._exit(0)


asyncio.run(main())
