"""The turn ranking (top 50, with scores) of every judged LoCoMo dev question, hybrid through the
product, as JSON: what docs/EVALUATION.md "LoCoMo levers (issue 26)" compares before and after a
change that must not move any hit (the adjacency signal read by session position).

    python scripts/quality/locomo_rankings.py ../shared/datasets/locomo --out results/rank-after.json
    python scripts/quality/locomo_rankings.py --compare results/rank-before.json results/rank-after.json
    # leave-one-conversation-out over settings, one rankings file each (the first is the guard's baseline)
    python scripts/quality/locomo_rankings.py ../shared/datasets/locomo --loo results/rank-p-sw0.json results/rank-p-sw0.2.json
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
from pathlib import Path

from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.harness import locomo


async def dump(args: argparse.Namespace) -> None:
    opts = json.loads(args.options)
    cs = locomo.load_conversations(args.path, "dev")
    prepared = await locomo.prepare_conversations(cs, CachedEmbedder(get_embedder("minilm")), speaker=args.speaker,
                                                  db_dir=Path(args.db_dir))
    mem = prepared.mem
    nows = {c: cs.last_session(c) for c in cs.conversations}
    out = {}
    for q, x in cs.questions.items():
        if x.category not in (1, 2, 3, 4):
            continue
        resp = await mem.recall(x.text, k=50, include=["passages"], lens=locomo.lens_of(x.conversation), now=nows[x.conversation], **opts)
        out[q] = [[locomo.turn_id_of(h), round(h.score, 9)] for h in resp.hits]
    Path(args.out).write_text(json.dumps(out))
    print(f"wrote {args.out}: {len(out)} questions")
    await mem.conn.close()


def compare(a: str, b: str) -> None:
    x, y = json.loads(Path(a).read_text()), json.loads(Path(b).read_text())
    ids = sum(1 for q in x if [t for t, _ in x[q]] == [t for t, _ in y[q]])
    same = sum(1 for q in x if x[q] == y[q])
    print(f"{len(x)} questions: identical rankings {ids}, identical rankings and scores {same}")
    for q in [q for q in x if [t for t, _ in x[q]] != [t for t, _ in y[q]]][:5]:
        print(q, x[q][:5], y[q][:5])


def metrics(ranking: list, rel: set[str]) -> tuple[float, float, float]:
    turns = list(dict.fromkeys(t for t, _ in ranking if t is not None))
    dcg = sum(1.0 / math.log2(i + 2) for i, t in enumerate(turns[:10]) if t in rel)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(10, len(rel))))
    return len(rel.intersection(turns[:5])) / len(rel), len(rel.intersection(turns[:10])) / len(rel), dcg / ideal


def loo(path: str, files: list[str]) -> None:
    """Leave one conversation out: for each dev conversation, the setting (file) with the best R@10
    (ties: nDCG@10) on the other two among those whose R@5 in no category falls more than 0.5
    point under the first file's, scored on the held-out one; then every question pooled."""
    cs = locomo.load_conversations(path, "dev")
    runs = {f: json.loads(Path(f).read_text()) for f in files}
    qs = list(runs[files[0]])
    m = {f: {q: metrics(r[q], set(cs.qrels[q])) for q in qs} for f, r in runs.items()}
    cats = (4, 1, 2, 3)

    def mean(f: str, ids: list[str], i: int) -> float:
        return 100 * sum(m[f][q][i] for q in ids) / len(ids) if ids else float("nan")

    def row(f: str, ids: list[str]) -> str:
        return " / ".join(f"{mean(f, ids, i):.1f}" for i in range(3))
    print("| setting | all 1-4 | " + " | ".join(locomo.CATEGORY_NAMES[c] for c in cats) + " |")
    for f in files:
        print(f"| {Path(f).stem} | {row(f, qs)} | " + " | ".join(row(f, [q for q in qs if cs.questions[q].category == c]) for c in cats) + " |")
    pooled: dict[str, str] = {}
    for held in sorted(cs.conversations):
        train = [q for q in qs if cs.questions[q].conversation != held]
        test = [q for q in qs if cs.questions[q].conversation == held]
        base = {c: mean(files[0], [q for q in train if cs.questions[q].category == c], 0) for c in cats}
        ok = [f for f in files if all(mean(f, [q for q in train if cs.questions[q].category == c], 0) >= base[c] - 0.5 for c in cats)]
        best = max(ok, key=lambda f: (mean(f, train, 1), mean(f, train, 2)))
        print(f"| held out {held} | chosen {Path(best).stem} (of {len(ok)} under the guard) | {row(best, test)} |")
        pooled.update({q: best for q in test})
    tot = [sum(m[pooled[q]][q][i] for q in qs) / len(qs) * 100 for i in range(3)]
    per = {c: [q for q in qs if cs.questions[q].category == c] for c in cats}
    print("| pooled | " + " / ".join(f"{x:.1f}" for x in tot) + " | " + " | ".join(
        " / ".join(f"{100 * sum(m[pooled[q]][q][i] for q in per[c]) / len(per[c]):.1f}" for i in range(3)) for c in cats) + " |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", nargs="?")
    ap.add_argument("--speaker", default="prefix", choices=locomo.SPEAKER_MODES)
    ap.add_argument("--options", default="{}", help="recall options as JSON (client argument names)")
    ap.add_argument("--db-dir", default="results/.db")
    ap.add_argument("--out")
    ap.add_argument("--compare", nargs=2)
    ap.add_argument("--loo", nargs="+", help="rankings files, one per setting (the first: the guard's baseline)")
    a = ap.parse_args()
    if a.loo:
        loo(a.path, a.loo)
    elif a.compare:
        compare(*a.compare)
    else:
        asyncio.run(dump(a))
