"""Memory write throughput (issue 25 items 3 and 5): passages/s and facts/s through
``mem.facts.write_many`` at several transaction group sizes, against one-by-one
``mem.facts.write``, and the p50 of a single ``mem.facts.write`` once the store holds
``--facts`` facts. The client path end to end (prepare round trip, embedder call,
write_many), with an embedder that returns precomputed vectors (random unit vectors of
the migrated dimension): embedding time is not what is measured here.

    PYTHONPATH=. python scripts/speed/measure_facts_batch.py --n 400 --facts 10000 [--url surrealkv://results/facts-batch]

Each group size writes --n requests into the same growing database, in the order
given, so later rows see a larger store; the default order starts with one by one.
Each row also gives `cpu_ms`, the process CPU time a request (the embedded engine runs in
this process, its threads included): on a machine shared with other work it moves far less
than the rates, so before / after runs compare by it.
A passage request: one memory passage of ~200 characters. A fact request: one
attribute triple of a new entity (entity topic/<i>, key summary), as in bench/recall.py.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
from typing import Any

from amem_db.client import Memory
from amem_db.connection import Target, open_connection
from amem_db.migrator import Migrator

WORDS = ("memory agent store recall fact passage index vector graph entity session turn note user "
         "project deadline meeting budget review launch design").split()


class LookupEmbedder:
    """Random unit vectors, one per distinct text, computed once (no model in the timing)."""

    name = "measure-random-384"
    dimension = 384

    def __init__(self) -> None:
        self.rng = random.Random(7)
        self.seen: dict[str, list[float]] = {}

    def _vec(self, text: str) -> list[float]:
        if text not in self.seen:
            v = [self.rng.gauss(0, 1) for _ in range(self.dimension)]
            n = sum(x * x for x in v) ** 0.5
            self.seen[text] = [x / n for x in v]
        return self.seen[text]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


def sentence(rng: random.Random, i: int) -> str:
    return f"note {i}: " + " ".join(rng.choice(WORDS) for _ in range(28))


def passage_request(rng: random.Random, i: int) -> dict[str, Any]:
    return {"text": sentence(rng, i), "category": "knowledge", "session_id": f"s{i // 50}", "role": "user",
            "source": {"kind": "turn", "ref": f"t-{i}"}}


def fact_request(rng: random.Random, i: int) -> dict[str, Any]:
    return {"triples": [{"entity": {"type": "topic", "name": f"topic {i}"}, "key": "summary", "value": sentence(rng, i)[:200]}],
            "category": "knowledge"}


try:  # the product's packed vectors (amem_db/wire.py); an older tree sends plain lists
    from amem_db.wire import Vector
except ImportError:
    Vector = list  # type: ignore[misc,assignment]


def raw_vectors(emb: LookupEmbedder, r: dict[str, Any]) -> dict[str, Any]:
    """The vectors argument of a request of this script (no prepare round trip), as the
    product's client sends them."""
    t = (r.get("triples") or [None])[0]
    if t is None:
        return {"model": emb.name, "entities": [], "attributes": [], "passages": [Vector(emb._vec(r["text"]))]}
    v = Vector(emb._vec(t["value"]))
    return {"model": emb.name, "entities": [Vector(emb._vec(t["entity"]["name"]))], "attributes": [v], "passages": []}


async def rate(mem: Memory, requests: list[dict[str, Any]], group: int, batch: int, raw: bool = False) -> dict[str, Any]:
    """Requests written in calls of ``batch`` requests, ``group`` per transaction (0: one by
    one). ``raw``: fn::amem::facts::write_many called directly with the vectors, no prepare."""
    from amem_db.db import call

    t0, c0 = time.perf_counter(), time.process_time()
    facts = passages = 0
    if raw:
        emb = mem.embedder
        assert isinstance(emb, LookupEmbedder)
        for at in range(0, len(requests), max(group, 1)):
            part = requests[at: at + max(group, 1)]
            done = await call(mem.conn, "fn::amem::facts::write_many", part, [raw_vectors(emb, r) for r in part])
            facts, passages = facts + sum(len(w["triples"]) for w in done), passages + sum(len(w["passages"]) for w in done)
    elif group == 0:
        for r in requests:
            w = await mem.facts.write(r)
            facts, passages = facts + len(w.triples), passages + len(w.passages)
    else:
        for at in range(0, len(requests), batch):
            result = await mem.facts.write_many(requests[at: at + batch], per_transaction=group)
            assert not result.errors, result.errors[:1]
            facts, passages = facts + result.facts, passages + result.passages
    s, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"path": "raw" if raw else "client", "group": group or "one by one", "requests": len(requests), "seconds": round(s, 2),
            "facts_per_s": round(facts / s, 1), "passages_per_s": round(passages / s, 1), "cpu_ms": round(1000 * cpu / len(requests), 2)}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="mem://")
    ap.add_argument("--n", type=int, default=400, help="requests per group size and kind")
    ap.add_argument("--groups", default="0,1,4,16,64", help="requests per transaction (0: one-by-one facts.write)")
    ap.add_argument("--batch", type=int, default=256, help="requests per write_many call (one embedder call)")
    ap.add_argument("--facts", type=int, default=10_000, help="store size (facts) for the single-write p50")
    ap.add_argument("--singles", type=int, default=60)
    ap.add_argument("--raw", action="store_true", help="call fn::amem::facts::write_many with the vectors (no prepare, no client)")
    a = ap.parse_args()
    conn = await open_connection(Target(url=a.url, ns="measure", db="facts_batch"))
    await Migrator(conn).migrate()
    mem = Memory(conn, embedder=LookupEmbedder())
    rng = random.Random(1)
    groups = [int(g) or (1 if a.raw else 0) for g in a.groups.split(",")]
    out: dict[str, Any] = {"url": a.url, "n": a.n, "batch": a.batch, "load_average": os.getloadavg(), "passages": [], "facts": []}
    i = 0
    for kind, make in (("passages", passage_request), ("facts", fact_request)):
        for g in groups:
            reqs = [make(rng, i + j) for j in range(a.n)]
            i += a.n
            row = await rate(mem, reqs, g, a.batch, a.raw)
            out[kind].append(row)
            print(kind, json.dumps(row), flush=True)
    (n,) = await conn.query("SELECT count() FROM attribute GROUP ALL")
    have = n[0]["count"] if n else 0
    if have < a.facts:  # fill up to --facts with the fastest batched form, then time single writes
        t0 = time.perf_counter()
        reqs = [fact_request(rng, i + j) for j in range(a.facts - have)]
        i += len(reqs)
        for at in range(0, len(reqs), a.batch):
            await mem.facts.write_many(reqs[at: at + a.batch], per_transaction=16)
        out["fill"] = {"facts": len(reqs), "seconds": round(time.perf_counter() - t0, 1),
                       "facts_per_s": round(len(reqs) / (time.perf_counter() - t0), 1)}
        print("fill", json.dumps(out["fill"]), flush=True)
    lat = []
    for j in range(a.singles):
        r = fact_request(rng, i + j)
        t0 = time.perf_counter()
        await mem.facts.write(r)
        lat.append((time.perf_counter() - t0) * 1000)
    (n,) = await conn.query("SELECT count() FROM attribute GROUP ALL")
    out["single_write"] = {"store_facts": n[0]["count"], "p50_ms": round(statistics.median(lat), 1),
                           "p95_ms": round(sorted(lat)[int(0.95 * len(lat)) - 1], 1), "calls": len(lat)}
    out["load_average_end"] = os.getloadavg()
    print(json.dumps(out, indent=1, default=str), flush=True)
    os._exit(0)  # the native engine may abort at exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    asyncio.run(main())
