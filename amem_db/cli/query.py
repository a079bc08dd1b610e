"""`amem-db query`: one stored-function call, shown as a table or JSON."""

from __future__ import annotations

import re
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from ..constants import MAX_K
from .app import (
    Session,
    as_json,
    as_of_option,
    at_instant_option,
    json_option,
    lens_option,
    out,
    parse_during,
    parse_lens,
    print_json,
    valid_at_option,
    valid_during_option,
)


def snippet(text: str, query: str, width: int = 220) -> str:
    """The passage around the first query word, query words in bold (display only)."""
    words = [w for w in re.findall(r"\w+", query.lower()) if len(w) > 2]
    low = text.lower()
    first = min((i for i in (low.find(w) for w in words) if i >= 0), default=0)
    start = max(0, first - width // 3)
    piece = ("…" if start else "") + text[start:start + width].replace("\n", " ") + ("…" if start + width < len(text) else "")
    piece = escape(piece)
    for w in sorted(set(words), key=len, reverse=True):
        piece = re.sub(rf"(?i)\b({re.escape(w)}\w*)", r"[bold yellow]\1[/]", piece)
    return piece


def _numbers(option: str, value: str, shape: str) -> list[float]:
    try:
        parts = [float(x) for x in value.split(",")]
    except ValueError:
        parts = []
    if len(parts) != 3:
        raise typer.BadParameter(f"{option} takes {shape}, e.g. {option} 51.5,-0.12,10; got {value!r}")
    return parts


def parse_location(near: str | None, within: str | None, nearest: str | None) -> dict[str, Any] | None:
    """--near LAT,LNG,KM / --within WKT / --nearest LAT,LNG,K as the location option
    (the values are checked by the database: typed errors naming the field)."""
    loc: dict[str, Any] = {}
    if near is not None:
        lat, lng, radius = _numbers("--near", near, "LAT,LNG,KM")
        loc["near"] = {"lat": lat, "lng": lng, "radiusKm": radius}
    if within is not None:
        loc["within"] = within
    if nearest is not None:
        lat, lng, k = _numbers("--nearest", nearest, "LAT,LNG,K")
        loc["nearest"] = {"lat": lat, "lng": lng, "k": int(k) if k.is_integer() else k}
    return loc or None


def page_size_option() -> Any:
    return typer.Option(None, "--page-size", help="freeze the ranked candidates and show the first page of this size (prints a cursor)")


def cursor_option() -> Any:
    return typer.Option(None, "--cursor", help='the next page of a frozen set, from a previous --page-size (the text is not used: pass "")')


def print_cursor(response: dict[str, Any]) -> None:
    if response.get("pageSize") is not None:
        more = f"next page: --cursor {response['cursor']}" if response.get("cursor") else "last page"
        out.print(f"page of {response['pageSize']} from {response.get('candidates')} frozen candidates; {more}")


def near_option() -> Any:
    return typer.Option(None, "--near", metavar="LAT,LNG,KM", help="only rows within KM kilometres of the point")


def within_option() -> Any:
    return typer.Option(None, "--within", metavar="WKT", help='only rows inside the polygon, e.g. "POLYGON((lng lat, ...))"')


def rerank_option() -> Any:
    return typer.Option(None, "--rerank", metavar="RERANKER", callback=check_rerank,
                        help="rerank the fused candidates: rescore (in the database: BM25 + cosine), endpoint "
                             "(AMEM_RERANK_URL), an http(s) URL of a /v1/rerank endpoint, or cross-encoder:PATH")


def check_rerank(value: str | None) -> str | None:
    """--rerank's syntax, as a usage error (exit 2); the reranker itself is built by the client."""
    if value is not None and value not in ("rescore", "endpoint") and not value.startswith(("http://", "https://", "cross-encoder:")):
        raise typer.BadParameter(f"{value!r}: rescore, endpoint, an http(s) URL, or cross-encoder:PATH", param_hint="--rerank")
    return value


def hyde_option() -> Any:
    return typer.Option(False, "--hyde", help="HyDE: embed an LLM's hypothetical answer (AMEM_LLM_URL) for the vector "
                                              "leg; without a provider the query runs as given and the trace says so")


def decompose_option() -> Any:
    return typer.Option(False, "--decompose", help="split the query into sub-questions with the LLM (AMEM_LLM_URL), "
                                                   "each through the legs, merged by RRF (mode hybrid)")


def nearest_option() -> Any:
    return typer.Option(None, "--nearest", metavar="LAT,LNG,K", help="rank the K rows nearest the point as one more RRF leg")


async def query(
    session: Session,
    text: str = typer.Argument(..., help="what to look for"),
    mode: str = typer.Option("hybrid", "--mode", help="hybrid | vector | bm25 | hybrid_graph"),
    k: int = typer.Option(10, "--k", help=f"answer size (max {MAX_K}; larger is clamped)"),
    threshold: float | None = typer.Option(None, help="minimum cosine similarity of the vector leg"),
    vector_weight: float | None = typer.Option(None, "--vector-weight", help="weight of the vector leg in the fusion, 0..1 (default 0.5)"),
    rrf_k: float | None = typer.Option(None, "--rrf-k", help="RRF smoothing constant (default 60, > 0)"),
    fusion: str | None = typer.Option(None, "--fusion", help="how hybrid fuses its legs: rrf | zscore | minmax (docs/EVALUATION.md)"),
    mime_type: list[str] = typer.Option([], "--mime-type", help="only these MIME types (repeatable)"),
    document_id: list[str] = typer.Option([], "--document-id", help="only these documents (repeatable)"),
    lens: list[str] = lens_option(),
    no_context: bool = typer.Option(False, "--no-context", help="no same-section contextHits"),
    graph_edges: str | None = typer.Option(None, "--graph-edges", help="hybrid_graph signals, comma-separated"),
    graph_alpha: float | None = typer.Option(None, "--graph-alpha", help="hybrid_graph: weight of the graph score (default 0.3)"),
    graph_depth: int | None = typer.Option(None, "--graph-depth", help="hybrid_graph: hops (default 1)"),
    expand_graph: bool = typer.Option(False, "--expand-graph", help="hybrid_graph: include matched keywords/entities"),
    near: str | None = near_option(),
    within: str | None = within_option(),
    nearest: str | None = nearest_option(),
    as_of: str | None = as_of_option(),
    at_instant: str | None = at_instant_option(),
    rerank: str | None = rerank_option(),
    hyde: bool = hyde_option(),
    decompose: bool = decompose_option(),
    page_size: int | None = page_size_option(),
    cursor: str | None = cursor_option(),
    json_output: bool = json_option("the full response (results, contextHits, trace) as JSON"),
) -> None:
    """Search passages: hybrid (BM25 + vector, score fusion) by default, one database round trip.

    Example: amem-db query "return window for unopened items" --k 5

    --as-of searches the passages stored by then (with the replaced versions a database
    migrated with --document-history keeps); a replaced version is marked "(replaced)".
    """
    flt: dict[str, Any] = {}
    if mime_type:
        flt["mimeType"] = mime_type
    if document_id:
        flt["documentIds"] = document_id
    mem = await session.memory()
    response = as_json(await mem.documents.query(
        text, mode=mode, k=k, threshold=threshold, vector_weight=vector_weight, rrf_k=rrf_k,
        filter=flt or None, lens=parse_lens(lens), expand_context=False if no_context else None,
        graph_edges=graph_edges.split(",") if graph_edges else None, graph_alpha=graph_alpha,
        graph_depth=graph_depth, expand_graph=expand_graph or None, location=parse_location(near, within, nearest),
        as_of=as_of, at_instant=at_instant, fusion=fusion,
        use_reranker=True if rerank else None, reranker=rerank or None, hyde=hyde or None, decompose=decompose or None,
        page_size=page_size, cursor=cursor))
    if json_output:
        return print_json(response)
    table = Table("#", "score", "document", "section", "passage", show_lines=True)
    for rank, hit in enumerate(response["results"], 1):
        c, d = hit["chunk"], hit["document"]
        where = c.get("section") or ""
        if c.get("startS") is not None:
            where = f"{c['startS']:.0f}s-{c['endS']:.0f}s"
        name = escape(d.get("title") or d.get("source") or d["id"])
        if c.get("replacedAt") is not None:
            name += f"\n(replaced {str(c['replacedAt'])[:19]})"
        table.add_row(str(rank), f"{hit['score']:.3f}", name, escape(where), snippet(c["text"], text))
    out.print(table)
    context = response.get("contextHits") or []
    extra = f", {len(context)} context passages" if context else ""
    out.print(f"{len(response['results'])} results{extra} in {response['queryMs']:.0f} ms ({mode})")
    print_cursor(response)
    for w in response.get("warnings") or []:
        out.print(f"[yellow]note[/]: {w}")


def citation_text(hit: dict[str, Any]) -> str:
    """Where a recall hit came from, in one line (display only)."""
    c = hit.get("citation") or {}
    src = c.get("source") if isinstance(c.get("source"), dict) else None
    if hit["source"] in ("chunk", "audio_chunk"):
        return f"{c.get('title') or c.get('document')} [{c.get('charStart')}:{c.get('charEnd')}]"
    if hit["source"] == "memory_chunk":
        said = f" ({src.get('kind')} {src.get('ref')})" if src else ""
        return f"write {c.get('write')} [{c.get('charStart')}:{c.get('charEnd')}]{said}"
    if hit["source"] in ("attribute", "relation"):
        said = f" ({src.get('kind')} {src.get('ref')})" if src else ""
        return f"write {c.get('write')}, confidence {c.get('confidence')}{said}"
    return str(c.get("entity") or hit["id"])


def _when(value: Any) -> str:
    return str(value)[:10] if value else ""


async def recall(
    session: Session,
    text: str = typer.Argument(..., help="what to remember: a question or keywords"),
    mode: str = typer.Option("hybrid", "--mode", help="hybrid | vector | bm25 | graph"),
    k: int = typer.Option(10, "--k", help="answer size, 1..50 (more is an error: recall does not clamp)"),
    include: list[str] = typer.Option([], "--include", help="facts | passages (repeatable; default both)"),
    label: list[str] = typer.Option([], "--label", help="only rows carrying every given label (repeatable)"),
    lens: list[str] = lens_option(),
    threshold: float | None = typer.Option(None, help="minimum cosine similarity of the vector legs (default 0.1)"),
    vector_weight: float | None = typer.Option(None, "--vector-weight", help="weight of the vector legs in the fusion, 0..1"),
    rrf_k: float | None = typer.Option(None, "--rrf-k", help="RRF smoothing constant (default 60, > 0)"),
    graph_depth: int | None = typer.Option(None, "--graph-depth", help="relation hops from the entities the query names: 1 or 2 (default 2)"),
    no_context: bool = typer.Option(False, "--no-context", help="no same-section contextHits for document passages"),
    near: str | None = near_option(),
    within: str | None = within_option(),
    nearest: str | None = nearest_option(),
    as_of: str | None = as_of_option(),
    at_instant: str | None = at_instant_option(),
    valid_at: str | None = valid_at_option(),
    valid_during: str | None = valid_during_option(),
    now: str | None = typer.Option(None, "--now", help="the instant relative time words count from, ISO 8601 (default: --as-of, else the clock)"),
    no_query_window: bool = typer.Option(False, "--no-query-window", help="ignore time words in the query (no query window)"),
    strict_window: bool = typer.Option(False, "--strict-window", help="keep only rows in the query window (default: boost them)"),
    window_weight: float | None = typer.Option(None, "--window-weight", help="boost of rows in the query window, 0..10"),
    adjacent_weight: float | None = typer.Option(None, "--adjacent-weight", help="share of a strong memory passage's score its session neighbours get (hybrid; default 0.4, 0 = off)"),
    speaker_weight: float | None = typer.Option(None, "--speaker-weight", help="boost of memory passages linked to an entity the query names, e.g. their speaker (hybrid; default 0.2, 0 = off)"),
    reuse: bool = typer.Option(False, "--reuse", help="tier 2: return a stored answer (mem.answers.remember) that still holds"),
    confidence_floor: float | None = typer.Option(None, "--confidence-floor", help="tier 4 runs when the best fused score is under it (default 0.40)"),
    no_ladder: bool = typer.Option(False, "--no-ladder", help="tier 3 alone: no key reads (tier 1), no escalation (tier 4)"),
    rerank: str | None = typer.Option(None, "--rerank", metavar="RERANKER", callback=check_rerank,
                                      help="rerank the hits after the round trip: endpoint (AMEM_RERANK_URL), an http(s) "
                                           "URL of a /v1/rerank endpoint, or cross-encoder:PATH"),
    page_size: int | None = page_size_option(),
    cursor: str | None = cursor_option(),
    json_output: bool = json_option("the full response (hits, contextHits, seedEntities, queryWindow, trace) as JSON"),
) -> None:
    """Recall facts and passages together, ranked in one database round trip.

    Time words in the query ("in May 2023", "last week") boost what was observed then;
    --as-of recalls what was believed then, --valid-at / --valid-during what held then.

    Example: amem-db recall "what did Alice decide in May 2023?" --now 2024-01-15T00:00:00Z --k 5
    """
    mem = await session.memory()
    response = as_json(await mem.recall(
        text, mode=mode, k=k, include=include or None, labels=label or None, threshold=threshold,
        vector_weight=vector_weight, rrf_k=rrf_k,
        lens=parse_lens(lens), graph_depth=graph_depth, expand_context=False if no_context else None,
        location=parse_location(near, within, nearest), as_of=as_of, at_instant=at_instant, valid_at=valid_at,
        valid_during=parse_during(valid_during),
        query_window=False if no_query_window else None, strict_window=True if strict_window else None,
        window_weight=window_weight, adjacent_weight=adjacent_weight,
        speaker_weight=speaker_weight, now=now, reuse=True if reuse else None, confidence_floor=confidence_floor,
        ladder=False if no_ladder else None, use_reranker=True if rerank else None, reranker=rerank or None,
        page_size=page_size, cursor=cursor))
    if json_output:
        return print_json(response)
    table = Table("#", "source", "score", "text", "valid", "citation", show_lines=True)
    for rank, hit in enumerate(response["hits"], 1):
        valid = f"{_when(hit.get('validFrom')) or '…'} .. {_when(hit.get('validUntil')) or 'open'}" if hit["source"] in ("attribute", "relation", "memory_chunk") else ""
        table.add_row(str(rank), hit["source"], f"{hit['score']:.3f}", snippet(hit["text"], text), valid, escape(citation_text(hit)))
    out.print(table)
    seeds = ", ".join(s["name"] for s in response.get("seedEntities") or [])
    named = f"; names {seeds}" if seeds else ""
    window = response.get("queryWindow")
    span = f"; window '{window['phrase']}' {_when(window.get('from')) or '…'} .. {_when(window.get('to')) or 'open'}" if window else ""
    out.print(f"{len(response['hits'])} hits in {response.get('queryMs', 0):.0f} ms ({mode}, {response.get('classificationKind', 'page')}{named}{span})")
    print_cursor(response)
    if response.get("answer"):  # tier 2
        out.print(f"reused answer {response['reusedFrom']}: {escape(response['answer']['text'])}")
    # tierReason already opens with "tier N: " (fn::amem::tiers::*); the bare tier only when it is absent
    out.print(escape(response.get("tierReason") or f"tier {response.get('tier')}"))
