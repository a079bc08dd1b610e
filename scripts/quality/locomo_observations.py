"""LoCoMo's own observations as memory (issue 26 lever 6): the tables of docs/EVALUATION.md
"Observations as facts (issue 26 lever 6)" from `amem-db eval ... --observations` reports, and
the client latency of hybrid recall on two stores with the questions interleaved (so machine
load falls on both alike).

    amem-db eval ../shared/datasets/locomo --out results/eval-obs/turns
    amem-db eval ../shared/datasets/locomo --observations passages --out results/eval-obs/passages
    python scripts/quality/locomo_observations.py table results/eval-obs/turns results/eval-obs/passages
    python scripts/quality/locomo_observations.py latency ../shared/datasets/locomo --observations passages
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from amem_db.harness import locomo

METRICS = ("recall@5", "recall@10", "ndcg@10")
COLUMNS = (("all 1-4", None), ("single-hop", "single-hop"), ("multi-hop", "multi-hop"), ("temporal", "temporal"),
           ("open-domain", "open-domain"))


def store_label(report: dict[str, Any]) -> str:
    obs = report.get("observations")
    if not obs:
        return "turns"
    return f"observations ({obs['as']}) only" if obs["only"] else f"turns + observations ({obs['as']})"


def cells(summary: dict[str, Any]) -> list[str]:
    out = []
    for _, cat in COLUMNS:
        m = summary["metrics"] if cat is None else summary["by_category"][cat]
        out.append(" / ".join(f"{100 * m[x]:.1f}" for x in METRICS))
    return out


def table(dirs: list[Path], modes: list[str]) -> None:
    reports = [json.loads((d / "report.json").read_text()) for d in dirs]
    print("| store | mode | " + " | ".join(c for c, _ in COLUMNS) + " | observation hits in the top 10 | p50 ms |")
    print("|---|---|" + "---|" * (len(COLUMNS) + 2))
    for mode in modes:
        for r in reports:
            s = r["modes"].get(mode)
            if not s or not s["available"]:
                continue
            print(f"| {store_label(r)} | {mode} | " + " | ".join(cells(s))
                  + f" | {s.get('observations_in_top10', 0):.1f} | {s['latency_ms']['p50']:.0f} |")
    print("\nk counted in distinct turns (all 1-4, R@5 / R@10 / nDCG@10):")
    for r in reports:
        for mode, s in r["modes"].items():
            t = (s.get("metrics_k_in_turns") or {}).get("metrics")
            if t:
                print(f"  {store_label(r)} {mode}: " + " / ".join(f"{100 * t[x]:.1f}" for x in METRICS))


async def latency(path: str, observations: str, db_dir: Path, rounds: int) -> None:
    """Hybrid recall, every judged question (1-4) of the dev split, on the turns-only store and the
    store with observations, alternating which goes first; client wall clock per recall."""
    from amem_db.embedding import CachedEmbedder, get_embedder

    cs = locomo.load_conversations(path, "dev")
    embedder = CachedEmbedder(get_embedder("minilm"))
    stores = {"turns": await locomo.prepare_conversations(cs, embedder, db_dir=db_dir),
              f"turns + observations ({observations})": await locomo.prepare_conversations(
                  cs, embedder, db_dir=db_dir, observations=observations)}
    include = ("facts", "passages") if observations == "facts" else ("passages",)
    nows = {c: cs.last_session(c) for c in cs.conversations}
    judged = [q for q, x in cs.questions.items() if x.category in (1, 2, 3, 4)]
    ms: dict[str, list[float]] = {name: [] for name in stores}
    for r in range(rounds):
        for i, q in enumerate(judged):
            x = cs.questions[q]
            names = list(stores) if (i + r) % 2 == 0 else list(reversed(stores))
            for name in names:
                t0 = time.perf_counter()
                await locomo.recall_hits(stores[name].mem, x.text, "hybrid", locomo.MAX_RECALL_K, locomo.lens_of(x.conversation),
                                         now=nows[x.conversation], include=include if name != "turns" else ("passages",))
                ms[name].append((time.perf_counter() - t0) * 1000)
    for name, xs in ms.items():
        xs.sort()
        print(f"| {name} | {len(xs)} | {statistics.median(xs):.0f} | {xs[int(len(xs) * 0.95)]:.0f} |", flush=True)
    for p in stores.values():
        await p.mem.conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("table", help="the per-category table from eval report folders")
    t.add_argument("dirs", nargs="+", type=Path)
    t.add_argument("--modes", default="hybrid,bm25,vector")
    lat = sub.add_parser("latency", help="hybrid recall's client latency on both stores, interleaved")
    lat.add_argument("path")
    lat.add_argument("--observations", default="passages", choices=locomo.OBSERVATION_KINDS)
    lat.add_argument("--db-dir", type=Path, default=Path("results/.db"))
    lat.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    if args.cmd == "table":
        table(args.dirs, args.modes.split(","))
    else:
        asyncio.run(latency(args.path, args.observations, args.db_dir, args.rounds))


if __name__ == "__main__":
    main()
