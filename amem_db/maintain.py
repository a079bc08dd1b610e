"""Index maintenance: rebuild HNSW graphs the embedded engine never compacts.

The embedded engine leaves every vector written after an index's last build in a
pending queue that each KNN scans exactly (docs/ENGINE-ISSUES.md #19); only
``REBUILD INDEX`` folds it into the graph. The database logs vector writes in their
own transactions (migrations/0014, the events of surql/060_maintain), so
``status`` reads each index's unbuilt share cheaply, and ``maintain`` rebuilds the
indexes past a threshold (``auto``) or every index with unbuilt rows.

A rebuild is three statements, each committed on its own:
``begin`` marks the index (the vector legs read the mark and answer that table
exactly: a KNN over an index being built returns every row or too few,
docs/ENGINE-ISSUES.md #20), ``rebuild`` runs the blocking REBUILD, ``finish``
clears the write log up to the build's start and the mark. A failed rebuild
clears the mark too (the index stays unbuilt and due).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from . import bm25lists, termstats
from .constants import MAINTAIN_MIN_ROWS, MAINTAIN_THRESHOLD
from .db import call
from .models import IndexStatus, MaintainReport, validated

#: progress(event, data): "rebuild" {index, rows, unbuilt} before a build, "rebuilt" {index, seconds} after
MaintainProgress = Callable[[str, dict[str, Any]], None]


async def status(conn: Any, *, threshold: float = MAINTAIN_THRESHOLD, min_rows: int = MAINTAIN_MIN_ROWS) -> list[IndexStatus]:
    """Every maintained HNSW index: rows, unbuilt rows and share, due or not."""
    rows = await call(conn, "fn::amem::maintain::status", threshold, min_rows)
    return [validated(IndexStatus, r) for r in rows]


async def rebuild(conn: Any, index: str) -> IndexStatus:
    """Rebuild one index (blocking); its status afterwards. Readers of its table take
    the exact path meanwhile; a failure clears the mark and re-raises."""
    started = time.perf_counter()
    begun = await call(conn, "fn::amem::maintain::begin", index)
    try:
        await call(conn, "fn::amem::maintain::rebuild", index)
    except BaseException:
        await call(conn, "fn::amem::maintain::reset", index)
        raise
    done = await call(conn, "fn::amem::maintain::finish", index, begun["started_at"], begun["rows"],
                      round(time.perf_counter() - started, 3))
    return validated(IndexStatus, done)


async def reset(conn: Any, index: str) -> bool:
    """Clear a stale "being rebuilt" mark (a maintain that died); True if there was one."""
    return bool(await call(conn, "fn::amem::maintain::reset", index))


async def maintain(
    conn: Any,
    *,
    auto: bool = True,
    threshold: float = MAINTAIN_THRESHOLD,
    min_rows: int = MAINTAIN_MIN_ROWS,
    indexes: Sequence[str] | None = None,
    progress: MaintainProgress | None = None,
) -> MaintainReport:
    """Rebuild the indexes that need it. ``auto``: only those due (unbuilt share >=
    ``threshold`` and >= ``min_rows`` unbuilt rows); otherwise every index with any
    unbuilt row. ``indexes`` limits the pass to those names."""
    started = time.perf_counter()
    before = await status(conn, threshold=threshold, min_rows=min_rows)
    if indexes is not None:
        known = {s.index for s in before}
        unknown = [i for i in indexes if i not in known]
        if unknown:
            await call(conn, "fn::amem::maintain::known", unknown[0])  # the typed error, worded once (SurrealQL)
        before = [s for s in before if s.index in indexes]
    chosen = [s for s in before if (s.due if auto else s.due or s.unbuilt > 0)]  # due: also a reset build (needs_rebuild)
    rebuilt = []
    for s in chosen:
        if progress:
            progress("rebuild", {"index": s.index, "rows": s.rows, "unbuilt": s.unbuilt})
        done = await rebuild(conn, s.index)
        if progress:
            progress("rebuilt", {"index": s.index, "seconds": done.seconds})
        rebuilt.append(done)
    # the BM25 champion lists (amem_db/bm25lists.py) when due; a build counts the term
    # statistics itself, else they are counted when drifted (amem_db/termstats.py)
    bm25 = await bm25lists.refresh(conn, auto=auto) if indexes is None else None
    term_stats = bm25["term_stats"] if bm25 else await termstats.refresh(conn, auto=auto) if indexes is None else None
    return MaintainReport(threshold=threshold, min_rows=min_rows, rebuilt=rebuilt, before=before,
                          seconds=round(time.perf_counter() - started, 3), term_stats=term_stats, bm25_lists=bm25)
