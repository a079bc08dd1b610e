"""A loopback websocket bridge to the embedded SurrealDB engine (development only).

``amem-db serve --dev`` and the test suite use this to reach the real embedded
engine (``surrealdb_embedded``, core 3.x) over ``ws://`` with the unchanged
official SDK - ``AsyncSurreal("ws://127.0.0.1:PORT/rpc")`` or the blocking
``Surreal`` - on a machine without Docker or a ``surreal`` binary.

It is **not** a production server. Production uses ``surreal start`` or
SurrealDB Cloud. The bridge speaks only the ``cbor`` RPC subprotocol on
``/rpc``, has no TLS, no HTTP ``/sql`` or ``/rpc`` POST endpoint, no live-query
notifications and no client-side transactions (the embedded engine refuses
``begin``), and binds to 127.0.0.1 by default.

How a frame travels
-------------------
The embedded engine's ``execute(cbor) -> cbor`` takes the SDK's RPC request
frames as they are. Passed through naively, every websocket connection would
share the engine's single *default* session, which also starts with full
(root-like) access. Instead, every websocket connection gets its own engine
session through the 3.x *attached sessions* RPC (``attach`` / ``detach`` and a
``session`` field on each request):

* On connect the bridge ``attach``\\es a fresh engine session for the
  connection. Requests without a ``session`` field run on it, so ``use``,
  ``signin``, ``let`` and ``invalidate`` stay per connection. Attached sessions
  start anonymous and the engine refuses anonymous queries ("Anonymous access
  not allowed"), which is how a server with authentication enabled behaves.
* Sessions the client attaches itself (``AsyncSurreal.new_session()``) are
  mapped to engine session ids derived from a per-connection secret, so a
  client can only ever address its own sessions; ``sessions`` is answered by
  the bridge with this connection's sessions only.
* The session id is spliced into the request's top-level CBOR map without
  decoding the rest of the frame (no lossy decode/re-encode of query params),
  and engine session ids in responses are rewritten (byte-for-byte, same
  length) to the ids the client knows.
* When the websocket closes, all of its engine sessions are detached.

The engine's default session is used only by the bridge itself, to create the
configured root user (``DEFINE USER OVERWRITE ... ON ROOT ... ROLES OWNER``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import sys
import threading
import uuid
from types import TracebackType
from typing import Any

import websockets
from surrealdb.data.cbor import decode, encode
from surrealdb_embedded import AsyncEmbeddedDB
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from .connection import engine_url

__all__ = [
    "DevServer",
    "BackgroundDevServer",
    "DevServerError",
    "run_dev_server",
    "DEV_WARNING",
]

logger = logging.getLogger("amem_db.devserver")

DEV_WARNING = (
    "WARNING: this is the amem-db DEVELOPMENT bridge (embedded SurrealDB engine "
    "behind a loopback websocket). It is not a production server: no TLS, no "
    "live queries, no client-side transactions, no HTTP API. In production run "
    "`surreal start` or use SurrealDB Cloud."
)

# Requests in flight per websocket connection; more wait (the socket is not
# read while the limit is reached, which is the backpressure a client sees).
_MAX_IN_FLIGHT = 64

_USER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class DevServerError(RuntimeError):
    """The development bridge could not start (engine or socket)."""


# --------------------------------------------------------------------------
# Minimal CBOR surgery on the top-level request/response map.
#
# Only the outer map is taken apart; every value is copied as raw bytes. That
# keeps query parameters byte-exact (no SDK decode/encode round trip) and cheap:
# the skipper walks item headers only, and jumps over arrays of floats - the
# embeddings that dominate bulk-insert frames - with one C-speed slice compare.
# --------------------------------------------------------------------------

_FLOAT_STRIDE = {0xF9: 3, 0xFA: 5, 0xFB: 9}


def _head(buf: bytes, pos: int) -> tuple[int, int, int, int]:
    """Read an item head: (initial byte, major type, argument or -1, new pos)."""
    ib = buf[pos]
    pos += 1
    ai = ib & 31
    if ai < 24:
        return ib, ib >> 5, ai, pos
    if ai == 24:
        return ib, ib >> 5, buf[pos], pos + 1
    if ai == 25:
        return ib, ib >> 5, int.from_bytes(buf[pos : pos + 2], "big"), pos + 2
    if ai == 26:
        return ib, ib >> 5, int.from_bytes(buf[pos : pos + 4], "big"), pos + 4
    if ai == 27:
        return ib, ib >> 5, int.from_bytes(buf[pos : pos + 8], "big"), pos + 8
    if ai == 31:
        return ib, ib >> 5, -1, pos
    raise ValueError(f"malformed CBOR head 0x{ib:02x} at {pos - 1}")


def _skip(buf: bytes, pos: int) -> int:
    """Return the offset just past the CBOR data item that starts at *pos*."""
    n = len(buf)
    pending = [1]  # items left per open container; -1 = indefinite length
    while pending:
        if pending[-1] == 0:
            pending.pop()
            continue
        if pos >= n:
            raise ValueError("truncated CBOR")
        if buf[pos] == 0xFF:  # break: ends the innermost indefinite container
            if pending[-1] != -1:
                raise ValueError(f"unexpected CBOR break at {pos}")
            pending.pop()
            pos += 1
            continue
        if pending[-1] > 0:
            pending[-1] -= 1
        _ib, major, arg, pos = _head(buf, pos)
        if major in (0, 1, 7):
            continue
        if major in (2, 3):
            if arg >= 0:
                pos += arg
            else:
                pending.append(-1)
        elif major == 4:
            if arg > 0 and pos < n:
                stride = _FLOAT_STRIDE.get(buf[pos])
                if stride is not None:
                    marker = bytes([buf[pos]])
                    if buf[pos : pos + stride * arg : stride] == marker * arg:
                        pos += stride * arg
                        continue
            if arg != 0:
                pending.append(arg)
        elif major == 5:
            if arg > 0:
                pending.append(arg * 2)
            elif arg < 0:
                pending.append(-1)
        else:  # major 6: a tag wraps exactly one item
            pending.append(1)
    if pos > n:
        raise ValueError("truncated CBOR")
    return pos


_Entry = tuple[str | None, bytes, bytes]  # (key if text, raw key bytes, raw value bytes)


def _split_map(buf: bytes) -> list[_Entry]:
    """Split a CBOR top-level map into raw (key, value) byte pairs."""
    ib, major, count, pos = _head(buf, 0)
    if major != 5:
        raise ValueError("the frame is not a CBOR map")
    entries: list[_Entry] = []
    while count != 0:
        if count < 0 and buf[pos] == 0xFF:
            pos += 1
            break
        key_start = pos
        key_end = _skip(buf, pos)
        value_end = _skip(buf, key_end)
        raw_key = buf[key_start:key_end]
        key: str | None = None
        if raw_key and (raw_key[0] >> 5) == 3:
            with contextlib.suppress(Exception):
                key = decode(raw_key)
        entries.append((key, raw_key, buf[key_end:value_end]))
        pos = value_end
        if count > 0:
            count -= 1
    if pos != len(buf):
        raise ValueError("trailing bytes after the CBOR map")
    return entries


def _map_head(count: int) -> bytes:
    if count < 24:
        return bytes([0xA0 | count])
    if count < 256:
        return bytes([0xB8, count])
    return bytes([0xB9]) + count.to_bytes(2, "big")


def _join_map(entries: list[_Entry]) -> bytes:
    return _map_head(len(entries)) + b"".join(k + v for _, k, v in entries)


_SESSION_KEY = b"\x67session"  # text(7) "session"


def _uuid_item(value: uuid.UUID) -> bytes:
    return b"\xd8\x25\x50" + value.bytes  # tag 37 + bytes(16)


def _as_uuid(value: Any) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError:
            return None
    return None


def _error_frame(raw_id: bytes | None, code: int, kind: str, message: str) -> bytes:
    """An RPC error in the engine's own shape (raw_id is the request's id item)."""
    body = encode({"error": {"code": code, "kind": kind, "message": message}})
    # splice the request id back verbatim, whatever type the client used
    if raw_id is None:
        return body
    entries = _split_map(body)
    entries.insert(0, ("id", b"\x62id", raw_id))
    return _join_map(entries)


def _result_frame(raw_id: bytes | None, result: Any) -> bytes:
    entries = _split_map(encode({"result": result}))
    if raw_id is not None:
        entries.insert(0, ("id", b"\x62id", raw_id))
    return _join_map(entries)


# --------------------------------------------------------------------------
# One websocket connection
# --------------------------------------------------------------------------


class _Connection:
    """The engine-side state of one websocket: its sessions."""

    def __init__(self, server: DevServer, ws: ServerConnection) -> None:
        self.server = server
        self.ws = ws
        # Engine ids of client-attached sessions are uuid5(secret, client id):
        # unguessable by other connections, so nobody can reach a session
        # that is not their own, and unknown ids are answered "Session not
        # found" by the engine itself.
        self._secret = uuid.uuid4()
        # The connection's own session: what frames without `session` use.
        self.default_engine_sid = uuid.uuid4()
        # What `session::id()` shows the client for that default session.
        self.public_id = uuid.uuid4()
        self.attached: set[uuid.UUID] = set()  # client-chosen ids
        self._default_attached = False

    def engine_sid(self, client_sid: uuid.UUID) -> uuid.UUID:
        return uuid.uuid5(self._secret, str(client_sid))

    async def open(self) -> None:
        await self.server._engine_call(  # pyright: ignore[reportPrivateUsage]
            {"method": "attach", "session": self.default_engine_sid}
        )
        self._default_attached = True

    async def close(self) -> None:
        sids = [self.engine_sid(c) for c in self.attached]
        if self._default_attached:
            sids.append(self.default_engine_sid)
        self.attached.clear()
        self._default_attached = False
        for sid in sids:
            with contextlib.suppress(Exception):
                await self.server._engine_call(  # pyright: ignore[reportPrivateUsage]
                    {"method": "detach", "session": sid}, check=False
                )

    async def handle(self, frame: bytes) -> bytes:
        """Answer one request frame."""
        try:
            entries = _split_map(frame)
        except Exception as exc:
            return _error_frame(None, -32700, "Validation", f"Parse error: {exc}")
        fields = {key: i for i, (key, _, _) in enumerate(entries) if key is not None}
        raw_id = entries[fields["id"]][2] if "id" in fields else None
        try:
            method = decode(entries[fields["method"]][2]) if "method" in fields else None
        except Exception:
            method = None
        if not isinstance(method, str):
            return _error_frame(raw_id, -32600, "Validation", "Invalid request: missing method")
        method = method.lower()

        client_sid: uuid.UUID | None = None
        if "session" in fields:
            try:
                value = decode(entries[fields["session"]][2])
            except Exception:
                value = ...
            if value is not None:
                client_sid = _as_uuid(value)
                if client_sid is None:
                    return _error_frame(
                        raw_id, -32602, "Validation", "Invalid params: session must be a UUID"
                    )

        if method in ("attach", "detach") and client_sid is None:
            return _error_frame(
                raw_id, -32602, "Validation", f"Invalid params: {method} requires a session id"
            )
        if method == "sessions":
            return _result_frame(raw_id, sorted(self.attached, key=str))

        engine_sid = self.default_engine_sid if client_sid is None else self.engine_sid(client_sid)
        item = ("session", _SESSION_KEY, _uuid_item(engine_sid))
        if "session" in fields:
            entries[fields["session"]] = item
        else:
            entries.append(item)

        response = await self.server._execute(_join_map(entries))  # pyright: ignore[reportPrivateUsage]

        if method in ("attach", "detach") and client_sid is not None:
            if not _has_error(response):
                if method == "attach":
                    self.attached.add(client_sid)
                else:
                    self.attached.discard(client_sid)

        visible = self.public_id if client_sid is None else client_sid
        return _rewrite_response(response, engine_sid, visible, strip_session=client_sid is None)


def _has_error(response: bytes) -> bool:
    try:
        return any(key == "error" for key, _, _ in _split_map(response))
    except Exception:
        return True


def _rewrite_response(
    response: bytes, engine_sid: uuid.UUID, visible: uuid.UUID, *, strip_session: bool
) -> bytes:
    """Show the client its own session id wherever the engine's appears.

    Both replacements keep lengths (16 raw bytes behind tag 37, 36 characters
    of text), so the CBOR stays valid without re-encoding anything.
    """
    response = response.replace(_uuid_item(engine_sid), _uuid_item(visible))
    response = response.replace(str(engine_sid).encode(), str(visible).encode())
    if not strip_session:
        return response
    # The client sent no `session`, so it gets none back. The engine puts the
    # field last; try that cheaply before taking the map apart.
    suffix = _SESSION_KEY + _uuid_item(visible)
    if response.endswith(suffix) and 0xA1 <= response[0] <= 0xB7:
        return bytes([response[0] - 1]) + response[1 : -len(suffix)]
    try:
        entries = _split_map(response)
    except Exception:
        return response
    return _join_map([e for e in entries if e[0] != "session"])


# --------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class DevServer:
    """The embedded engine behind a loopback websocket speaking the SDK's RPC.

    ::

        async with DevServer(url="mem://") as ws_url:
            db = AsyncSurreal(ws_url)
            await db.signin({"username": "root", "password": "root"})

    ``url`` is the embedded engine's URL (``mem://``, ``surrealkv://path``,
    ``file://path``). ``port=0`` picks a free port. ``user``/``password``: a
    root user (ROLES OWNER) is defined with these on start, overwriting one of
    the same name in a persistent store; ``user=None`` defines none.
    Connections that do not sign in have no rights.
    """

    def __init__(
        self,
        url: str = "mem://",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        user: str | None = "root",
        password: str = "root",
        max_in_flight: int = _MAX_IN_FLIGHT,
    ) -> None:
        if user is not None and not _USER_NAME.match(user):
            raise ValueError(f"root user name must be an identifier, got {user!r}")
        self.url = url
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.max_in_flight = max_in_flight
        self._engine: AsyncEmbeddedDB | None = None
        self._server: Server | None = None
        self._connections: set[_Connection] = set()
        self._ws_url: str | None = None
        self._version: str | None = None

    # -- lifecycle ---------------------------------------------------------

    @property
    def ws_url(self) -> str:
        """``ws://HOST:PORT/rpc``; only after :meth:`start`."""
        if self._ws_url is None:
            raise RuntimeError("the dev server is not started")
        return self._ws_url

    @property
    def engine(self) -> AsyncEmbeddedDB:
        """The embedded engine (its default session has full access: tests only)."""
        if self._engine is None:
            raise RuntimeError("the dev server is not started")
        return self._engine

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def start(self) -> str:
        """Open the engine, define the root user, listen; return the ws URL."""
        if self._server is not None:
            return self.ws_url
        try:
            engine = AsyncEmbeddedDB(engine_url(self.url))  # on disk: AMEM_SYNC, as the client opens it
            await engine.connect()
        except Exception as exc:
            msg = str(exc)
            hint = ""
            if "lock" in msg.lower():
                hint = " (another process has this database open)"
            raise DevServerError(f"could not open {self.url}{hint}: {msg}") from exc
        self._engine = engine
        try:
            self._version = str(await self._engine_call({"method": "version"}))
            if self.user is not None:
                await self._engine_call(
                    {
                        "method": "query",
                        "params": [
                            f"DEFINE USER OVERWRITE {self.user} ON ROOT PASSWORD "
                            f"{_quote(self.password)} ROLES OWNER",
                            {},
                        ],
                    },
                    query=True,
                )
            self._server = await serve(
                self._handle,
                self.host,
                self.port,
                subprotocols=[websockets.Subprotocol("cbor")],
                max_size=None,
                # loopback: deflate would only cost CPU on every large frame
                compression=None,
                process_request=self._process_request,
                server_header=f"amem-db-devserver ({self._version})",
            )
        except BaseException as exc:
            await self._close_engine()
            if isinstance(exc, OSError):
                raise DevServerError(
                    f"could not listen on {self.host}:{self.port}: {exc}"
                ) from exc
            raise
        sock = next(iter(self._server.sockets))
        host, port = sock.getsockname()[:2]
        self.port = port
        shown = f"[{host}]" if ":" in host else host
        self._ws_url = f"ws://{shown}:{port}/rpc"
        logger.info("dev server on %s backed by %s (%s)", self._ws_url, self.url, self._version)
        return self._ws_url

    async def stop(self) -> None:
        """Close every connection (code 1001), detach their sessions, close the engine."""
        server, self._server = self._server, None
        if server is not None:
            server.close(close_connections=True)
            try:
                await asyncio.wait_for(server.wait_closed(), 15)
            except TimeoutError:
                logger.warning("dev server: connections did not close within 15 s")
        await self._close_engine()
        self._ws_url = None

    async def _close_engine(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            with contextlib.suppress(Exception):
                await engine.close()

    async def __aenter__(self) -> str:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- engine ------------------------------------------------------------

    async def _execute(self, frame: bytes) -> bytes:
        if self._engine is None:
            raise ConnectionError("the dev server is stopped")
        return await self._engine.execute(frame)

    async def _engine_call(
        self, request: dict[str, Any], *, check: bool = True, query: bool = False
    ) -> Any:
        """A request of the bridge's own (default session unless one is given)."""
        request = {"id": str(uuid.uuid4()), **request}
        response = decode(await self._execute(encode(request)))
        if check and response.get("error") is not None:
            raise DevServerError(f"engine refused {request['method']}: {response['error']}")
        result = response.get("result")
        if query and check:
            for statement in result or []:
                if statement.get("status") == "ERR":
                    raise DevServerError(f"engine refused a setup query: {statement.get('result')}")
        return result

    # -- websocket ---------------------------------------------------------

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0].rstrip("/") or "/"
        if path == "/rpc":
            if request.headers.get("Upgrade", "").lower() != "websocket":
                return _plain(426, "Upgrade Required: /rpc speaks websocket (cbor) only\n")
            return None
        if path in ("/health", "/status"):
            return _plain(200, "")
        if path == "/version":
            return _plain(200, self._version or "")
        return _plain(404, "Not Found (amem-db dev bridge: use ws://.../rpc)\n")

    async def _handle(self, ws: ServerConnection) -> None:
        if ws.subprotocol != "cbor":
            await ws.close(1002, "the dev bridge speaks only the cbor subprotocol")
            return
        conn = _Connection(self, ws)
        try:
            await conn.open()
        except Exception as exc:
            logger.warning("dev server: could not attach an engine session: %s", exc)
            await ws.close(1011, "could not open an engine session")
            return
        self._connections.add(conn)
        tasks: set[asyncio.Task[None]] = set()
        slots = asyncio.Semaphore(self.max_in_flight)
        try:
            async for frame in ws:
                if isinstance(frame, str):
                    frame = frame.encode()  # not cbor; answered with a parse error
                await slots.acquire()
                task = asyncio.create_task(self._answer(conn, frame, slots))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        except ConnectionClosed:
            pass
        finally:
            for task in list(tasks):
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            self._connections.discard(conn)
            if self._engine is not None:
                await conn.close()

    async def _answer(self, conn: _Connection, frame: bytes, slots: asyncio.Semaphore) -> None:
        try:
            try:
                reply = await conn.handle(frame)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the engine itself failed
                logger.debug("dev server: request failed", exc_info=True)
                raw_id = None
                with contextlib.suppress(Exception):
                    raw_id = next((v for k, _, v in _split_map(frame) if k == "id"), None)
                reply = _error_frame(raw_id, -32603, "Internal", f"Internal error: {exc}")
            with contextlib.suppress(ConnectionClosed):
                await conn.ws.send(reply)
        finally:
            slots.release()


def _plain(status: int, body: str) -> Response:
    reasons = {200: "OK", 404: "Not Found", 426: "Upgrade Required"}
    data = body.encode()
    headers = Headers(
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))]
    )
    return Response(status, reasons.get(status, ""), headers, data)


# --------------------------------------------------------------------------
# A server on a background thread (for synchronous code and the blocking SDK)
# --------------------------------------------------------------------------


class BackgroundDevServer:
    """A :class:`DevServer` running on its own thread and event loop.

    ::

        with BackgroundDevServer("mem://") as ws_url:
            with Surreal(ws_url) as db: ...
    """

    def __init__(self, url: str = "mem://", **kwargs: Any) -> None:
        self.server = DevServer(url, **kwargs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None

    @property
    def ws_url(self) -> str:
        return self.server.ws_url

    def start(self, timeout: float = 30) -> str:
        ready = threading.Event()
        failure: list[BaseException] = []

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stopped = asyncio.Event()
            try:
                await self.server.start()
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            try:
                await self._stopped.wait()
            finally:
                await self.server.stop()

        self._thread = threading.Thread(
            target=asyncio.run, args=(main(),), name="amem-devserver", daemon=True
        )
        self._thread.start()
        if not ready.wait(timeout):
            raise DevServerError("the dev server did not start in time")
        if failure:
            self._thread.join()
            raise failure[0]
        return self.server.ws_url

    def stop(self, timeout: float = 30) -> None:
        if self._thread is None:
            return
        if self._loop is not None and self._stopped is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(timeout)
        self._thread = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------
# CLI entry
# --------------------------------------------------------------------------


def run_dev_server(
    url: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    user: str | None = "root",
    password: str = "root",
    *,
    hard_exit: bool = True,
) -> None:
    """Serve *url* on ``ws://host:port/rpc`` until SIGINT/SIGTERM (``amem-db serve --dev``).

    Blocks. With ``hard_exit`` (the default) the process ends with
    ``os._exit`` after the engine is closed: the native extension can abort
    during normal interpreter shutdown.
    """
    err = sys.stderr
    print(DEV_WARNING, file=err, flush=True)
    if host not in ("127.0.0.1", "::1", "localhost"):
        print(
            f"WARNING: binding to {host!r}, not loopback: anyone who can reach this "
            "port and knows the root password has full access, over plain text.",
            file=err,
            flush=True,
        )

    async def main() -> int:
        server = DevServer(url, host=host, port=port, user=user, password=password)
        try:
            ws_url = await server.start()
        except DevServerError as exc:
            print(f"error: {exc}", file=err, flush=True)
            return 1
        print(f"amem-db dev server: {ws_url}  (engine {url}, {server._version})", flush=True)
        if user is not None:
            print(f"root user: {user!r} (password as configured)", flush=True)
        print("press Ctrl-C to stop", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            print("stopping dev server", file=err, flush=True)
            await server.stop()
        return 0

    code = 1
    try:
        code = asyncio.run(main())
    except KeyboardInterrupt:
        code = 0
    finally:
        if hard_exit:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    if code:
        raise SystemExit(code)
