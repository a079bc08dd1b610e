"""Pseudo-relevance feedback (PRF) on LoCoMo dev, offline: does a second, expanded pass of the
vector leg (Rocchio) or of the BM25 leg (RM3-like) help recall, above all multi-hop (category 1)
and open-domain (category 3)? Nothing here changes the product.

    # 1. the per-leg rankings through the product (cached in results/levers)
    python scripts/quality/locomo_levers.py collect ../shared/datasets/locomo --speaker prefix-text
    # 2. the PRF sweep and its leave-one-conversation-out (LOO) choice (a minute or two)
    python scripts/quality/locomo_prf.py ../shared/datasets/locomo

Baseline: locomo_levers.Sim over the collected legs at the recall defaults now (CURRENT
prefix-text with ADJACENT_DECAY 1.0), checked against the collected product hybrid.

Vector PRF (Rocchio): q' = normalise(q + alpha x mean of the top-m feedback turns' vectors), the
feedback turns the top m of the fused ranking at the defaults ("fused") or of the vector leg
("leg"); the turns of the question's conversation re-ranked by exact cosine with q' (numpy; the
turn text embedded as the product writes it, "Speaker: text", MiniLM through the embedding cache);
the top 50 replace the vector leg, then the fusion as today.

BM25 PRF (RM3-like): the top-m feedback turns (fused, or the BM25 leg); each analysed token of
theirs weighted sum over the feedback turns of tf / length x idf (the idf of the leg: all dev
turns); the e best tokens not already in the query join it at weight beta (the query's own
tokens weight 1); the turns re-scored with the engine's BM25 (locomo_bm25_params: the engine's
tokens and formula, k1 1.2, b 0 as the product) and the top 50 (any token present) replace the
BM25 leg, then the fusion as today. Both: the two replaced at once. Expansion tokens: only those
the leg's query path can send (fn::amem::query::terms drops stop words; `--stopwords keep`: any).

Third leg: instead of replacing a leg, the PRF ranking (feedback from the fused top m) joins the
RRF as a third leg at weight w in {0.1, 0.2, 0.4}, counted in the attainable (what the product
would do with one more KNN or BM25 pass).

LOO: per held-out conversation, among every setting and the defaults (no PRF), the best R@10
on the other two (ties: nDCG@10, then the defaults), among those that keep every category's R@5
there at least at the defaults' (to 0.5 point); scored on the held-out one and pooled, beside
the defaults, with the per-question R@10 change and its paired bootstrap 95% interval.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from pathlib import Path
from typing import Any

import locomo_bm25_params as bp
import locomo_levers as levers
import numpy as np
from scipy import sparse

from amem_db.harness import locomo

CATS = levers.CATS
NAMES = levers.NAMES
cells, HEAD = levers.cells, levers.HEAD
DEPTH = levers.DEPTH
# the recall defaults now on a store without entities (amem_db/constants.py ADJACENT_DECAY 1.0)
CUR = levers.CURRENT["prefix-text"]  # decay: the product's ADJACENT_DECAY
K1, B = 1.2, 0.0  # amem_db/constants.py BM25_PARAMS for memory passages


class Lex:
    """The engine's BM25 (1 + ln tf, floored idf over all dev turns) at (K1, B) with weighted query tokens."""

    def __init__(self, docs: list[list[str]], conv_of_doc: list[str]):
        self.ix = bp.Bm25(docs, conv_of_doc, "all")
        self.idf, avgdl = self.ix._idf(self.ix.stat_of[conv_of_doc[0]])
        w = self.ix.tfp.copy()
        norm = K1 * (1 - B + B * self.ix.dl / avgdl)
        w.data = (K1 + 1) * w.data / (w.data + np.repeat(norm, np.diff(w.indptr)))
        self.w = (w @ sparse.diags(self.idf)).tocsr()  # passage x token, the impact
        self.present = (self.ix.tf > 0).astype(float).tocsr()
        # per passage: normalised tf (tf / analysed length) x idf, for the expansion weights
        rel = self.ix.tf.multiply(1.0 / np.maximum(self.ix.dl, 1.0)[:, None]).tocsr()
        self.fb = (rel @ sparse.diags(self.idf)).tocsr()

    def qvec(self, weights: dict[str, float]) -> sparse.csr_matrix:
        cols = [self.ix.vocab[t] for t in weights if t in self.ix.vocab]
        vals = [weights[t] for t in weights if t in self.ix.vocab]
        return sparse.csr_matrix((vals, (cols, [0] * len(cols))), shape=(len(self.ix.vocab), 1))

    def rank(self, rows: np.ndarray, ids: list[str], weights: dict[str, float]) -> list[str]:
        if not weights:
            return []
        q = self.qvec(weights)
        s = (self.w[rows] @ q).toarray()[:, 0]
        hit = np.flatnonzero((self.present[rows] @ (q > 0).astype(float)).toarray()[:, 0] > 0)
        order = hit[np.lexsort((hit, -s[hit]))][:DEPTH]
        return [ids[i] for i in order]

    def expansion(self, fb_rows: list[int], query: set[str], e: int, allowed: set[str] | None = None) -> list[str]:
        if not fb_rows:
            return []
        v = np.asarray(self.fb[fb_rows].sum(axis=0)).ravel()
        inv = {j: t for t, j in self.ix.vocab.items()}
        out = []
        for j in np.argsort(-v, kind="stable"):
            if v[j] <= 0 or len(out) >= e:
                break
            t = inv[int(j)]
            if t not in query and any(ch.isalnum() for ch in t) and (allowed is None or t in allowed):
                out.append(t)
        return out


def rank_extra(sim: levers.Sim, qid: str, p: dict[str, Any], extra: list[str], we: float) -> list[str]:
    """locomo_levers.Sim.rank on a store without entities (no graph rows) with one more RRF leg,
    `extra` at weight `we` (counted in the attainable), instead of replacing a leg."""
    row = sim.q[qid]
    wv, rk = p["vw"], p["rrfK"]
    wl = 1 - wv
    fused: dict[str, float] = {}
    for lst, w in (([t for t, _ in row["vector"]][:p["vecDepth"]], wv), ([t for t, _ in row["bm25"]][:p["lexDepth"]], wl),
                   (extra[:DEPTH], we)):
        for i, t in enumerate(lst):
            fused[t] = fused.get(t, 0.0) + w / (rk + i + 1)
    att = (wv + wl + we) / (rk + 1)
    s = {t: min(1.0, x / att) for t, x in fused.items()}
    ww = p["window"]
    if row["window"] is not None and ww > 0:
        s = {t: (x + (ww if sim.in_window(qid, t) else 0.0)) / (1 + ww) for t, x in s.items()}
    _, ranked = sim.adjacency(s, sorted(s, key=lambda t: (-s[t], t)), p)
    return ranked[:DEPTH]


def query_vocabulary(cs: locomo.Conversations, speaker: str, cache: Path) -> set[str]:
    """The tokens the BM25 leg's query path can send: every turn's text through fn::amem::query::terms
    (letters and digits, no stop words) and the analyzer, so that an expansion token is one a
    query could hold (the feedback turns' own tokens include stop words: "did", "she", ...)."""
    turns = [locomo.turn_request(t, speaker=speaker)["text"] for t in cs.turns]
    if cache.exists():
        return set(json.loads(cache.read_text()))
    got = asyncio.run(bp._analyse([], turns))["questions"]
    vocab = sorted({t for x in got for t in x})
    cache.write_text(json.dumps(vocab))
    return set(vocab)


def paired(sim: levers.Sim, a: dict[str, list[str]], b: dict[str, list[str]], ids: list[str] | None = None) -> str:
    up, down, mean, lo, hi = levers.paired_r10(sim, a, b, ids, draws=4000)
    return f"up {up}, down {down}, mean {mean:+.2f} points, paired bootstrap 95% [{lo:+.2f}, {hi:+.2f}]"


def loo(sim: levers.Sim, runs: dict[str, dict[str, list[str]]], base: str, guard: bool = True) -> tuple[list[str], dict[str, list[str]]]:
    """levers.choose_loo over the PRF settings; the guard's baseline, and the tie's, is `base` (no PRF)."""
    folds, pooled = levers.choose_loo(sim, runs, runs[base] if guard else None, base)
    lines = []
    for f in folds:
        defaults = levers.scores(runs[base], sim.qrels, f["train"])["r10"]
        te = f["te"]
        lines.append(f"| {f['held']} | {f['best']} | {f['passed']} of {len(runs)} | {f['tr']['r10'] * 100:.1f} "
                     f"(defaults {defaults * 100:.1f}) | {te['r5'] * 100:.1f} / {te['r10'] * 100:.1f} / {te['ndcg10'] * 100:.1f} |")
    return lines, pooled


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--speaker", default="prefix-text", choices=locomo.SPEAKER_MODES)
    ap.add_argument("--tag", default="")
    ap.add_argument("--out", default="results/levers")
    ap.add_argument("--json", default="", help="also write every run's scores here")
    ap.add_argument("--stopwords", default="drop", choices=("drop", "keep"),
                    help="BM25 PRF: expansion tokens only among those the query path can send (drop: its stop words out) or any")
    args = ap.parse_args()
    t0 = time.time()

    sim, cs, m, emb, _ = levers.load_sim(args)
    row_of = {t.id: i for i, t in enumerate(cs.turns)}
    rows_of = {c: np.asarray([i for i, t in enumerate(cs.turns) if t.conversation == c]) for c in cs.conversations}
    ids_of = {c: [cs.turns[i].id for i in rows_of[c]] for c in cs.conversations}
    qv = {}
    for q in sim.q:
        v = np.asarray(emb.embed_query(cs.questions[q].text), dtype=float)
        qv[q] = v / max(float(np.linalg.norm(v)), 1e-12)
    tok = bp.tokens(cs, args.speaker, Path(args.out) / f"bm25-tokens-{args.speaker}.json")
    qtok = dict(zip(cs.questions, tok["questions"], strict=True))
    lex = Lex(tok["turns"], [t.conversation for t in cs.turns])
    allowed = None if args.stopwords == "keep" else query_vocabulary(cs, args.speaker, Path(args.out) / f"query-vocab-{args.speaker}.json")
    print(f"{len(cs.turns)} turns, {len(sim.q)} questions ({len(sim.judged)} judged); set-up {time.time() - t0:.0f} s", flush=True)

    # --- 0. the reproduction ---------------------------------------------------------------
    prod = {q: [t for t, _ in r["hybrid"]] for q, r in sim.q.items()}
    now = {q: sim.rank(q, CUR) for q in sim.q}
    now05 = {q: sim.rank(q, CUR | {"decay": 0.5}) for q in sim.q}
    vec_leg = {q: [t for t, _ in r["vector"]] for q, r in sim.q.items()}
    lex_leg = {q: [t for t, _ in r["bm25"]] for q, r in sim.q.items()}

    def vrank(q: str, v: np.ndarray) -> list[str]:
        rows = rows_of[sim.q[q]["conversation"]]
        s = m[rows] @ v
        return [ids_of[sim.q[q]["conversation"]][i] for i in np.argsort(-s, kind="stable")[:DEPTH]]

    def lweights(q: str) -> dict[str, float]:
        w: dict[str, float] = {}
        for t in qtok[q]:  # a repeated token counts again, as the leg's query tokens do
            w[t] = w.get(t, 0.0) + 1.0
        return w

    my_vec = {q: vrank(q, qv[q]) for q in sim.q}
    my_lex = {q: lex.rank(rows_of[sim.q[q]["conversation"]], ids_of[sim.q[q]["conversation"]], lweights(q)) for q in sim.q}

    def with_legs(vec: dict[str, list[str]] | None, lx: dict[str, list[str]] | None, p: dict[str, Any] = CUR) -> dict[str, list[str]]:
        def rows(leg: dict[str, list[str]] | None) -> dict[str, list[Any]] | None:
            return None if leg is None else {q: [[t, 0.0] for t in leg[q]] for q in leg}
        return levers.rank_with_legs(sim, p, vector=rows(vec), bm25=rows(lx))

    offline = with_legs(my_vec, my_lex)
    print("\n### reproduction\n\n" + HEAD.format("run"))
    print("| product hybrid (collected) | " + " | ".join(cells(prod, sim)) + " |")
    print(f"| simulated, defaults (decay {CUR['decay']}), collected legs | " + " | ".join(cells(now, sim)) + " |")
    print("| simulated, decay 0.5 (before session 16) | " + " | ".join(cells(now05, sim)) + " |")
    print("| simulated, defaults, both legs offline (numpy) | " + " | ".join(cells(offline, sim)) + " |")
    print("| vector leg (collected) | " + " | ".join(cells(vec_leg, sim)) + " |")
    print("| vector leg (numpy) | " + " | ".join(cells(my_vec, sim)) + " |")
    print("| BM25 leg (collected) | " + " | ".join(cells(lex_leg, sim)) + " |")
    print("| BM25 leg (numpy, k1 1.2 b 0) | " + " | ".join(cells(my_lex, sim)) + " |")
    j = sim.judged
    assert all(rank_extra(sim, q, CUR, [], 0.0) == now[q] for q in sim.q)  # the extra leg at weight 0 is the defaults
    print(f"\ntop 10 identical in order, simulated vs product hybrid: {sum(now[q][:10] == prod[q][:10] for q in j)} of {len(j)} "
          f"(same set {sum(set(now[q][:10]) == set(prod[q][:10]) for q in j)}, same top-10 recall {sum(levers.recall_at(now[q], sim.qrels[q], 10) == levers.recall_at(prod[q], sim.qrels[q], 10) for q in j)}); "
          f"vector leg numpy vs collected: {sum(my_vec[q][:10] == vec_leg[q][:10] for q in j)} (same set "
          f"{sum(set(my_vec[q][:10]) == set(vec_leg[q][:10]) for q in j)}); BM25 leg: {sum(my_lex[q][:10] == lex_leg[q][:10] for q in j)} "
          f"(same set {sum(set(my_lex[q][:10]) == set(lex_leg[q][:10]) for q in j)}); hybrid offline legs vs collected legs: "
          f"{sum(offline[q][:10] == now[q][:10] for q in j)}", flush=True)

    # --- 1. the PRF legs -------------------------------------------------------------------
    src = {"fused": now, "vleg": vec_leg, "lleg": lex_leg}

    def vec_prf(mm: int, alpha: float, s: str) -> dict[str, list[str]]:
        out = {}
        for q in sim.q:
            fb = src[s][q][:mm]
            v = qv[q] + alpha * (np.mean([m[row_of[t]] for t in fb], axis=0) if fb else 0.0)
            out[q] = vrank(q, v / max(float(np.linalg.norm(v)), 1e-12))
        return out

    def lex_prf(mm: int, e: int, beta: float, s: str) -> dict[str, list[str]]:
        out = {}
        for q in sim.q:
            w = lweights(q)
            for t in lex.expansion([row_of[t] for t in src[s][q][:mm]], set(w), e, allowed):
                w[t] = beta
            c = sim.q[q]["conversation"]
            out[q] = lex.rank(rows_of[c], ids_of[c], w)
        return out

    runs: dict[str, dict[str, list[str]]] = {"defaults (no PRF)": now}
    kind: dict[str, str] = {"defaults (no PRF)": "none"}
    vlegs: dict[tuple[Any, ...], dict[str, list[str]]] = {}
    llegs: dict[tuple[Any, ...], dict[str, list[str]]] = {}
    for mm, alpha, s in itertools.product((3, 5, 10), (0.3, 0.5, 1.0), ("fused", "vleg")):
        vlegs[(mm, alpha, s)] = leg = vec_prf(mm, alpha, s)
        name = f"vec m {mm} a {alpha:g} from {s}"
        runs[name], kind[name] = with_legs(leg, None), "vector"
        runs["leg: " + name], kind["leg: " + name] = leg, "leg-v"
    for mm, e, beta, s in itertools.product((3, 5, 10), (5, 10), (0.3, 0.5), ("fused", "lleg")):
        llegs[(mm, e, beta, s)] = leg = lex_prf(mm, e, beta, s)
        name = f"bm25 m {mm} e {e} b {beta:g} from {s}"
        runs[name], kind[name] = with_legs(None, leg), "bm25"
        runs["leg: " + name], kind["leg: " + name] = leg, "leg-l"
    for (vm, a, vs), (lm, e, beta, ls) in itertools.product(vlegs, llegs):
        if vs == "fused" and ls == "fused":
            name = f"both: vec m {vm} a {a:g} + bm25 m {lm} e {e} b {beta:g} (fused)"
            runs[name], kind[name] = with_legs(vlegs[(vm, a, vs)], llegs[(lm, e, beta, ls)]), "both"
    # the PRF leg as a third leg beside the two (one more KNN / BM25 pass), weight we
    for (mm, alpha, s), we in itertools.product([k for k in vlegs if k[2] == "fused"], (0.1, 0.2, 0.4)):
        name = f"+leg w {we:g}: vec m {mm} a {alpha:g} from fused"
        runs[name], kind[name] = {q: rank_extra(sim, q, CUR, vlegs[(mm, alpha, s)][q], we) for q in sim.q}, "third"
    for (mm, e, beta, s), we in itertools.product([k for k in llegs if k[3] == "fused"], (0.1, 0.2, 0.4)):
        name = f"+leg w {we:g}: bm25 m {mm} e {e} b {beta:g} from fused"
        runs[name], kind[name] = {q: rank_extra(sim, q, CUR, llegs[(mm, e, beta, s)][q], we) for q in sim.q}, "third"
    print(f"\n{len(runs)} runs in {time.time() - t0:.0f} s", flush=True)

    # --- 2. all-dev tables -----------------------------------------------------------------
    def top(k: str, n: int) -> list[str]:
        names = [r for r in runs if kind[r] == k]
        return sorted(names, key=lambda r: -levers.scores(runs[r], sim.qrels, j)["r10"])[:n]

    print("\n### the legs alone, all dev (R@10 best first)\n\n" + HEAD.format("leg"))
    print("| vector leg (numpy, no PRF) | " + " | ".join(cells(my_vec, sim)) + " |")
    for r in top("leg-v", 6):
        print(f"| {r[5:]} | " + " | ".join(cells(runs[r], sim)) + " |")
    print("| BM25 leg (numpy, no PRF) | " + " | ".join(cells(my_lex, sim)) + " |")
    for r in top("leg-l", 6):
        print(f"| {r[5:]} | " + " | ".join(cells(runs[r], sim)) + " |")
    for k, n in (("vector", 18), ("bm25", 24), ("both", 10), ("third", 15)):
        print(f"\n### hybrid with {k} PRF, all dev (R@10 best first, top {n})\n\n" + HEAD.format("setting"))
        print("| defaults (no PRF) | " + " | ".join(cells(now, sim)) + " |")
        for r in top(k, n):
            print(f"| {r} | " + " | ".join(cells(runs[r], sim)) + " |")

    print("\n### the best all-dev setting per family (chosen on all dev: optimistic) against the defaults, R@10 per question\n")
    for k in ("vector", "bm25", "both", "third"):
        r = top(k, 1)[0]
        print(f"* {r}: all {paired(sim, runs[r], now)}; multi-hop "
              + paired(sim, runs[r], now, [q for q in j if sim.q[q]["category"] == 1])
              + "; open-domain " + paired(sim, runs[r], now, [q for q in j if sim.q[q]["category"] == 3]))
    ms = {mode: float(np.median([r["ms"][mode] for r in sim.q.values()])) for mode in ("bm25", "vector", "hybrid")}
    print("\nrecall p50 ms as collected (client, mem://, k 50): " + ", ".join(f"{k} {v:.1f}" for k, v in ms.items()))
    print("query tokens per question (BM25 leg): mean " + f"{np.mean([len(qtok[q]) for q in j]):.1f}")

    # --- 3. LOO ----------------------------------------------------------------------------
    summary: dict[str, Any] = {}
    for fam, guard in ((("vector",), True), (("bm25",), True), (("both",), True), (("third",), True),
                       (("vector", "bm25", "both", "third"), True), (("vector", "bm25", "both", "third"), False)):
        cand = {r: runs[r] for r in runs if kind[r] in fam or kind[r] == "none"}
        lines, pooled = loo(sim, cand, "defaults (no PRF)", guard)
        title = (" + ".join(fam) if len(fam) < 3 else "every PRF setting") + ("" if guard else ", no R@5 guard")
        print(f"\n### LOO over {title} ({len(cand)} settings with the defaults)\n\n| held out | chosen on the other two | "
              "pass the R@5 guard | train R@10 | held-out R@5 / R@10 / nDCG@10 |\n|---|---|---|---|---|")
        print("\n".join(lines))
        print("\n" + HEAD.format("pooled"))
        print("| LOO choice (held out, pooled) | " + " | ".join(cells(pooled, sim)) + " |")
        print("| defaults (no PRF) | " + " | ".join(cells(now, sim)) + " |")
        print("\nR@10 per question, LOO choice against the defaults: " + paired(sim, pooled, now))
        for c in (1, 3):
            ids = [q for q in j if sim.q[q]["category"] == c]
            print(f"  {c} {NAMES[c]}: " + paired(sim, pooled, now, ids))
        summary[title] = {"pooled": cells(pooled, sim), "paired": paired(sim, pooled, now)}
    if args.json:
        Path(args.json).write_text(json.dumps({r: {"kind": kind[r], "cells": cells(runs[r], sim)} for r in runs} | {"_loo": summary}, indent=1))
    print(f"\ndone in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
