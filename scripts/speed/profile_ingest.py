"""Profile the product ingest path: time per stage on the first N documents
of a dataset, into a fresh database (cached embeddings).

    python scripts/speed/profile_ingest.py ../shared/datasets/scifact --docs 300 [--url mem://]
"""
import argparse
import asyncio
import time

from amem_db.connection import Target, open_connection
from amem_db.db import call_each
from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.harness.database import corpus_items
from amem_db.harness.datasets import load_dataset
from amem_db.ingest import texts_to_embed
from amem_db.migrator import Migrator


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--url", default="mem://")
    a = ap.parse_args()
    ds = load_dataset(a.dataset)
    items = [it for it in corpus_items(ds, "separate") if it.doc["text"].strip()][: a.docs]
    emb = CachedEmbedder(get_embedder("minilm"))
    conn = await open_connection(Target(url=a.url, ns="p", db="p"))
    await Migrator(conn).migrate({"embedding_dim": emb.dimension})
    t_prep = t_emb = t_ing = 0.0
    n_chunks = n_kw = 0
    for i in range(0, len(items), a.batch):
        batch = items[i:i + a.batch]
        t0 = time.perf_counter()
        prepared = await call_each(conn, "fn::amem::documents::prepare", [(it.doc,) for it in batch])
        t1 = time.perf_counter()
        calls = []
        for it, (ok, p) in zip(batch, prepared):
            assert ok, p
            parts = texts_to_embed(p)
            n_chunks += len(parts["chunks"])
            n_kw += len(parts["keywords"])
            texts = [t for part in parts.values() for t in part]
            vecs = emb.embed_documents(texts)
            v, pos = {"model": emb.name}, 0
            for key, part in parts.items():
                v[key], pos = vecs[pos:pos + len(part)], pos + len(part)
            calls.append((it.doc, v))
        t2 = time.perf_counter()
        out = await call_each(conn, "fn::amem::documents::ingest", calls)
        assert all(ok for ok, _ in out), [o for ok, o in out if not ok][:1]
        t3 = time.perf_counter()
        t_prep, t_emb, t_ing = t_prep + t1 - t0, t_emb + t2 - t1, t_ing + t3 - t2
    n = len(items)
    print(f"{n} docs, {n_chunks} chunks, {n_kw} keywords")
    print(f"prepare {t_prep:.1f}s ({1000*t_prep/n:.1f} ms/doc)  embed {t_emb:.1f}s  "
          f"ingest {t_ing:.1f}s ({1000*t_ing/n:.1f} ms/doc)  total {(t_prep+t_emb+t_ing):.1f}s "
          f"= {n/(t_prep+t_emb+t_ing):.1f} docs/s")
    import os
    os._exit(0)


asyncio.run(main())
