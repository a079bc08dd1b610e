"""Several documents per transaction (issue 14 item 5): one call of
``fn::amem::ingest::batch`` (surql/255_ingest) for a batch of prepared
documents, and when it fails, the documents one by one through
``fn::amem::documents::ingest``, so that a bad document is reported with its
own error and the others land. Either way no document is ever partly stored:
the batch is one statement (one transaction), and so is each single ingest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .constants import INGEST_BATCH_MAX
from .db import call_each

# one item: (document object, the keywords prepare returned for it, its vectors or None)
BatchItem = tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]


async def ingest_batch(conn: Any, items: Sequence[BatchItem]) -> list[tuple[bool, Any]]:
    """``[(ok, {status, document} | error text)]`` per item, in order (at most
    ``INGEST_BATCH_MAX`` documents a transaction)."""
    if len(items) > INGEST_BATCH_MAX:
        head = await ingest_batch(conn, items[:INGEST_BATCH_MAX])
        return head + await ingest_batch(conn, items[INGEST_BATCH_MAX:])
    if not items:
        return []
    arg = [{"doc": doc, "keywords": keywords, "vectors": vectors} for doc, keywords, vectors in items]
    ((ok, out),) = await call_each(conn, "fn::amem::ingest::batch", [(arg,)])
    if ok:
        return [(True, o) for o in out]
    # a bad document (or a conflict inside the batch) failed the whole transaction, and
    # nothing of it was written: each document on its own now
    return await call_each(conn, "fn::amem::documents::ingest", [(doc, vectors) for doc, _k, vectors in items])
