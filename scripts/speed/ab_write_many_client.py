"""Memory writes on a kept bench store, paths interleaved by blocks of 512 requests (issue 25,
session 15; docs/BENCHMARKS.md "Batched memory writes (issue 25 item 3)"):

* ``raw``: ``fn::amem::facts::write_many`` with the vectors given, groups of 16, one call at a
  time (the bench's memory path before session 15);
* ``client:F:G``: ``mem.facts.write_many`` (prepare, a lookup embedder of the bench passages' own
  vectors, the client's groups), F groups in flight, G requests a group (0: the default weight).

One-fact requests (entity ``topic <i>``, as the bench writes them) or one-passage requests
(``--kind passages``). Work on a copy: the store is written to, and the topics it writes are
numbered from --start so that a second run on the same copy writes new entities. ``--fill N``:
first write N passages through the client in the same open (does a larger memtable, all that
was written since the open, slow the writes down?).

    cp -r results/bench-sN/db/amem-10000 <copy>   # a bench run with --keep-db
    PYTHONPATH=. python scripts/speed/ab_write_many_client.py surrealkv://<copy> results/bench-sN/data \\
        --paths raw,client:1:0,client:2:16,client:2:32 --blocks 3
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from typing import Any

import numpy as np

from amem_db.client import Memory
from amem_db.connection import Target, open_connection
from amem_db.db import call
from amem_db.harness.bench.recall import BenchVectors
from amem_db.wire import Vector

BLOCK = 512


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("data", help="the bench run's data folder (passages.json, vectors.npy)")
    ap.add_argument("--kind", choices=["facts", "passages"], default="facts")
    ap.add_argument("--paths", default="raw,client:1:0,client:2:0")
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--start", type=int, default=100_000)
    ap.add_argument("--fill", type=int, default=0, help="passages written in this open before the blocks")
    a = ap.parse_args()
    conn = await open_connection(Target(url=a.store, ns="bench", db="b"))
    rows = json.load(open(f"{a.data}/passages.json"))["passages"]
    vecs = np.load(f"{a.data}/vectors.npy").astype(np.float32)
    (model,) = await conn.query("SELECT VALUE model FROM ONLY amem_setting:embedding")
    paths = a.paths.split(",")
    end = a.start + BLOCK * a.blocks * len(paths)
    emb = BenchVectors(rows, vecs, model, 0)
    emb.by_text.update({f"topic {i}": i % len(vecs) for i in range(a.start, end)})
    mem = Memory(conn, embedder=emb)

    def request(i: int) -> dict[str, Any]:
        text = rows[i % len(rows)]["text"]
        if a.kind == "facts":
            return {"triples": [{"entity": {"type": "topic", "name": f"topic {i}"}, "key": "summary", "value": text[:200]}],
                    "category": "knowledge"}
        return {"text": text, "category": "knowledge", "source": {"kind": "document", "ref": f"ab-{i}"}}

    def vectors(i: int) -> dict[str, Any]:
        v = Vector(vecs[i % len(vecs)].tolist())
        parts = {"entities": [v], "attributes": [v], "passages": []} if a.kind == "facts" else {"entities": [], "attributes": [], "passages": [v]}
        return {"model": model} | parts

    if a.fill:
        t0 = time.perf_counter()
        for at in range(0, a.fill, BLOCK):
            await mem.facts.write_many([{"text": rows[i % len(rows)]["text"], "category": "knowledge",
                                         "source": {"kind": "document", "ref": f"fill-{a.start}-{i}"}} for i in range(at, min(at + BLOCK, a.fill))])
        print(f"filled: {a.fill} passages in {time.perf_counter() - t0:.1f} s")
    rates: dict[str, list[float]] = {p: [] for p in paths}
    at = a.start
    for _ in range(a.blocks):
        for path in paths:
            idx = list(range(at, at + BLOCK))
            at += BLOCK
            t0 = time.perf_counter()
            if path == "raw":
                for g in range(0, BLOCK, 16):
                    part = idx[g: g + 16]
                    await call(conn, "fn::amem::facts::write_many", [request(i) for i in part], [vectors(i) for i in part])
            else:
                _, flight, per = path.split(":")
                result = await mem.facts.write_many([request(i) for i in idx], in_flight=int(flight), per_transaction=int(per) or None)
                assert not result.errors, result.errors[:1]
            rates[path].append(BLOCK / (time.perf_counter() - t0))
    for path, r in rates.items():
        print(f"{a.kind} {path:14s} median {statistics.median(r):6.1f}/s  {[round(x) for x in r]}")
    print(f"load {os.getloadavg()[0]:.1f}")
    os._exit(0)  # the native engine may abort at exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    asyncio.run(main())
