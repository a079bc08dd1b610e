"""A/B of the per-stage engine timings: one SciFact-subset database, the query functions of
two surql/ folders installed in turn (round-robin, the order reversed every other round, so
machine load, and a load that rises or falls during the run, hits both alike).

python scripts/speed/ab_stage_timings.py DATASET N_DOCS N_QUERIES ROUNDS OLD_SURQL NEW_SURQL > out.json
Reports p50 over every (query, round) of trace.timings and the graph trace's ms, per mode.
"""
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

from amem_db.connection import Target, close_quietly, open_connection
from amem_db.embedding import CachedEmbedder
from amem_db.embedding.factory import get_embedder
from amem_db.harness.database import corpus_items
from amem_db.harness.datasets import load_dataset
from amem_db.ingest import ingest_items
from amem_db.migrator import Migrator

MODES = ["hybrid", "vector", "bm25", "hybrid_graph", "hybrid_graph_all"]
ALL_EDGES = ["knowledge_has_keyword", "mentions", "relation", "section_match", "document_link", "document_summary", "pagerank"]

def stages(res):
    tm = {k: v for k, v in res["trace"]["timings"].items() if v is not None}
    tm["queryMs"] = res["queryMs"]
    g = res["trace"]["legs"].get("graph")
    if g and "signals" in g:
        for kind, s in g["signals"].items():
            if "ms" in s:
                tm[f"graph.{kind}"] = s["ms"]
        tm["graph.addMs"], tm["graph.combineMs"], tm["graph.totalMs"] = g["addMs"], g["combineMs"], g["totalMs"]
    return tm

async def main(path, n_docs, n_queries, rounds, dirs):
    ds = load_dataset(path)
    emb = CachedEmbedder(get_embedder(None))
    conn = await open_connection(Target(url="mem://", ns="bench", db="ab"))
    await Migrator(conn, surql_dir=Path(dirs["new"])).migrate({"embedding_dim": emb.dimension})
    items = [it for it in corpus_items(ds, "separate") if (it.doc.get("text") or "").strip()][:n_docs]
    t = time.time()
    await ingest_items(conn, emb, items, batch_size=16)
    (cnt,) = await conn.query("RETURN count(SELECT id FROM chunk)")
    print(f"ingested {len(items)} documents, {cnt} chunks in {time.time()-t:.0f}s", file=sys.stderr)
    queries = list(ds.queries.items())[:n_queries]
    vecs = {qid: [float(x) for x in emb.embed_query(text)] for qid, text in queries}
    rows = {v: {m: [] for m in MODES} for v in dirs}
    for rnd in range(rounds + 1):  # round 0 warms up and is dropped
        for variant, d in (list(dirs.items()) if rnd % 2 == 0 else list(dirs.items())[::-1]):
            await Migrator(conn, surql_dir=Path(d)).migrate()
            await conn.query("DELETE retrieval_trace")
            for mode in MODES:
                opts = {"mode": mode.replace("_all", ""), "k": 10}
                if mode == "hybrid_graph_all":
                    opts["graphEdges"] = ALL_EDGES
                for qid, text in queries:
                    e = None if mode == "bm25" else vecs[qid]
                    (res,) = await conn.query("RETURN fn::amem::documents::query($q, $e, $o)", {"q": text, "e": e, "o": opts})
                    if rnd:
                        rows[variant][mode].append(stages(res))
        print(f"round {rnd} done", file=sys.stderr)
    out = {v: {m: {k: round(statistics.median([r[k] for r in rs if k in r]), 3) for k in rs[0]} for m, rs in per.items()}
           for v, per in rows.items()}
    out["n"] = {m: len(rows["new"][m]) for m in MODES}
    out["load"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    await close_quietly(conn)
    os._exit(0)

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), {"old": sys.argv[5], "new": sys.argv[6]}))
