"""Building the BM25 champion lists (issue 24; surql/315_bm25_lists, migrations/0018).

The BM25 leg reads one list per query token: the passages with the highest BM25 impact
for it, at most ``BM25_LIST_SIZE``, so its cost does not grow with the table
(docs/QUERY-DESIGN.md "BM25 at scale"). A build, run by ``amem-db maintain``:

1. ``begin``: from now on the sync events also copy every write into the recent tables;
2. counts the term statistics afresh (amem_db/termstats.py: N, df, total length);
3. pages the copy tables in key order through ``rows_<table>`` (each row's analysed tokens,
   from the engine's analyser), counts tf here, has ``fn::amem::bm25::impacts`` compute the
   engine's BM25 impact of each (token, passage), and keeps each list's best entries, bounded;
4. ``store`` writes the lists (SurrealQL cuts each to its best ``BM25_LIST_SIZE``),
   ``publish`` switches every reader to the build and clears the recent rows it covers,
   and the previous build's lists are dropped.

A table that is empty when a build counts gets no lists: its leg keeps the engine's
statement and its writes no recent copy (one new full-text row a write, not two: each
commits a transaction of its own, docs/ENGINE-ISSUES.md #41) until it holds ``MIN_ROWS``
rows, when ``maintain --auto`` builds again (``due``).

A build that dies before ``publish`` leaves the published lists in use and its own rows
unpublished; the next build drops them first.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter, defaultdict
from typing import Any

from . import termstats
from .constants import BM25_LIST_SIZE
from .db import call

TABLES = termstats.TABLES
#: rows per rows_<table> call, and per impacts call (outputs stay under the engine's 1 MiB
#: function output cap, docs/ENGINE-ISSUES.md #14)
SCAN_BATCH = 200
IMPACT_BATCH = 100
#: list entries per store call
STORE_ENTRIES = 20_000
#: a build is due (maintain --auto) when none exists and the copies hold this many rows...
MIN_ROWS = 2_000
#: ...or when the rows written since the build reach this share of the table
RECENT_SHARE = 0.2


async def status(conn: Any) -> dict[str, Any]:
    """{published, building, <table>: {rows, recent}} (surql/315 fn::amem::bm25::status)."""
    return dict(await call(conn, "fn::amem::bm25::status"))


def due(st: dict[str, Any], *, min_rows: int = MIN_ROWS, share: float = RECENT_SHARE) -> bool:
    """Whether ``maintain --auto`` should build: no lists yet over enough rows, a table the
    lists leave out (it was empty) grown to ``min_rows``, or too many recent rows."""
    rows = sum(int(st[t]["rows"]) for t in TABLES)
    if st["published"] is None:
        return rows >= min_rows
    listed = st["published"].get("tables") or {}
    if any(t not in listed and int(st[t]["rows"]) >= min_rows for t in TABLES):
        return True
    recent = sum(int(st[t]["recent"]) for t in TABLES)
    return recent >= max(min_rows // 10, share * max(rows, 1))


async def _lists_of(conn: Any, table: str, stats: dict[str, Any], df: Counter[str],
                    size: int) -> dict[tuple[str, str], list[tuple[float, str]]]:
    """Every (scope key, token hash) list of one table, each its best ``size`` (impact, key) pairs."""
    heaps: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
    after = None
    while True:
        got = await call(conn, f"fn::amem::bm25::rows_{table}", after, SCAN_BATCH)
        rows = got["rows"]
        for at in range(0, len(rows), IMPACT_BATCH):
            part = rows[at:at + IMPACT_BATCH]
            keyed = [(r, termstats.token_key(tok)) for r in part for tok in Counter(r["tokens"])]
            postings = [{"tf": tf, "df": df[tok], "dl": len(r["tokens"])} for r in part for tok, tf in Counter(r["tokens"]).items()]
            for (row, h), s in zip(keyed, await call(conn, "fn::amem::bm25::impacts", postings, stats)):
                if s <= 0:
                    continue
                entry = (float(s), row["key"])
                for lst in row["lists"]:
                    heap = heaps[(lst, h)]
                    if len(heap) < size:
                        heapq.heappush(heap, entry)
                    elif entry > heap[0]:
                        heapq.heapreplace(heap, entry)
        if got["paged"] < SCAN_BATCH:
            return heaps
        after = got["last"]


async def _store(conn: Any, gen: int, table: str, heaps: dict[tuple[str, str], list[tuple[float, str]]]) -> int:
    batch: list[dict[str, Any]] = []
    entries = 0
    for (lst, h), heap in heaps.items():
        batch.append({"list": lst, "h": h, "top": [{"c": c, "s": s} for s, c in heap]})
        entries += len(heap)
        if entries >= STORE_ENTRIES or len(batch) >= 500:
            await call(conn, "fn::amem::bm25::store", gen, table, batch)
            batch, entries = [], 0
    if batch:
        await call(conn, "fn::amem::bm25::store", gen, table, batch)
    return len(heaps)


async def build(conn: Any, *, size: int = BM25_LIST_SIZE) -> dict[str, Any]:
    """Build and publish the lists of every copy table; returns {gen, lists, rows, term_stats (the count it made), seconds}."""
    started = time.perf_counter()
    before = await status(conn)
    # begin before counting: every row the count misses is then in the recent copy
    begun = await call(conn, "fn::amem::bm25::begin")
    counted, dfs = await termstats.count_with_df(conn)
    gen = int(begun["gen"])
    await call(conn, "fn::amem::bm25::drop_build", gen)  # what a build that died left under this number
    tables: dict[str, dict[str, Any]] = {}
    lists = 0
    for table in TABLES:
        n = int(counted["rows"][table])
        if n == 0:
            continue  # no lists: the engine's statement reads it, and its writes keep no recent copy
        # the table's k1 and b (surql/315 bm25::params) are published with the build: its
        # lists and the rows written after it score with the parameters the lists were made with
        stats = {"n": n, "avgdl": counted["lengths"][table] / max(n, 1), "statsGen": int(counted["gen"]),
                 **await call(conn, "fn::amem::bm25::params", table)}
        lists += await _store(conn, gen, table, await _lists_of(conn, table, stats, dfs[table], size))
        tables[table] = stats
    await call(conn, "fn::amem::bm25::publish", gen, begun["started"], tables)
    old = (before["published"] or {}).get("gen")
    if old is not None:
        await call(conn, "fn::amem::bm25::drop_build", int(old))
    return {"gen": gen, "lists": lists, "rows": counted["rows"], "term_stats": counted, "seconds": round(time.perf_counter() - started, 3)}


async def refresh(conn: Any, *, auto: bool = True) -> dict[str, Any] | None:
    """``build`` when due (``auto``), or on a full pass whenever lists exist or the copies hold
    ``MIN_ROWS``; None when skipped. Below that the engine's statement is as fast, and it keeps
    returning the rows whose only query words are in most passages (score 0), which the lists
    leave out."""
    st = await status(conn)
    rows = sum(st[t]["rows"] for t in TABLES)
    if not (due(st) if auto else st["published"] is not None or rows >= MIN_ROWS):
        return None
    return await build(conn)
