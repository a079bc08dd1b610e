"""The ``throughput`` worker: queries/s with 1, 2 and 4 concurrent clients, through
the Python client (``Memory.documents.query_many``, hybrid, k 10), (a) on the
embedded engine and (b) through the dev server (amem_db/devserver.py) over ws.

The corpus is bulk-loaded into an on-disk store (bench/load.py: the HNSW graphs
rebuilt, the store reopened), because the dev server runs in a process of its own
and must open the same files; with ``--backend mem`` the worker uses
``surrealkv://``. Every client runs the same ``per_client`` queries (the bench's
queries, cycled), with their precomputed vectors (``Precomputed``: the figure is
the client and the engine, not the embedding model).

* embedded: one connection (an embedded store has one per process), ``c`` queries
  in flight on it (``query_many(concurrency=c)``);
* ws, ``c`` connections: ``c`` clients, each its own websocket, one query at a time;
* ws, one connection: one client keeping ``c`` queries in flight on one websocket.

queries/s = all queries answered / wall time of the round, after a warm-up."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .data import corpus_of
from .load import Reopener, bulk_load, chunk_key
from .measure import peak_rss_mb

CLIENTS = (1, 2, 4)
QUERY_OPTIONS: dict[str, Any] = {"mode": "hybrid", "k": 10, "threshold": -1}
SERVER_START_SECONDS = 120


class Precomputed:
    """An embedder that knows the bench queries' vectors (and nothing else)."""

    symmetric = False

    def __init__(self, name: str, texts: list[str], vectors: Any) -> None:
        self._name = name
        self._dim = int(vectors.shape[1])
        self._by_text: dict[str, list[float]] = {t: v.tolist() for t, v in zip(texts, vectors)}

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dim

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("the throughput bench embeds no documents")

    def embed_query(self, text: str) -> list[float]:
        return self._by_text[text]


def _ranked(res: Any) -> list[str] | str:
    return type(res).__name__ if isinstance(res, Exception) else [chunk_key(h.chunk.id) for h in res.results]


async def timed_round(clients: list[Any], queries: list[str], concurrency: int) -> dict[str, Any]:
    """Each client runs ``queries`` with ``concurrency`` in flight; all clients at once."""
    t0 = time.perf_counter()
    outs = await asyncio.gather(*(m.documents.query_many(queries, concurrency=concurrency, **QUERY_OPTIONS)
                                  for m in clients))
    wall = time.perf_counter() - t0
    answered = sum(1 for out in outs for r in out if not isinstance(r, Exception))
    errors = sorted({f"{type(r).__name__}: {r}"[:200] for out in outs for r in out if isinstance(r, Exception)})
    return {"clients": len(clients), "in_flight_per_client": concurrency, "queries": len(queries) * len(clients),
            "answered": answered, "seconds": round(wall, 3), "qps": round(answered / wall, 2), "errors": errors,
            "ranked": [_ranked(r) for r in outs[0]]}


async def measure_rounds(open_client: Any, queries: list[str], shape: str) -> list[dict[str, Any]]:
    """``shape``: "in_flight" (one client, c in flight) or "connections" (c clients, one each)."""
    rounds = []
    for c in CLIENTS:
        clients = [await open_client() for _ in range(1 if shape == "in_flight" else c)]
        try:
            for m in clients:  # warm-up: a connection's first queries pay for its caches
                await m.documents.query_many(queries[:2], concurrency=1, **QUERY_OPTIONS)
            rounds.append({"shape": shape, "c": c} | await timed_round(clients, queries, c if shape == "in_flight" else 1))
        finally:
            for m in clients:
                await m.close()
    return rounds


def start_dev_server(url: str) -> tuple[subprocess.Popen[str], str]:
    """``run_dev_server(url, port=0)`` in a process of its own; its ws URL."""
    code = f"from amem_db.devserver import run_dev_server; run_dev_server({url!r}, port=0)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + SERVER_START_SECONDS
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if "ws://" in line:
            return proc, "ws://" + line.split("ws://", 1)[1].split()[0]
    proc.kill()
    raise RuntimeError(f"the dev server on {url} did not start (exit {proc.poll()})")


def stop_dev_server(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def worker_throughput(n: int, data_dir: Path, db_root: Path, backend: str, per_client: int,
                            batch: int) -> dict[str, Any]:
    from amem_db import Memory
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.migrator import Migrator

    rows, vecs, qtexts, qvecs, meta = corpus_of(data_dir, n)
    embedder = Precomputed(str(meta.get("embedder") or "bench"), qtexts, qvecs)
    queries = [qtexts[i % len(qtexts)] for i in range(per_client)]
    scheme = "surrealkv" if backend == "mem" else backend
    db_path = db_root / f"throughput-{n}"
    shutil.rmtree(db_path, ignore_errors=True)
    url = f"{scheme}://{db_path}"
    target = Target(url=url, ns="bench", db="t")
    db = Reopener(target, await open_connection(target))
    result: dict[str, Any] = {"system": "throughput", "size": n, "backend": scheme, "per_client": per_client,
                              "clients": list(CLIENTS), "options": QUERY_OPTIONS}
    try:
        await Migrator(db.conn).migrate({"embedding_dim": int(vecs.shape[1])})
        result["ingest"] = await bulk_load(db, rows, vecs, batch)

        # one Memory on the one embedded connection (its close would close the connection)
        m = Memory(db.conn, embedder=embedder)
        embedded_rounds = []
        for c in CLIENTS:
            await m.documents.query_many(queries[:2], concurrency=1, **QUERY_OPTIONS)
            embedded_rounds.append({"shape": "embedded", "c": c} | await timed_round([m], queries, c))
    finally:
        await close_quietly(db.conn)
    proc, ws_url = start_dev_server(url)
    try:
        async def remote() -> Memory:
            return await Memory.open(url=ws_url, ns="bench", db="t", user="root", password="root", embedder=embedder)

        ws_rounds = await measure_rounds(remote, queries, "connections") + await measure_rounds(remote, queries, "in_flight")
    finally:
        stop_dev_server(proc)
    rounds = embedded_rounds + ws_rounds
    first = rounds[0]["ranked"]
    result["results_match"] = all(r["ranked"] == first for r in rounds)
    for r in rounds:
        r.pop("ranked")
    result["rounds"] = rounds
    result["peak_rss_mb"] = peak_rss_mb()
    return result
