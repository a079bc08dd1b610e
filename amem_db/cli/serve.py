"""`amem-db serve --dev`: the embedded engine behind a loopback websocket (docs/DEVSERVER.md)."""

from __future__ import annotations

import typer

from ..errors import AmemError
from .app import Session


def serve(
    session: Session,
    dev: bool = typer.Option(False, "--dev", help="required: acknowledges this is a development bridge, not a production server"),
    host: str = typer.Option("127.0.0.1", help="address to bind (loopback by default)"),
    port: int = typer.Option(8000, help="port"),
) -> None:
    """Serve the embedded engine over ws:// for local experiments (development only).

    Production uses `surreal start` or SurrealDB Cloud. Example: amem-db --url mem:// serve --dev --port 8000
    """
    if not dev:
        raise AmemError("`amem-db serve` is a development bridge: pass --dev to acknowledge it (production: `surreal start`)")
    from ..devserver import run_dev_server

    target = session.target()
    if not target.embedded:
        raise AmemError("serve --dev serves an embedded database: give --url mem:// or surrealkv://PATH")
    run_dev_server(target.url, host=host, port=port)
