"""`amem-db mcp`: the memory as MCP tools for an agent host (amem_db/agents/mcp_server.py)."""

from __future__ import annotations

import typer

from .app import Session


async def mcp(
    session: Session,
    http: str | None = typer.Option(None, "--http", metavar="HOST:PORT",
                                    help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults to 127.0.0.1)"),
) -> None:
    """Serve remember / recall / forget / entity / search_documents / feedback / remember_answer over MCP.

    One principal: --key (AMEM_KEY) for a scoped record user, else the connection's own credentials.
    stdio by default (the host starts this command); an embedded surrealkv:// database is owned by this
    process, so share one with other processes through a server (--url ws://...).

    Example: amem-db mcp --url ws://127.0.0.1:8000 --key "$AMEM_KEY"
    """
    from ..agents.mcp_server import build_server, parse_http, warm_embedder

    address = parse_http(http) if http else None
    mem = await session.memory()
    server = build_server(mem)
    warm = warm_embedder(mem)
    try:
        if address is None:
            await server.run_stdio_async()
        else:
            await server.run_streamable_http_async(host=address[0], port=address[1])
    finally:
        if warm is not None:
            await warm
