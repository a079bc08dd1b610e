"""Chunking sweep (issue #16): chunk size / overlap against nDCG@10 and index size.

For every setting, the collection is ingested through the product path with
``chunk_size`` / ``chunk_overlap`` set on every document (the per-document
override fn::amem::documents::prepare already reads), into a database of its
own under results/.db-chunking, then the judged queries run through
``mem.documents.query`` in each mode exactly as ``amem-db eval`` does
(amem_db/harness/evaluation.py evaluate_dataset). One JSON report per
(collection, setting) in results/chunking/.

The database key covers the corpus, the embedder and the chunking but not the
schema checksum: a database built here is migrated (not rebuilt) by a later
schema, so a stored-shape migration (0015, titles in the BM25 copy) can be
measured on the same rows. Pass --fresh to rebuild.

    nice -n 10 python scripts/quality/chunking_sweep.py ../shared/datasets/cranfield --settings 400/60,800/120,1200/180
    python scripts/quality/chunking_sweep.py --table             # the markdown table from the saved reports
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

OUT = Path("results/chunking")
DB_DIR = Path("results/.db-chunking")


def _key(corpus: Path, embedder: str, size: int, overlap: int) -> str:
    h = hashlib.sha256(corpus.read_bytes())
    h.update(f"\nembedder={embedder}\nchunking={size}/{overlap}\n".encode())
    return h.hexdigest()


async def run_one(path: Path, size: int, overlap: int, modes: list[str], fresh: bool, limit: int | None) -> dict[str, Any]:
    import amem_db.harness.database as database
    from amem_db.embedding import CachedEmbedder, get_embedder
    from amem_db.harness.datasets import load_dataset
    from amem_db.harness.evaluation import evaluate_dataset

    ds = load_dataset(path, limit_queries=limit)
    plain_items = database.corpus_items

    def items(d: Any, title_mode: str) -> list[Any]:
        out = plain_items(d, title_mode)
        for it in out:
            it.doc["chunk_size"], it.doc["chunk_overlap"] = size, overlap
        return out

    import amem_db.harness.evaluation as evaluation

    summary = evaluation.mode_summary

    def keep_rankings(d: Any, run: Any, tags: Any, metrics: list[str]) -> dict[str, Any]:
        # the document ranking of every query, for paired comparisons (scripts/quality/chunking_sweep.py --compare)
        return summary(d, run, tags, metrics) | {"rankings": run.rankings}

    evaluation.mode_summary = keep_rankings  # type: ignore[assignment]
    database.corpus_items = items  # type: ignore[assignment]
    database.corpus_key = lambda corpus, emb, title: _key(corpus, emb, size, overlap)  # type: ignore[assignment]
    embedder = CachedEmbedder(get_embedder("minilm"))
    last = [0.0]

    def progress(kind: str, info: dict[str, Any]) -> None:
        now = time.monotonic()
        if now - last[0] > 30:
            last[0] = now
            print(f"  [{ds.name} {size}/{overlap}] {kind} {info}", file=sys.stderr, flush=True)

    report = await evaluate_dataset(ds, embedder, modes=modes, db_dir=DB_DIR, fresh=fresh, progress=progress)
    report["chunking"] = {"size": size, "overlap": overlap}
    report.pop("tags", None)
    return report


def table() -> str:
    rows = ["| collection | size / overlap | chunks | db MB | bm25 | vector | hybrid | hybrid R@50 |", "|---|---|---|---|---|---|---|---|"]
    for f in sorted(OUT.glob("*.json"), key=lambda p: (p.stem.split("-")[0], int(p.stem.split("-")[1]))):
        r = json.loads(f.read_text())
        m = r["modes"]
        def nd(mode: str, m: dict[str, Any] = m) -> str:
            return f"{m[mode]['metrics']['ndcg@10']:.3f}" if mode in m else "-"
        size = r["database"]["size_bytes"] or 0
        rows.append(f"| {r['dataset']} | {r['chunking']['size']} / {r['chunking']['overlap']} | {r['ingest']['chunks']} | "
                    f"{size / 1e6:.0f} | {nd('bm25')} | {nd('vector')} | {nd('hybrid')} | "
                    f"{m['hybrid']['metrics'].get('recall@50', float('nan')):.3f} |")
    return "\n".join(rows)


def main_table(tag: str) -> str:
    """The "Current figures" table and its per-type table from the 800/120 reports with ``tag``."""
    rows = ["| dataset (split, queries) | mode | nDCG@10 | Recall@10 | Recall@50 | MRR@10 | p50 ms | p95 ms |",
            "|---|---|---|---|---|---|---|---|"]
    types = ["| dataset | type | n | bm25 | vector | hybrid | hybrid_graph |", "|---|---|---|---|---|---|---|"]
    for name in ("scifact", "cranfield", "cisi"):
        f = OUT / f"{name}-800-120{tag}.json"
        if not f.exists():
            rows.append(f"| {name} | (not run) | | | | | | |")
            continue
        r = json.loads(f.read_text())
        for mode, m in r["modes"].items():
            x, lat = m["metrics"], m["latency_ms"]
            rows.append(f"| {name} ({r['split']}, {r['queries']}) | {mode} | {x['ndcg@10']:.3f} | {x['recall@10']:.3f} | "
                        f"{x['recall@50']:.3f} | {x['mrr@10']:.3f} | {lat['p50']:.0f} | {lat['p95']:.0f} |")
        for group in ("identifier", "mixed", "paraphrase", "no-answer", "low-overlap", "high-overlap"):
            cells = []
            n = 0
            for mode in ("bm25", "vector", "hybrid", "hybrid_graph"):
                t = r["modes"].get(mode, {}).get("by_type", {}).get(group, {})
                n = t.get("n", n)
                cells.append(f"{t['ndcg@10']:.3f} / {t['recall@10']:.3f}" if t.get("ndcg@10") is not None and n else "-")
            types.append(f"| {name} | {group} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n\n" + "\n".join(types)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="*", type=Path)
    ap.add_argument("--settings", default="400/60,800/120,1200/180")
    ap.add_argument("--modes", default="bm25,vector,hybrid")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--tag", default="")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--main-table", action="store_true", help="the EVALUATION main table from the 800/120 reports with --tag")
    a = ap.parse_args()
    if a.table:
        print(table())
        return
    if a.main_table:
        print(main_table(a.tag))
        return
    OUT.mkdir(parents=True, exist_ok=True)
    for path in a.datasets:
        for s in a.settings.split(","):
            size, overlap = map(int, s.split("/"))
            t0 = time.monotonic()
            rep: dict[str, Any] = {}
            # one mode at a time, the report rewritten after each (a long run keeps what it finished)
            for i, mode in enumerate(a.modes.split(",")):
                one = asyncio.run(run_one(path, size, overlap, [mode], a.fresh and i == 0, a.limit))
                rep = one | {"modes": rep.get("modes", {}) | one["modes"]}
                name = f"{rep['dataset']}-{size}-{overlap}{a.tag}.json"
                (OUT / name).write_text(json.dumps(rep, indent=1, default=str))
            nd = {m: round(v["metrics"]["ndcg@10"], 4) for m, v in rep["modes"].items()}
            print(f"{rep['dataset']} {size}/{overlap}: chunks {rep['ingest']['chunks']} nDCG@10 {nd} "
                  f"({time.monotonic() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
