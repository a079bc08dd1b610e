"""IR metrics with ranx over document rankings mapped back to corpus ids."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def metric_names(k: int) -> list[str]:
    """The ranx metrics reported: nDCG@10, Recall@10, Recall@k, MRR@10."""
    names = ["ndcg@10", "recall@10", f"recall@{k}", "mrr@10"]
    return list(dict.fromkeys(names))

def corpus_id_of(hit: Any) -> str | None:
    """The corpus ``_id`` of a query hit (its JSON shape, or a client model):
    the part of ``document.source`` after the last '#'."""
    if hasattr(hit, "model_dump"):
        hit = hit.model_dump(by_alias=True, mode="json")
    doc = hit.get("document", {})
    source = (doc or {}).get("source") or ""
    if "#" in source:
        return source.rsplit("#", 1)[1]
    sid = (doc or {}).get("source_id")
    return str(sid) if sid is not None else None

def document_ranking(hits: Iterable[Any]) -> list[str]:
    """Corpus ids in rank order, each document once, at its best-ranked passage."""
    seen: dict[str, None] = {}
    for h in hits:
        cid = corpus_id_of(h)
        if cid is not None and cid not in seen:
            seen[cid] = None
    return list(seen)

def run_from_rankings(rankings: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Rank lists -> ranx run scores (strictly decreasing, so ranx keeps our order)."""
    return {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in rankings.items()}

def evaluate(qrels: dict[str, dict[str, int]], rankings: dict[str, list[str]], metrics: list[str],
             qids: Iterable[str] | None = None) -> dict[str, float]:
    """Mean metrics with ranx over ``qids`` (default: every judged query with a
    relevant document). A query with no hits counts as 0, never dropped."""
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    ids = [q for q in (qids if qids is not None else qrels) if any(s > 0 for s in qrels.get(q, {}).values())]
    if not ids:
        return {m: float("nan") for m in metrics}
    q = Qrels({i: qrels[i] for i in ids})
    scores = run_from_rankings({i: rankings.get(i) or [] for i in ids})
    # ranx rejects a query with no scored documents; make_comparable then scores it 0
    scored = {i: s for i, s in scores.items() if s}
    if not scored:
        return {m: 0.0 for m in metrics}  # nothing retrieved for any of them (ranx rejects an empty run)
    run = Run(scored)
    out = ranx_evaluate(q, run, metrics, make_comparable=True)
    if isinstance(out, float):  # ranx returns a bare float for a single metric
        out = {metrics[0]: out}
    return {m: float(v) for m, v in out.items()}
