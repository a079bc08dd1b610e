"""Issue 26's recall levers on LoCoMo dev, offline over cached per-leg rankings, with
leave-one-conversation-out (LOO) choice of each lever's setting.

    # 1. collect (recall through the product; ~5 minutes; cached in --out)
    python scripts/quality/locomo_levers.py collect ../shared/datasets/locomo --speaker prefix
    # lever 3, the vector leg alone over other texts per turn (embeds them: minutes)
    python scripts/quality/locomo_levers.py vectors ../shared/datasets/locomo
    # lever 1's other form: capitalised names in the questions as entities (seconds)
    python scripts/quality/locomo_levers.py names ../shared/datasets/locomo --speaker prefix-text
    # 2. sweep (seconds; prints the per-lever tables and the LOO table as markdown)
    python scripts/quality/locomo_levers.py sweep ../shared/datasets/locomo --speaker prefix
    # the LOO over a grid of your own, from today's defaults (options the grid leaves out keep them)
    python scripts/quality/locomo_levers.py sweep ../shared/datasets/locomo --speaker prefix-text --over current \
        --grid '{"rrfK": [1, 2, 3], "vw": [0.3, 0.4, 0.5], "adjacent": [0.2, 0.4, 0.6], "window": [0.1, 0.3, 0.5]}'

`collect` writes the dev turns as `amem-db eval` does (`--speaker`: prefix = "Speaker: text"
with the speaker entity, the product's conversation write) and recalls every judged question
through `mem.recall` (k = 50, passages, the question's conversation as lens, now = its last
session): mode bm25 and mode vector with the query window off (the raw legs), mode graph, and
hybrid with the defaults of the database under test (the reference the simulation must
reproduce). It stores per question each leg's turn ranking with scores, the query window
recall parsed, the seed entities and the turns that mention each seed (speaker edge or name in
the text), and the latency of each recall.

`sweep` recomputes hybrid from the legs the way surql/450 does (weighted RRF over the legs'
top 50, score / attainable, the attainable counting the graph leg only when it found rows as
surql/410 read::live does, except in BASE, the product before issue 26; window boost
(s + w in) / (1 + w); then the signals in product order), for each lever alone and in
combination, moved from `--over` (before: BASE; current: CURRENT, the recall defaults now):

* graph: the graph leg of a speaker database (PageRank ties broken by the fused prior: the
  named people's turns in the prior's order), weight `graphWeight`;
* named: a flat boost of the named people's turns, (s + w named) / (1 + w), after the window;
* adjacent: surql/450 recall::adjacent (the `adjTop` (10) best passages lend w x `decay`
  (0.5)^(d-1) of their score to their session neighbours at d <= `span` (2));
* mmr: a light MMR over the fused top 50 (lambda x score - (1 - lambda) x max cosine to
  the turns already picked; the turn vectors from the embedding cache);
* fusion: rrfK x vectorWeight, `fusion` ("rrf", or the documents' score fusion "zscore" /
  "minmax", surql/300), and `lexDepth` / `vecDepth`: how much of each leg's top 50
  the RRF reads (the product reads its pool, 64).

LOO: for each dev conversation, the setting with the best Recall@10 (ties: nDCG@10) over
the questions of the other two, among those that keep every category's Recall@5 there (to
0.5 point) at the setting before issue 26 (BASE, on the legs as collected), is scored on the
held-out one (ties: the current defaults); the table reports the three held-out scores pooled
(every question scored once, by a setting that never saw it) beside the current defaults, with
the per-question R@10 change and its paired bootstrap interval.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import statistics
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from amem_db.constants import ADJACENT_DECAY
from amem_db.harness import locomo

CATS = (4, 1, 2, 3)  # the paper's column order, categories 1-4
NAMES = locomo.CATEGORY_NAMES
DEPTH = 50


# --- collect -------------------------------------------------------------------------------

def _ranked(resp: Any) -> list[list[Any]]:
    """[[turn id, score]] in rank order, one per turn (its best passage)."""
    out: dict[str, float] = {}
    for h in resp.hits:
        t = locomo.turn_id_of(h)
        if t is not None and t not in out:
            out[t] = float(h.score)
    return [[t, s] for t, s in out.items()]


async def collect(args: argparse.Namespace) -> None:
    from amem_db.embedding import CachedEmbedder, get_embedder

    cs = locomo.load_conversations(args.path, "dev")
    embedder = CachedEmbedder(get_embedder("minilm"))
    prepared = await locomo.prepare_conversations(cs, embedder, speaker=args.speaker, db_dir=Path(args.db_dir))
    mem = prepared.mem
    nows = {c: cs.last_session(c) for c in cs.conversations}
    extra = json.loads(args.options) if args.options else {}
    questions: dict[str, Any] = {}
    mentions: dict[str, dict[str, list[str]]] = {}  # conversation -> entity -> turn ids
    for n, (qid, q) in enumerate(cs.questions.items()):
        lens, now = locomo.lens_of(q.conversation), nows[q.conversation]
        row: dict[str, Any] = {"category": q.category, "conversation": q.conversation, "ms": {}}
        for mode, opts in (("bm25", {"query_window": False}), ("vector", {"query_window": False}),
                           ("graph", {}), ("hybrid", extra)):
            t0 = time.perf_counter()
            resp = await mem.recall(q.text, mode=mode, k=DEPTH, include=["passages"], lens=lens, now=now, **opts)
            row["ms"][mode] = (time.perf_counter() - t0) * 1000
            row[mode] = _ranked(resp)
            if mode == "hybrid":
                w = resp.query_window
                row["window"] = None if w is None else [w.from_.isoformat() if w.from_ else None, w.to.isoformat() if w.to else None]
                row["seeds"] = [str(s.id).replace("⟨", "").replace("⟩", "") for s in resp.seed_entities]
        conv = mentions.setdefault(q.conversation, {})
        for e in row["seeds"]:
            if e not in conv:
                (refs,) = await mem.conn.query(
                    "SELECT VALUE in.source.ref FROM mentions WHERE out = type::record('entity', string::replace($e, 'entity:', '')) AND scopes CONTAINS $s",
                    {"e": e, "s": locomo.conversation_scope(q.conversation)})
                conv[e] = sorted({str(r) for r in refs or [] if r is not None})
        questions[qid] = row
        if (n + 1) % 50 == 0:
            print(f"{n + 1}/{len(cs.questions)}", flush=True)
    out = Path(args.out) / f"legs-{args.speaker}{args.tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"speaker": args.speaker, "options": extra, "questions": questions, "mentions": mentions}))
    print(f"wrote {out}")
    await mem.conn.close()


# --- metrics (binary relevance: ranx's recall@k and ndcg@k) ------------------------------------

def recall_at(ranking: list[str], rel: set[str], k: int) -> float:
    return len(rel.intersection(ranking[:k])) / len(rel)


def ndcg_at(ranking: list[str], rel: set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, t in enumerate(ranking[:k]) if t in rel)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(rel))))
    return dcg / ideal


def scores(rankings: dict[str, list[str]], qrels: dict[str, set[str]], qids: list[str]) -> dict[str, float]:
    if not qids:
        return {"r5": float("nan"), "r10": float("nan"), "ndcg10": float("nan")}
    n = len(qids)
    return {"r5": sum(recall_at(rankings[q], qrels[q], 5) for q in qids) / n,
            "r10": sum(recall_at(rankings[q], qrels[q], 10) for q in qids) / n,
            "ndcg10": sum(ndcg_at(rankings[q], qrels[q]) for q in qids) / n}


# --- the simulation of surql/450 ------------------------------------------------------------

class Sim:
    """The data one sweep needs: legs, windows, seeds, turn order and vectors."""

    def __init__(self, data: dict[str, Any], cs: locomo.Conversations, vectors: dict[str, Any] | None):
        self.q = data["questions"]
        self.mentions = data["mentions"]
        self.qrels = {q: set(cs.qrels[q]) for q in self.q}
        self.turn = {t.id: t for t in cs.turns}
        # session neighbours in write order (the corpus order)
        self.order: dict[str, tuple[str, int]] = {}
        sessions: dict[str, list[str]] = {}
        for t in cs.turns:
            key = f"{t.conversation}:{t.session}"
            sessions.setdefault(key, []).append(t.id)
            self.order[t.id] = (key, len(sessions[key]) - 1)
        self.sessions = sessions
        self.vectors = vectors
        self.judged = [q for q, r in self.q.items() if r["category"] in CATS]
        iso = lambda x: None if x is None else datetime.fromisoformat(x.replace("Z", "+00:00"))  # noqa: E731
        self.at = {t.id: iso(t.observed_at) for t in cs.turns}
        self.windows = {q: (iso(r["window"][0]), iso(r["window"][1])) for q, r in self.q.items() if r["window"] is not None}
        self.named_of = {q: self._named(q) for q in self.q}

    def _named(self, qid: str) -> dict[str, int]:
        """Turn -> how many of the question's seed entities it is linked to."""
        row = self.q[qid]
        out: dict[str, int] = {}
        for e in row["seeds"]:
            for t in self.mentions.get(row["conversation"], {}).get(e, []):
                out[t] = out.get(t, 0) + 1
        return out

    def in_window(self, qid: str, t: str) -> bool:
        w = self.windows.get(qid)
        if w is None:
            return False
        x = self.at[t]
        return (w[0] is None or x >= w[0]) and (w[1] is None or x < w[1])

    def rank(self, qid: str, p: dict[str, Any]) -> list[str]:
        row = self.q[qid]
        vec = [t for t, _ in row["vector"]][:p["vecDepth"]]
        lex = [t for t, _ in row["bm25"]][:p["lexDepth"]]
        wv, rk = p["vw"], p["rrfK"]
        wl = 1 - wv
        named = self.named_of[qid]
        if p.get("fusion", "rrf") != "rrf":
            return self.rank_by_scores(qid, p)
        fused: dict[str, float] = {}
        for lst, w in ((vec, wv), (lex, wl)):
            for i, t in enumerate(lst):
                fused[t] = fused.get(t, 0.0) + w / (rk + i + 1)
        # the graph leg: the named turns, more seeds first, then in the prior's order
        wg = p["graph"]
        if wg > 0 and named:
            prior = sorted(fused, key=lambda t: (-fused[t], t))
            pr = {t: i for i, t in enumerate(prior)}
            g = sorted(named, key=lambda t: (-named[t], pr.get(t, 10**6), t))[:64]
            for i, t in enumerate(g):
                fused[t] = fused.get(t, 0.0) + wg / (rk + i + 1)
        # the attainable RRF counts the graph leg only when it found rows (surql/410 read::live):
        # p["legacyAttainable"] counts it whenever it runs (graphWeight > 0), as before issue 26
        # (BASE), which halved every fused score of a store without entities
        graph_rows = wg > 0 and bool(named)
        att = (wv + wl + (wg if graph_rows or (wg > 0 and p.get("legacyAttainable")) else 0.0)) / (rk + 1)
        return self.signals(qid, {t: min(1.0, x / att) for t, x in fused.items()}, p)

    def signals(self, qid: str, s: dict[str, float], p: dict[str, Any]) -> list[str]:
        """After the fusion, in product order: the window boost, the named boost, adjacency, MMR."""
        named = self.named_of[qid]
        ww = p["window"]
        if self.q[qid]["window"] is not None and ww > 0:
            s = {t: (x + (ww if self.in_window(qid, t) else 0.0)) / (1 + ww) for t, x in s.items()}
        wn = p["named"]
        if wn > 0 and named:
            s = {t: (x + (wn if t in named else 0.0)) / (1 + wn) for t, x in s.items()}
        ranked = sorted(s, key=lambda t: (-s[t], t))
        s, ranked = self.adjacency(s, ranked, p)
        lam = p["mmr"]
        if lam < 1 and self.vectors is not None:
            ranked = mmr(ranked[:DEPTH], s, self.vectors, lam) + ranked[DEPTH:]
        return ranked[:DEPTH]

    def rank_by_scores(self, qid: str, p: dict[str, Any]) -> list[str]:
        """Recall with the documents' score fusion in place of RRF (surql/300 fusion::scores: each
        leg's scores z-scored or min-maxed, weighted from the leg's lowest, / the attainable), then
        the same signals as `rank`; the vector and BM25 legs only (no graph leg)."""
        import numpy as np

        row = self.q[qid]
        fused: dict[str, float] = {}
        att = 0.0
        for rows, w in ((row["vector"][:p["vecDepth"]], p["vw"]), (row["bm25"][:p["lexDepth"]], 1 - p["vw"])):
            if not rows:
                continue
            x = np.asarray([v for _, v in rows], dtype=float)
            if p["fusion"] == "zscore":
                n = (x - x.mean()) / x.std() if x.std() > 0 else np.zeros_like(x)
            else:
                n = (x - x.min()) / (x.max() - x.min()) if x.max() > x.min() else np.ones_like(x)
            span = float(n.max() - n.min())
            att += w * span if span > 0 else w
            for (t, _), v in zip(rows, n, strict=True):
                fused[t] = fused.get(t, 0.0) + (w * (float(v) - float(n.min())) if span > 0 else w)
        return self.signals(qid, {t: min(1.0, x / att) for t, x in fused.items()} if att > 0 else {}, p)

    def adjacency(self, s: dict[str, float], ranked: list[str], p: dict[str, Any]) -> tuple[dict[str, float], list[str]]:
        """recall::adjacent: the adjTop best lend adjacent x decay^(d-1) of their score to the
        turns d <= span away in their session; the scores and the ranking after."""
        aw = p["adjacent"]
        if aw <= 0:
            return s, ranked
        offers: dict[str, float] = {}
        for h in ranked[:p["adjTop"]]:
            key, i = self.order[h]
            sess = self.sessions[key]
            for d in range(1, p["span"] + 1):
                lift = aw * p["decay"] ** (d - 1) * s[h]
                for j in (i - d, i + d):
                    if 0 <= j < len(sess):
                        offers[sess[j]] = max(offers.get(sess[j], 0.0), lift)
        s = {t: min(1.0, s.get(t, 0.0) + offers.get(t, 0.0)) for t in set(s) | set(offers)}
        return s, sorted(s, key=lambda t: (-s[t], t))


def mmr(ids: list[str], s: dict[str, float], vec: dict[str, Any], lam: float) -> list[str]:
    import numpy as np

    if len(ids) < 2:
        return ids
    m = np.stack([vec[t] for t in ids])
    sim = m @ m.T
    rel = np.array([s[t] for t in ids])
    picked: list[int] = []
    left = list(range(len(ids)))
    best = np.full(len(ids), -np.inf)
    while left:
        red = np.where(np.isinf(best), 0.0, best)
        val = lam * rel[left] - (1 - lam) * red[left]
        j = left[int(np.argmax(val))]
        picked.append(j)
        left.remove(j)
        best = np.maximum(best, sim[j])
    return [ids[i] for i in picked]


DEFAULT_GRID = {"rrfK": [1.0, 2.0, 3.0], "vw": [0.3, 0.4, 0.5], "graph": [0.0, 0.1, 0.2, 0.3, 1.0],
                "named": [0.0, 0.1, 0.2, 0.3], "adjacent": [0.0, 0.1, 0.2], "mmr": [1.0]}
# the product before issue 26 (the LOO guard's baseline): no adjacency, the graph leg in the
# attainable whether or not it found rows
BASE = {"fusion": "rrf", "vw": 0.4, "rrfK": 2.0, "graph": 1.0, "window": 0.3, "named": 0.0, "adjacent": 0.0, "mmr": 1.0,
        "legacyAttainable": True,
        # the shape of the adjacency signal (surql/450 adjacent_top, adjacent_span, adjacent_decay) and
        # how deep the RRF reads each leg: the product's, spelt out so that a grid moving them holds CURRENT
        "adjTop": 10, "span": 2, "decay": 0.5, "lexDepth": DEPTH, "vecDepth": DEPTH}
# the product's recall defaults now (surql/450, 410 read::live), per --speaker: without entities
# the graph leg has no rows; with them it hands the named people's turns to the speaker signal
# (speakerWeight 0.2, simulated as the named boost) and, on LoCoMo, finds nothing else
CURRENT = {"prefix-text": BASE | {"adjacent": 0.4, "decay": ADJACENT_DECAY, "legacyAttainable": False},
           "prefix": BASE | {"adjacent": 0.4, "decay": ADJACENT_DECAY, "graph": 0.0, "named": 0.2, "legacyAttainable": False}}
# the sweepable options (the label of a setting shows those the grid moves)
SHORT = {"fusion": "fusion", "rrfK": "rrfK", "vw": "vw", "graph": "graph", "named": "named", "adjacent": "adjacent", "window": "window",
         "mmr": "mmr", "lexDepth": "lexDepth", "vecDepth": "vecDepth", "adjTop": "adjTop", "span": "span", "decay": "decay"}


def table_row(name: str, sim: Sim, p: dict[str, Any]) -> tuple[str, dict[str, list[str]]]:
    rk = {q: sim.rank(q, p) for q in sim.q}
    cells = [name]
    allq = scores(rk, sim.qrels, sim.judged)
    cells.append(" / ".join(f"{allq[m] * 100:.1f}" for m in ("r5", "r10", "ndcg10")))
    for c in CATS:
        ids = [q for q in sim.judged if sim.q[q]["category"] == c]
        x = scores(rk, sim.qrels, ids)
        cells.append(" / ".join(f"{x[m] * 100:.1f}" for m in ("r5", "r10", "ndcg10")))
    return "| " + " | ".join(cells) + " |", rk


def rank_with_legs(sim: Sim, p: dict[str, Any], vector: dict[str, list[Any]] | None = None,
                   bm25: dict[str, list[Any]] | None = None) -> dict[str, list[str]]:
    """Hybrid at setting `p` with the collected vector and/or BM25 leg of each question replaced
    (a leg: its [turn id, score] rows, best first; the other legs and windows as collected)."""
    saved = {q: (sim.q[q]["vector"], sim.q[q]["bm25"]) for q in sim.q}
    try:
        for q in sim.q:
            if vector is not None:
                sim.q[q]["vector"] = vector[q]
            if bm25 is not None:
                sim.q[q]["bm25"] = bm25[q]
        return {q: sim.rank(q, p) for q in sim.q}
    finally:
        for q in sim.q:
            sim.q[q]["vector"], sim.q[q]["bm25"] = saved[q]


def cells(rk: dict[str, list[str]], sim: Sim, ids: list[str] | None = None) -> list[str]:
    """R@5 / R@10 / nDCG@10 in % over `ids` (default: every judged question), then per category."""
    ids = sim.judged if ids is None else ids
    out = []
    for sub in [ids] + [[q for q in ids if sim.q[q]["category"] == c] for c in CATS]:
        x = scores(rk, sim.qrels, sub)
        out.append(" / ".join(f"{x[m] * 100:.1f}" for m in ("r5", "r10", "ndcg10")))
    return out


HEAD = ("| {} | all 1-4 R@5 / R@10 / nDCG@10 | " + " | ".join(f"{c} {NAMES[c]}" for c in CATS) + " |\n"
        + "|---" * (2 + len(CATS)) + "|")


def paired_r10(sim: Sim, a: dict[str, list[str]], b: dict[str, list[str]], ids: list[str] | None = None,
               draws: int = 2000) -> tuple[int, int, float, float, float]:
    """Per question R@10 of a against b over `ids` (default: every judged question): how many
    rose, how many fell, the mean difference and its paired bootstrap 95% interval, in points."""
    import numpy as np

    ids = sim.judged if ids is None else ids
    d = np.asarray([recall_at(a[q], sim.qrels[q], 10) - recall_at(b[q], sim.qrels[q], 10) for q in ids])
    boot = np.random.default_rng(0).choice(d, size=(draws, len(d))).mean(axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5]) * 100
    return int((d > 0).sum()), int((d < 0).sum()), float(d.mean() * 100), float(lo), float(hi)


def r5_by_category(sim: Sim, rk: dict[str, list[str]], ids: list[str]) -> dict[int, float]:
    """R@5 of each category over `ids` (0 for a category with no question there)."""
    out = {}
    for c in CATS:
        sub = [q for q in ids if sim.q[q]["category"] == c]
        out[c] = scores(rk, sim.qrels, sub)["r5"] if sub else 0.0
    return out


def choose_loo(sim: Sim, runs: dict[Any, dict[str, list[str]]], guard: dict[str, list[str]] | None,
               prefer: Any = None) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """Leave one conversation out over `runs` (a setting -> its ranking per question): for each
    held-out conversation, the setting with the best R@10 on the other two (ties: nDCG@10, then
    `prefer`) among those that keep every category's R@5 there at `guard`'s to 0.5 point (None:
    no guard; none passes: every setting). Returns one fold per conversation ({held, train,
    best, passed, floor, tr, te}) and the pooled rankings (each question by a setting that never
    saw it)."""
    convs = sorted({r["conversation"] for r in sim.q.values()})
    folds, pooled = [], {}
    for held in convs:
        train = [q for q in sim.judged if sim.q[q]["conversation"] != held]
        floor = {c: -1.0 for c in CATS} if guard is None else {
            c: v - 0.005 for c, v in r5_by_category(sim, guard, train).items()}
        passed = [p for p in runs if all(v >= floor[c] for c, v in r5_by_category(sim, runs[p], train).items())]
        tr = {p: scores(runs[p], sim.qrels, train) for p in (passed or list(runs))}
        best = max(tr, key=lambda p: (round(tr[p]["r10"], 6), round(tr[p]["ndcg10"], 6), p == prefer))
        test = [q for q in sim.judged if sim.q[q]["conversation"] == held]
        folds.append({"held": held, "train": train, "best": best, "passed": len(passed), "floor": floor,
                      "tr": tr[best], "te": scores(runs[best], sim.qrels, test)})
        pooled |= {q: runs[best][q] for q in test}
    return folds, pooled


def loo(sim: Sim, grid: list[dict[str, Any]], label: Callable[[dict[str, Any]], str],
        prefer: dict[str, Any] | None = None) -> tuple[list[str], dict[str, list[str]]]:
    """choose_loo over the grid's settings, guarded by the product's setting before issue 26
    (BASE), with a column for the current defaults (`prefer`) on the two training conversations."""
    runs = {i: {q: sim.rank(q, p) for q in sim.q} for i, p in enumerate(grid)}
    base = {q: sim.rank(q, BASE) for q in sim.judged}
    cur = next((i for i in range(len(grid)) if grid[i] == prefer), None)
    folds, pooled = choose_loo(sim, runs, base, cur)
    lines = []
    for f in folds:
        there = "not in the grid"
        if cur is not None:
            r5 = r5_by_category(sim, runs[cur], f["train"])
            there = f"{scores(runs[cur], sim.qrels, f['train'])['r10'] * 100:.1f}, " + (
                ", ".join(f"{NAMES[c]} R@5 {r5[c] * 100:.1f} < {(f['floor'][c] + 0.005) * 100:.1f}" for c in CATS
                          if r5[c] < f["floor"][c]) or "passes")
        tr, te = f["tr"], f["te"]
        lines.append(f"| {f['held']} | {label(grid[f['best']])} | {f['passed']} of {len(grid)} | {tr['r10'] * 100:.1f} | {there} | "
                     f"{te['r5'] * 100:.1f} / {te['r10'] * 100:.1f} / {te['ndcg10'] * 100:.1f} |")
    return lines, pooled


def load_sim(args: argparse.Namespace) -> tuple[Sim, Any, Any, Any, dict[str, Any]]:
    """The collected legs (``collect``) as a Sim, with the dev conversations, their turns' unit
    vectors (the text embedded as the product writes it), the embedder (cached) and the legs' file."""
    import numpy as np

    from amem_db.embedding import CachedEmbedder, get_embedder

    cs = locomo.load_conversations(args.path, "dev")
    data = json.loads((Path(args.out) / f"legs-{args.speaker}{args.tag}.json").read_text())
    emb = CachedEmbedder(get_embedder("minilm"))
    texts = [locomo.turn_request(t, speaker=args.speaker)["text"] for t in cs.turns]
    m = np.asarray(emb.embed_documents(texts), dtype=float)
    m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return Sim(data, cs, {t.id: m[i] for i, t in enumerate(cs.turns)}), cs, m, emb, data


def sweep(args: argparse.Namespace) -> None:

    sim, cs, _, _, data = load_sim(args)
    head = "| setting | all 1-4 R@5 / R@10 / nDCG@10 | " + " | ".join(f"{c} {NAMES[c]}" for c in CATS) + " |"
    sep = "|---" * (2 + len(CATS)) + "|"

    # the lever tables move one option from --over: the product before issue 26 or its defaults now
    over = BASE if args.over == "before" else CURRENT[args.speaker]

    def show(title: str, rows: list[tuple[str, dict[str, Any]]]) -> None:
        print(f"\n### {title} (over {args.over})\n\n{head}\n{sep}")
        for name, p in rows:
            print(table_row(name, sim, over | p)[0], flush=True)

    ref = {q: [t for t, _ in r["hybrid"]] for q, r in sim.q.items()}
    print(f"\nproduct hybrid (as collected, options {data['options']}):",
          {k: round(v * 100, 1) for k, v in scores(ref, sim.qrels, sim.judged).items()})
    now = {q: sim.rank(q, CURRENT[args.speaker]) for q in sim.q}
    same = sum(now[q][:10] == ref[q][:10] for q in sim.judged)
    print(f"simulated at the current defaults: {({k: round(v * 100, 1) for k, v in scores(now, sim.qrels, sim.judged).items()})}; "
          f"top 10 as the product's for {same} of {len(sim.judged)} questions")
    if args.show:
        for spec in args.show:
            print(table_row(spec, sim, over | json.loads(spec))[0])
    if not args.loo_only:
        show("fusion (rrfK / vectorWeight)", [(f"rrfK {k:g} / vw {v:g}", {"rrfK": k, "vw": v})
                                              for k in (1, 2, 3, 5) for v in (0.3, 0.4, 0.5)])
        if args.speaker != "prefix-text":
            show("graph leg weight (speaker entities)", [(f"graphWeight {g:g}", {"graph": g}) for g in (0, 0.1, 0.2, 0.3, 0.5, 1.0)])
            show("named boost", [(f"named {w:g}", {"named": w}) for w in (0, 0.05, 0.1, 0.2, 0.3, 0.5)])
        show("adjacency", [(f"adjacent {w:g}", {"adjacent": w}) for w in (0, 0.1, 0.2, 0.3, 0.4, 0.5)])
        show("window weight", [(f"window {w:g}", {"window": w}) for w in (0, 0.1, 0.3, 0.5)])
        show("MMR over the top 50", [(f"lambda {w:g}", {"mmr": w}) for w in (1.0, 0.95, 0.9, 0.8, 0.7)])
    # the combined grid and LOO (over --over, so the options the grid leaves out keep its values)
    spec = json.loads(args.grid) if args.grid else DEFAULT_GRID
    if args.speaker == "prefix-text":
        spec = spec | {"graph": [1.0], "named": [0.0]}  # no entities: neither has anything to do
    keys = list(spec)
    grid = [over | dict(zip(keys, vals, strict=True)) for vals in itertools.product(*(spec[k] for k in keys))]
    shown = [k for k in SHORT if k in ("rrfK", "vw") or len(spec.get(k, [])) > 1]
    lab = lambda p: ", ".join(f"{SHORT[k]} {p[k]:g}" if isinstance(p[k], (int, float)) else f"{SHORT[k]} {p[k]}" for k in shown)  # noqa: E731
    cur = CURRENT[args.speaker]
    lines, pooled = loo(sim, grid, lab, prefer=cur)
    print(f"\n### leave-one-conversation-out over {len(grid)} settings (over {args.over}; the current defaults "
          f"{'in' if cur in grid else 'not in'} the grid)\n\n| held out | chosen on the other two | pass the R@5 guard | "
          "train R@10 | the current defaults there: train R@10, guard | held-out R@5 / R@10 / nDCG@10 |\n|---|---|---|---|---|---|")
    print("\n".join(lines))
    for name, rk in (("pooled (each question by a setting that never saw it)", pooled), ("the current defaults, simulated", now)):
        pq = scores(rk, sim.qrels, sim.judged)
        print(f"| {name} | | | | | {pq['r5'] * 100:.1f} / {pq['r10'] * 100:.1f} / {pq['ndcg10'] * 100:.1f} |")
        for c in CATS:
            ids = [q for q in sim.judged if sim.q[q]["category"] == c]
            x = scores(rk, sim.qrels, ids)
            print(f"|   {c} {NAMES[c]} | | | | | {x['r5'] * 100:.1f} / {x['r10'] * 100:.1f} / {x['ndcg10'] * 100:.1f} |")
    up, down, mean, lo, hi = paired_r10(sim, pooled, now)
    print(f"\nR@10 per question, pooled LOO against the current defaults (simulated): rose for {up}, "
          f"fell for {down}; mean {mean:+.1f} points, paired bootstrap 95% [{lo:+.1f}, {hi:+.1f}]")
    lat = {mode: statistics.median(r["ms"][mode] for r in sim.q.values()) for mode in ("bm25", "vector", "graph", "hybrid")}
    print("\nrecall p50 ms as collected:", {k: round(v, 1) for k, v in lat.items()})


def _date_words(iso: str) -> str:
    d = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return f"{d.day} {d.strftime('%B')} {d.year}"


VECTOR_TEXTS: dict[str, Callable[[Any, Any], str]] = {
    "speaker": lambda t, prev: f"{t.speaker}: {t.text}",
    "date": lambda t, prev: f"({_date_words(t.observed_at)}) {t.speaker}: {t.text}",
    "previous turn": lambda t, prev: (f"{prev.speaker}: {prev.text}\n" if prev else "") + f"{t.speaker}: {t.text}",
}


def vectors(args: argparse.Namespace) -> None:
    """Lever 3, the vector leg alone: exact cosine top 50 over each conversation's turns
    (numpy; the vector leg is exact on LoCoMo, docs/EVALUATION.md), per text variant."""
    import numpy as np

    from amem_db.embedding import CachedEmbedder, get_embedder

    cs = locomo.load_conversations(args.path, "dev")
    emb = CachedEmbedder(get_embedder("minilm"))
    qrels = {q: set(r) for q, r in cs.qrels.items()}
    judged = [q for q, x in cs.questions.items() if x.category in CATS]
    qv = {q: np.asarray(emb.embed_query(x.text), dtype=float) for q, x in cs.questions.items()}
    print("| text embedded for a turn | all 1-4 R@5 / R@10 / nDCG@10 | " + " | ".join(f"{c} {NAMES[c]}" for c in CATS) + " |")
    print("|---" * (2 + len(CATS)) + "|")
    for name, render in VECTOR_TEXTS.items():
        rankings: dict[str, list[str]] = {}
        for conv in cs.conversations:
            turns = [t for t in cs.turns if t.conversation == conv]
            texts = [render(t, turns[i - 1] if i > 0 and turns[i - 1].session == t.session else None) for i, t in enumerate(turns)]
            m = np.asarray(emb.embed_documents(texts), dtype=float)
            m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
            for q, x in cs.questions.items():
                if x.conversation == conv:
                    order = np.argsort(-(m @ (qv[q] / max(float(np.linalg.norm(qv[q])), 1e-12))), kind="stable")[:DEPTH]
                    rankings[q] = [turns[i].id for i in order]
        cells = [name]
        for ids in [judged] + [[q for q in judged if cs.questions[q].category == c] for c in CATS]:
            x = scores(rankings, qrels, ids)
            cells.append(" / ".join(f"{x[k] * 100:.1f}" for k in ("r5", "r10", "ndcg10")))
        print("| " + " | ".join(cells) + " |", flush=True)


# words a question starts with or names that are no one: not entity candidates
NOT_NAMES = {"January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
             "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}


def names(args: argparse.Namespace) -> None:
    """Lever 1's other form, capitalised-name entities: each capitalised word of a question
    (not its first word, a month or a day, nor a speaker: the speaker entities cover those)
    that some turn of its conversation contains becomes a seed linked to those turns, as the
    mentions matcher would link an entity of that name; the named boost and the graph leg over
    them, on the legs of a store without speaker entities (--speaker prefix-text)."""
    import re

    sim, cs, _, _, _ = load_sim(args)
    speakers = {c: {t.speaker for t in cs.turns if t.conversation == c} for c in cs.conversations}
    n = 0
    for q, r in sim.q.items():
        c = r["conversation"]
        words = {w for w in re.findall(r"\b[A-Z][a-z]+\b", cs.questions[q].text)[1:] if w not in NOT_NAMES | speakers[c]}
        linked: dict[str, int] = {}
        for w in words:
            for t in cs.turns:
                if t.conversation == c and re.search(rf"\b{w}\b", t.text):
                    linked[t.id] = linked.get(t.id, 0) + 1
        sim.named_of[q] = linked
        n += bool(linked) and q in sim.judged
    cur = CURRENT[args.speaker]
    now = {q: sim.rank(q, cur | {"graph": 0.0, "named": 0.0}) for q in sim.q}
    print(f"{n} judged questions name someone or something (not a speaker) that a turn contains\n\n" + HEAD.format("setting"))
    for named in (0.0, 0.1, 0.2):
        for graph in (0.0, 0.3, 1.0):
            rk = {q: sim.rank(q, cur | {"named": named, "graph": graph}) for q in sim.q}
            up, down, mean, lo, hi = paired_r10(sim, rk, now)
            print(f"| speakerWeight {named:g}, graphWeight {graph:g} (R@10 against no name entities: {up} up, {down} down) | "
                  + " | ".join(cells(rk, sim)) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("collect", "sweep", "vectors", "names"))
    ap.add_argument("path")
    ap.add_argument("--speaker", default="prefix", choices=locomo.SPEAKER_MODES)
    ap.add_argument("--options", default="", help="collect: JSON recall options for the hybrid reference run")
    ap.add_argument("--tag", default="", help="a suffix for the collected file")
    ap.add_argument("--grid", default="", help="sweep: the LOO grid as JSON {option: [values]} (default DEFAULT_GRID)")
    ap.add_argument("--show", action="append", help="sweep: also print this setting (JSON over --over)")
    ap.add_argument("--over", default="before", choices=("before", "current"),
                    help="sweep: what the lever tables and the grid start from: the product before issue 26 (BASE) "
                         "or its recall defaults now (CURRENT)")
    ap.add_argument("--loo-only", action="store_true", help="sweep: skip the one-lever tables")
    ap.add_argument("--db-dir", default="results/.db")
    ap.add_argument("--out", default="results/levers")
    args = ap.parse_args()
    if args.command == "collect":
        asyncio.run(collect(args))
    elif args.command == "vectors":
        vectors(args)
    elif args.command == "names":
        names(args)
    else:
        sweep(args)


if __name__ == "__main__":
    main()
