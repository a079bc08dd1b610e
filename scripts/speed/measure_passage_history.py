"""What document history costs (issue 12, migrations/0011, surql/260_versions).

Usage: python scripts/speed/measure_passage_history.py [--docs 2000] [--replace 0.2] [--queries 40]

Two fresh ``mem://`` databases, one migrated with ``document_history`` off (the default),
one with it on. Each ingests the first ``--docs`` SciFact corpus documents (shared
datasets), then replaces a ``--replace`` share of them once (the text with one sentence
appended: every passage is rewritten, as a real edit re-chunks the document). Reported
per database: replace time per document, rows in passage_version, and the p50 / p95 of
``documents.query`` for ``--queries`` SciFact train queries per mode, current and (with
history) ``asOf`` an instant before the replacements. The embedder is ``hash:384``
(deterministic, no model CPU): the index work is real, the ranking quality is not the
point here. Timings are wall clock on whatever the machine is doing: say so beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from amem_db import Memory
from amem_db.embedding import get_embedder
from amem_db.harness.datasets import load_dataset
from amem_db.harness.paths import datasets_root
from amem_db.ingest import ingest_items, items_from_file

DATA = datasets_root() / "scifact"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


async def timed(mem: Memory, mode: str, q: str, **kw) -> float:
    t = time.perf_counter()
    await mem.documents.query(q, mode=mode, **kw)
    return (time.perf_counter() - t) * 1000


async def build(history: bool, args) -> tuple[Memory, dict, object]:
    mem = await Memory.open("mem://", ns="hist" if history else "plain", db="bench", embedder=get_embedder("hash:384"))
    await mem.migrate(document_history=history)
    items = items_from_file((DATA / "corpus.jsonl").resolve())[: args.docs]
    await ingest_items(mem.conn, mem.embedder, items)
    (before,) = await mem.conn.query("RETURN time::now()")
    n = int(len(items) * args.replace)
    for it in items[:n]:
        it.doc["text"] = it.doc["text"] + " This passage was revised."
    t = time.perf_counter()
    await ingest_items(mem.conn, mem.embedder, items[:n])
    replace_ms = (time.perf_counter() - t) * 1000 / max(n, 1)
    (counts,) = await mem.conn.query("RETURN [count(SELECT id FROM chunk), count(SELECT id FROM passage_version)]")
    return mem, {"history": history, "replaced": n, "replace_ms_per_doc": replace_ms, "chunks": counts[0],
                 "kept_versions": counts[1], "current": {}, "as_of": {}}, before


async def measure(args) -> list[dict]:
    """Both databases built first, then every query timed on each in turn (the machine's
    load drifts: interleaving keeps the comparison fair)."""
    built = [await build(h, args) for h in (False, True)]
    queries = list(load_dataset(DATA, "train", limit_queries=args.queries).queries.values())
    for mode in ("bm25", "vector", "hybrid"):
        ms: dict[tuple[int, str], list[float]] = {}
        for q in queries:
            for i, (mem, r, before) in enumerate(built):
                ms.setdefault((i, "current"), []).append(await timed(mem, mode, q))
                if r["history"]:
                    ms.setdefault((i, "as_of"), []).append(await timed(mem, mode, q, as_of=before))
        for (i, label), xs in ms.items():
            built[i][1][label][mode] = (statistics.median(xs), pct(xs, 0.95))
    for mem, _, _ in built:
        await mem.close()
    return [r for _, r, _ in built]


def show(r: dict) -> None:
    print(f"history={'on' if r['history'] else 'off'}: {r['chunks']} chunks, {r['replaced']} documents replaced "
          f"at {r['replace_ms_per_doc']:.1f} ms each, {r['kept_versions']} passages kept")
    for label in ("current", "as_of"):
        if r[label]:
            cells = ", ".join(f"{m} p50 {a:.1f} / p95 {b:.1f} ms" for m, (a, b) in r[label].items())
            print(f"  {label:8} {cells}")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--replace", type=float, default=0.2)
    ap.add_argument("--queries", type=int, default=40)
    args = ap.parse_args()
    for r in await measure(args):
        show(r)


if __name__ == "__main__":
    asyncio.run(main())
