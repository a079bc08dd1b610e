"""The loopback dev server: the official SDK over ws:// against the embedded engine."""

from __future__ import annotations

import asyncio
import contextlib
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator

import pytest
import websockets
from devserver_fixture import (  # noqa: F401  (dev_server is a fixture)
    ROOT_PASSWORD,
    ROOT_USER,
    background_dev_server,
    dev_server,
    started_dev_server,
    unique_name,
)
from surrealdb import AsyncSurreal, Surreal
from surrealdb.data.cbor import decode, encode
from surrealdb.data.types.record_id import RecordID
from surrealdb.errors import (
    ConnectionUnavailableError,
    NotAllowedError,
    NotFoundError,
    SurrealError,
    ThrownError,
)

from amem_db import devserver as ds
from amem_db.devserver import DevServer, DevServerError

ROOT = {"username": ROOT_USER, "password": ROOT_PASSWORD}


@contextlib.asynccontextmanager
async def client(url: str, *, root: bool = True, ns: str | None = None) -> AsyncIterator[AsyncSurreal]:
    db = AsyncSurreal(url)
    await db.connect()
    try:
        if root:
            await db.signin(ROOT)
        if ns is not None:
            await db.use(ns, ns)
        yield db
    finally:
        await db.close()


async def raw_call(ws: websockets.ClientConnection, method: str, params=None, **extra) -> dict:
    request = {"id": str(uuid.uuid4()), "method": method, **extra}
    if params is not None:
        request["params"] = params
    await ws.send(encode(request))
    while True:
        response = decode(await ws.recv())
        if response.get("id") == request["id"]:
            return response


async def engine_sessions(server: DevServer) -> list[uuid.UUID]:
    """Every session attached on the engine (through its default session)."""
    response = decode(await server.engine.execute(encode({"id": "x", "method": "sessions"})))
    return list(response["result"])


# --------------------------------------------------------------------------
# basics
# --------------------------------------------------------------------------


async def test_version_over_ws(dev_server: DevServer) -> None:
    assert dev_server.ws_url.startswith("ws://127.0.0.1:")
    assert dev_server.ws_url.endswith("/rpc")
    async with client(dev_server.ws_url, root=False) as db:
        version = await db.version()
    assert version.startswith("surrealdb-3.")


async def test_query_round_trip(dev_server: DevServer) -> None:
    ns = unique_name()
    embedding = [i / 7 for i in range(384)]
    async with client(dev_server.ws_url, ns=ns) as db:
        created = await db.query(
            "CREATE doc:a SET text = $t, emb = $e, n = $n RETURN AFTER",
            {"t": "héllo\x00world", "e": embedding, "n": 2**40},
        )
        assert created[0][0]["id"] == RecordID("doc", "a")
        results = await db.query(
            "CREATE doc:b SET text = 'b'; SELECT * FROM doc ORDER BY id; RETURN count((SELECT * FROM doc))"
        )
        assert len(results) == 3  # one result per statement
        rows = results[1]
        assert [r["id"] for r in rows] == [RecordID("doc", "a"), RecordID("doc", "b")]
        assert rows[0]["emb"] == embedding
        assert rows[0]["text"] == "héllo\x00world"
        assert rows[0]["n"] == 2**40
        assert results[2] == 2
        # query_raw: the per-statement envelope
        raw = await db.query_raw("RETURN 1; RETURN 'two'")
        assert [s["status"] for s in raw["result"]] == ["OK", "OK"]
        assert [s["result"] for s in raw["result"]] == [1, "two"]
        # CRUD helpers go through query too
        await db.create(RecordID("doc", "c"), {"text": "c"})
        assert (await db.select(RecordID("doc", "c")))["text"] == "c"
        assert await db.run("string::len", ["abcd"]) == 4


async def test_throw_arrives_as_thrown_error(dev_server: DevServer) -> None:
    async with client(dev_server.ws_url, ns=unique_name()) as db:
        with pytest.raises(ThrownError) as info:
            await db.query("RETURN 1; THROW 'amem:invalid_input: k must be positive'")
        assert "amem:invalid_input: k must be positive" in str(info.value)
        raw = await db.query_raw("THROW 'amem:x: y'")
        assert raw["result"][0]["status"] == "ERR"
        assert raw["result"][0]["kind"] == "Thrown"
        # the connection is still usable afterwards
        assert await db.query("RETURN 5") == [5]


async def test_parse_error_is_reported(dev_server: DevServer) -> None:
    async with client(dev_server.ws_url, ns=unique_name()) as db:
        with pytest.raises(SurrealError):
            await db.query("SELEC * FROM nope")
        assert await db.query("RETURN 1") == [1]


# --------------------------------------------------------------------------
# auth: a server with authentication enabled
# --------------------------------------------------------------------------


async def test_unauthenticated_connection_has_no_rights(dev_server: DevServer) -> None:
    async with client(dev_server.ws_url, root=False) as db:
        assert (await db.version()).startswith("surrealdb-")
        await db.use("x", "x")  # allowed, as on a server
        with pytest.raises(NotAllowedError):
            await db.query("RETURN 1")
        with pytest.raises(NotAllowedError):
            await db.query("CREATE t SET a = 1")
        with pytest.raises(SurrealError):
            await db.signin({"username": ROOT_USER, "password": "wrong"})
        with pytest.raises(NotAllowedError):
            await db.query("RETURN 1")
        await db.signin(ROOT)
        assert await db.query("RETURN 1") == [1]
        await db.invalidate()
        with pytest.raises(NotAllowedError):
            await db.query("RETURN 1")


async def test_token_from_one_connection_authenticates_another(dev_server: DevServer) -> None:
    async with client(dev_server.ws_url, root=False) as a, client(dev_server.ws_url, root=False) as b:
        tokens = await a.signin(ROOT)
        with pytest.raises(NotAllowedError):
            await b.query("RETURN 1")
        await b.authenticate(tokens.access)
        assert await b.query("RETURN 1") == [1]


# --------------------------------------------------------------------------
# per-connection sessions
# --------------------------------------------------------------------------


async def test_namespaces_are_per_connection(dev_server: DevServer) -> None:
    ns_a, ns_b = unique_name("a"), unique_name("b")
    async with client(dev_server.ws_url, ns=ns_a) as a, client(dev_server.ws_url, ns=ns_b) as b:

        async def work(db: AsyncSurreal, tag: str) -> list:
            for i in range(20):
                await db.query("CREATE item SET owner = $o, i = $i", {"o": tag, "i": i})
                await asyncio.sleep(0)
            return await db.query(
                "RETURN [session::ns(), session::db()]; SELECT VALUE owner FROM item"
            )

        (where_a, owners_a), (where_b, owners_b) = await asyncio.gather(work(a, "A"), work(b, "B"))
    assert where_a == [ns_a, ns_a] and where_b == [ns_b, ns_b]
    assert owners_a == ["A"] * 20
    assert owners_b == ["B"] * 20


async def test_connections_share_the_same_data(dev_server: DevServer) -> None:
    ns = unique_name()
    async with client(dev_server.ws_url, ns=ns) as a, client(dev_server.ws_url, ns=ns) as b:
        await a.query("CREATE shared:1 SET v = 'from a'")
        assert await b.query("SELECT VALUE v FROM shared:1") == [["from a"]]


async def test_let_variables_are_per_connection(dev_server: DevServer) -> None:
    ns = unique_name()
    async with client(dev_server.ws_url, ns=ns) as a, client(dev_server.ws_url, ns=ns) as b:
        await a.let("x", "only-a")
        assert await a.query("RETURN $x") == ["only-a"]
        assert await b.query("RETURN $x") == [None]
        await b.let("x", "only-b")
        assert await a.query("RETURN $x") == ["only-a"]
        await a.unset("x")
        assert await a.query("RETURN $x") == [None]
        assert await b.query("RETURN $x") == ["only-b"]


async def test_root_signin_on_one_connection_does_not_grant_another(dev_server: DevServer) -> None:
    async with client(dev_server.ws_url) as a, client(dev_server.ws_url, root=False) as b:
        assert await a.query("RETURN 1") == [1]
        with pytest.raises(NotAllowedError):
            await b.query("RETURN 1")
        await b.signin(ROOT)
        await a.invalidate()  # ends A's auth only
        assert await b.query("RETURN 2") == [2]
        with pytest.raises(NotAllowedError):
            await a.query("RETURN 1")


async def test_record_user_signin_is_per_connection(dev_server: DevServer) -> None:
    ns = unique_name()
    async with client(dev_server.ws_url, ns=ns) as admin:
        await admin.query(
            """
            DEFINE ACCESS account ON DATABASE TYPE RECORD
                SIGNUP (CREATE user SET name = $name, pass = crypto::argon2::generate($pass))
                SIGNIN (SELECT * FROM user WHERE name = $name
                        AND crypto::argon2::compare(pass, $pass));
            DEFINE TABLE note SCHEMALESS
                PERMISSIONS FOR select, create WHERE owner = $auth.id;
            DEFINE TABLE user SCHEMALESS PERMISSIONS FOR select WHERE id = $auth.id;
            """
        )
        async with client(dev_server.ws_url, root=False) as alice, client(
            dev_server.ws_url, root=False
        ) as anon:
            await alice.use(ns, ns)
            await anon.use(ns, ns)
            await alice.signup(
                {"namespace": ns, "database": ns, "access": "account",
                 "variables": {"name": "alice", "pass": "pw"}}
            )
            me = await alice.query("RETURN $auth.name")
            assert me == ["alice"]
            await alice.query("CREATE note SET owner = $auth.id, body = 'mine'")
            await admin.query("CREATE note SET owner = user:other, body = 'theirs'")
            assert await alice.query("SELECT VALUE body FROM note") == [["mine"]]
            # alice's sign-in gives the other connection nothing
            with pytest.raises(NotAllowedError):
                await anon.query("SELECT * FROM note")
            # and root still sees everything
            bodies = await admin.query("SELECT VALUE body FROM note ORDER BY body")
            assert bodies == [["mine", "theirs"]]


async def test_sdk_sessions_are_isolated_and_scoped_to_their_connection(
    dev_server: DevServer,
) -> None:
    ns = unique_name()
    async with client(dev_server.ws_url, ns=ns) as db:
        await db.let("x", "connection")
        session = await db.new_session()  # attach + token replay
        await session.use(ns, ns)
        assert await session.query("RETURN $x") == [None]
        await session.let("x", "session")
        assert await db.query("RETURN $x") == ["connection"]
        assert await session.query("RETURN $x") == ["session"]
        # session::id() shows the id the client chose, not the engine's
        assert await session.query("RETURN session::id()") == [session._session_id]
        await session.close_session()
        with pytest.raises(NotFoundError) as info:
            await session.query("RETURN 1")
        assert str(session._session_id) in str(info.value)


async def test_a_session_id_cannot_be_used_from_another_connection(dev_server: DevServer) -> None:
    async with websockets.connect(
        dev_server.ws_url, subprotocols=[websockets.Subprotocol("cbor")]
    ) as a, websockets.connect(dev_server.ws_url, subprotocols=[websockets.Subprotocol("cbor")]) as b:
        sid = str(uuid.uuid4())
        assert "error" not in await raw_call(a, "attach", session=sid)
        assert "error" not in await raw_call(a, "signin", [{"user": ROOT_USER, "pass": ROOT_PASSWORD}], session=sid)
        ok = await raw_call(a, "query", ["RETURN 1", {}], session=sid)
        assert ok["result"][0]["result"] == 1
        assert ok["session"] == uuid.UUID(sid)
        # the same id on another connection is a different (absent) session
        stolen = await raw_call(b, "query", ["RETURN 1", {}], session=sid)
        assert stolen["error"]["kind"] == "NotFound"
        # the connection's default session is not reachable by any id it learns
        a_default = (await raw_call(a, "signin", [{"user": ROOT_USER, "pass": ROOT_PASSWORD}]))
        assert "session" not in a_default
        shown = (await raw_call(a, "query", ["RETURN session::id()", {}]))["result"][0]["result"]
        guessed = await raw_call(b, "query", ["RETURN 1", {}], session=str(shown))
        assert guessed["error"]["kind"] == "NotFound"
        # `sessions` lists only this connection's own sessions
        assert (await raw_call(a, "sessions"))["result"] == [uuid.UUID(sid)]
        assert (await raw_call(b, "sessions"))["result"] == []
        # attach needs an id; a bad one is refused
        assert (await raw_call(a, "attach"))["error"]["code"] == -32602
        assert (await raw_call(a, "query", ["RETURN 1", {}], session="nope"))["error"]["code"] == -32602


async def test_closing_a_connection_detaches_its_sessions(dev_server: DevServer) -> None:
    before = set(await engine_sessions(dev_server))
    async with client(dev_server.ws_url) as db:
        await db.new_session()
        await db.new_session()
        added = set(await engine_sessions(dev_server)) - before
        assert len(added) == 3  # the connection's own + two attached
    for _ in range(100):
        if not added & set(await engine_sessions(dev_server)):
            break
        await asyncio.sleep(0.02)
    assert not added & set(await engine_sessions(dev_server))


# --------------------------------------------------------------------------
# concurrency
# --------------------------------------------------------------------------


async def test_two_concurrent_clients(dev_server: DevServer) -> None:
    ns = unique_name()
    async with client(dev_server.ws_url, ns=ns) as a, client(dev_server.ws_url, ns=ns) as b:
        # The table first: 100 concurrent CREATEs into a table that does not
        # exist yet race to define it (and the namespace and database), and
        # the engine answers the losers with a retriable write conflict (seen
        # in CI). Concurrent writes of distinct records are what is tested.
        await a.query("DEFINE TABLE counter SCHEMALESS")

        async def writer(db: AsyncSurreal, tag: str) -> None:
            await asyncio.gather(
                *(db.query("CREATE counter SET tag = $t, i = $i", {"t": tag, "i": i}) for i in range(50))
            )

        await asyncio.gather(writer(a, "a"), writer(b, "b"))
        counts = await a.query(
            "SELECT tag, count() AS n FROM counter GROUP BY tag ORDER BY tag"
        )
        assert counts == [[{"tag": "a", "n": 50}, {"tag": "b", "n": 50}]]


async def test_a_slow_query_does_not_block_other_requests(dev_server: DevServer) -> None:
    async with client(dev_server.ws_url) as a, client(dev_server.ws_url) as b:
        slow = asyncio.create_task(a.query("SLEEP 1500ms; RETURN 'slow'").execute())
        await asyncio.sleep(0.05)
        assert await b.query("RETURN 'fast'") == ["fast"]
        # requests on one connection run concurrently too, as on a server
        assert await a.query("RETURN 'same connection'") == ["same connection"]
        assert not slow.done()
        assert (await slow)[-1] == "slow"


# --------------------------------------------------------------------------
# lifecycle
# --------------------------------------------------------------------------


async def test_stop_closes_clients_cleanly() -> None:
    server = DevServer("mem://")
    url = await server.start()
    db = AsyncSurreal(url)
    await db.connect()
    await db.signin(ROOT)
    assert server.connection_count == 1
    in_flight = asyncio.create_task(db.query("SLEEP 2s").execute())
    await asyncio.sleep(0.1)
    await server.stop()
    # stop cut the in-flight query instead of waiting for it: a stop that waited would
    # have let SLEEP finish and deliver its result here
    with pytest.raises(ConnectionUnavailableError):
        await asyncio.wait_for(in_flight, 5)
    with pytest.raises(ConnectionUnavailableError):
        await asyncio.wait_for(db.query("RETURN 1"), 5)
    await db.close()
    assert server.connection_count == 0
    with pytest.raises(RuntimeError):
        _ = server.ws_url  # a stopped server has no address
    await server.stop()  # idempotent


async def test_async_with_yields_the_url_and_picks_a_free_port() -> None:
    async with DevServer("mem://") as url_a, DevServer("mem://") as url_b:
        assert url_a != url_b
        async with client(url_a, ns="x") as a, client(url_b, ns="x") as b:
            await a.query("CREATE only_here:1")
            await b.query("CREATE elsewhere:1")
            tables_a = (await a.query("INFO FOR DB"))[0]["tables"]
            tables_b = (await b.query("INFO FOR DB"))[0]["tables"]
            assert "only_here" in tables_a and "only_here" not in tables_b  # separate engines


async def test_surrealkv_backing_store_persists(tmp_path) -> None:
    url = f"surrealkv://{tmp_path / 'db'}"
    async with started_dev_server(url) as server:
        async with client(server.ws_url, ns="p") as db:
            await db.query("CREATE kept:1 SET v = 1")
    async with started_dev_server(url, password="changed") as server:
        async with client(server.ws_url, root=False, ns="p") as db:
            await db.signin({"username": ROOT_USER, "password": "changed"})
            assert await db.query("SELECT VALUE v FROM kept:1") == [[1]]


async def test_locked_store_is_reported(tmp_path) -> None:
    url = f"surrealkv://{tmp_path / 'db'}"
    async with started_dev_server(url):
        with pytest.raises(DevServerError):
            await DevServer(url).start()


async def test_custom_root_user_and_no_root_user() -> None:
    async with started_dev_server(user="admin", password="s3cr'et\\") as server:
        async with client(server.ws_url, root=False) as db:
            await db.signin({"username": "admin", "password": "s3cr'et\\"})
            assert await db.query("RETURN 1") == [1]
    async with started_dev_server(user=None) as server:
        async with client(server.ws_url, root=False) as db:
            with pytest.raises(SurrealError):
                await db.signin(ROOT)
    with pytest.raises(ValueError):
        DevServer(user="bad name; REMOVE")


async def test_http_endpoints(dev_server: DevServer) -> None:
    base = dev_server.ws_url.replace("ws://", "http://").removesuffix("/rpc")

    def get(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(base + path, timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, ""

    assert (await asyncio.to_thread(get, "/health"))[0] == 200
    status, body = await asyncio.to_thread(get, "/version")
    assert status == 200 and body.startswith("surrealdb-3.")
    assert (await asyncio.to_thread(get, "/sql"))[0] == 404
    assert (await asyncio.to_thread(get, "/rpc"))[0] == 426


async def test_client_transactions_are_refused_not_hung(dev_server: DevServer) -> None:
    async with client(dev_server.ws_url) as db:
        session = await db.new_session()
        with pytest.raises(SurrealError):
            await asyncio.wait_for(session.begin_transaction(), 5)
        # BEGIN/COMMIT inside one query works
        ns = unique_name()
        await db.use(ns, ns)
        assert (await db.query("BEGIN; CREATE tx:1; COMMIT; SELECT VALUE id FROM tx"))[-1] == [
            RecordID("tx", 1)
        ]


def test_blocking_client_over_background_server() -> None:
    with background_dev_server() as server:
        with Surreal(server.ws_url) as db:
            db.signin(ROOT)
            db.use("sync", "sync")
            db.query("CREATE s:1 SET v = 'blocking'").execute()
            assert db.query("SELECT VALUE v FROM s:1").execute() == [["blocking"]]
            with pytest.raises(ThrownError):
                db.query("THROW 'amem:x: blocking'").execute()
            assert db.version().startswith("surrealdb-3.")
        with Surreal(server.ws_url) as other:
            with pytest.raises(NotAllowedError):
                other.query("RETURN 1").execute()


# --------------------------------------------------------------------------
# the CBOR splice
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        0, 23, 24, 255, 65536, 2**40, -1, -(2**40), 1.5, float("inf"), True, None,
        "", "x" * 300, b"\x00\xff" * 40, [], [1, [2, [3, []]]], {"a": {"b": [1.0, 2.0]}},
        [float(i) for i in range(1000)], RecordID("t", "x"), uuid.uuid4(),
        {"mixed": [1.0, 2, 3.0], "emb": [0.25] * 7, "s": "é"},
    ],
)
def test_skip_matches_the_encoder(value) -> None:
    item = encode(value)
    assert ds._skip(item + b"\x00", 0) == len(item)


def test_skip_handles_indefinite_lengths() -> None:
    # [_ 1, "a", {_ "k": 2}] and (_ "ab" "c")
    item = bytes.fromhex("9f 01 61 61 bf 61 6b 02 ff ff".replace(" ", ""))
    assert ds._skip(item, 0) == len(item)
    chunks = bytes.fromhex("7f 62 6162 61 63 ff".replace(" ", ""))
    assert ds._skip(chunks, 0) == len(chunks)
    with pytest.raises(ValueError):
        ds._skip(item[:-1], 0)


def test_session_splice_keeps_params_byte_exact() -> None:
    params = ["INSERT INTO t $rows", {"rows": [{"emb": [0.1] * 64, "id": RecordID("t", 1)}]}]
    frame = encode({"id": "1", "method": "query", "params": params})
    entries = ds._split_map(frame)
    sid = uuid.uuid4()
    entries.append(("session", ds._SESSION_KEY, ds._uuid_item(sid)))
    spliced = decode(ds._join_map(entries))
    assert spliced["session"] == sid
    assert encode(spliced["params"]) == encode(params)


def test_response_rewrite_strips_or_maps_the_session() -> None:
    engine_sid, visible = uuid.uuid4(), uuid.uuid4()
    response = encode({"id": "1", "result": [engine_sid, f"Session {engine_sid}"], "session": engine_sid})
    mapped = decode(ds._rewrite_response(response, engine_sid, visible, strip_session=False))
    assert mapped == {"id": "1", "result": [visible, f"Session {visible}"], "session": visible}
    stripped = decode(ds._rewrite_response(response, engine_sid, visible, strip_session=True))
    assert stripped == {"id": "1", "result": [visible, f"Session {visible}"]}
    # session not last: the slow path
    response = encode({"session": engine_sid, "id": "1", "result": 1})
    assert decode(ds._rewrite_response(response, engine_sid, visible, strip_session=True)) == {
        "id": "1", "result": 1
    }


def test_run_dev_server_entry_point() -> None:
    """The blocking CLI entry: warns, prints the URL, serves, stops on SIGINT, exits 0."""
    import re
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-c",
         "from amem_db.devserver import run_dev_server; run_dev_server('mem://', port=0)"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline()
        match = re.search(r"ws://127\.0\.0\.1:\d+/rpc", line)
        assert match, line
        with Surreal(match.group(0)) as db:
            db.signin(ROOT)
            assert db.query("RETURN 'served'").execute() == ["served"]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "DEVELOPMENT bridge" in err and "not a production server" in err
