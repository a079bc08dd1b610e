"""What mention maintenance (surql/280_mentions) adds to a document ingest and to a
one-entity fact write, on the embedded engine (mem://), without vectors.

    python scripts/speed/bench_mentions.py ../shared/datasets/scifact/corpus.jsonl --passages 10000 --entities 1000

1. 1,000 entity names drawn from the corpus (unigrams of document frequency 3..300,
   bigrams and trigrams seen in >= 3 documents; one in ten with an alias) are written,
   one fact write each, into the empty database.
2. Documents are ingested (vectors NONE) until the chunk count reaches --passages.
3. WITH mentions: --sample held-out documents are ingested one call each, and
   --writes held-out names are written one fact write each; per call: ms, edges made,
   and for ingest the time of fn::amem::mentions::of_passages alone (re-run on the
   same chunks: the same lookups, nothing new to write), for writes the passages the
   full-text step returned.
4. WITHOUT: in this throwaway database only, the two hooks are redefined to return 0,
   and another --sample documents / --writes names go through the same calls.
The figures land in docs/BENCHMARKS.md ("Mentions").
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import time
from collections import Counter
from pathlib import Path

from amem_db.connection import Target, close_quietly, open_connection
from amem_db.db import call, call_each
from amem_db.migrator import Migrator

WORD = re.compile(r"[a-z][a-z0-9-]{3,}")


def load(path: Path) -> list[dict]:
    docs = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        text = (row.get("text") or "").strip()
        if text:
            docs.append({"text": text, "mime_type": "text/plain", "source": f"bench#{row['_id']}", "title": row.get("title")})
    return docs


def names_from(docs: list[dict], n: int, rnd: random.Random) -> list[dict]:
    df1: Counter[str] = Counter()
    df2: Counter[str] = Counter()
    df3: Counter[str] = Counter()
    for d in docs:
        w = WORD.findall(d["text"].lower())
        df1.update(set(w))
        df2.update({" ".join(p) for p in zip(w, w[1:], strict=False)})
        df3.update({" ".join(p) for p in zip(w, w[1:], w[2:], strict=False)})
    uni = sorted(k for k, v in df1.items() if 3 <= v <= 300)
    bi = sorted(k for k, v in df2.items() if v >= 3)
    tri = sorted(k for k, v in df3.items() if v >= 3)
    picked = rnd.sample(uni, int(n * 0.6)) + rnd.sample(bi, int(n * 0.3)) + rnd.sample(tri, n - int(n * 0.6) - int(n * 0.3))
    rnd.shuffle(picked)
    out = []
    for name in dict.fromkeys(picked):
        alias = [rnd.choice(uni)] if rnd.random() < 0.1 else []
        out.append({"triples": [{"entity": {"type": "topic", "name": name, **({"aliases": alias} if alias else {})},
                                 "key": "seen", "value": "1"}], "scopes": ["org/bench"]})
    return out


async def count(conn, table: str) -> int:
    (rows,) = await conn.query(f"SELECT count() FROM {table} GROUP ALL")
    return rows[0]["count"] if rows else 0


def summary(ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=10) if len(ms) >= 2 else ms * 9
    return f"median {statistics.median(ms):.1f} ms, p90 {q[8]:.1f} ms"


async def ingest_each(conn, docs: list[dict], *, isolate: bool) -> dict:
    ms, iso, made, chunks = [], [], 0, 0
    for d in docs:
        e0 = await count(conn, "mentions")
        t0 = time.perf_counter()
        out = await call(conn, "fn::amem::documents::ingest", {**d, "scopes": ["org/bench"]}, None)
        ms.append((time.perf_counter() - t0) * 1000)
        made += await count(conn, "mentions") - e0
        (ids,) = await conn.query("SELECT VALUE id FROM chunk WHERE document = type::record($d)", {"d": out["document"]["id"]})
        chunks += len(ids)
        if isolate:
            t0 = time.perf_counter()
            await call(conn, "fn::amem::mentions::of_passages", ids)
            iso.append((time.perf_counter() - t0) * 1000)
    return {"ms": ms, "iso": iso, "edges": made, "chunks": chunks}


async def write_each(conn, writes: list[dict], *, candidates: bool) -> dict:
    ms, made, cands = [], 0, []
    for w in writes:
        if candidates:
            key = await call(conn, "fn::amem::mentions::key", w["triples"][0]["entity"]["name"])
            (fts,) = await conn.query("SELECT count() FROM chunk_fts WHERE text @@ $k GROUP ALL", {"k": key})
            cands.append(fts[0]["count"] if fts else 0)
        e0 = await count(conn, "mentions")
        t0 = time.perf_counter()
        await call(conn, "fn::amem::facts::write", w, None)
        ms.append((time.perf_counter() - t0) * 1000)
        made += await count(conn, "mentions") - e0
    return {"ms": ms, "edges": made, "cands": cands}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--passages", type=int, default=10000)
    ap.add_argument("--entities", type=int, default=1000)
    ap.add_argument("--sample", type=int, default=40, help="held-out documents per arm")
    ap.add_argument("--writes", type=int, default=40, help="held-out one-entity fact writes per arm")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--big", type=int, default=70, help="also ingest one document made of this many held-out ones (0: skip)")
    a = ap.parse_args()
    rnd = random.Random(11)
    docs = load(a.corpus)
    rnd.shuffle(docs)
    bigs = [{"text": "\n\n".join(d["text"] for d in docs[k * a.big:(k + 1) * a.big]), "mime_type": "text/plain",
             "source": f"bench#big{k}"} for k in range(2)] if a.big else []
    docs = docs[2 * a.big:]
    held, docs = docs[: 2 * a.sample], docs[2 * a.sample:]
    writes = names_from(docs, a.entities + 2 * a.writes, rnd)
    held_w, writes = writes[: 2 * a.writes], writes[2 * a.writes:]
    conn = await open_connection(Target(url="mem://", ns="bench", db="mentions"))
    try:
        await Migrator(conn).migrate()
        t0 = time.perf_counter()
        for i in range(0, len(writes), a.batch):
            res = await call_each(conn, "fn::amem::facts::write", [(w, None) for w in writes[i:i + a.batch]])
            assert all(ok for ok, _ in res), [r for ok, r in res if not ok][:1]
        t_names = time.perf_counter() - t0
        t0, n_docs = time.perf_counter(), 0
        while await count(conn, "chunk") < a.passages and n_docs < len(docs):
            batch = docs[n_docs:n_docs + a.batch]
            res = await call_each(conn, "fn::amem::documents::ingest", [({**d, "scopes": ["org/bench"]}, None) for d in batch])
            assert all(ok for ok, _ in res), [r for ok, r in res if not ok][:1]
            n_docs += len(batch)
        t_build = time.perf_counter() - t0
        stats = {t: await count(conn, t) for t in ("chunk", "entity", "entity_name", "mentions")}
        print(f"names: {len(writes)} writes in {t_names:.1f} s; corpus: {n_docs} documents in {t_build:.1f} s "
              f"({n_docs / t_build:.1f} docs/s, mentions on); {stats}")
        with_i = await ingest_each(conn, held[: a.sample], isolate=True)
        with_w = await write_each(conn, held_w[: a.writes], candidates=True)
        with_b = await ingest_each(conn, bigs[:1], isolate=False) if bigs else None
        # the WITHOUT arm: hooks that do nothing (this throwaway database only)
        await conn.query("DEFINE FUNCTION OVERWRITE fn::amem::mentions::of_passages($ids: array<record>) -> int { RETURN 0 } PERMISSIONS FULL;"
                         "DEFINE FUNCTION OVERWRITE fn::amem::mentions::of_names($write: string) -> int { RETURN 0 } PERMISSIONS FULL;")
        without_i = await ingest_each(conn, held[a.sample:], isolate=False)
        without_w = await write_each(conn, held_w[a.writes:], candidates=False)
        without_b = await ingest_each(conn, bigs[1:], isolate=False) if bigs else None
        print(f"ingest WITH mentions    ({a.sample} docs, {with_i['chunks']} chunks, {with_i['edges']} edges): {summary(with_i['ms'])}; "
              f"of_passages alone {summary(with_i['iso'])}")
        print(f"ingest WITHOUT mentions ({a.sample} docs, {without_i['chunks']} chunks): {summary(without_i['ms'])}")
        print(f"fact write WITH mentions    ({a.writes} writes, {with_w['edges']} edges, full-text candidates per name: "
              f"median {statistics.median(with_w['cands'])}, max {max(with_w['cands'])}): {summary(with_w['ms'])}")
        print(f"fact write WITHOUT mentions ({a.writes} writes): {summary(without_w['ms'])}")
        if with_b and without_b:
            print(f"one {len(bigs[0]['text'])}-char document ({with_b['chunks']} chunks, {with_b['edges']} edges): "
                  f"WITH {with_b['ms'][0]:.0f} ms, WITHOUT ({without_b['chunks']} chunks) {without_b['ms'][0]:.0f} ms")
    finally:
        await close_quietly(conn)


if __name__ == "__main__":
    asyncio.run(main())
