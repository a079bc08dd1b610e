"""What every command shares: the consoles, the connection options, the
command decorator (asyncio, resources closed, errors as one line and an exit
code), JSON printing and lens parsing.

Connection options (``--url --ns --db --user --pass --key --embedder``) are
accepted before the command (``amem-db --url X migrate``) and after it
(``amem-db migrate --url X``). One rule when both are given: the value after
the command wins; either wins over the ``AMEM_*`` environment, which wins over
the embedded default (``connection.resolve_target``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from ..connection import Target, close_quietly, open_connection, resolve_target
from ..errors import AmemError, InvalidInput

# Exit codes (README "Commands"): 0 done; 1 an error (a typed AmemError, a
# failed check such as `verify` on drift, nothing ingested, a missing record);
# 2 a usage error (bad option or argument; typer's message); 130 interrupted.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

out = Console()
err = Console(stderr=True, soft_wrap=True)  # an error is one line, never wrapped

HELP = (
    "amem-db: agent-memory retrieval inside SurrealDB.\n\n"
    "Where the database is: --url/--ns/--db/--user/--pass/--key, before or after the command "
    "(after wins), else AMEM_URL, AMEM_NS, AMEM_DB, AMEM_USER, AMEM_PASS, AMEM_KEY, else an "
    "embedded database in ./.amem/data. Exit codes: 0 done, 1 error, 2 usage error, 130 interrupted."
)


# --- connection options ----------------------------------------------------------------
@dataclass(frozen=True)
class ConnectionOptions:
    """Where the database is and which embedder to use, as given on the command line
    (None = not given: the environment or the default decides)."""

    url: str | None = None
    ns: str | None = None
    db: str | None = None
    user: str | None = None
    password: str | None = None
    key: str | None = None
    embedder: str | None = None

    def overridden_by(self, **given: str | None) -> ConnectionOptions:
        """These options with every value in ``given`` that is not None taking precedence."""
        return replace(self, **{k: v for k, v in given.items() if v is not None})

    def target(self) -> Target:
        return resolve_target(self.url, self.ns, self.db, self.user, self.password, self.key)

    @property
    def embedder_spec(self) -> str | None:
        return self.embedder if self.embedder is not None else os.environ.get("AMEM_EMBEDDER")


# option name -> (flag, help); the parameter names are ConnectionOptions' fields
_OPTION_HELP: dict[str, tuple[str, str]] = {
    "url": ("--url", "mem://, surrealkv://PATH, surrealkv+versioned://PATH, file://PATH, ws(s)://HOST:PORT, "
                     "http(s)://HOST:PORT (env AMEM_URL)"),
    "ns": ("--ns", "namespace (env AMEM_NS, default amem)"),
    "db": ("--db", "database (env AMEM_DB, default main)"),
    "user": ("--user", "user to sign in as on a server (env AMEM_USER)"),
    "password": ("--pass", "password (env AMEM_PASS)"),
    "key": ("--key", "NAME:SECRET from `amem-db grant`: connect as that scoped credential (env AMEM_KEY)"),
    "embedder": ("--embedder", "embedding model: minilm (default), e5-small, or openai:URL:MODEL (env AMEM_EMBEDDER)"),
}
assert tuple(_OPTION_HELP) == tuple(f.name for f in fields(ConnectionOptions))

CONNECTION = ("url", "ns", "db", "user", "password", "key")  # commands that open a connection
MEMORY = (*CONNECTION, "embedder")  # commands that open a Memory (and may embed)
_META_KEY = "amem_db.connection"  # ctx.meta is shared by the whole context tree


def connection_parameters(names: Iterable[str]) -> list[inspect.Parameter]:
    """The typer options for ``names``, as keyword-only parameters (help panel "Connection")."""
    return [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, annotation=str | None,
            default=typer.Option(None, _OPTION_HELP[name][0], help=_OPTION_HELP[name][1], rich_help_panel="Connection"),
        )
        for name in names
    ]


def given_options(ctx: typer.Context) -> ConnectionOptions:
    """The options given before the command (the root callback stores them)."""
    found = ctx.meta.get(_META_KEY)
    return found if isinstance(found, ConnectionOptions) else ConnectionOptions()


def root_callback() -> Callable[..., None]:
    """The app's callback: takes every connection option and stores them for the commands."""

    def callback(ctx: typer.Context, **given: str | None) -> None:
        ctx.meta[_META_KEY] = ConnectionOptions(**given)

    ctx_param = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    params = [ctx_param, *connection_parameters(MEMORY)]
    callback.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    callback.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    return callback


def check_embedder(spec: str | None) -> None:
    """Refuse an unknown embedder spec up front, in one line listing the choices
    (naming one loads nothing: models load on first use)."""
    if spec is None:
        return
    from ..embedding import get_embedder

    try:
        get_embedder(spec)
    except ValueError as exc:
        raise InvalidInput(f"--embedder: {exc}") from None


# --- the session a command runs in --------------------------------------------------------
class Session:
    """A command's resolved options and what it opened; the command decorator
    closes everything opened here when the command ends, however it ends."""

    def __init__(self, options: ConnectionOptions, stack: AsyncExitStack | None = None) -> None:
        self.options = options
        self._stack = stack

    def target(self) -> Target:
        return self.options.target()

    @property
    def embedder_spec(self) -> str | None:
        return self.options.embedder_spec

    def _closer(self) -> AsyncExitStack:
        if self._stack is None:
            raise RuntimeError("this command is not async: open connections from an async command")
        return self._stack

    async def connection(self) -> Any:
        """A raw SDK connection (closed when the command ends)."""
        conn = await open_connection(self.target())
        self._closer().push_async_callback(close_quietly, conn)
        return conn

    async def memory(self) -> Any:
        """A ``Memory`` on the target with the chosen embedder (closed when the command ends)."""
        from ..client import Memory

        target = self.target()
        mem = Memory(await open_connection(target), embedder=self.embedder_spec, target=target)
        self._closer().push_async_callback(mem.close)
        return mem


# --- the command decorator ------------------------------------------------------------------
F = TypeVar("F", bound=Callable[..., Any])


def fail(exc: AmemError) -> typer.Exit:
    """Print ``error (code): message`` as one line on stderr; the Exit to raise."""
    first = (str(exc).strip().splitlines() or [""])[0]
    # escaped: a message's own brackets (`pip install 'amem-db[bench]'`) are not rich markup
    err.print(f"[red]error[/] ({exc.code}): {escape(first)}", highlight=False)
    return typer.Exit(EXIT_ERROR)


def command(options: tuple[str, ...] = CONNECTION) -> Callable[[Callable[..., Any]], Callable[..., None]]:
    """Turn ``[async] def cmd(session: Session, <typer params>)`` into a typer command.

    The command also accepts the connection ``options`` named (after the
    command; they override the same options given before it). A coroutine
    runs under ``asyncio.run`` with everything the session opened closed at
    the end; an ``AmemError`` becomes one line on stderr and exit code 1.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., None]:
        sig = inspect.signature(fn, eval_str=True)
        first, *rest = sig.parameters.values()
        if first.annotation is not Session:
            raise TypeError(f"{fn.__name__}: the first parameter must be `session: Session`")
        ctx_param = inspect.Parameter("_amem_ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)
        params = [*rest, ctx_param, *connection_parameters(options)]
        is_async = inspect.iscoroutinefunction(fn)

        def wrapper(**kwargs: Any) -> None:
            ctx: typer.Context = kwargs.pop("_amem_ctx")
            after = {name: kwargs.pop(name) for name in options}
            opts = given_options(ctx).overridden_by(**after)
            try:
                if "embedder" in options:
                    check_embedder(opts.embedder_spec)
                if is_async:
                    asyncio.run(_run_async(fn, opts, kwargs))
                else:
                    fn(Session(opts), **kwargs)
            except AmemError as exc:
                raise fail(exc) from None

        # fn's name and help text, but not __wrapped__: typer must see the signature below
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(wrapper, attr, getattr(fn, attr))
        wrapper.__signature__ = sig.replace(parameters=params, return_annotation=None)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
        return wrapper

    return decorate


async def _run_async(fn: Callable[..., Awaitable[Any]], opts: ConnectionOptions, kwargs: dict[str, Any]) -> None:
    async with AsyncExitStack() as stack:
        await fn(Session(opts, stack), **kwargs)


# --- output helpers ----------------------------------------------------------------------
def as_json(value: Any) -> Any:
    """The JSON shape of a result: a client model as the spec's wire shape
    (``model_dump(by_alias=True, mode="json")``), lists and dicts recursively."""
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, mode="json")
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    return value


def print_json(value: Any) -> None:
    print(json.dumps(as_json(value), indent=2, ensure_ascii=False, default=str))


def lens_option() -> Any:
    """The ``--lens`` option of every read (its value goes through ``parse_lens``)."""
    return typer.Option([], "--lens", help="scope lens clause: comma joins paths (AND), repeat for OR; narrows only")


def as_of_option() -> Any:
    """``--as-of``: known time (what was believed then; MEMORY.md section 3)."""
    return typer.Option(None, "--as-of", help="what was believed at this time (ISO 8601, e.g. 2024-06-01)")


def at_instant_option() -> Any:
    """``--at-instant``: system time (needs surrealkv+versioned:// storage)."""
    return typer.Option(None, "--at-instant", help="the database as it was at this instant (needs surrealkv+versioned:// storage)")


def valid_at_option() -> Any:
    """``--valid-at``: valid time (the interval contains it)."""
    return typer.Option(None, "--valid-at", help="what held in the world at this time (ISO 8601)")


def valid_during_option() -> Any:
    """``--valid-during FROM,TO``: valid time (the interval overlaps)."""
    return typer.Option(None, "--valid-during", metavar="FROM,TO", help="what held at some point between two times")


def parse_during(text: str | None) -> tuple[str, str] | None:
    """``FROM,TO`` -> a pair (the database checks both are times and FROM < TO)."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InvalidInput(f"--valid-during takes FROM,TO (two ISO 8601 times), got {text!r}")
    return parts[0], parts[1]


def json_option(help: str = "print the result as JSON (the stored function's shape)") -> Any:
    """The ``--json`` switch of every command that prints a result."""
    return typer.Option(False, "--json", help=help)


def parse_lens(values: list[str]) -> list[list[str]] | None:
    """--lens org/a,clearance/secret --lens org/b  ->  [["org/a", "clearance/secret"], ["org/b"]]"""
    if not values:
        return None
    return [[p.strip() for p in v.split(",") if p.strip()] for v in values]
