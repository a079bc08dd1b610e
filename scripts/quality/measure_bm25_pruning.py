"""BM25 leg pruning by document frequency (issue 14 item 3, surql/310_termstats): quality and speed.

``quality DATASET...``  Through the product's cached eval database (amem_db/harness/database.py,
    the key ``amem-db eval`` uses), every judged query of the shared split goes through
    ``fn::amem::documents::query`` in modes bm25 and hybrid (k 50, as ``amem-db eval``) once per
    ``bm25MaxDf`` setting, the settings interleaved per query; nDCG@10 with the harness's ranx
    metrics, and the BM25 leg's own time (trace ``bm25Ms``) per setting. Writes
    ``results/prune/<dataset>.json`` and prints a markdown table.
``speed --sizes 10000,100000``  A ``mem://`` database of N passages of real text (the bench
    corpus, amem_db/harness/bench/data.py; past the real passages the texts repeat with fresh
    ids) written as chunk rows without vectors (the events fill the full-text copy and the term
    statistics as in the product), then the bm25 query of each bench query text with pruning off
    and at each fraction, interleaved in one process; p50 of ``bm25Ms`` and top-10 overlap with
    the unpruned ranking.
``ingest``  What the term-statistics event costs a write: the same documents ingested with the
    event defined and removed, interleaved (product ingest path, hash embedder).

Usage (AMEM_CACHE_DIR unset keeps the embeddings cache warm; run it niced):
  nice -n 10 python scripts/quality/measure_bm25_pruning.py quality ../shared/datasets/cranfield \\
      ../shared/datasets/cisi ../shared/datasets/scifact
  nice -n 10 python scripts/quality/measure_bm25_pruning.py speed --sizes 10000
  nice -n 10 python scripts/quality/measure_bm25_pruning.py ingest --docs 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
SETTINGS: list[float] = [1.0, 0.5, 0.3, 0.2, 0.1]
OUT = ROOT / "results" / "prune"


def bench_texts(data_dir: Path, n: int) -> tuple[list[str], list[str]]:
    """The first n bench passages (repeated past the real ones, as the bench does) and its queries."""
    from amem_db.harness.bench.data import build_data, data_paths

    if not data_paths(data_dir)["meta"].exists():
        from amem_db.embedding import get_embedder

        build_data(data_dir, get_embedder(None), progress=print)
    meta = json.loads(data_paths(data_dir)["meta"].read_text())
    base = [p["text"] for p in meta["passages"]]
    return [base[i % len(base)] for i in range(n)], meta["queries"]


def p50(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


async def quality(paths: list[str], settings: list[float], limit: int | None) -> None:
    from amem_db import termstats
    from amem_db.connection import close_quietly
    from amem_db.db import call
    from amem_db.embedding import get_embedder
    from amem_db.harness.database import prepare_database
    from amem_db.harness.datasets import load_dataset
    from amem_db.harness.metrics import document_ranking, evaluate

    OUT.mkdir(parents=True, exist_ok=True)
    for path in paths:
        ds = load_dataset(path, limit_queries=limit)
        started = time.perf_counter()
        prepared = await prepare_database(ds, get_embedder(None))
        mem = prepared.mem
        counted = await termstats.count(mem.conn)  # what `amem-db maintain` does after an ingest
        print(f"{ds.name}: database ready in {time.perf_counter() - started:.0f} s (cached: {prepared.cached}); "
              f"term statistics {counted}", flush=True)
        rankings: dict[str, dict[str, list[str]]] = {}
        bm25_ms: dict[str, list[float]] = {}
        dropped: dict[str, int] = {}
        try:
            for i, (qid, text) in enumerate(ds.queries.items()):
                emb = await mem.embed_query(text)
                for mode in ("bm25", "hybrid"):
                    for s in settings:
                        name = f"{mode}@{s}"
                        opts = {"mode": mode, "k": 50, "bm25MaxDf": s, "feedback": False}
                        if mode != "bm25":
                            opts["embeddingModel"] = mem.embedder.name
                        raw = await call(mem.conn, "fn::amem::documents::query", text, emb if mode != "bm25" else None, opts)
                        hits = json.loads(json.dumps(raw["results"], default=str))
                        rankings.setdefault(name, {})[qid] = document_ranking(hits)
                        trace = raw.get("trace") or {}
                        bm25_ms.setdefault(name, []).append(float((trace.get("timings") or {}).get("bm25Ms") or 0.0))
                        pruned = ((trace.get("legs") or {}).get("bm25") or {}).get("pruned") or {}
                        dropped[name] = dropped.get(name, 0) + (1 if pruned.get("dropped") else 0)
                if (i + 1) % 50 == 0:
                    print(f"  {ds.name}: {i + 1}/{len(ds.queries)} queries", flush=True)
        finally:
            await close_quietly(mem.conn)
        rows = {name: {"ndcg@10": evaluate(ds.qrels, r, ["ndcg@10"])["ndcg@10"], "bm25Ms_p50": p50(bm25_ms[name]),
                       "queries_pruned": dropped[name]} for name, r in rankings.items()}
        report = {"dataset": ds.name, "split": ds.split, "queries": len(ds.queries), "settings": settings, "rows": rows}
        (OUT / f"{ds.name}.json").write_text(json.dumps(report, indent=2))
        print(f"\n### {ds.name} ({ds.split}, {len(ds.queries)} queries)\n")
        print("| mode | bm25MaxDf | nDCG@10 | delta vs off | queries with a word dropped | bm25Ms p50 |")
        print("|---|---|---|---|---|---|")
        for mode in ("bm25", "hybrid"):
            base = rows[f"{mode}@1.0"]["ndcg@10"] if 1.0 in settings else float("nan")
            for s in settings:
                r = rows[f"{mode}@{s}"]
                print(f"| {mode} | {'off' if s >= 1 else s} | {r['ndcg@10']:.4f} | {r['ndcg@10'] - base:+.4f} | "
                      f"{r['queries_pruned']} | {r['bm25Ms_p50']:.1f} |")
        print(flush=True)


async def build_passages(conn: Any, texts: list[str], batch: int = 10) -> None:
    """N chunk rows of one document (no vectors): the sync events fill chunk_fts and term_stat."""
    await conn.query("CREATE document:bench SET text = 'bench', mime_type = 'text/plain', content_hash = 'h', title = 'bench'")
    for start in range(0, len(texts), batch):
        rows = [{"id": f"b{start + j}", "document": "document:bench", "text": t, "char_start": 0, "char_end": len(t),
                 "position": start + j, "mime_type": "text/plain"} for j, t in enumerate(texts[start:start + batch])]
        await conn.query("INSERT INTO chunk $rows.map(|$r| object::extend($r, { id: type::record('chunk', $r.id), "
                         "document: type::record($r.document) })) RETURN NONE", {"rows": rows})


async def speed(sizes: list[int], settings: list[float], reps: int, data_dir: Path) -> None:
    from amem_db import termstats
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.migrator import Migrator

    OUT.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for n in sizes:
        passages, queries = bench_texts(data_dir, n)
        target = Target(url="mem://", ns="prune", db=f"speed{n}")
        conn = await open_connection(target)
        try:
            await Migrator(conn).migrate()
            t0 = time.perf_counter()
            await build_passages(conn, passages)
            print(f"{n}: {n} passages written in {time.perf_counter() - t0:.0f} s", flush=True)
            counted = await termstats.count(conn)  # what `amem-db maintain` does
            print(f"{n}: term statistics counted: {counted}", flush=True)
            results.setdefault("count_seconds", {})[str(n)] = counted["seconds"]
            ms: dict[float, list[float]] = {s: [] for s in settings}
            overlap: dict[float, list[float]] = {s: [] for s in settings}
            for _ in range(reps):
                for q in queries:
                    top: dict[float, list[str]] = {}
                    for s in settings:
                        (raw,) = await conn.query("RETURN fn::amem::documents::query($q, NONE, $o)",
                                               {"q": q, "o": {"mode": "bm25", "k": 10, "bm25MaxDf": s, "feedback": False,
                                                              "expandContext": False}})
                        ms[s].append(float(raw["trace"]["timings"]["bm25Ms"]))
                        top[s] = [str(h["chunk"]["id"]) for h in raw["results"]]
                    for s in settings:
                        base = set(top[1.0]) if 1.0 in top else set()
                        overlap[s].append(len(base & set(top[s])) / max(1, len(base)))
            results[str(n)] = {str(s): {"bm25Ms_p50": p50(ms[s]), "top10_overlap": statistics.fmean(overlap[s])}
                               for s in settings}
            print("\n| passages | bm25MaxDf | bm25Ms p50 | speed-up | top-10 overlap with off |\n|---|---|---|---|---|")
            for s in settings:
                r = results[str(n)][str(s)]
                print(f"| {n} | {'off' if s >= 1 else s} | {r['bm25Ms_p50']:.1f} | "
                      f"{results[str(n)]['1.0']['bm25Ms_p50'] / r['bm25Ms_p50']:.1f}x | {r['top10_overlap']:.3f} |", flush=True)
        finally:
            await close_quietly(conn)
        (OUT / "speed.json").write_text(json.dumps(results, indent=2))


# The design rejected for keeping term_stat (measured by `ingest`): an event on the copy,
# in the writing transaction, one INSERT ... ON DUPLICATE KEY UPDATE per written row.
EVENT_VARIANT = """
DEFINE EVENT OVERWRITE chunk_fts_term_stats_probe ON chunk_fts
    WHEN $event = 'CREATE' OR $event = 'DELETE' OR $before.text != $after.text THEN {
    LET $key = |$t| array::distinct(search::analyze('knowledge_text', $t ?? '')).map(|$k| ['chunk_fts', string::slice(crypto::sha256($k), 0, 16)]);
    LET $old = IF $event = 'CREATE' { [] } ELSE { $key($before.text) };
    LET $new = IF $event = 'DELETE' { [] } ELSE { $key($after.text) };
    LET $came = array::complement($new, $old);
    LET $gone = array::complement($old, $new);
    IF array::len($came) > 0 { INSERT INTO term_stat $came.map(|$k| { id: $k, df: 1 }) ON DUPLICATE KEY UPDATE df += 1 RETURN NONE; };
    IF array::len($gone) > 0 { UPDATE $gone.map(|$k| type::record('term_stat', $k)) SET df -= 1 RETURN NONE; };
};
"""


async def ingest_cost(docs: int, rounds: int, data_dir: Path) -> None:
    from amem_db import termstats
    from amem_db.client import Memory
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.embedding import get_embedder
    from amem_db.migrator import Migrator

    passages, _ = bench_texts(data_dir, docs * 4)
    texts = ["\n\n".join(passages[i * 4:(i + 1) * 4]) for i in range(docs)]
    labels = ["product ingest", "+ term_stat event in the transaction"]
    secs: dict[str, list[float]] = {k: [] for k in labels}
    counts: list[float] = []
    chunks = 0
    for r in range(rounds):
        for label in (labels if r % 2 == 0 else labels[::-1]):
            conn = await open_connection(Target(url="mem://", ns="prune", db=f"ingest{r}{len(label)}"))
            try:
                await Migrator(conn).migrate()
                if label != labels[0]:
                    await conn.query(EVENT_VARIANT)
                mem = Memory(conn, embedder=get_embedder("hash:384"))
                t0 = time.perf_counter()
                for i, t in enumerate(texts):
                    await mem.documents.ingest_text(t, source=f"d{r}-{i}")
                secs[label].append(time.perf_counter() - t0)
                if label == labels[0]:
                    c = await termstats.count(conn)
                    counts.append(c["seconds"])
                    chunks = c["rows"]["chunk_fts"]
            finally:
                await close_quietly(conn)
    print(f"\n{docs} documents ({chunks} passages of bench text), {rounds} rounds interleaved, hash embedder:")
    for label, xs in secs.items():
        print(f"  {label}: median {p50(xs):.2f} s ({chunks / p50(xs):.1f} passages/s) runs {[round(x, 2) for x in xs]}")
    print(f"  the maintain count instead (amem_db/termstats.py count): median {p50(counts):.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("quality")
    q.add_argument("datasets", nargs="+")
    q.add_argument("--settings", default=",".join(map(str, SETTINGS)))
    q.add_argument("--limit-queries", type=int, default=None)
    s = sub.add_parser("speed")
    s.add_argument("--sizes", default="10000")
    s.add_argument("--settings", default=",".join(map(str, SETTINGS)))
    s.add_argument("--reps", type=int, default=1)
    for p in (s, i := sub.add_parser("ingest")):
        p.add_argument("--data", type=Path, default=OUT / "data", help="bench data folder (built there if missing)")
    i.add_argument("--docs", type=int, default=200)
    i.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()
    if a.cmd == "quality":
        coro = quality(a.datasets, [float(x) for x in a.settings.split(",")], a.limit_queries)
    elif a.cmd == "speed":
        coro = speed([int(x) for x in a.sizes.split(",")], [float(x) for x in a.settings.split(",")], a.reps, a.data)
    else:
        coro = ingest_cost(a.docs, a.rounds, a.data)
    asyncio.run(coro)
    sys.stdout.flush()
    os._exit(0)  # the native extension may abort at interpreter exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    main()
