"""hybrid_graph ablation and latency on a shared collection (docs/GRAPH.md).

    python scripts/quality/graph_ablation.py ../shared/datasets/cisi --url surrealkv://results/cisi-copy \
        --limit-queries 26 --out results/graph-ablation/cisi.json

Runs hybrid, hybrid_graph with every signal on, and hybrid_graph with each
signal off in turn (graphEdges = all minus one), and reports nDCG@10 per run
(document-level, through amem_db.harness) plus p50/p95 engine latency
(queryMs) for hybrid and hybrid_graph at graphDepth 1 and 2.

--url points at an already ingested database (e.g. a copy of the eval
harness's cached results/.db/<dataset>-<key>); without it the collection is
ingested into mem:// (or --db-dir) first (slow: minutes per thousand documents here).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from amem_db.connection import close_quietly
from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.harness.common import percentile
from amem_db.harness.database import open_eval_url, prepare_database
from amem_db.harness.datasets import load_dataset
from amem_db.harness.metrics import document_ranking, evaluate

KINDS = ["knowledge_has_keyword", "mentions", "relation", "section_match", "document_link", "document_summary", "pagerank"]


def pct(values, p):
    return percentile(values, p) if values else float("nan")


async def run(mem, ds, label, **opts):
    rankings, lat = {}, []
    for qid, text in ds.queries.items():
        resp = await mem.documents.query(text, k=10, **opts)
        response = resp.model_dump(by_alias=True, mode="json")  # the spec's wire shape
        rankings[qid] = document_ranking(response["results"])
        lat.append(float(response["queryMs"]))
    scores = evaluate(ds.qrels, rankings, ["ndcg@10"])
    ndcg = scores.get("ndcg@10") if isinstance(scores, dict) else None
    row = {"run": label, "ndcg@10": ndcg, "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95), "queries": len(lat)}
    print(json.dumps(row), flush=True)
    return row


RRF_BASE = "fn::amem::fusion::rrf([$vrows.id, $lrows.id], [$w.wv, $w.wl], $w.rrfK), $w.attainable"
# the z-score list of hybrid (surql/300_fusion), top 50 (the graph pool), already in [0, 1]
ZSCORE_BASE = "fn::amem::fusion::scores([$vrows.map(|$r| { id: $r.id, score: $r.sim }), $lrows], [$w.wv, $w.wl], 'zscore', 50), 1.0"


async def use_base_fusion(conn, how: str) -> str | None:
    """Redefine fn::amem::query::rank so hybrid_graph reranks the z-score list; returns
    the original definition (to restore), None for rrf (nothing changed)."""
    if how == "rrf":
        return None
    from amem_db.migrator import bundled_dir, render_dir
    from amem_db.settings import SchemaSettings

    settings = SchemaSettings.model_validate({})
    (query,) = [s for s in render_dir(bundled_dir("surql"), "desired", settings.model_dump() | {"hnsw_ef": settings.hnsw_ef})
                if s.key == "400_query"]
    start = query.text.index("DEFINE FUNCTION OVERWRITE fn::amem::query::rank(")
    end = query.text.index("PERMISSIONS FULL;", start) + len("PERMISSIONS FULL;")
    original = query.text[start:end]
    assert original.count(RRF_BASE) == 1, "the hybrid_graph branch of fn::amem::query::rank changed: update RRF_BASE"
    await conn.query(original.replace(RRF_BASE, ZSCORE_BASE))
    return original


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--url")
    ap.add_argument("--embedder", default=None)
    ap.add_argument("--db-dir", help="ingest into (or reuse) surrealkv://DB_DIR/<dataset>-<key> instead of mem://")
    ap.add_argument("--limit-queries", type=int, default=None)
    ap.add_argument("--ablate", default=",".join(KINDS), help="signals to switch off one at a time")
    ap.add_argument("--alphas", default="", help="also run the default signals at these graphAlpha values, e.g. 0.1,0.2,0.5")
    ap.add_argument("--only-alphas", action="store_true", help="run hybrid and the --alphas sweep only")
    ap.add_argument("--base-fusion", choices=["rrf", "zscore"], default="rrf",
                    help="zscore: rerank the z-score fused list (hybrid's default since issue 16) instead of RRF; "
                         "fn::amem::query::rank is redefined on the database for the run and restored after")
    ap.add_argument("--quick", action="store_true", help="hybrid, the default signals, all signals, and --ablate's runs only")
    ap.add_argument("--out")
    a = ap.parse_args()
    ds = load_dataset(a.dataset, limit_queries=a.limit_queries)
    embedder = CachedEmbedder(get_embedder(a.embedder))
    if a.url:
        mem = await open_eval_url(a.url, embedder)
        conn = mem.conn
    else:
        if a.db_dir:
            prepared = await prepare_database(ds, embedder, db_dir=Path(a.db_dir))
        else:
            prepared = await prepare_database(ds, embedder, url="mem://")
        mem, conn = prepared.mem, prepared.mem.conn
    rows = []
    original = await use_base_fusion(conn, a.base_fusion)
    try:
        # warm-up (embedder, caches)
        for text in list(ds.queries.values())[:3]:
            await mem.documents.query(text, mode="hybrid_graph")
        rows.append(await run(mem, ds, "hybrid", mode="hybrid"))
        for alpha in [float(x) for x in a.alphas.split(",") if x]:
            rows.append(await run(mem, ds, f"hybrid_graph default, graphAlpha {alpha}", mode="hybrid_graph", graph_alpha=alpha))
        if a.only_alphas:
            return 0
        if a.quick:  # the default, and all seven signals at depth 1 (with --ablate: each of those off)
            rows.append(await run(mem, ds, "hybrid_graph default", mode="hybrid_graph"))
            rows.append(await run(mem, ds, "hybrid_graph all (depth 1)", mode="hybrid_graph", graph_edges=KINDS))
            for kind in [k for k in a.ablate.split(",") if k]:
                rows.append(await run(mem, ds, f"hybrid_graph -{kind}", mode="hybrid_graph",
                                      graph_edges=[k for k in KINDS if k != kind]))
            return 0
        rows.append(await run(mem, ds, "hybrid_graph all (depth 1)", mode="hybrid_graph", graph_edges=KINDS))
        rows.append(await run(mem, ds, "hybrid_graph all (depth 2)", mode="hybrid_graph", graph_edges=KINDS, graph_depth=2))
        for kind in [k for k in a.ablate.split(",") if k]:
            rows.append(await run(mem, ds, f"hybrid_graph -{kind}", mode="hybrid_graph",
                                  graph_edges=[k for k in KINDS if k != kind]))
        for kind in ["knowledge_has_keyword", "document_summary", "pagerank"]:
            rows.append(await run(mem, ds, f"hybrid_graph only {kind}", mode="hybrid_graph", graph_edges=[kind]))
        rows.append(await run(mem, ds, "hybrid_graph default", mode="hybrid_graph"))
    finally:
        if original is not None:
            await conn.query(original)  # the rendered function as the migrator applied it
        if a.out:
            Path(a.out).parent.mkdir(parents=True, exist_ok=True)
            Path(a.out).write_text(json.dumps({"dataset": ds.name, "queries": len(ds.queries), "rows": rows}, indent=2))
        await close_quietly(conn)
    return 0


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    os._exit(code)
