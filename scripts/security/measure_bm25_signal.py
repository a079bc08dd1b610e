"""What one tenant learns about another through the shared full-text statistics
(issue 15 finding 10; docs/SECURITY.md "Shared index statistics (finding 10)").

    python scripts/security/measure_bm25_signal.py                       # steps 0,10,100,1000; ~10 min on 2 cores
    python scripts/security/measure_bm25_signal.py --steps 0,10 --base 200 --repeats 5   # a quick look
    python scripts/security/measure_bm25_signal.py --url ws://127.0.0.1:8000 --user root --pass secret   # a real server

Two credentials on one migrated database (the dev server over ws://, or the server
given): tenant A (write org/a) and tenant B (write org/b). A stores a probe
passage holding the word W once, with two words only A uses (one in one passage,
one in two). B stores `--base` passages without W, then, step by step, passages
containing W until it has 0, 10, 100, 1000 of them. After each step A, through its
own credential, runs `fn::amem::documents::query(W, mode bm25)` `--repeats` times
and reads, from its own response and trace only:

* the raw BM25 score of its own probe hit (trace hits[].bm25.score);
* the BM25 leg time of its trace (timings.bm25Ms) and its own round trip, for W
  and for a control word that only A uses (table-size effects, not W's count);
* B's count of passages containing W, estimated from three of its own scores
  (`estimate_count`: the engine's IDF is ln((N - n + 0.5) / (n + 0.5)) over every
  row of the index, and the three words share one passage, so tf and length cancel).

Prints a Markdown table; `--json PATH` writes the raw figures. Timings on a shared
machine are noisy: report the load beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

WORD = "kestrel"            # the word whose count in B's rows A wants to learn
SOLO = "zorblatt"           # only in A's probe passage (n = 1)
PAIR = "quenzify"           # in A's probe passage and one more A passage (n = 2)
CONTROL = "marmoset"        # only A's passages: the control timing
FILLER = ("return policy refund window unopened items shipping rates invoice warranty claim battery "
          "replacement courier tracking customs duty exchange voucher loyalty points").split()


# --- the inversion (pure; tests/test_bm25_signal.py uses it) ---------------------------
def idf(total: float, n: float) -> float:
    """The engine's BM25 IDF (core 3.2.4; docs/ENGINE-ISSUES.md #3): scores clamp at 0."""
    return math.log((total - n + 0.5) / (n + 0.5))


def estimate_total(solo: float, pair: float) -> float:
    """N (rows in the index, every tenant's) from the scores of one passage for a word in
    1 row and a word in 2 rows: pair / solo = idf(N, 2) / idf(N, 1), increasing in N."""
    ratio = pair / solo
    lo, hi = 4.0, 1e12
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if idf(mid, 2) / idf(mid, 1) < ratio:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def estimate_count(word: float, solo: float, pair: float) -> tuple[float, float | None]:
    """(N, n): the rows in the index and the rows containing the word, from the same
    passage's scores for the word, the solo word and the pair word (tf = 1 each).
    n is None when the word's score is 0 (in half the rows or more: no signal left)."""
    total = estimate_total(solo, pair)
    if word <= 0:
        return total, None
    x = word / solo * idf(total, 1)
    return total, (total + 1) / (1 + math.exp(x)) - 0.5


# --- the world ----------------------------------------------------------------------
def filler(i: int, words: int = 40) -> str:
    return " ".join(FILLER[(i * 7 + j * 3) % len(FILLER)] for j in range(words))


def doc(source: str, text: str, scope: str) -> Any:
    from amem_db.ingest import Item

    return Item(source, {"text": text, "mime_type": "text/plain", "source": source, "scopes": [scope]})


async def store(conn: Any, items: list[Any]) -> None:
    from amem_db.embedding import get_embedder
    from amem_db.ingest import ingest_items

    report = await ingest_items(conn, get_embedder("hash:384"), items, batch_size=50)
    failed = [r for r in report.results if r.status != "added"]
    if failed:
        raise SystemExit(f"ingest failed: {failed[0].name}: {failed[0].error}")


async def a_corpus(a: Any) -> None:
    probe = f"{filler(0, 12)} {WORD} {SOLO} {PAIR} {CONTROL} {filler(1, 12)}"
    items = [doc("a-probe", probe, "org/a"), doc("a-pair", f"{filler(2, 20)} {PAIR} {CONTROL}", "org/a")]
    items += [doc(f"a-{i}", f"{filler(i + 3)} {CONTROL}", "org/a") for i in range(18)]
    await store(a, items)


async def probe_scores(a: Any, word: str) -> tuple[float, float, float]:
    """(raw BM25 score of A's probe hit, trace bm25Ms, round trip ms) of one query by A."""
    from amem_db.db import call

    t0 = time.perf_counter()
    out = await call(a, "fn::amem::documents::query", word, None, {"mode": "bm25", "k": 50, "expandContext": False})
    rtt = (time.perf_counter() - t0) * 1000
    trace = out["trace"]
    chunk = next((str(r["chunk"]["id"]) for r in out["results"] if r["document"]["source"] == "a-probe"), None)
    score = next((h["bm25"]["score"] for h in trace["hits"] if str(h["id"]) == chunk), None)
    if score is None:
        raise LookupError(f"A's probe passage is not among its hits for {word!r}: {[r['document']['source'] for r in out['results']]}")
    return float(score), float(trace["timings"]["bm25Ms"]), rtt


async def measure_step(a: Any, repeats: int) -> dict[str, Any]:
    runs = {w: [await probe_scores(a, w) for _ in range(repeats)] for w in (WORD, CONTROL)}
    solo, _, _ = await probe_scores(a, SOLO)
    pair, _, _ = await probe_scores(a, PAIR)
    word = runs[WORD][0][0]
    assert all(r[0] == word for r in runs[WORD]), "the score moved between identical queries"
    total, n = estimate_count(word, solo, pair)
    return {"score": word, "solo": solo, "pair": pair, "estimated_total": total, "estimated_rows_with_word": n,
            "bm25_ms": [r[1] for r in runs[WORD]], "rtt_ms": [r[2] for r in runs[WORD]],
            "control_bm25_ms": [r[1] for r in runs[CONTROL]], "control_rtt_ms": [r[2] for r in runs[CONTROL]]}


def quartiles(xs: Sequence[float]) -> str:
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return f"{q[1]:.1f} ({q[0]:.1f}-{q[2]:.1f})"


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    from amem_db import access
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.devserver import DevServer
    from amem_db.migrator import Migrator

    server = None
    if args.url is None:
        server = DevServer("mem://", user="root", password="root")
        await server.start()
    url = args.url or server.ws_url  # type: ignore[union-attr]
    ns = f"bm25signal_{os.getpid()}"
    root = await open_connection(Target(url=url, ns=ns, db="m", user=args.user, password=args.password))
    rows: list[dict[str, Any]] = []
    try:
        await Migrator(root).migrate()
        keys = {t: (await access.grant(root, f"tenant-{t}", read=[], write=[f"org/{t}"]))[1] for t in "ab"}
        a, b = [await open_connection(Target(url=url, ns=ns, db="m", key=keys[t])) for t in "ab"]
        await a_corpus(a)
        await store(b, [doc(f"b-base-{i}", filler(i + 100), "org/b") for i in range(args.base)])
        have = 0
        for step in args.steps:
            await store(b, [doc(f"b-{i}", f"{filler(i + 5000, 30)} {WORD}", "org/b") for i in range(have, step)])
            have = step
            row = {"b_rows_with_word": step, **await measure_step(a, args.repeats)}
            n = row["estimated_rows_with_word"]
            row["estimated_b_rows"] = None if n is None else n - 1  # A's own: the probe passage
            rows.append(row)
            print(f"B has {step:>5}: score {row['score']:.4f}, B's count estimated {row['estimated_b_rows']}", file=sys.stderr, flush=True)
        for c in (a, b):
            await close_quietly(c)
    finally:
        if server is None:
            await root.query(f"REMOVE NAMESPACE IF EXISTS {ns}")
        await close_quietly(root)
        if server is not None:
            await server.stop()
    return rows


def table(rows: list[dict[str, Any]], base: int) -> str:
    lines = [f"B's other rows: {base}; A's rows: 20; median (IQR) of the repeats, ms",
             "", "| B's rows with the word | A's own score | B's count from A's scores | bm25Ms (word) | bm25Ms (control) | round trip (word) | round trip (control) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        est = "score 0: none" if r["estimated_b_rows"] is None else f"{r['estimated_b_rows']:.2f}"
        lines.append(f"| {r['b_rows_with_word']} | {r['score']:.4f} | {est} | {quartiles(r['bm25_ms'])} | "
                     f"{quartiles(r['control_bm25_ms'])} | {quartiles(r['rtt_ms'])} | {quartiles(r['control_rtt_ms'])} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", default="0,10,100,1000", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--base", type=int, default=1500, help="B's passages without the word (the score is 0 once half the rows hold it)")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--url", help="a SurrealDB server (ws://...); default: the dev server on mem://, in-process")
    ap.add_argument("--user", default="root")
    ap.add_argument("--pass", dest="password", default="root")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = asyncio.run(run(args))
    print(table(rows, args.base), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    sys.stdout.flush()
    os._exit(0)  # the native engine may abort at interpreter exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    main()
