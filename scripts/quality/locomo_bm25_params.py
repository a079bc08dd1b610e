"""Issue 26 lever 4: BM25 k1 and b for memory passages (one LoCoMo turn each), offline over the
engine's own tokens, the BM25 leg alone and hybrid, with leave-one-conversation-out (LOO) choice.

    # 1. the per-leg rankings through the product (locomo_levers.py; ~10 minutes, cached)
    python scripts/quality/locomo_levers.py collect ../shared/datasets/locomo --speaker prefix-text
    # 2. the sweep (tokens through the engine's analyzer once, cached; seconds); --check adds the
    # bm25s cross-check, --stats conversation the per-conversation statistics
    python scripts/quality/locomo_bm25_params.py ../shared/datasets/locomo --speaker prefix-text --check

Tokens: every dev turn as the eval writes it (locomo.turn_request: "Speaker: text") through
`search::analyze('knowledge_text', ...)`, every question through the words the BM25 leg sends
(`fn::amem::query::terms`: letters and digits, no stop words, distinct) and then the same
analyzer, on a migrated in-memory database (the product's analyzer, not a copy of it).

Scoring: the engine's formula (surql/315 fn::amem::bm25::impacts) with k1 and b free:
idf = max(0, ln((N - df + 0.5) / (df + 0.5))), tf' = 1 + ln tf,
score = sum over query tokens of idf x (k1 + 1) tf' / (tf' + k1 (1 - b + b dl / avgdl)),
dl = the passage's analysed length (punctuation tokens count, as in the engine). In numpy:
bm25s has no (1 + ln tf) variant; its Robertson method (raw tf, the same floored idf) is the
cross-check (`--check`: numpy with raw tf against bm25s, same scores up to the factor k1 + 1).
N, df and avgdl come from all dev turns (one memory_chunk_fts index holds the three
conversations, as in the product); each question ranks its own conversation's turns only (the
collect step's lens); `--stats conversation` takes them per conversation instead.

Variants: turns (the product's passages) and windows (a turn with its previous and next turn
of the same session concatenated, credited to the centre turn; statistics over the windows).

Hybrid: locomo_levers.Sim with the collected BM25 leg replaced by the offline one, the current
recall defaults otherwise (vectorWeight 0.4, rrfK 2, windowWeight 0.3, adjacentWeight 0.4; a
store without entities: no graph rows, so the graph leg is out of the attainable, surql/410
read::live). The simulation is checked against the collected product hybrid first.

LOO: per held-out conversation, the (k1, b) with the best R@10 (ties: nDCG@10) on the other two,
among those that keep every category's R@5 there at least at that of the turns at (1.2, 0.75)
(today's product) to 0.5 point (the guard of locomo_levers.loo with today's parameters as its
baseline; when none passes, every setting competes, as there), scored on the held-out one;
pooled, every question is scored by a setting that never saw it; with the per-question R@10
change against (1.2, 0.75) and its paired bootstrap interval.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

# the sibling script (scripts/quality/ is sys.path[0] when this one runs): the collected legs,
# the simulation of surql/450 and the metrics
import locomo_levers as levers
import numpy as np
from scipy import sparse

from amem_db.harness import locomo

CATS = levers.CATS
cells, HEAD = levers.cells, levers.HEAD
DEPTH = levers.DEPTH
K1S = (0.3, 0.6, 0.9, 1.2, 1.5, 2.0)
BS = (0.0, 0.25, 0.5, 0.75, 1.0)
PRODUCT = (1.2, 0.75)  # surql/010_fulltext BM25(1.2,0.75)
# recall's defaults on a store without entities: the graph leg has no rows (out of the attainable)
HYBRID = levers.BASE | {"graph": 0.0, "adjacent": 0.4}


# --- tokens through the engine ---------------------------------------------------------------

async def _analyse(turns: list[str], questions: list[str]) -> dict[str, list[list[str]]]:
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.migrator import Migrator

    conn = await open_connection(Target(url="mem://", ns="bm25params", db="analyse"))
    try:
        await Migrator(conn).migrate()
        out: dict[str, list[list[str]]] = {"turns": [], "questions": []}
        for key, texts, stmt in (
                ("turns", turns, "RETURN $t.map(|$x| search::analyze('knowledge_text', $x))"),
                ("questions", questions, "RETURN $t.map(|$x| search::analyze('knowledge_text', fn::amem::query::terms($x).text))")):
            for i in range(0, len(texts), 200):
                (got,) = await conn.query(stmt, {"t": texts[i:i + 200]})
                out[key] += got
        return out
    finally:
        await close_quietly(conn)


def tokens(cs: locomo.Conversations, speaker: str, cache: Path) -> dict[str, list[list[str]]]:
    """{turns: [tokens per cs.turns], questions: [tokens per cs.questions]}, cached by input."""
    turns = [locomo.turn_request(t, speaker=speaker)["text"] for t in cs.turns]
    questions = [q.text for q in cs.questions.values()]
    key = hashlib.sha256(json.dumps([turns, questions]).encode()).hexdigest()[:16]
    if cache.exists():
        got = json.loads(cache.read_text())
        if got.get("key") == key:
            return got
    got = asyncio.run(_analyse(turns, questions)) | {"key": key}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(got))
    return got


# --- BM25 ------------------------------------------------------------------------------------

class Bm25:
    """Passages as a sparse tf matrix; `scores` gives every question's scores over its
    conversation's passages under (k1, b). tf: "log" (the engine's 1 + ln tf) or "raw"."""

    def __init__(self, docs: list[list[str]], conv_of_doc: list[str], stats: str, tf: str = "log"):
        self.vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        for i, d in enumerate(docs):
            counts: dict[int, int] = {}
            for w in d:
                j = self.vocab.setdefault(w, len(self.vocab))
                counts[j] = counts.get(j, 0) + 1
            rows += [i] * len(counts)
            cols += list(counts)
            vals += list(counts.values())
        self.tf = sparse.csr_matrix((np.asarray(vals, float), (rows, cols)), shape=(len(docs), len(self.vocab)))
        self.tf.sort_indices()
        self.tfp = self.tf.copy()
        if tf == "log":
            self.tfp.data = 1 + np.log(self.tfp.data)
        self.dl = np.asarray([len(d) for d in docs], float)
        self.conv = np.asarray(conv_of_doc)
        # the statistics' groups: one (all dev turns, the product's index) or one per conversation
        groups = {c: np.flatnonzero(self.conv == c) for c in sorted(set(conv_of_doc))}
        self.stat_of = {c: (np.arange(len(docs)) if stats == "all" else groups[c]) for c in groups}
        self.rows_of = groups

    def _idf(self, rows: np.ndarray) -> tuple[np.ndarray, float]:
        sub = self.tf[rows]
        df = np.bincount(sub.indices, minlength=len(self.vocab)).astype(float)
        n = len(rows)
        return np.maximum(0.0, np.log((n - df + 0.5) / (df + 0.5))), float(self.dl[rows].mean())

    def scores(self, conv: str, queries: list[list[str]], k1: float, b: float) -> tuple[np.ndarray, np.ndarray]:
        """(scores: passages of `conv` x queries, matched: the same shape, any query token present)."""
        idf, avgdl = self._idf(self.stat_of[conv])
        rows = self.rows_of[conv]
        w = self.tfp[rows].copy()
        norm = k1 * (1 - b + b * self.dl[rows] / avgdl)
        w.data = (k1 + 1) * w.data / (w.data + np.repeat(norm, np.diff(w.indptr)))
        qr, qc, qv = [], [], []
        for j, q in enumerate(queries):
            for t in q:  # a repeated token counts again, as the leg's query tokens do
                if t in self.vocab:
                    qr.append(self.vocab[t])
                    qc.append(j)
                    qv.append(1.0)
        qm = sparse.csr_matrix((qv, (qr, qc)), shape=(len(self.vocab), len(queries)))
        scored = (w @ sparse.diags(idf) @ qm).toarray()
        matched = ((self.tf[rows] > 0).astype(float) @ (qm > 0).astype(float)).toarray() > 0
        return scored, matched


def rankings(index: Bm25, ids_of: dict[str, list[str]], q_of: dict[str, list[str]], qtok: dict[str, list[str]],
             k1: float, b: float) -> dict[str, list[list[Any]]]:
    """question -> [[turn id, score]] best first, top DEPTH: every passage that shares a token
    with the query (OR semantics; a score of 0 ranks last), ties by corpus order."""
    out: dict[str, list[list[Any]]] = {}
    for conv, qids in q_of.items():
        s, m = index.scores(conv, [qtok[q] for q in qids], k1, b)
        ids = ids_of[conv]
        for j, q in enumerate(qids):
            hit = np.flatnonzero(m[:, j])
            order = hit[np.lexsort((hit, -s[hit, j]))][:DEPTH]
            out[q] = [[ids[i], float(s[i, j])] for i in order]
    return out


# --- tables ----------------------------------------------------------------------------------

def hybrid_of(sim: levers.Sim, legs: dict[str, list[list[Any]]]) -> dict[str, list[str]]:
    """Hybrid rankings with the BM25 leg replaced (the vector leg, windows as collected)."""
    return levers.rank_with_legs(sim, HYBRID, bm25=legs)


def loo(sim: levers.Sim, runs: dict[tuple[float, float], dict[str, list[str]]],
        base: dict[str, list[str]]) -> tuple[list[str], dict[str, list[str]]]:
    """levers.choose_loo over (k1, b); the guard's baseline `base` (the product's turns at (1.2, 0.75))."""
    folds, pooled = levers.choose_loo(sim, runs, base, PRODUCT)
    lines = [f"| {f['held']} | k1 {f['best'][0]:g}, b {f['best'][1]:g} | {f['passed']} of {len(runs)} | {f['tr']['r10'] * 100:.1f} | "
             f"{f['te']['r5'] * 100:.1f} / {f['te']['r10'] * 100:.1f} / {f['te']['ndcg10'] * 100:.1f} |" for f in folds]
    return lines, pooled


def paired(sim: levers.Sim, a: dict[str, list[str]], b: dict[str, list[str]]) -> str:
    """Per question R@10 of a against b: rose / fell, and a paired bootstrap 95% interval of the mean difference."""
    up, down, mean, lo, hi = levers.paired_r10(sim, a, b)
    return (f"\nR@10 per question, LOO choice against (1.2, 0.75): rose for {up}, fell for {down}; "
            f"mean {mean:+.1f} points, paired bootstrap 95% [{lo:+.1f}, {hi:+.1f}]")


def grid_table(title: str, metric: Callable[[dict[str, list[str]]], float], runs: dict[tuple[float, float], dict[str, list[str]]]) -> str:
    lines = [f"\n{title}\n", "| k1 \\ b | " + " | ".join(f"{b:g}" for b in BS) + " |", "|---" * (1 + len(BS)) + "|"]
    for k1 in K1S:
        lines.append(f"| {k1:g} | " + " | ".join(f"{metric(runs[(k1, b)]) * 100:.1f}" for b in BS) + " |")
    return "\n".join(lines)


def check_bm25s(cs: locomo.Conversations, tok: dict[str, list[list[str]]]) -> None:
    """numpy with raw tf and per-conversation statistics against bm25s (Robertson) per conversation."""
    import bm25s

    qtok = dict(zip(cs.questions, tok["questions"], strict=True))
    index = Bm25(tok["turns"], [t.conversation for t in cs.turns], "conversation", tf="raw")
    worst, same = 0.0, 0
    for conv in cs.conversations:
        rows = [i for i, t in enumerate(cs.turns) if t.conversation == conv]
        ref = bm25s.BM25(k1=1.2, b=0.75, method="robertson")
        ref.index([tok["turns"][i] for i in rows], show_progress=False)
        qids = [q for q, x in cs.questions.items() if x.conversation == conv and qtok[q]]
        s, _ = index.scores(conv, [qtok[q] for q in qids], 1.2, 0.75)
        for j, q in enumerate(qids):
            known = [t for t in qtok[q] if t in ref.vocab_dict]
            got = ref.get_scores(known) if known else np.zeros(len(rows))
            worst = max(worst, float(np.max(np.abs(s[:, j] / 2.2 - got))))
            same += list(np.argsort(-s[:, j], kind="stable")[:10]) == list(np.argsort(-got, kind="stable")[:10])
    print(f"bm25s check (raw tf, per-conversation statistics, k1 1.2 b 0.75): max |numpy / (k1 + 1) - bm25s| = {worst:.2e}, "
          f"top 10 identical for {same} questions", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--speaker", default="prefix-text", choices=locomo.SPEAKER_MODES)
    ap.add_argument("--tag", default="", help="the collected file's suffix (locomo_levers.py collect --tag)")
    ap.add_argument("--stats", default="all", choices=("all", "conversation"), help="N, df, avgdl over all dev turns or per conversation")
    ap.add_argument("--check", action="store_true", help="also the bm25s cross-check of the numpy scorer")
    ap.add_argument("--out", default="results/levers")
    args = ap.parse_args()

    cs = locomo.load_conversations(args.path, "dev")
    data = json.loads((Path(args.out) / f"legs-{args.speaker}{args.tag}.json").read_text())
    sim = levers.Sim(data, cs, None)
    tok = tokens(cs, args.speaker, Path(args.out) / f"bm25-tokens-{args.speaker}.json")
    if args.check:
        check_bm25s(cs, tok)
    qtok = dict(zip(cs.questions, tok["questions"], strict=True))
    q_of: dict[str, list[str]] = {}
    for q in sim.q:
        q_of.setdefault(sim.q[q]["conversation"], []).append(q)
    ids_of = {c: [t.id for t in cs.turns if t.conversation == c] for c in cs.conversations}
    convs = [t.conversation for t in cs.turns]
    # windows: previous + turn + next of the same session, credited to the centre turn
    win = []
    for i, t in enumerate(cs.turns):
        w = list(tok["turns"][i])
        for j in (i - 1, i + 1):
            if 0 <= j < len(cs.turns) and cs.turns[j].conversation == t.conversation and cs.turns[j].session == t.session:
                w = tok["turns"][j] + w if j < i else w + tok["turns"][j]
        win.append(w)
    variants = {"turns": Bm25(tok["turns"], convs, args.stats), "windows": Bm25(win, convs, args.stats)}
    print(f"{len(cs.turns)} turns, mean analysed length {np.mean([len(x) for x in tok['turns']]):.1f} tokens "
          f"(windows {np.mean([len(x) for x in win]):.1f}); {len(sim.judged)} judged questions; statistics: {args.stats}")

    # 1. the reproduction of the product's BM25 leg, and of its hybrid
    prod = {q: [t for t, _ in r["bm25"]] for q, r in sim.q.items()}
    prod_h = {q: [t for t, _ in r["hybrid"]] for q, r in sim.q.items()}
    legs = {v: {p: rankings(ix, ids_of, q_of, qtok, *p) for p in itertools.product(K1S, BS)} for v, ix in variants.items()}
    mine = {q: [t for t, _ in r] for q, r in legs["turns"][PRODUCT].items()}
    top10 = sum(prod[q][:10] == mine[q][:10] for q in sim.judged)
    sets10 = sum(set(prod[q][:10]) == set(mine[q][:10]) for q in sim.judged)
    print("\n### the product against the reproduction (k1 1.2, b 0.75)\n\n" + HEAD.format("run"))
    print("| product bm25 leg (collected) | " + " | ".join(cells(prod, sim)) + " |")
    print("| offline BM25, turns | " + " | ".join(cells(mine, sim)) + " |")
    print("| product hybrid (collected) | " + " | ".join(cells(prod_h, sim)) + " |")
    print("| simulated hybrid, product bm25 leg | " + " | ".join(cells({q: sim.rank(q, HYBRID) for q in sim.q}, sim)) + " |")
    print("| simulated hybrid, offline bm25 leg | " + " | ".join(cells(hybrid_of(sim, legs["turns"][PRODUCT]), sim)) + " |")
    print(f"\ntop 10 identical (order) for {top10} of {len(sim.judged)} questions, same set for {sets10}; "
          f"leg length (product / offline) mean {np.mean([len(prod[q]) for q in sim.judged]):.1f} / {np.mean([len(mine[q]) for q in sim.judged]):.1f}")

    base: dict[str, dict[str, list[str]]] = {}
    for v in variants:
        leg = {p: {q: [t for t, _ in r] for q, r in x.items()} for p, x in legs[v].items()}
        hyb = {p: hybrid_of(sim, x) for p, x in legs[v].items()}
        for name, runs in ((f"BM25 leg alone, {v}", leg), (f"hybrid with the offline BM25 leg over {v}", hyb)):
            base.setdefault("leg" if runs is leg else "hybrid", runs[PRODUCT])  # the turns' (1.2, 0.75)
            print(f"\n### {name}")
            print(grid_table("R@10, all categories 1-4", lambda rk: levers.scores(rk, sim.qrels, sim.judged)["r10"], runs))
            best = max(runs, key=lambda p: (round(levers.scores(runs[p], sim.qrels, sim.judged)["r10"], 6),
                                            levers.scores(runs[p], sim.qrels, sim.judged)["ndcg10"]))
            print(f"\nper category at the product's (1.2, 0.75), the best R@10 ({best[0]:g}, {best[1]:g}) and a few others:\n")
            print(HEAD.format("k1, b"))
            show = [PRODUCT, best] + [p for p in ((0.9, 0.75), (1.5, 0.75), (1.2, 0.5), (1.2, 1.0), (1.2, 0.25), (1.2, 0.0)) if p != best]
            for p in dict.fromkeys(show):
                print(f"| {p[0]:g}, {p[1]:g}{' (product)' if p == PRODUCT else ''} | " + " | ".join(cells(runs[p], sim)) + " |")
            lines, pooled = loo(sim, runs, base["leg" if runs is leg else "hybrid"])
            print(f"\nLOO over {len(runs)} (k1, b):\n\n| held out | chosen on the other two | pass the R@5 guard | train R@10 | held-out R@5 / R@10 / nDCG@10 |\n|---|---|---|---|---|")
            print("\n".join(lines))
            print("\n" + HEAD.format("pooled (each question by a setting that never saw it)"))
            print("| LOO choice | " + " | ".join(cells(pooled, sim)) + " |")
            ref = base["leg" if runs is leg else "hybrid"]
            print("| turns at (1.2, 0.75) (the product) | " + " | ".join(cells(ref, sim)) + " |")
            print(paired(sim, pooled, ref), flush=True)


if __name__ == "__main__":
    main()
