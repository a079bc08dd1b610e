"""Champion lists for the BM25 leg: a measurement, not a product path (issue 14, the
BM25 leg at scale).

The engine's full-text search scores every row that matches any query word and sets
up its scorer with a scan of the whole index (docs/ENGINE-ISSUES.md #12, #21), so the
BM25 leg grows with the table. Champion lists (Manning, Raghavan, Schuetze, IR book
7.1.3; impact-ordered postings) cut that: for every analysed term keep the N passages
with the highest BM25 impact in one row, and answer a query by reading one row per
query term and summing the impacts per passage, in SurrealQL. The cost is the query's
terms x N, whatever the table's size; the price is that a passage outside a term's top
N gets no score from that term.

This script builds the lists in Python from the engine's own analyser
(search::analyze('knowledge_text', ...)), stores them in an embedded mem:// engine
beside a copy of the passages with the product's full-text index, and compares:

    quality DATASET...  nDCG@10 (ranx, the shared tuning split) of the engine's BM25
                        and of champion lists of each N, on that collection's bench
                        passages (title + passage, as the product's BM25 copy);
    speed               p50 ms of both over the bench queries at each size
                        (interleaved per query), and the top-10 overlap with the engine.

    python scripts/speed/measure_champion_bm25.py quality scifact cranfield cisi --top 256,1000,4000
    python scripts/speed/measure_champion_bm25.py speed --sizes 10000,100000 --top 1000 --engine-max 20000

Impacts use the engine's own BM25 variant (surrealdb core/src/idx/ft/fulltext.rs
`compute_bm25_score`): k1 1.2, b 0.75 (the index's parameters), idf
max(0, ln((N - df + 0.5) / (df + 0.5))), tf' = 1 + ln(tf), document length = its
token count. "exact" (N = every posting) is reported too: it should rank as the engine
does, which checks the formula, so the other rows measure the cut alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from amem_db.harness.paths import datasets_root  # noqa: E402

K1, B = 1.2, 0.75
POOL = 256

SCHEMA = """
DEFINE TABLE p SCHEMALESS;
DEFINE TABLE champ SCHEMALESS;
DEFINE INDEX p_text ON p FIELDS text FULLTEXT ANALYZER knowledge_text BM25(1.2,0.75);
"""

# one row per term and list size: {id: [N, term], top: [{c: p:<i>, s: impact}, ...]}
CHAMPION_QUERY = """
LET $text = fn::amem::query::terms($q).text;
LET $ids = search::analyze('knowledge_text', $text).map(|$w| type::record('champ', [$n, $w]));
LET $flat = array::flatten((SELECT VALUE top FROM $ids));
RETURN SELECT c, math::sum(s) AS score FROM $flat GROUP BY c ORDER BY score DESC LIMIT {pool};
"""

ENGINE_QUERY = """
LET $text = fn::amem::query::terms($q).text;
RETURN SELECT id, search::score(1) AS score FROM p WHERE text @1,OR@ $text ORDER BY score DESC, id ASC LIMIT {pool};
"""


async def open_engine() -> Any:
    from amem_db.connection import Target, open_connection
    from amem_db.migrator import Migrator

    conn = await open_connection(Target(url="mem://", ns="m", db="champ"))
    await Migrator(conn).migrate()  # the analyser and fn::amem::query::terms, as shipped
    await conn.query(SCHEMA)
    return conn


async def analyse(conn: Any, texts: list[str], batch: int = 200) -> list[list[str]]:
    out: list[list[str]] = []
    for i in range(0, len(texts), batch):
        (got,) = await conn.query("RETURN $t.map(|$x| search::analyze('knowledge_text', $x))", {"t": texts[i:i + batch]})
        out += got
    return out


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def impacts(tokens: list[list[str]]) -> dict[str, list[tuple[int, float]]]:
    """term -> [(passage index, BM25 impact)], highest first."""
    n = len(tokens)
    avgdl = sum(len(t) for t in tokens) / max(n, 1)
    df: Counter[str] = Counter()
    for t in tokens:
        df.update(set(t))
    post: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for i, t in enumerate(tokens):
        norm = K1 * (1 - B + B * len(t) / avgdl)
        for term, tf in Counter(t).items():
            idf = max(0.0, math.log((n - df[term] + 0.5) / (df[term] + 0.5)))
            if idf > 0:  # a term in more than half the passages adds nothing (the engine's floor)
                tfp = 1 + math.log(tf)
                post[term].append((i, idf * (K1 + 1) * tfp / (tfp + norm)))
    for lst in post.values():
        lst.sort(key=lambda x: (-x[1], x[0]))
    return post


async def store(conn: Any, texts: list[str], post: dict[str, list[tuple[int, float]]], tops: list[int]) -> dict[str, float]:
    from surrealdb import RecordID

    t0 = time.perf_counter()
    for i in range(0, len(texts), 500):
        await conn.query("INSERT INTO p $rows RETURN NONE",
                         {"rows": [{"id": j, "text": texts[j]} for j in range(i, min(i + 500, len(texts)))]})
    t1 = time.perf_counter()
    rows = [{"id": [n, term], "top": [{"c": RecordID("p", c), "s": s} for c, s in lst[:n]]}
            for n in tops for term, lst in post.items()]
    step = 200
    for i in range(0, len(rows), step):
        await conn.query("INSERT INTO champ $rows RETURN NONE", {"rows": rows[i:i + step]})
    return {"passages_s": round(t1 - t0, 1), "champions_s": round(time.perf_counter() - t1, 1),
            "champion_rows": len(rows), "postings": sum(min(len(lst), n) for n in tops for lst in post.values())}


async def champion(conn: Any, q: str, n: int) -> list[tuple[int, float]]:
    res = await conn.query(CHAMPION_QUERY.format(pool=POOL), {"q": q, "n": n})
    return [(int(r["c"].id), float(r["score"])) for r in res[-1]]


async def engine(conn: Any, q: str) -> list[tuple[int, float]]:
    res = await conn.query(ENGINE_QUERY.format(pool=POOL), {"q": q})
    return [(int(r["id"].id), float(r["score"])) for r in res[-1]]


def passages_of(data: Path, name: str) -> tuple[list[dict[str, Any]], list[str]]:
    meta = json.loads((data / "passages.json").read_text())
    ps = [p for p in meta["passages"] if p["doc"].startswith(f"{name}-")]
    return ps, [(f"{p['title']}\n\n" if p.get("title") else "") + p["text"] for p in ps]


def doc_ranking(hits: list[tuple[int, float]], ps: list[dict[str, Any]], name: str) -> list[str]:
    seen: dict[str, None] = {}
    for i, _ in hits:
        seen.setdefault(ps[i]["doc"][len(name) + 1:], None)
    return list(seen)


async def quality(a: argparse.Namespace) -> list[dict[str, Any]]:
    from amem_db.harness.datasets import load_dataset
    from amem_db.harness.metrics import evaluate

    tops = [int(x) for x in a.top.split(",")]
    out = []
    for name in a.datasets:
        ds = load_dataset(Path(a.data_root) / name)
        ps, texts = passages_of(Path(a.data), name)
        conn = await open_engine()
        say(f"{name}: analysing {len(texts)} passages")
        post = impacts(await analyse(conn, texts))
        exact = max(len(v) for v in post.values())
        say(f"{name}: {len(post)} terms; storing passages and lists of {[*tops, exact]}")
        built = await store(conn, texts, post, [*tops, exact])
        say(f"{name}: stored {built}; {len(ds.queries)} queries")
        runs: dict[str, dict[str, list[str]]] = defaultdict(dict)
        for qid, q in ds.queries.items():
            runs["engine"][qid] = doc_ranking(await engine(conn, q), ps, name)
            for n in [*tops, exact]:
                label = "exact" if n == exact else f"top {n}"
                runs[label][qid] = doc_ranking(await champion(conn, q, n), ps, name)
        row = {"dataset": f"{name} {ds.split} ({len(ds.queries)} q, {len(ps)} passages)", **built}
        for label, r in runs.items():
            row[label] = round(evaluate(ds.qrels, r, ["ndcg@10"])["ndcg@10"], 4)
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


async def speed(a: argparse.Namespace) -> list[dict[str, Any]]:
    from amem_db.harness.bench.data import corpus_of

    tops = [int(x) for x in a.top.split(",")]
    out = []
    for size in [int(s) for s in a.sizes.split(",")]:
        rows, _, queries, _, _ = corpus_of(Path(a.data), size)
        texts = [(f"{r['title']}\n\n" if r.get("title") else "") + r["text"] for r in rows]
        conn = await open_engine()
        t0 = time.perf_counter()
        say(f"{size}: analysing {len(texts)} passages")
        post = impacts(await analyse(conn, texts))
        analyse_s = time.perf_counter() - t0
        with_engine = size <= a.engine_max
        say(f"{size}: {len(post)} terms; storing {'passages and ' if with_engine else ''}lists of {tops}")
        built = await store(conn, texts if with_engine else [], post, tops)
        say(f"{size}: stored {built}; timing {len(queries)} queries x {a.reps}")
        ms: dict[str, list[float]] = defaultdict(list)
        overlap: dict[int, list[float]] = defaultdict(list)
        for rep in range(a.reps + 1):
            for q in queries:
                base = None
                if with_engine:
                    t = time.perf_counter()
                    base = await engine(conn, q)
                    if rep:
                        ms["engine"].append((time.perf_counter() - t) * 1000)
                for n in tops:
                    t = time.perf_counter()
                    got = await champion(conn, q, n)
                    if rep:
                        ms[f"top {n}"].append((time.perf_counter() - t) * 1000)
                        if base:
                            want = {i for i, _ in base[:10]}
                            overlap[n].append(len(want & {i for i, _ in got[:10]}) / len(want))
        row = {"passages": size, "analyse+impacts_s": round(analyse_s, 1), **built,
               **{f"{k} p50 ms": round(statistics.median(v), 1) for k, v in ms.items()},
               **{f"top {n} overlap@10": round(statistics.mean(v), 3) for n, v in overlap.items() if v}}
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("quality")
    q.add_argument("datasets", nargs="+")
    q.add_argument("--top", default="256,1000,4000")
    q.add_argument("--data-root", default=str(datasets_root()))
    s = sub.add_parser("speed")
    s.add_argument("--sizes", default="10000,100000")
    s.add_argument("--top", default="1000")
    s.add_argument("--engine-max", type=int, default=20000, help="time the engine's BM25 up to this size")
    s.add_argument("--reps", type=int, default=1)
    ap.add_argument("--data", default="results/bench/data", help="the bench's cached passages (amem-db bench writes them)")
    ap.add_argument("--out")
    a = ap.parse_args()
    rows = asyncio.run(quality(a) if a.cmd == "quality" else speed(a))
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
