"""The turn ranking (top 50, with scores) of every judged LoCoMo dev question, hybrid through the
product, as JSON: what docs/EVALUATION.md "LoCoMo levers (issue 26)" compares before and after a
change that must not move any hit (the adjacency signal read by session position).

    python scripts/quality/locomo_rankings.py ../shared/datasets/locomo --speaker prefix-text --out results/rank-after.json
    python scripts/quality/locomo_rankings.py --compare results/rank-before.json results/rank-after.json
"""
from __future__ import annotations

import argparse
import asyncio
import json
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


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", nargs="?")
    ap.add_argument("--speaker", default="prefix-text", choices=locomo.SPEAKER_MODES)
    ap.add_argument("--options", default="{}", help="recall options as JSON (client argument names)")
    ap.add_argument("--db-dir", default="results/.db")
    ap.add_argument("--out")
    ap.add_argument("--compare", nargs=2)
    a = ap.parse_args()
    if a.compare:
        compare(*a.compare)
    else:
        asyncio.run(dump(a))
