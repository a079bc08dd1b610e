"""Several documents per round trip, and per transaction (issue 14 item 5):
``fn::amem::ingest::batch`` (surql/255_ingest) stores a group of prepared
documents in one statement, so one transaction, with the keywords prepare already
extracted (RAKE runs once per document instead of twice) and, with prepare's seal, the
chunks prepare made (chunking runs once; surql/255_ingest ``ingest::seal``). The groups of one batch
travel in one round trip, each its own statement. When a group fails, its documents
go again one by one through ``fn::amem::documents::ingest``, so that a bad document
is reported with its own error and the others land. Either way no document is ever
partly stored: a group is one transaction, and so is each single ingest.

Why groups and not the whole batch in one transaction: on 3.2.4 every read and
index seek inside a write transaction merges with the transaction's pending
writes, so the per-row work of a document (events, keyword lookups) grows with the
transaction (docs/BENCHMARKS-HISTORY.md "Ingest batching").

The groups go in ``lanes`` round trips at once (the engine runs each on a core of its
own; issue 25 session 15), except a group holding a document with links: it goes alone,
after the groups before it and before those after it (a link is made by whichever of
its two documents is stored second, which must see the first). Two lanes may create the
same new keyword node (or document) at the same moment: the engine then aborts one
transaction (a write conflict) and that group is stored again once the lanes are done,
before any group falls back to one by one."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from .constants import INGEST_BATCH_MAX, INGEST_LANES, INGEST_PER_TRANSACTION
from .db import call_each
from .errors import WriteConflict, server_error

# one item: (document object, the keywords prepare returned for it, its vectors or None[,
# {chunks, seal} as prepare returned them, or None: the batch then chunks the text again])
BatchItem = (tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]
             | tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None, dict[str, Any] | None])


async def ingest_batch(conn: Any, items: Sequence[BatchItem], *,
                       per_transaction: int = INGEST_PER_TRANSACTION, lanes: int = INGEST_LANES) -> list[tuple[bool, Any]]:
    """``[(ok, {status, document} | error text)]`` per item, in order."""
    if not items:
        return []
    size = max(1, min(per_transaction, INGEST_BATCH_MAX))
    groups = [list(items[i:i + size]) for i in range(0, len(items), size)]
    answers: list[tuple[bool, Any]] = [(False, "")] * len(groups)

    async def lane(mine: list[int]) -> None:
        done = await call_each(conn, "fn::amem::ingest::batch", [([_item(*it) for it in groups[g]],) for g in mine])
        for g, answer in zip(mine, done):
            answers[g] = answer

    # runs of groups without links, each spread over the lanes; a group with links alone
    runs: list[list[int]] = [[]]
    for g, group in enumerate(groups):
        if any(it[0].get("links") for it in group):
            runs += [[g], []]
        else:
            runs[-1].append(g)
    for run in (r for r in runs if r):
        k = max(1, min(lanes, len(run)))
        await asyncio.gather(*(lane(run[i::k]) for i in range(k)))
    out: list[tuple[bool, Any]] = []
    for g, group in enumerate(groups):
        ok, answer = answers[g]
        if not ok and lanes > 1 and isinstance(server_error(answer), WriteConflict):
            # aborted by the other lane's transaction (nothing of it written): again, alone
            ((ok, answer),) = await call_each(conn, "fn::amem::ingest::batch", [([_item(*it) for it in group],)])
        if ok:
            out += [(True, a) for a in answer]
        else:
            # a bad document (or a conflict inside the group) failed the whole transaction,
            # and nothing of it was written: each document on its own now
            out += await call_each(conn, "fn::amem::documents::ingest", [(it[0], it[2]) for it in group])
    return out


def _item(doc: dict[str, Any], keywords: list[dict[str, Any]], vectors: dict[str, Any] | None,
          sealed: dict[str, Any] | None = None) -> dict[str, Any]:
    item = {"doc": doc, "keywords": keywords, "vectors": vectors}
    if sealed:
        item |= {"chunks": sealed["chunks"], "seal": sealed["seal"]}
    return item
