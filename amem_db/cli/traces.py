"""`amem-db traces list | show | stats | explain | feedback | retention`: the retrieval
traces every query and recall writes, read back (fn::amem::traces::*, surql/470_traces)."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from ..errors import NotFound
from .app import Session, as_json, json_option, out, print_json

MODES = "hybrid, vector, bm25, hybrid_graph (documents.query) or recall"


def _hit(value: str) -> int | str:
    """A hit as typed: its rank (digits) or its record id."""
    return int(value) if value.isdigit() else value


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _num(value: Any, places: int = 4) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{places}f}"
    return str(value)


async def list_traces(
    session: Session,
    limit: int = typer.Option(20, "--limit", help="how many (at most 500)"),
    mode: str | None = typer.Option(None, "--mode", help=f"only traces of this mode: {MODES}"),
    tier: int | None = typer.Option(None, "--tier", help="only traces of this tier (1 seed reads, 2 reuse, 3 fused ranker, 4 escalated)"),
    since: str | None = typer.Option(None, "--since", help="only traces written at or after this time (ISO 8601)"),
    until: str | None = typer.Option(None, "--until", help="only traces written before this time (ISO 8601; a page's `next`)"),
    json_output: bool = json_option(),
) -> None:
    """Your latest traces, newest first: query, mode, tier, hits, top hit, latency.

    Example: amem-db traces list --mode recall --limit 10
    """
    mem = await session.memory()
    page = await mem.traces.list(limit=limit, mode=mode, tier=tier, since=since, until=until)
    if json_output:
        return print_json(page)
    table = Table("id", "when", "mode", "tier", "hits", "ms", "query", "top hit")
    for t in page.traces:
        table.add_row(t.id, t.created_at.strftime("%Y-%m-%d %H:%M:%S"), t.mode, str(t.tier) + (" esc" if t.escalated else ""),
                      str(t.hits), _num(t.total_ms, 1), escape(t.query[:60]), t.top_hit or "")
    out.print(table)
    if page.next is not None:
        out.print(f"more: amem-db traces list --until {page.next.isoformat()}", highlight=False)


async def show_trace(
    session: Session,
    id: str = typer.Argument(..., help="a trace id, e.g. retrieval_trace:abc (from `traces list` or a response's trace.id)"),
    json_output: bool = json_option(),
) -> None:
    """One stored trace: options, legs, every hit with its per-signal entries, timings.

    Example: amem-db traces show retrieval_trace:abc --json
    """
    mem = await session.memory()
    trace = await mem.traces.get(id)
    if trace is None:
        raise NotFound(f"no trace {id!r} (or it is not yours)")
    data = as_json(trace)
    if json_output:
        return print_json(data)
    out.print(f"[bold]{trace.id}[/] {trace.mode} tier {trace.tier} {trace.created_at.isoformat()}", highlight=False)
    out.print(f"  query: {escape(trace.query)}", highlight=False)
    for name, leg in trace.legs.items():
        if isinstance(leg, dict):
            out.print(f"  leg {name}: " + (f"ran, weight {leg.get('weight')}, returned {leg.get('returned')}" if leg.get("ran", True)
                                           else f"not run ({leg.get('reason', '')})"), highlight=False)
    table = Table("rank", "id", "score")
    for h in trace.hits:
        table.add_row(str(h.get("rank")), str(h.get("id")), _num(h.get("score")))
    out.print(table)
    out.print("  timings: " + ", ".join(f"{k} {v}" for k, v in trace.timings.items() if v is not None), highlight=False)


async def stats(
    session: Session,
    limit: int = typer.Option(1000, "--limit", help="over the newest N traces (at most 10000)"),
    mode: str | None = typer.Option(None, "--mode", help=f"only traces of this mode: {MODES}"),
    since: str | None = typer.Option(None, "--since", help="only traces written at or after this time (ISO 8601)"),
    until: str | None = typer.Option(None, "--until", help="only traces written before this time (ISO 8601)"),
    json_output: bool = json_option(),
) -> None:
    """Counts per mode and tier, cache hit and escalation rates, latency p50 / p95 per mode.

    Example: amem-db traces stats --since 2026-12-01
    """
    mem = await session.memory()
    s = await mem.traces.stats(limit=limit, mode=mode, since=since, until=until)
    if json_output:
        return print_json(s)
    table = Table("mode", "count", "p50 ms", "p95 ms", "max ms")
    for name, m in sorted(s.modes.items()):
        table.add_row(name, str(m.count), _num(m.p50_ms, 1), _num(m.p95_ms, 1), _num(m.max_ms, 1))
    out.print(table)
    out.print(f"{s.traces} traces{' (newest only: raise --limit)' if s.truncated else ''}; tiers "
              + ", ".join(f"{k} {v}" for k, v in s.tiers.items())
              + f"; cache hit rate {_rate(s.cache_hit_rate)}, escalation rate {_rate(s.escalation_rate)}", highlight=False)


async def explain(
    session: Session,
    id: str = typer.Argument(..., help="a trace id (from `traces list`)"),
    hit: str = typer.Argument(..., help="the hit: its rank in the trace (1 = first) or its record id"),
    json_output: bool = json_option(),
) -> None:
    """Why did this hit rank here? The per-signal ledger of one hit: each leg's rank, raw
    score, weight and RRF term, graph and feedback contributions, then the filter,
    threshold and window decisions.

    Example: amem-db traces explain retrieval_trace:abc 3
    """
    mem = await session.memory()
    why = await mem.traces.explain(id, _hit(hit))
    if json_output:
        return print_json(why)
    h = why.hit
    out.print(f"[bold]hit {h['rank']}[/] {h['id']} ({h.get('source')}) score {_num(h.get('score'))} in {why.trace} "
              f"({why.mode}, tier {why.tier}, rrfK {_num(why.rrf_k, 0)}): {escape(why.query)}", highlight=False)
    table = Table("signal", "rank", "measure", "value", "weight", "contribution", "note")
    for row in why.ledger:
        table.add_row(row.signal, _num(row.rank), row.measure, _num(row.value), _num(row.weight, 3), _num(row.contribution, 6),
                      escape(row.note or ""))
    out.print(table)
    for d in why.decisions:
        out.print(f"  - {escape(d)}", highlight=False)


async def feedback(
    session: Session,
    id: str = typer.Argument(..., help="a trace id (from `traces list`)"),
    hit: str = typer.Argument(..., help="the hit: its rank in the trace (1 = first) or its record id"),
    verdict: str = typer.Argument(..., help="useful or wrong"),
    json_output: bool = json_option(),
) -> None:
    """Mark a hit of one of your traces useful or wrong: your later similar queries move it
    up or down (at most half the spread of the top fused scores; `feedback: false` on a read ignores it).

    Example: amem-db traces feedback retrieval_trace:abc 3 useful
    """
    mem = await session.memory()
    # the database checks the verdict (a typed error naming it)
    row = await mem.traces.feedback(id, _hit(hit), verdict)
    if json_output:
        return print_json(row)
    out.print(f"{row.hit} marked {row.verdict} (rank {row.rank} of {row.trace})", highlight=False)


async def retention(
    session: Session,
    max_age: str | None = typer.Option(None, "--max-age", help="delete traces older than this duration, e.g. 30d, 12h (0 = no age limit)"),
    max_count: int | None = typer.Option(None, "--max-count", help="keep at most this many traces (0 = no count limit)"),
    json_output: bool = json_option(),
) -> None:
    """Show or set how long traces are kept; enforced by the database on every trace write.

    A store that never set it keeps 30 days of traces (about 12 KB each at k 10) and any count;
    a count limit costs a count of the table on every trace write.

    Example: amem-db traces retention --max-age 30d --max-count 100000
    """
    mem = await session.memory()
    age: str | int | None = int(max_age) if max_age is not None and max_age.isdigit() else max_age
    r = await mem.traces.retention(max_age=age, max_count=max_count)
    if json_output:
        return print_json(r)
    out.print(f"max age {r.max_age or 'none'}, max count {r.max_count or 'none'} "
              f"(enforced on every trace write, at most {r.per_write} deletions each)", highlight=False)


async def replay(
    session: Session,
    k: int = typer.Option(10, "--k", help="score the top k of each replayed query (1..50)"),
    json_output: bool = json_option(),
) -> None:
    """Replay your trace feedback as a judged query set: nDCG@k and Recall@k of every judged
    query with all signals, then with each signal switched off in turn (vector, bm25, graph,
    query window) and with the feedback boost on. `useful` = relevant, `wrong` = not. This is
    `eval --from-traces`: the ablation from your own verdicts, no dataset needed.

    Example: amem-db traces replay --k 10
    """
    from ..traces_replay import replay as run_replay

    if not 1 <= k <= 50:
        raise typer.BadParameter("k must be 1..50", param_hint="--k")
    mem = await session.memory()
    report = await run_replay(mem.conn, k=k)
    if json_output:
        return print_json(report)
    out.print(f"{report['queries']} judged queries, {report['judgements']} verdicts", highlight=False)
    for read, variants in report["reads"].items():
        table = Table(f"{'documents.query' if read == 'query' else 'recall'}", f"nDCG@{k}", f"Recall@{k}", "queries")
        for name, row in variants.items():
            table.add_row(name, _num(row[f"ndcg@{k}"]), _num(row[f"recall@{k}"]), str(row["queries"]))
        out.print(table)
