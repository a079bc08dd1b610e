"""`amem-db maintain` (rebuild HNSW graphs, amem_db/maintain.py) and `amem-db doctor`
(canary checks of the running engine, amem_db/doctor.py)."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.table import Table

from .. import maintain as maint
from ..constants import MAINTAIN_MIN_ROWS, MAINTAIN_THRESHOLD
from .app import EXIT_ERROR, Session, err, json_option, out


def _status_table(rows: list[Any]) -> Table:
    table = Table("index", "rows", "unbuilt", "share", "due", "last build", box=None)
    for s in rows:
        last = "building" if s.building else (f"{s.built_at:%Y-%m-%d %H:%M} ({s.seconds:.1f} s)" if s.built_at and s.seconds is not None else "never")
        table.add_row(s.index, str(s.rows), str(s.unbuilt), f"{s.share:.0%}", "yes" if s.due else "", last)
    return table


async def maintain(
    session: Session,
    auto: bool = typer.Option(False, "--auto", help="rebuild only the indexes past --threshold (what an ingest runs after its batches); without it every index with unbuilt rows"),
    threshold: float = typer.Option(MAINTAIN_THRESHOLD, help="with --auto: the share of a table written since its last build that makes a rebuild due"),
    min_rows: int = typer.Option(MAINTAIN_MIN_ROWS, help="with --auto: never rebuild for fewer unbuilt rows than this"),
    index: list[str] = typer.Option([], "--index", help="only this index (repeatable), e.g. chunk_embedding"),
    status_only: bool = typer.Option(False, "--status", help="show each index's unbuilt share, rebuild nothing"),
    reset: bool = typer.Option(False, "--reset", help="clear the 'being rebuilt' mark a killed maintain left on --index (or on every index)"),
    as_json: bool = json_option(),
) -> None:
    """Rebuild the HNSW graphs the embedded engine never builds by itself.

    Rows written since an index's last build wait in a queue that every vector query
    scans in full (docs/ENGINE-ISSUES.md #19); a rebuild folds them into the graph.
    While an index is rebuilt, vector queries over its table answer exactly (slower,
    never wrong). Example: amem-db maintain --auto --threshold 0.2
    """
    conn = await session.connection()
    if reset:
        names = index or [s.index for s in await maint.status(conn)]
        cleared = [n for n in names if await maint.reset(conn, n)]
        out.print(f"cleared the building mark of {', '.join(cleared)}" if cleared else "no index was marked as building")
        return
    if status_only:
        rows = await maint.status(conn, threshold=threshold, min_rows=min_rows)
        if as_json:
            print(json.dumps([r.model_dump(mode="json") for r in rows]))
        else:
            out.print(_status_table(rows))
        return

    def progress(event: str, data: dict[str, Any]) -> None:
        if as_json:
            return
        if event == "rebuild":
            err.print(f"rebuilding {data['index']}: {data['unbuilt']} of {data['rows']} rows unbuilt ...", highlight=False)
        else:
            err.print(f"rebuilt {data['index']} in {data['seconds']:.1f} s", highlight=False)

    report = await maint.maintain(conn, auto=auto, threshold=threshold, min_rows=min_rows,
                                  indexes=index or None, progress=progress)
    if as_json:
        print(report.model_dump_json())
        return
    if not report.rebuilt:
        out.print("no index needed a rebuild" + (f" (threshold {threshold:.0%}, at least {min_rows} rows)" if auto else ""))
    if report.term_stats:  # the BM25 pruning's document frequencies (amem_db/termstats.py)
        out.print(f"counted term statistics: {report.term_stats['terms']} terms over {sum(report.term_stats['rows'].values())} passages")
    if report.bm25_lists:  # the BM25 leg's champion lists (amem_db/bm25lists.py)
        b = report.bm25_lists
        out.print(f"built BM25 champion lists: build {b['gen']}, {b['lists']} lists over {sum(b['rows'].values())} passages in {b['seconds']:.1f} s")
    out.print(_status_table(await maint.status(conn, threshold=threshold, min_rows=min_rows)))


async def doctor(
    session: Session,
    as_json: bool = json_option(),
) -> None:
    """Check the running engine for the hazards amem-db works around.

    Each check runs canaries in a throwaway database of the same namespace (removed
    afterwards) or reads this database's index state, and says what amem-db does about
    what it found. Exits 1 when a hazard is present that amem-db does not handle.
    Example: amem-db doctor --url ws://localhost:8000
    """
    from ..doctor import run_doctor

    report = await run_doctor(await session.connection(), session.target())
    if as_json:
        print(report.model_dump_json())
    else:
        table = Table("check", "status", "finding", "what amem-db does", box=None)
        for c in report.checks:
            colour = {"ok": "green", "handled": "yellow", "unhandled": "red", "error": "red"}[c.status]
            table.add_row(c.name, f"[{colour}]{c.status}[/]", c.finding, c.handling)
        out.print(f"engine {report.engine}")
        out.print(table)
    if not report.healthy:
        raise typer.Exit(EXIT_ERROR)
