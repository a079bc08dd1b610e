"""The trace stage of documents.query before / after a change of its stored functions
(issue 29 item 2: the shared ledger of surql/410_read): traceMs, and the trace's whole cost
(queryMs less the stages before it, so the record's write counts too), p50 per surql/ folder.

  git archive <base-commit> surql | tar -x -C BASE_DIR
  python scripts/speed/ab_trace_stage.py ../shared/datasets/scifact N_DOCS N_QUERIES ROUNDS BASE_DIR/surql new [OTHER_DIR/surql ...]

One mem:// database of the first N_DOCS documents of the dataset with
the hash embedder (the legs' cost does not matter here); each folder ("new" = this
checkout's) is installed in turn, the order reversed every other round after a warm-up
round, and documents.query runs hybrid (z-score and RRF), vector and bm25 at k = 10 on
N_QUERIES queries. The trace is a small share of a query, so it is compared on its own:
the legs' run-to-run spread on a loaded machine is larger than the whole trace stage.
"""
import asyncio
import os
import statistics
import sys
from pathlib import Path

from amem_db.connection import Target, close_quietly, open_connection
from amem_db.embedding import get_embedder
from amem_db.harness.database import corpus_items
from amem_db.harness.datasets import load_dataset
from amem_db.ingest import ingest_items
from amem_db.migrator import Migrator

BEFORE = ["optionsMs", "vectorMs", "bm25Ms", "fuseMs", "hydrateMs", "contextMs"]


async def main(path, n_docs, n_q, rounds, dirs):
    ds = load_dataset(path)
    emb = get_embedder("hash:384")
    conn = await open_connection(Target(url="mem://", ns="t", db="t"))
    await Migrator(conn).migrate({"embedding_dim": 384})
    items = [it for it in corpus_items(ds, "separate") if (it.doc.get("text") or "").strip()][:n_docs]
    await ingest_items(conn, emb, items, batch_size=16)
    qs = list(ds.queries.values())[:n_q]
    vecs = [[float(x) for x in emb.embed_query(t)] for t in qs]
    out = {d: {"trace": [], "tail": [], "query": []} for d in dirs}
    modes = [{"mode": "hybrid", "k": 10}, {"mode": "hybrid", "k": 10, "fusion": "rrf"}, {"mode": "vector", "k": 10}, {"mode": "bm25", "k": 10}]
    for rnd in range(rounds + 1):
        for d in (dirs if rnd % 2 == 0 else dirs[::-1]):
            await Migrator(conn, surql_dir=None if d == "new" else Path(d)).migrate()
            await conn.query("DELETE retrieval_trace")
            for o in modes:
                for t, e in zip(qs, vecs, strict=True):
                    (res,) = await conn.query("RETURN fn::amem::documents::query($q, $e, $o)", {"q": t, "e": None if o["mode"] == "bm25" else e, "o": o})
                    if rnd:
                        tm = res["trace"]["timings"]
                        out[d]["trace"].append(tm["traceMs"])
                        out[d]["tail"].append(res["queryMs"] - sum(tm[k] for k in BEFORE))
                        out[d]["query"].append(res["queryMs"])
    print("load", os.getloadavg())
    for d in dirs:
        print(f"{d[-40:]:40s} n={len(out[d]['trace'])} traceMs p50 {statistics.median(out[d]['trace']):.3f}  "
              f"trace+write p50 {statistics.median(out[d]['tail']):.3f}  queryMs p50 {statistics.median(out[d]['query']):.3f}")
    await close_quietly(conn)


asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]))
os._exit(0)
