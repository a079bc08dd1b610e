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
transaction (docs/BENCHMARKS-HISTORY.md "Ingest batching")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .constants import INGEST_BATCH_MAX, INGEST_PER_TRANSACTION
from .db import call_each

# one item: (document object, the keywords prepare returned for it, its vectors or None[,
# {chunks, seal} as prepare returned them, or None: the batch then chunks the text again])
BatchItem = (tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]
             | tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None, dict[str, Any] | None])


async def ingest_batch(conn: Any, items: Sequence[BatchItem], *,
                       per_transaction: int = INGEST_PER_TRANSACTION) -> list[tuple[bool, Any]]:
    """``[(ok, {status, document} | error text)]`` per item, in order."""
    if not items:
        return []
    size = max(1, min(per_transaction, INGEST_BATCH_MAX))
    groups = [list(items[i:i + size]) for i in range(0, len(items), size)]
    answers = await call_each(conn, "fn::amem::ingest::batch", [([_item(*it) for it in group],) for group in groups])
    out: list[tuple[bool, Any]] = []
    for group, (ok, answer) in zip(groups, answers):
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
