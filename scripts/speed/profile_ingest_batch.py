"""Where the product ingest path's engine time goes, per chunk and per stage (issue 25
items 1-2). The path is the one `amem-db ingest` and `amem-db bench --systems
amem-ingest` run: `documents::prepare` for a batch of 16 documents (one round trip),
then `fn::amem::ingest::batch` in groups of 4 documents (amem_db/ingest_batch.py).

A throw-away instrumented copy of `fn::amem::ingest::batch` (`fn::prof::batch`,
`time::now()` between the steps; it calls the same helpers, so it stores what the
product stores) and of `prepare` (`fn::prof::prepare`: check, chunking, RAKE, apart)
run in a scratch mem:// database, documents of scifact / cranfield / cisi round-robin
(the bench's order), embeddings from the disk cache. In the same process, between
batches, the bulk floor: one INSERT of the very chunk rows and vectors, 50 a statement,
into a migrated database (both indexes, the chunk events), as `amem-db bench` does.

    nice -n 5 python scripts/speed/profile_ingest_batch.py --chunks 600 [--scopes org/acme/team]

Prints ms per chunk per stage (engine clock; the prepare round trip by the client
clock), chunks/s of the product path (prepare + batch round trips) and of the floor.
"""
import argparse
import asyncio
import os
import time
from collections import defaultdict
from pathlib import Path

from amem_db.connection import Target, open_connection
from amem_db.db import call_each
from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.harness.bench.data import roundrobin
from amem_db.ingest import items_from_file, texts_to_embed
from amem_db.migrator import Migrator

MS = "LET $ms = |$a, $b| duration::millis($b - $a) + (duration::micros($b - $a) % 1000) / 1000.0;"

PREPARE = """
DEFINE FUNCTION OVERWRITE fn::prof::prepare($doc: object) -> object {
    LET $t0 = time::now();
    LET $d = fn::amem::documents::check($doc);
    LET $t1 = time::now();
    LET $pieces = fn::amem::documents::passages($d);
    LET $t2 = time::now();
    LET $rake = fn::amem::keywords::rake_defaults();
    LET $kw = fn::amem::keywords::rake(fn::amem::keywords::window($d.text), $rake.top_n, $rake.min_score);
    LET $t3 = time::now();
    LET $ex = fn::amem::documents::existing($d.source, crypto::sha256($d.text));
    LET $t4 = time::now();
    %MS%
    RETURN { 'prepare: check': $ms($t0, $t1), 'prepare: chunking': $ms($t1, $t2), 'prepare: RAKE': $ms($t2, $t3),
             'prepare: existing': $ms($t3, $t4) };
} PERMISSIONS FULL;
""".replace("%MS%", MS)

# the write steps with clocks, shared by both shapes of the batch below: the document INSERT,
# the children, the keywords, the links, the answer (%VEC%, %CHILDREN%, %ATTACH%, %LINKS%
# filled in main() for the tree being profiled)
WRITE_STEPS = """
    LET $t1 = time::now();
    INSERT INTO document $write.map(|$x| object::extend(%FIELDS%, { id: $x.id })) RETURN NONE;
    LET $t2 = time::now();
    %CHILDREN%
    LET $t3 = time::now();
    %ATTACH%
    LET $t4 = time::now();
    %LINKS%
    LET $t5 = time::now();
    LET $answer = $write.map(|$x| { status: 'added', document: { id: $x.id, chunk_count: array::len($x.p.chunks), keywords: $x.p.keywords } });
    LET $t6 = time::now();
    %MS%
    RETURN { chunks: math::sum($write.map(|$x| array::len($x.p.chunks))), keywords: math::sum($write.map(|$x| array::len($x.p.keywords))),
             ms: { 'batch: plan (checks, chunking again, keyword check, vector check)': $ms($t0, $t1),
                   'batch: document INSERT (summary vector)': $ms($t1, $t2),
                   'batch: chunk INSERT + events + mentions': $ms($t2, $t3),
                   'batch: keyword nodes + edges (+ scope event)': $ms($t3, $t4),
                   'batch: links': $ms($t4, $t5), 'batch: answer': $ms($t5, $t6) } };
} PERMISSIONS FULL;
""".replace("%MS%", MS)
# a copy of fn::amem::ingest::batch (surql/255_ingest) with clocks, for new documents
# (the bench ingests new documents only; replacement steps are left out)
BATCH = """
DEFINE FUNCTION OVERWRITE fn::prof::batch($items: array) -> object {
    LET $t0 = time::now();
    LET $now = time::now();
    LET $plan = %PLAN%;
    LET $write = $plan.filter(|$x| !$x.unchanged);""" + WRITE_STEPS
# since issue 25 (2nd pass) the batch plans in ingest::batch and writes in ingest::write, the plan
# an argument there (no variable copied by every statement below it): the same steps, with clocks
BATCH_BY_ARGUMENT = """
DEFINE FUNCTION OVERWRITE fn::prof::batch($items: array) -> object {
    LET $t0 = time::now();
    LET $now = time::now();
    RETURN fn::prof::write($items.map(|$it, $i| fn::amem::ingest::plan($it, $now, $i)).filter(|$x| !$x.unchanged), $items, $t0);
} PERMISSIONS FULL;
DEFINE FUNCTION OVERWRITE fn::prof::write($write: array, $items: array, $t0: datetime) -> object {""" + WRITE_STEPS
# since issue 25 session 13 the batch checks the vectors' dimensions as it computes the summary
# vectors (documents::summary), before the write, by item index: the plan stage includes both
BATCH_CHECKED = """
DEFINE FUNCTION OVERWRITE fn::prof::batch($items: array) -> object {
    LET $t0 = time::now();
    LET $now = time::now();
    LET $sources = $items.map(|$it| $it.doc.source).filter(|$s| type::is_string($s));
    LET $known = IF array::len($sources) = 0 { [] } ELSE { SELECT id, source, content_hash, geometry, title FROM document WHERE source IN $sources };
    RETURN fn::prof::run($items.map(|$it, $i| fn::amem::ingest::plan($it, $now, $i, $known)), $items, $t0);
} PERMISSIONS FULL;
DEFINE FUNCTION OVERWRITE fn::prof::run($plan: array, $items: array, $t0: datetime) -> object {
    FOR $m IN array::distinct($plan.filter(|$x| !$x.unchanged AND $x.model != NONE).map(|$x| $x.model)) { fn::amem::documents::check_model($m) };
    RETURN fn::prof::write($plan.filter(|$x| !$x.unchanged), $items, $t0,
        array::transpose([$plan.map(|$x| $x.unchanged), $items]).map(|$pi| IF $pi[0] { NONE } ELSE { fn::amem::documents::summary($pi[1].vectors) }));
} PERMISSIONS FULL;
DEFINE FUNCTION OVERWRITE fn::prof::write($write: array, $items: array, $t0: datetime, $summaries: array) -> object {""" + WRITE_STEPS
COUNTS = """
DEFINE FUNCTION OVERWRITE fn::prof::counts() -> array {
    RETURN [count(SELECT id FROM keyword), count(SELECT id FROM keyword WHERE embedding != NONE), count(SELECT id FROM amem_index_write)];
} PERMISSIONS FULL;
"""
# experiment: keyword nodes written without their vectors (they still cross the SDK)
ATTACH_NOVEC = "fn::amem::ingest::attach($write.map(|$x| object::extend($x, { v: object::extend($x.v, { keywords: [] }) })));"
LINKS_ALL = "FOR $x IN $write { fn::amem::documents::link($x.id) };"
# since issue 25 the batch skips documents that have no links to make (surql/255_ingest)
LINKS_GUARDED = """FOR $x IN $write {
        LET $key = IF $x.d.source != NONE { fn::amem::documents::link_key($x.d.source) } ELSE { NONE };
        LET $named = $key != NONE AND array::len(SELECT VALUE id FROM document WHERE link_keys CONTAINS $key LIMIT 1) > 0;
        IF $x.replaces OR array::len($x.d.links) > 0 OR $named { fn::amem::documents::link($x.id) };
    };"""
CHILDREN_LOOP = "FOR $x IN $write { fn::amem::documents::write_children($x.id, $x.d, $x.p, %VEC%) };"
CHILDREN_SET = "fn::amem::ingest::children($write, $items);"


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=600)
    ap.add_argument("--data-root", default=str(Path(__file__).resolve().parents[3] / "shared" / "datasets"))
    ap.add_argument("--per-transaction", type=int, default=4)
    ap.add_argument("--scopes", default="", help="comma-separated scope paths every document (and floor row) carries, e.g. org/acme/team")
    a = ap.parse_args()
    root = Path(a.data_root)
    per_ds = [items_from_file((root / n / "corpus.jsonl").resolve()) for n in ("scifact", "cranfield", "cisi")]
    items = [it for group in roundrobin(per_ds) for it in group]
    scopes = [p for p in a.scopes.split(",") if p]
    if scopes:
        for it in items:
            it.doc["scopes"] = scopes
    emb = CachedEmbedder(get_embedder("minilm"))
    conn = await open_connection(Target(url="mem://", ns="p", db="steps"))
    floor = await open_connection(Target(url="mem://", ns="p", db="floor"))
    for c in (conn, floor):
        await Migrator(c).migrate({"embedding_dim": emb.dimension})
    info = await conn.query("INFO FOR DB")
    children = CHILDREN_SET if "ingest::children" in str(info) else CHILDREN_LOOP
    links = LINKS_GUARDED if "$named" in str(info) else LINKS_ALL
    attach = ATTACH_NOVEC if os.environ.get("PROF_NOKWVEC") else "fn::amem::ingest::attach($write);"
    # since issue 25 (2nd pass) the plan holds the item's index, not its vectors: they are read from $items where written
    by_index = "ingest::vectors" in str(info)
    plan = "$items.map(|$it, $i| fn::amem::ingest::plan($it, $now, $i))" if by_index else "$items.map(|$it| fn::amem::ingest::plan($it, $now))"
    vec = "fn::amem::ingest::vectors($items[$x.i].vectors)" if by_index else "$x.v"
    shape = BATCH
    fields = f"fn::amem::documents::fields($x.d, $x.p, {vec}, $x.hash)"
    if "ingest::write" in str(info):
        shape, children = BATCH_BY_ARGUMENT, CHILDREN_SET
    if "documents::summary" in str(info):
        shape, fields = BATCH_CHECKED, "fn::amem::documents::fields($x.d, $x.p, $x.model, $summaries[$x.i], $x.hash)"
    await conn.query((PREPARE + COUNTS + shape.replace("%CHILDREN%", children).replace("%ATTACH%", attach).replace("%LINKS%", links))
                     .replace("%PLAN%", plan).replace("%FIELDS%", fields).replace("%VEC%", vec))
    sums: dict[str, float] = defaultdict(float)
    t_prep = t_store = t_floor = 0.0
    n_chunks = n_kw = n_docs = 0
    pos = 0
    while n_chunks < a.chunks and pos < len(items):
        batch = items[pos:pos + 16]
        pos += 16
        docs = [it.doc for it in batch]
        t0 = time.perf_counter()
        prepared = await call_each(conn, "fn::amem::documents::prepare", [(d,) for d in docs])
        t_prep += time.perf_counter() - t0
        for ok, split in await call_each(conn, "fn::prof::prepare", [(d,) for d in docs]):
            assert ok, split
            for k, ms in split.items():
                sums[k] += ms
        calls, rows = [], []
        for d, (ok, p) in zip(docs, prepared):
            assert ok, p
            parts = texts_to_embed(p, d)
            vecs = emb.embed_documents([t for part in parts.values() for t in part])
            v, i = {"model": emb.name}, 0
            for key, part in parts.items():
                v[key], i = vecs[i:i + len(part)], i + len(part)
            # since issue 25 (2nd pass) prepare seals its chunks and the batch takes them back (amem_db/ingest_batch.py)
            calls.append({"doc": d, "keywords": p["keywords"], "vectors": v}
                         | ({"chunks": p["chunks"], "seal": p["seal"]} if p.get("seal") else {}))
            rows += [{"text": c["text"], "position": c["position"], "char_start": c["char_start"], "char_end": c["char_end"],
                      "embedding": v["chunks"][j], "mime_type": "text/plain", "scopes": scopes, "key": f"{pos}_{len(rows) + j}"}
                     for j, c in enumerate(p["chunks"])]
        groups = [calls[i:i + a.per_transaction] for i in range(0, len(calls), a.per_transaction)]
        t0 = time.perf_counter()
        out = await call_each(conn, "fn::prof::batch", [(g,) for g in groups])
        t_store += time.perf_counter() - t0
        for ok, r in out:
            assert ok, r
            n_chunks += r["chunks"]
            n_kw += r["keywords"]
            for k, ms in r["ms"].items():
                sums[k] += ms
        n_docs += len(docs)
        t0 = time.perf_counter()
        for j in range(0, len(rows), 50):
            await floor.query("INSERT INTO chunk $rows.map(|$r| object::extend(object::remove($r, 'key'), "
                              "{id: type::record('chunk', $r.key), document: document:floor})) RETURN NONE", {"rows": rows[j:j + 50]})
        t_floor += time.perf_counter() - t0
    (_, counts), = await call_each(conn, "fn::prof::counts", [()])
    print(f"{n_docs} documents, {n_chunks} chunks, {n_kw} keyword edges, keyword rows {counts[0]} "
          f"(with a vector {counts[1]}), index-log rows {counts[2]}; children: {children.replace('%VEC%', vec)}")
    print(f"{'stage':70s} ms/chunk")
    print(f"{'prepare round trip (client clock; check, chunking, RAKE, existing)':70s} {1000 * t_prep / n_chunks:7.2f}")
    for k, ms in sums.items():
        if k.startswith("prepare"):
            print(f"  {k:68s} {ms / n_chunks:7.2f}")
    print(f"{'ingest::batch round trips (client clock)':70s} {1000 * t_store / n_chunks:7.2f}")
    for k, ms in sums.items():
        if k.startswith("batch"):
            print(f"  {k:68s} {ms / n_chunks:7.2f}")
    total = t_prep + t_store
    print(f"product path (prepare + batch): {1000 * total / n_chunks:.2f} ms/chunk = {n_chunks / total:.1f} chunks/s")
    print(f"floor (bulk INSERT of the same chunks, 50 a statement): {1000 * t_floor / n_chunks:.2f} ms/chunk = "
          f"{n_chunks / t_floor:.1f} chunks/s; product = {t_floor / total:.2f}x the floor")
    os._exit(0)


asyncio.run(main())
