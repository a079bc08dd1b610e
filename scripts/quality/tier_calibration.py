"""How often recall's tier 4 runs, and what it changes (docs/EVALUATION.md "Tier ladder").

For each collection: the product's cached eval database (amem_db/harness: documents
through documents::ingest, LoCoMo turns through facts.write), then every (or the first
N) judged query through ``mem.recall(k=10)`` with the ladder on (floor 0.40). One call
gives both rankings: tier 3's hits are in the trace (``tiers.escalation.before``) and
the response holds tier 4's merge when it escalated. Tier 1 reads typed facts by key;
these collections store none, so tier 3 + the ladder off are the same ranking (checked
on the first queries with ``ladder=False``). Reports the escalation rate at 0.40 and
at other floors (from tier 3's best score, which every trace records), nDCG@10 and
Recall@10 with the ladder on and off (LoCoMo per category), and the latency of
escalated vs confident queries (a shared 2-core machine: noisy).

    python scripts/quality/tier_calibration.py ../shared/datasets/cranfield ../shared/datasets/cisi \
        ../shared/datasets/locomo ../shared/datasets/scifact --limit-queries 200 --out results/tiers.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

FLOORS = (0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9)
K = 10
FLOOR = [0.4]  # --floor
PRF = [False]  # --prf
CHECK_OFF = 10  # queries re-run with ladder=False to check "tier 3 == ladder off"


def corpus_id(hit: dict[str, Any]) -> str | None:
    """A document passage's corpus _id (citation.documentSource is 'path#_id')."""
    src = (hit.get("citation") or {}).get("documentSource") or ""
    return src.rsplit("#", 1)[1] if "#" in src else None


async def run_queries(mem: Any, items: list[tuple[str, str, dict[str, Any]]], to_ids: Any) -> dict[str, Any]:
    """items: (qid, text, recall kwargs). Per query: tier-3 and final rankings, confidence, thin, escalated, ms."""
    out: dict[str, Any] = {}
    for n, (qid, text, kw) in enumerate(items):
        t0 = time.perf_counter()
        if PRF[0]:  # a stand-in for HyDE (no model here): the embedding of tier 3's best passage
            first = await mem.recall(text, k=K, ladder=False, **kw)
            if first.hits:
                kw = {**kw, "hyde_embedding": await mem.embed_query(first.hits[0].text)}
        r = await mem.recall(text, k=K, confidence_floor=FLOOR[0], **kw)
        ms = (time.perf_counter() - t0) * 1000
        esc = r.tiers["escalation"]
        final = to_ids([h.model_dump(by_alias=True, mode="json") for h in r.hits])
        by_id = {h.id: h.model_dump(by_alias=True, mode="json") for h in r.hits}
        if r.escalated:  # tier 3's hits in their order (the trace's `before`); those the merge pushed out of k are read back
            ranked3 = [b["id"] for b in esc.get("before") or []]
            extra = await hit_shapes(mem, [i for i in ranked3 if i not in by_id])
            tier3 = to_ids([by_id.get(i) or extra.get(i) or {} for i in ranked3])
        else:
            tier3 = final
        out[qid] = {"tier3": tier3, "final": final, "confidence": esc.get("confidence", 0.0),
                    "thin": str(esc.get("reason", "")).startswith("thin"), "escalated": r.escalated, "ms": ms,
                    "newHits": esc.get("newHits", 0)}
        if n < CHECK_OFF:
            off = await mem.recall(text, k=K, ladder=False, **kw)
            out[qid]["off_equals_tier3"] = to_ids([h.model_dump(by_alias=True, mode="json") for h in off.hits]) == tier3
    return out


async def hit_shapes(mem: Any, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Enough of a hit's shape for the id mappings: a chunk's document source, a memory passage's turn ref."""
    if not ids:
        return {}
    (rows,) = await mem.conn.query("SELECT <string> id AS id, record::tb(id) AS source, document.source AS ds, source AS src "
                                   "FROM $ids.map(|$i| type::record($i))", {"ids": ids})
    return {r["id"]: {"id": r["id"], "source": r["source"], "citation": {"documentSource": r.get("ds"), "source": r.get("src")}}
            for r in rows}


def summarise(per_q: dict[str, Any], qrels: dict[str, dict[str, int]], metric_ids: list[str] | None,
              evaluate: Any, metrics: list[str]) -> dict[str, Any]:
    ids = metric_ids if metric_ids is not None else list(per_q)
    rows = [per_q[q] for q in ids if q in per_q]
    conf = [r["confidence"] for r in rows]
    esc_ms = [r["ms"] for r in rows if r["escalated"]]
    calm_ms = [r["ms"] for r in rows if not r["escalated"]]
    return {
        "queries": len(rows),
        "escalated": sum(r["escalated"] for r in rows),
        "thin": sum(r["thin"] for r in rows),
        "rate_at_floor": {str(f): round(sum(r["thin"] or r["confidence"] < f for r in rows) / max(1, len(rows)), 3) for f in FLOORS},
        "confidence_pct": {p: round(statistics.quantiles(conf, n=100)[p - 1], 3) if len(conf) > 1 else None for p in (10, 25, 50, 75, 90)},
        "on": evaluate(qrels, {q: per_q[q]["final"] for q in per_q}, metrics, ids),
        "off": evaluate(qrels, {q: per_q[q]["tier3"] for q in per_q}, metrics, ids),
        "changed_top10": sum(r["final"] != r["tier3"] for r in rows),
        "ms_escalated_median": round(statistics.median(esc_ms), 1) if esc_ms else None,
        "ms_confident_median": round(statistics.median(calm_ms), 1) if calm_ms else None,
        "off_check": [r["off_equals_tier3"] for r in rows if "off_equals_tier3" in r],
    }


async def documents(path: Path, limit: int | None) -> dict[str, Any]:
    from amem_db.connection import close_quietly
    from amem_db.embedding import get_embedder
    from amem_db.harness.database import prepare_database
    from amem_db.harness.datasets import load_dataset
    from amem_db.harness.metrics import evaluate

    ds = load_dataset(path, limit_queries=limit)
    prepared = await prepare_database(ds, get_embedder(None))
    try:
        items = [(qid, text, {"include": ["passages"]}) for qid, text in ds.queries.items() if qid in ds.qrels]

        def to_ids(hits: list[dict[str, Any]]) -> list[str]:
            return list(dict.fromkeys(c for c in map(corpus_id, hits) if c is not None))

        per_q = await run_queries(prepared.mem, items, to_ids)
        s = summarise(per_q, ds.qrels, None, evaluate, ["ndcg@10", "recall@10"])
        return {"dataset": ds.name, "split": ds.split, "queries_total": len(ds.qrels), "ingest": prepared.ingest, **s}
    finally:
        await close_quietly(prepared.mem.conn)


async def conversations(path: Path, limit: int | None) -> dict[str, Any]:
    from amem_db.connection import close_quietly
    from amem_db.embedding import get_embedder
    from amem_db.harness import locomo
    from amem_db.harness.metrics import evaluate

    cs = locomo.load_conversations(path, limit_queries=limit)
    prepared = await locomo.prepare_conversations(cs, get_embedder(None))
    try:
        nows = {c: cs.last_session(c) for c in cs.conversations}
        items = [(qid, q.text, {"include": ["passages"], "lens": locomo.lens_of(q.conversation), "now": nows[q.conversation]})
                 for qid, q in cs.questions.items()]
        per_q = await run_queries(prepared.mem, items, lambda hits: locomo.turn_ranking(hits))
        groups = cs.by_category()
        overall = summarise(per_q, cs.qrels, [q for c in (1, 2, 3, 4) for q in groups.get(c, [])], evaluate, ["ndcg@10", "recall@10"])
        by_cat = {locomo.CATEGORY_NAMES.get(c, str(c)): summarise(per_q, cs.qrels, ids, evaluate, ["ndcg@10", "recall@10"])
                  for c, ids in sorted(groups.items()) if ids}
        return {"dataset": cs.name, "split": cs.split, "ingest": prepared.ingest, **overall, "by_category": by_cat}
    finally:
        await close_quietly(prepared.mem.conn)


async def main(argv: list[str] | None = None) -> int:
    from amem_db.harness.locomo import is_conversation_collection

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="+", type=Path)
    ap.add_argument("--limit-queries", type=int, default=None, help="the first N judged queries of each collection")
    ap.add_argument("--out", type=Path, default=Path("results/tiers.json"))
    ap.add_argument("--prf", action="store_true", help="pass the embedding of tier 3's best passage as hydeEmbedding "
                    "(pseudo-relevance feedback standing in for a HyDE model)")
    ap.add_argument("--floor", type=float, default=0.4, help="recall's confidenceFloor (default 0.40)")
    args = ap.parse_args(argv)
    FLOOR[0] = args.floor
    PRF[0] = args.prf
    report = {}
    for p in args.datasets:
        t0 = time.perf_counter()
        r = await (conversations(p, args.limit_queries) if is_conversation_collection(p) else documents(p, args.limit_queries))
        r["seconds"] = round(time.perf_counter() - t0, 1)
        r["floor"], r["prf"] = args.floor, args.prf
        report[r["dataset"]] = r
        print(json.dumps({k: v for k, v in r.items() if k not in ("ingest",)}, default=str), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    import os

    code = asyncio.run(main())
    os._exit(code)  # the native engine may abort at exit otherwise (docs/ENGINE-ISSUES.md #4)
