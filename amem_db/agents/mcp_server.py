"""``amem-db mcp``: the memory as Model Context Protocol tools (the official ``mcp`` SDK, 2.x).

Every tool is one client call (one stored function, or ``facts.write``'s prepare + write)
on ONE open ``Memory``: the server acts as one principal, the key it was started with
(``--key`` / ``AMEM_KEY``, a record user whose grants the database enforces on every
read and write) or the connection's own credentials. A typed ``AmemError`` (and the
client's argument ``TypeError``) becomes a tool error the model can read
(``isError: true``, ``amem:<code>: <message>``); anything else is the SDK's generic
tool error. The server never crashes on a bad call.

Arguments use the client's own types (``RecallMode``, ``RecallInclude``, ``QueryMode``,
``TraceVerdict`` of amem_db.models); results are the client's pydantic models as
``structuredContent`` (with the trace cut to its id) plus a compact text for the model.

Where the database is: an embedded ``surrealkv://`` path belongs to one process, so
the stdio server opens (owns) it; a second process on the same data (the CLI, another
agent) needs a server: ``surreal start`` or ``amem-db serve --dev``, and ``--url ws://...``
for every process (docs/DEPLOY.md "MCP").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ..client import Memory
from ..errors import AmemError
from ..fact_syntax import FACT_SYNTAX, parse_entity
from ..models import (
    FactWrite,
    ForgetResult,
    QueryMode,
    QueryResponse,
    RecallInclude,
    RecallMode,
    RecallResponse,
    StoredAnswer,
    TraceFeedback,
    TraceVerdict,
)

__all__ = ["build_server", "format_recall", "parse_http"]

INSTRUCTIONS = (
    "Long-term memory. `recall` before answering from memory; `remember` what the user states as lasting fact; "
    "cite hit ids. `forget` is a dry run unless dry_run=false."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


class Near(BaseModel):
    """Rows within ``radius_km`` of a point."""

    lat: float
    lng: float
    radius_km: float = Field(alias="radiusKm", serialization_alias="radiusKm")


class Nearest(BaseModel):
    """The ``k`` rows nearest a point."""

    lat: float
    lng: float
    k: int


@contextlib.contextmanager
def tool_errors() -> Iterator[None]:
    """A typed error (or a bad argument the client refuses) as a tool error the model reads."""
    try:
        yield
    except AmemError as exc:
        raise ToolError(f"amem:{exc.code}: {_first_line(exc)}") from exc
    except (TypeError, ValueError) as exc:
        raise ToolError(f"amem:invalid_input: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _wire(model: BaseModel) -> dict[str, Any]:
    """A result as the stored function's JSON; the full trace stays in the database (its id is enough to cite)."""
    data: dict[str, Any] = model.model_dump(by_alias=True, mode="json")
    if isinstance(data.get("trace"), dict):
        data["trace"] = {"id": data["trace"].get("id")}
    return data


def _result(data: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _location(near: Near | None, within: str | None, nearest: Nearest | None) -> dict[str, Any] | None:
    loc: dict[str, Any] = {}
    if near is not None:
        loc["near"] = near.model_dump(by_alias=True)
    if within is not None:
        loc["within"] = within
    if nearest is not None:
        loc["nearest"] = nearest.model_dump()
    return loc or None


def _when(value: Any) -> str:
    return str(value)[:10] if value else ""


def format_recall(data: dict[str, Any]) -> str:
    """Recall (its wire JSON) as lines for a model: rank, source, score, text, validity, id, citation."""
    lines = []
    for rank, hit in enumerate(data["hits"], 1):
        valid = f" valid {_when(hit.get('validFrom')) or '…'}..{_when(hit.get('validUntil')) or 'open'}" if hit.get("validFrom") or hit.get("validUntil") else ""
        cite = {k: v for k, v in (hit.get("citation") or {}).items() if k in ("document", "title", "write", "entity", "sessionId", "charStart", "charEnd") and v is not None}
        cited = " " + ", ".join(f"{k}={v}" for k, v in cite.items()) if cite else ""
        lines.append(f"{rank}. [{hit['source']} {hit['score']:.3f}] {hit['text']}{valid} ({hit['id']}{cited})")
    if data.get("answer"):
        lines.insert(0, f"reused answer: {data['answer']['text']} (cites {', '.join(data['answer']['cited'])})")
    trace = (data.get("trace") or {}).get("id")
    lines.append(f"{len(data['hits'])} hits, tier {data.get('tier')}" + (f", trace {trace}" if trace else ""))
    return "\n".join(lines)


def _format_documents(data: dict[str, Any]) -> str:
    lines = [f"{rank}. [{hit['score']:.3f}] {hit['document'].get('title') or hit['document'].get('source') or hit['document']['id']}: "
             f"{hit['chunk']['text']} ({hit['chunk']['id']})" for rank, hit in enumerate(data["results"], 1)]
    trace = (data.get("trace") or {}).get("id")
    lines.append(f"{len(data['results'])} passages" + (f", trace {trace}" if trace else ""))
    return "\n".join(lines)


def _format_entity(data: dict[str, Any]) -> str:
    rows = [f"- {r['key']}: {r['value'] if r.get('target') is None else '-> ' + str(r['target'])} "
            f"(valid {_when(r.get('valid_from')) or '…'}..{_when(r.get('valid_until')) or 'open'}; {r['id']})"
            for r in data.get("attributes", []) + data.get("relations", [])]
    return "\n".join([f"{data['type']}:{data['name']} ({data['id']})", *rows])


def _format_history(data: dict[str, Any]) -> str:
    rows = [f"- {r['value'] if r.get('target') is None else '-> ' + str(r['target'])}{' (current)' if r.get('current') else ''} "
            f"valid {_when(r.get('valid_from')) or '…'}..{_when(r.get('valid_until')) or 'open'}, recorded {_when(r.get('recorded_at'))}"
            for r in data.get("rows", [])]
    return "\n".join(rows) or "no rows"


def build_server(mem: Memory, *, name: str = "amem-db") -> MCPServer[Any]:
    """The MCP server over ``mem`` (already open, as its one principal)."""
    server: MCPServer[Any] = MCPServer(name, instructions=INSTRUCTIONS)

    @server.tool(annotations=WRITES)
    async def remember(
        text: Annotated[str, Field(description="what to keep as memory passages (may be empty with facts)")] = "",
        facts: Annotated[list[str], Field(description=f"typed facts: {FACT_SYNTAX}")] = [],  # noqa: B006 (pydantic copies)
        session_id: str | None = None,
        observed_at: Annotated[str | None, Field(description="when it was said, ISO 8601 (default now)")] = None,
        location: Annotated[str | None, Field(description="LAT,LNG where it applies")] = None,
        labels: list[str] | None = None,
        scopes: Annotated[list[str] | None, Field(description="scope paths (default: the key's write grant)")] = None,
        idempotency_key: str | None = None,
    ) -> Annotated[CallToolResult, FactWrite]:
        """Store text and/or typed facts in one all-or-nothing write; a newer value supersedes an older one."""
        with tool_errors():
            done = await mem.remember(text, facts=facts, session_id=session_id, observed_at=observed_at, location=location,
                                      labels=labels, scopes=scopes, idempotency_key=idempotency_key)
        outcomes = ", ".join(f"{facts[t.triple]}: {t.outcome}" for t in done.triples)
        return _result(_wire(done), f"write {done.write}: {len(done.triples)} facts ({outcomes or 'none'}), {len(done.passages)} passages")

    @server.tool(annotations=READ_ONLY)
    async def recall(
        query: str,
        k: Annotated[int, Field(ge=1, le=50)] = 10,
        include: list[RecallInclude] | None = None,
        mode: RecallMode = "hybrid",
        as_of: Annotated[str | None, Field(description="what was believed at this time (ISO 8601)")] = None,
        at_instant: Annotated[str | None, Field(description="the database as stored then (versioned storage)")] = None,
        valid_at: Annotated[str | None, Field(description="what held in the world at this time")] = None,
        valid_during: Annotated[list[str] | None, Field(description="[from, to]: held at some point between", min_length=2, max_length=2)] = None,
        now: Annotated[str | None, Field(description="the instant 'last week' counts from")] = None,
        near: Near | None = None,
        within: Annotated[str | None, Field(description="WKT polygon")] = None,
        nearest: Nearest | None = None,
        reuse: Annotated[bool, Field(description="return a stored answer (remember_answer) that still holds")] = False,
        labels: list[str] | None = None,
        lens: Annotated[list[list[str]] | None, Field(description="narrow to scopes: OR of clauses, each an AND of paths")] = None,
    ) -> Annotated[CallToolResult, RecallResponse]:
        """Facts and passages ranked together for a question, each with source, validity and citation."""
        with tool_errors():
            response = await mem.recall(query, k=k, include=include, mode=mode, as_of=as_of, at_instant=at_instant, valid_at=valid_at,
                                        valid_during=valid_during, now=now, location=_location(near, within, nearest),
                                        reuse=reuse or None, labels=labels, lens=lens)
        data = _wire(response)
        return _result(data, format_recall(data))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
    async def forget(
        entity: Annotated[str | None, Field(description="TYPE:NAME, e.g. person:Alice")] = None,
        key: Annotated[str | None, Field(description="with entity: only this key's facts")] = None,
        session_id: str | None = None,
        write: Annotated[str | None, Field(description="the ULID of one write")] = None,
        ids: Annotated[list[str] | None, Field(description="record ids from recall hits")] = None,
        labels: list[str] | None = None,
        dry_run: Annotated[bool, Field(description="count only (default); false forgets")] = True,
    ) -> Annotated[CallToolResult, ForgetResult]:
        """Forget memory by entity, key, session, write or ids (soft, kept for audit). Dry run unless dry_run=false."""
        with tool_errors():
            query = {k: v for k, v in {"entity": parse_entity(entity, what="entity") if entity else None, "key": key,
                                       "write": write, "session_id": session_id, "labels": labels}.items() if v}
            if not ids and not query:
                raise ToolError("amem:invalid_input: nothing to forget: give ids, entity, write, session_id or labels")
            done = await mem.forget(ids, query=query or None, dry_run=dry_run)
        rows = sum(done.forgotten.model_dump().values())
        return _result(_wire(done), f"{rows} rows {'would be forgotten (dry run)' if done.dry_run else 'forgotten'}; {len(done.ids)} matched")

    @server.tool(annotations=READ_ONLY)
    async def entity(
        type: Annotated[str, Field(description="entity type, e.g. person")],
        name: Annotated[str, Field(description="name or alias, any case")],
        history_key: Annotated[str | None, Field(description="give a key for every value it has had (history)")] = None,
        as_of: Annotated[str | None, Field(description="as believed at this time (ISO 8601)")] = None,
    ) -> CallToolResult:
        """One entity with its current facts, or the history of one of its keys."""
        with tool_errors():
            if history_key:
                history = await mem.entities.history(type, name, history_key, as_of=as_of)
                data = _wire(history)
                return _result(data, _format_history(data))
            detail = await mem.entities.get(type, name, as_of=as_of)
        if detail is None:
            raise ToolError(f"amem:not_found: no {type} named {name!r} (in what this key can see)")
        data = _wire(detail)
        return _result(data, _format_entity(data))

    @server.tool(annotations=READ_ONLY)
    async def search_documents(
        query: str,
        k: Annotated[int, Field(ge=1, le=50)] = 5,
        mode: QueryMode = "hybrid",
        mime_type: list[str] | None = None,
        as_of: str | None = None,
        lens: list[list[str]] | None = None,
    ) -> Annotated[CallToolResult, QueryResponse]:
        """Ranked passages of ingested documents (not typed memory)."""
        with tool_errors():
            response = await mem.documents.query(query, k=k, mode=mode, filter={"mimeType": mime_type} if mime_type else None,
                                                 as_of=as_of, lens=lens)
        data = _wire(response)
        return _result(data, _format_documents(data))

    @server.tool(annotations=WRITES)
    async def feedback(
        trace: Annotated[str, Field(description="the trace id a recall or search printed")],
        hit: Annotated[str | int, Field(description="the hit's id, or its rank (1 = first)")],
        verdict: TraceVerdict,
    ) -> Annotated[CallToolResult, TraceFeedback]:
        """Mark one hit of a past recall useful or wrong; similar later recalls move it up or down."""
        with tool_errors():
            done = await mem.traces.feedback(trace, int(hit) if isinstance(hit, str) and hit.isdigit() else hit, verdict)
        return _result(_wire(done), f"{done.verdict}: {done.hit} of {done.trace}")

    @server.tool(annotations=WRITES)
    async def remember_answer(
        query: str,
        answer: str,
        cited: Annotated[list[str], Field(description="recall hit ids the answer rests on (each must still be current)")],
        labels: list[str] | None = None,
    ) -> Annotated[CallToolResult, StoredAnswer]:
        """Keep an answer for reuse: a later recall with reuse=true returns it while its cited facts hold."""
        with tool_errors():
            stored = await mem.answers.remember(query, answer, cited, labels=labels)
        return _result(_wire(stored), f"stored answer {stored.id} citing {len(stored.cited)} records")

    return server


def parse_http(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` (loopback unless a host is named)."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise AmemError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8765), got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def warm_embedder(mem: Memory) -> asyncio.Future[Any] | None:
    """Load the embedding model in a thread while the server starts answering, so the
    first recall does not pay for it and the start stays fast."""
    load = getattr(mem._inner, "load", None)
    if load is None:
        return None
    return asyncio.get_running_loop().run_in_executor(None, load)
