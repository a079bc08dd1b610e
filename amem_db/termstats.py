"""Term statistics for the BM25 legs' pruning (issue 14 item 3; surql/310_termstats).

The BM25 legs drop query words held by more than ``bm25MaxDf`` of the passages
before the full-text query: the embedded engine decodes every row matching any
query word (docs/ENGINE-ISSUES.md #12, #21), and a very common word costs most of
the table for a near-zero BM25 weight. The document frequencies live in
``term_stat`` (migrations/0016), keyed by a hash of the analysed token.

They are counted here, by ``amem-db maintain`` (and an ingest of files, when due),
not by the writing transaction: an event keeping them cost ~8-40 ms per passage
written (docs/BENCHMARKS.md "BM25 pruning"). ``count`` reads the analysed tokens
of every passage copy in batches, counts them in Python, writes them in small
batches under a new count number and then publishes that number, which switches
every reader at once; ``drifted`` says whether the row counts moved from the
published count by more than a share.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from typing import Any

from .constants import BM25_LIST_TABLES
from .db import call

#: every copy with champion lists (amem_db/bm25lists.py); the pruning reads the passage copies only
TABLES = BM25_LIST_TABLES
#: rows per store call: a large INSERT costs superlinearly on the embedded engine
STORE_BATCH = 100
#: recount when a table's rows moved by more than this share since the last count
DRIFT = 0.1


def token_key(token: str) -> str:
    """The key part of a token: its SHA-256, 16 hex digits (crypto::sha256 in SurrealQL)."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


async def status(conn: Any) -> dict[str, Any]:
    """``gen``: the published count (0: none); ``tables``: per table ``rows`` now and
    ``counted`` at the published count (None: never)."""
    return dict(await call(conn, "fn::amem::termstats::status"))


def drifted(tables: dict[str, dict[str, Any]], drift: float = DRIFT) -> bool:
    """Whether some table was never counted (and has rows) or moved by more than ``drift``."""
    for t in tables.values():
        rows, counted = t["rows"], t["counted"]
        if counted is None:
            if rows > 0:
                return True
        elif abs(rows - counted) > drift * max(counted, 1):
            return True
    return False


async def count(conn: Any, *, batch: int = 256) -> dict[str, Any]:
    """Count every token's document frequency anew, store and publish it; returns
    {gen, rows: per table, lengths: analysed tokens per table, terms: rows stored, seconds}."""
    return (await count_with_df(conn, batch=batch))[0]


async def count_with_df(conn: Any, *, batch: int = 256) -> tuple[dict[str, Any], dict[str, Counter[str]]]:
    """``count``, and the document frequencies it published per table, by token (the BM25
    list build scores with them: amem_db/bm25lists.py)."""
    started = time.perf_counter()
    gen = int((await status(conn))["gen"]) + 1
    out: list[dict[str, Any]] = []
    rows: dict[str, int] = {}
    lengths: dict[str, int] = {}
    dfs: dict[str, Counter[str]] = {}
    for table in TABLES:
        df: Counter[str] = dfs.setdefault(table, Counter())
        n, after, length = 0, None, 0
        while True:
            got = await call(conn, f"fn::amem::termstats::tokens_{table}", after, batch)
            for tokens in got["tokens"]:
                df.update(tokens)
            n += len(got["tokens"])
            length += int(got["length"])
            if len(got["tokens"]) < batch:
                break
            after = got["last"]
        rows[table] = n
        lengths[table] = length
        out += [{"id": [table, token_key(tok)], "df": c} for tok, c in df.items()]
    for i in range(0, len(out), STORE_BATCH):
        await call(conn, "fn::amem::termstats::store", out[i:i + STORE_BATCH], gen)
    await call(conn, "fn::amem::termstats::publish", gen, rows)
    return {"gen": gen, "rows": rows, "lengths": lengths, "terms": len(out), "seconds": round(time.perf_counter() - started, 3)}, dfs


async def refresh(conn: Any, *, auto: bool = True) -> dict[str, Any] | None:
    """``count`` when due (``auto``: never counted or drifted), or always; None when skipped."""
    if auto and not drifted((await status(conn))["tables"]):
        return None
    return await count(conn)
