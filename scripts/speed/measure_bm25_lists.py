"""Issue 24's two BM25 designs, measured (docs/QUERY-DESIGN.md "BM25 at scale").

  python scripts/speed/measure_bm25_lists.py postings 2000    # impact-ordered posting rows: write and read cost
  python scripts/speed/measure_bm25_lists.py lists 4200 [URL] # champion lists (the built leg) vs the engine's statement

``postings`` writes passages of SciFact / Cranfield / CISI with one posting row per
(token, passage) made by a stored function in the writing transaction, next to the same
passages under a full-text index, and times a BM25 read of each. ``lists`` ingests the first
N SciFact documents through the product (no embeddings), builds the lists, and times the two
legs inside one statement each (so no round trip is counted). The datasets are read from
``AMEM_DATASETS`` or ``../shared/datasets``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from typing import Any

from amem_db import bm25lists
from amem_db.client import Memory
from amem_db.connection import Target, open_connection
from amem_db.embedding import get_embedder
from amem_db.harness.paths import datasets_root
from amem_db.migrator import Migrator

DATA = datasets_root()

POSTINGS = """
DEFINE TABLE p SCHEMALESS; DEFINE TABLE post SCHEMALESS; DEFINE TABLE q SCHEMALESS;
DEFINE INDEX q_text ON q FIELDS text FULLTEXT ANALYZER knowledge_text BM25(1.2,0.75);
DEFINE FUNCTION OVERWRITE fn::probe::postings($pid: string, $text: string) -> array {
    LET $toks = search::analyze('knowledge_text', $text);
    LET $dl = array::len($toks);
    LET $norm = 1.2 * (0.25 + 0.75 * $dl / 120.0);
    RETURN (SELECT count() AS tf, tok FROM $toks.map(|$t| {tok: $t}) GROUP BY tok).map(|$g| {
        LET $tfp = 1 + math::ln($g.tf);
        RETURN { id: [$g.tok, 1 - $tfp / ($tfp + $norm), $pid], tf: $g.tf, dl: $dl };
    });
};
"""
POSTING_READ = """
LET $toks = array::distinct(search::analyze('knowledge_text', fn::amem::query::terms($q).text));
LET $lists = $toks.map(|$t| (SELECT VALUE [id[2], tf, dl] FROM post:[$t, NONE]..=[$t, 2]));
LET $n = $count; LET $avg = 120.0;
LET $flat = array::flatten($lists.map(|$l| {
    LET $df = array::len($l);
    LET $idf = math::max([0, math::ln(($n - $df + 0.5) / ($df + 0.5))]);
    RETURN IF $idf = 0 { [] } ELSE { $l.map(|$x| { c: $x[0], s: $idf * 2.2 * (1 + math::ln($x[1])) / (1 + math::ln($x[1]) + 1.2 * (0.25 + 0.75 * $x[2] / $avg)) }) };
}));
RETURN SELECT c, math::sum(s) AS score FROM $flat GROUP BY c ORDER BY score DESC LIMIT 256;
"""
ENGINE_READ = "LET $t = fn::amem::query::terms($q).text; RETURN SELECT id, search::score(1) AS score FROM q WHERE text @1,OR@ $t ORDER BY score DESC LIMIT 256;"
LEGS = """LET $t = fn::amem::query::terms($q).text; LET $f = fn::amem::query::legs_filter({}, NONE);
LET $a = time::now(); LET $x = fn::amem::query::bm25_engine_chunk($t, $f); LET $b = time::now();
LET $y = fn::amem::query::bm25_chunk($t, $f); LET $c = time::now();
RETURN [duration::millis($b - $a), duration::millis($c - $b)];"""


def queries(n: int = 30) -> list[str]:
    return [json.loads(line)["text"] for line in (DATA / "scifact" / "queries.jsonl").open()][:n]


async def p50(conn: Any, sql: str, **params: Any) -> float:
    times = []
    for q in queries():
        t = time.perf_counter()
        await conn.query(sql, {"q": q, **params})
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


async def postings(n: int) -> None:
    conn = await open_connection(Target(url="mem://", ns="m", db="postings"))
    await Migrator(conn).migrate()  # the analyser and fn::amem::query::terms, as shipped
    await conn.query(POSTINGS)
    texts = [(d.get("title", "") + " " + d["text"])[:1200] for name in ("scifact", "cranfield", "cisi")
             for d in map(json.loads, (DATA / name / "corpus.jsonl").open())][:n]
    for table, body in (("post", "CREATE type::record('p', $r.id) CONTENT {text: $r.text} RETURN NONE; "
                                 "INSERT INTO post fn::probe::postings($r.id, $r.text) RETURN NONE;"),
                        ("q", "CREATE type::record('q', $r.id) CONTENT {text: $r.text} RETURN NONE;")):
        t = time.perf_counter()
        for i in range(0, len(texts), 10):
            rows = [{"id": f"d{j}", "text": texts[j]} for j in range(i, min(i + 10, len(texts)))]
            await conn.query(f"BEGIN; FOR $r IN $rows {{ {body} }}; COMMIT;", {"rows": rows})
        print(f"{table}: {len(texts) / (time.perf_counter() - t):.0f} passages/s written")
    (count,) = await conn.query("RETURN count(SELECT id FROM post)")
    print(f"postings per passage: {count / len(texts):.0f}")
    print(f"read p50: postings {await p50(conn, POSTING_READ, count=len(texts)):.1f} ms, engine {await p50(conn, ENGINE_READ):.1f} ms")


async def lists(n: int, url: str) -> None:
    conn = await open_connection(Target(url=url, ns="m", db="lists"))
    await Migrator(conn).migrate()
    (have,) = await conn.query("RETURN count(SELECT id FROM chunk_fts)")
    if have == 0:  # a surrealkv URL keeps the load for the next run
        mem = Memory(conn, embedder=get_embedder("hash:384"))
        for d in [json.loads(line) for line in (DATA / "scifact" / "corpus.jsonl").open()][:n]:
            await mem.documents.ingest_text(d["text"], source=f"s{d['_id']}", title=d.get("title") or None, embed=False)
        built = await bm25lists.build(conn)
        print(f"build: {built['seconds']} s over {built['rows']}")
    e, li = [], []
    for q in queries():
        engine_ms, lists_ms = (await conn.query(LEGS, {"q": q}))[-1]
        e.append(engine_ms)
        li.append(lists_ms)
    print(f"engine statement p50 {statistics.median(e):.1f} ms, champion lists p50 {statistics.median(li):.1f} ms")
    await conn.close()


def main() -> None:
    what, n = sys.argv[1], int(sys.argv[2])
    asyncio.run(postings(n) if what == "postings" else lists(n, sys.argv[3] if len(sys.argv) > 3 else "mem://"))
    os._exit(0)  # docs/ENGINE-ISSUES.md #4


if __name__ == "__main__":
    main()
