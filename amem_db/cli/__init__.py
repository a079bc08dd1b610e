"""The ``amem-db`` command line (typer).

One module per command group; ``build_app`` registers every command here, in
one place (importing a command module registers nothing):

| module | commands |
| --- | --- |
| ``app`` | shared: consoles, connection options, the ``command`` decorator, JSON, lens parsing, exit codes |
| ``migrate`` | ``migrate``, ``status``, ``verify`` |
| ``documents`` | ``ingest``, ``documents list/get/chunks/versions/delete/reprocess/recompute-links`` |
| ``keywords`` | ``keywords for-document/list/get/search/embed`` |
| ``query`` | ``query``, ``recall`` (the read paths) |
| ``memory`` | ``remember``, ``entities list/get/history``, ``forget``, ``inspect`` |
| ``access`` | ``grant``, ``keys list/revoke`` |
| ``traces`` | ``traces list/show/stats/explain/feedback/retention/replay`` |
| ``maintain`` | ``maintain`` (HNSW rebuilds), ``doctor`` (engine canaries) |
| ``harness`` | ``eval``, ``bench`` (the ``eval`` / ``bench`` extras) |
| ``serve`` | ``serve --dev`` |
| ``mcp`` | ``mcp`` (the MCP server, amem_db/agents/mcp_server.py) |

``main`` ends the process with ``os._exit`` and the command's exit code: the
native engine aborts at interpreter exit in 20-30% of runs otherwise
(docs/ENGINE-ISSUES.md #4, exit code 134), and a CLI must exit with the right
code every time.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer

from ..errors import AmemError
from . import access, documents, harness, keywords, maintain, mcp, memory, migrate, query, serve, traces
from .app import CONNECTION, EXIT_ERROR, EXIT_INTERRUPTED, HELP, MEMORY, command, fail, root_callback

__all__ = ["app", "build_app", "main", "run"]


def build_app() -> typer.Typer:
    """The typer app with every command registered."""
    root = typer.Typer(help=HELP, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
    root.callback()(root_callback())

    root.command("migrate")(command(CONNECTION)(migrate.migrate))
    root.command("status")(command(CONNECTION)(migrate.status))
    root.command("verify")(command(CONNECTION)(migrate.verify))
    root.command("ingest")(command(MEMORY)(documents.ingest))
    root.command("query")(command(MEMORY)(query.query))
    root.command("recall")(command(MEMORY)(query.recall))
    root.command("remember")(command(MEMORY)(memory.remember))
    root.command("forget")(command(MEMORY)(memory.forget))
    root.command("inspect")(command(MEMORY)(memory.inspect))
    root.command("grant")(command(CONNECTION)(access.grant))
    root.command("maintain")(command(CONNECTION)(maintain.maintain))
    root.command("doctor")(command(CONNECTION)(maintain.doctor))
    root.command("eval")(command(("url", "embedder"))(harness.eval_command))
    root.command("bench")(command(("embedder",))(harness.bench_command))
    root.command("serve")(command(("url",))(serve.serve))
    root.command("mcp")(command(MEMORY)(mcp.mcp))

    docs = typer.Typer(help="Read, page, delete and reprocess stored documents.", no_args_is_help=True)
    docs.command("list")(command(MEMORY)(documents.list_documents))
    docs.command("get")(command(MEMORY)(documents.get_document))
    docs.command("chunks")(command(MEMORY)(documents.chunks))
    docs.command("versions")(command(MEMORY)(documents.versions))
    docs.command("delete")(command(MEMORY)(documents.delete))
    docs.command("reprocess")(command(MEMORY)(documents.reprocess))
    docs.command("recompute-links")(command(MEMORY)(documents.recompute_links))
    root.add_typer(docs, name="documents")

    kw = typer.Typer(help="RAKE keywords: per document, across the corpus, by name, by meaning.", no_args_is_help=True)
    kw.command("for-document")(command(MEMORY)(keywords.for_document))
    kw.command("list")(command(MEMORY)(keywords.list_keywords))
    kw.command("get")(command(MEMORY)(keywords.get_keyword))
    kw.command("search")(command(MEMORY)(keywords.search))
    kw.command("embed")(command(MEMORY)(keywords.embed))
    root.add_typer(kw, name="keywords")

    ents = typer.Typer(help="Typed memory: entities, their current facts, the history of a key.", no_args_is_help=True)
    ents.command("list")(command(MEMORY)(memory.list_entities))
    ents.command("get")(command(MEMORY)(memory.get_entity))
    ents.command("history")(command(MEMORY)(memory.history))
    root.add_typer(ents, name="entities")
    facts = typer.Typer(help="Typed memory over time: what changed between two known times.", no_args_is_help=True)
    facts.command("diff")(command(MEMORY)(memory.diff))
    root.add_typer(facts, name="facts")

    tr = typer.Typer(help="Retrieval traces: list, show, stats, explain a hit (why did it rank here?), feedback, retention.",
                     no_args_is_help=True)
    tr.command("list")(command(MEMORY)(traces.list_traces))
    tr.command("show")(command(MEMORY)(traces.show_trace))
    tr.command("stats")(command(MEMORY)(traces.stats))
    tr.command("explain")(command(MEMORY)(traces.explain))
    tr.command("feedback")(command(MEMORY)(traces.feedback))
    tr.command("retention")(command(MEMORY)(traces.retention))
    tr.command("replay")(command(MEMORY)(traces.replay))
    root.add_typer(tr, name="traces")

    keys = typer.Typer(help="Credentials (record users): list, revoke. Mint one with `amem-db grant`.", no_args_is_help=True)
    keys.command("list")(command(CONNECTION)(access.list_keys))
    keys.command("revoke")(command(CONNECTION)(access.revoke))
    root.add_typer(keys, name="keys")
    return root


app = build_app()


def run(argv: list[str] | None = None) -> int:
    """Run the CLI in this process; the exit code (0 done, 1 error, 2 usage, 130 interrupted)."""
    try:
        code = app(args=argv, prog_name="amem-db", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except typer.Abort:
        typer.echo("aborted", err=True)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except AmemError as exc:  # raised outside a command (the decorator maps those)
        return fail(exc).exit_code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    except Exception as exc:
        # usage errors: typer vendors click (typer._click.exceptions.UsageError, exit code 2)
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            return int(exc.exit_code)
        if os.environ.get("AMEM_DEBUG"):
            import traceback

            traceback.print_exc()
            return EXIT_ERROR
        first = (str(exc).strip().splitlines() or [""])[0]
        typer.echo(f"error ({type(exc).__name__}): {first} (AMEM_DEBUG=1 shows the traceback)", err=True)
        return EXIT_ERROR


def main(argv: list[str] | None = None) -> NoReturn:
    """The ``amem-db`` entry point: run, then leave with ``os._exit(code)``."""
    code = run(argv)
    # Skip interpreter teardown: the native engine can abort there (rc 134).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
