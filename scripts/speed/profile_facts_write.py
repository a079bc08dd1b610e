"""Where a memory write's engine time goes, step by step, before and after the set-based
`fn::amem::facts::write_many` (issue 25 item 3).

* before: `SELECT VALUE fn::prof::write_old(r, v) FROM $items`, what `write_many` ran up to
  5afee0c, with that commit's `write`, `passages`, `check_vectors` and `entities::upsert`
  (OLD below, verbatim, renamed), and an instrumented copy of it (`fn::prof::write`,
  `time::now()` between its steps);
* after: `fn::amem::facts::write_many` of this tree, and an instrumented copy of its
  `store_many` made from surql/275_facts at run time (a clock before each statement).

One scratch mem:// database, filled to each of --sizes facts (fact requests through
`write_many`), then per request kind (one new-entity attribute triple; one ~200-character
passage) groups of --group requests of each path in turn, so both see the same store and
the same load; the paired ratio is the figure to read on a loaded machine.

    PYTHONPATH=. python scripts/speed/profile_facts_write.py --sizes 1000,10000 --per 128

Prints per path the median ms a request (client clock), the median after / before ratio of
the paired groups, and the mean ms a request per step (engine clock).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_facts_batch import LookupEmbedder, fact_request, passage_request, raw_vectors

from amem_db.connection import Target, open_connection
from amem_db.db import call
from amem_db.migrator import Migrator

MS = "LET $ms = |$a, $b| duration::millis($b - $a) + (duration::micros($b - $a) % 1000) / 1000.0;"

# fn::amem::facts::write as of 5afee0c (surql/275_facts), with clocks (its helpers of then: OLD below)
WRITE = """
DEFINE FUNCTION OVERWRITE fn::prof::write($request: any, $vectors: option<object>) -> object {
    LET $t0 = time::now();
    LET $d = fn::amem::facts::check($request);
    LET $t1 = time::now();
    LET $hash = fn::amem::facts::body_hash($request);
    LET $stored = fn::amem::facts::replay($d.idempotency_key, $hash);
    LET $t2 = time::now();
    LET $p = fn::amem::facts::plan($d);
    LET $t3 = time::now();
    LET $v = fn::prof::check_vectors_old($p, $vectors);
    LET $t4 = time::now();
    LET $write = rand::ulid();
    LET $ids = $p.entities.map(|$e| $e.id);
    LET $made = $d.triples.map(|$t| [$t.entity, $t.target]).flatten().filter(|$e| $e != NONE)
        .map(|$e| fn::prof::upsert_old($e, $d.scopes, $v.entities[array::find_index($ids, $e.id)], $write, $d.observed_at));
    LET $t5 = time::now();
    LET $aliases = $d.triples.filter(|$t| array::len($t.aliases) > 0)
        .map(|$t| fn::amem::entities::add_names($t.entity.id, $t.aliases, true, $d.scopes, $write, $d.observed_at));
    LET $speaker = IF $d.speaker = NONE { NONE } ELSE {
        fn::prof::upsert_old($d.speaker, $d.scopes, $v.entities[array::find_index($ids, $d.speaker.id)], $write, $d.observed_at) };
    fn::amem::facts::place($d.triples);
    LET $t6 = time::now();
    LET $mentioned = IF array::len($d.triples) = 0 AND $speaker = NONE { 0 } ELSE { fn::amem::mentions::of_names($write) };
    LET $t7 = time::now();
    LET $attr = $p.attributes.map(|$a| $a.triple);
    LET $c = { write: $write, scopes: $d.scopes, labels: $d.labels, observed_at: $d.observed_at, session_id: $d.session_id, role: $d.role, source: $d.source };
    LET $results = $d.triples.map(|$t, $i| fn::amem::facts::apply(object::extend($t, {
        index: $i, vector: $v.attributes[array::find_index($attr, $i)] }), $c));
    LET $t8 = time::now();
    LET $made = fn::prof::passages_old($d, $p, $v, $write);
    LET $t9 = time::now();
    fn::amem::mentions::spoken($made, $speaker, $d.scopes);
    LET $response = object::extend({ write: $write, scopes: $d.scopes, observed_at: $d.observed_at, triples: $results,
                      passages: $made }, IF $speaker = NONE { {} } ELSE { { speaker: $speaker } });
    fn::amem::facts::remember($d.idempotency_key, $hash, $write, $response);
    LET $t10 = time::now();
    %MS%
    RETURN { 'check': $ms($t0, $t1), 'hash + replay': $ms($t1, $t2), 'plan': $ms($t2, $t3), 'check_vectors': $ms($t3, $t4),
             'entities::upsert (node, name row, scope event)': $ms($t4, $t5), 'aliases, speaker, place': $ms($t5, $t6),
             'mentions::of_names': $ms($t6, $t7), 'apply (reconcile + row + events)': $ms($t7, $t8),
             'passages (row + events + mentions)': $ms($t8, $t9), 'spoken, response, remember': $ms($t9, $t10),
             'total': $ms($t0, $t10) };
} PERMISSIONS FULL;
""".replace("%MS%", MS)

# fn::amem::facts::write, passages, check_vectors and entities::upsert as of 5afee0c, verbatim (renamed): the "before" of
# write_many was `SELECT VALUE fn::amem::facts::write(request, vectors) FROM $items`
OLD = r"""
DEFINE FUNCTION OVERWRITE fn::prof::upsert_old($e: object, $scopes: array<string>, $vector: option<array>, $write: string, $at: datetime) -> record<entity> {
    -- Called by facts::write inside its transaction. It never reads the node: the
    -- caller may not see a node other scopes named (surql/050), and must not learn
    -- that it exists. A new node is created; an existing one is left as its creator
    -- made it (a record user cannot update it: the UPSERT is then a silent no-op).
    -- The canonical name row in the write's scopes makes the node readable there
    -- (the entity_scope_sync event widens its scopes).
    UPSERT $e.id SET name = name ?? $e.name, name_norm = $e.name_norm, type = $e.type, kind = kind ?? $e.type,
        embedding = embedding ?? $vector, category = category ?? 'knowledge', importance = importance ?? 0.8 RETURN NONE;
    fn::amem::entities::add_names($e.id, [$e.name], false, $scopes, $write, $at);
    RETURN $e.id;
} PERMISSIONS FULL;

DEFINE FUNCTION OVERWRITE fn::prof::check_vectors_old($p: object, $vectors: option<object>) -> object {
    IF $vectors = NONE { RETURN { model: NONE, entities: [], attributes: [], passages: [] } };
    fn::amem::facts::keys($vectors, ['model', 'entities', 'attributes', 'passages'], 'vectors');
    IF !type::is_string($vectors.model) OR string::len($vectors.model) == 0 {
        THROW 'amem:invalid_input: vectors.model must name the embedding model that made the vectors';
    };
    FOR $part IN ['entities', 'attributes', 'passages'] {
        LET $want = array::len($p[$part]);
        LET $got = $vectors[$part] ?? [];
        IF !type::is_array($got) OR array::len($got) != $want {
            THROW 'amem:invalid_input: vectors.' + $part + ' must hold ' + <string> $want + ' vectors (one per prepared item), got ' + <string> array::len($got ?? []);
        };
        FOR $v IN $got {
            IF !type::is_array($v) OR array::len($v) != 384 {
                THROW 'amem:embedding_mismatch: vectors.' + $part + ' holds a vector of dimension ' + <string> array::len($v ?? []) + '; this database is migrated for 384';
            };
        };
    };
    LET $known = (SELECT * FROM ONLY amem_setting:embedding);
    IF $known != NONE AND $known.model != $vectors.model {
        THROW 'amem:embedding_mismatch: this database holds embeddings from ' + $known.model + '; refusing vectors from ' + $vectors.model;
    };
    IF $known = NONE { UPSERT amem_setting:embedding CONTENT { model: $vectors.model, dimension: 384 } RETURN NONE };
    RETURN { model: $vectors.model, entities: $vectors.entities ?? [], attributes: $vectors.attributes ?? [], passages: $vectors.passages ?? [] };
} PERMISSIONS FULL;

DEFINE FUNCTION OVERWRITE fn::prof::passages_old($d: object, $p: object, $v: object, $write: string) -> array {
    IF array::len($p.passages) = 0 { RETURN [] };
    LET $category = $d.category ?? 'context';
    LET $rows = $p.passages.map(|$c, $i| {
        id: type::record('memory_chunk', $write + '_' + <string> $c.position), text: $c.text, position: $c.position,
        char_start: $c.char_start, char_end: $c.char_end, embedding: $v.passages[$i], write: $write,
        category: $category, importance: fn::amem::entities::initial_importance($category),
        session_id: $d.session_id, role: $d.role, source: $d.source, observed_at: $d.observed_at,
        recorded_at: $d.observed_at, valid_from: $d.valid_from, valid_until: $d.valid_until, labels: $d.labels, scopes: $d.scopes,
        geometry: $d.geometry,
    });
    LET $made = INSERT INTO memory_chunk $rows RETURN VALUE id;
    IF array::len($made) != array::len($rows) { THROW 'amem:permission_denied: the memory passages could not be stored with the rights of this credential' };
    fn::amem::mentions::of_passages($made);
    RETURN $made;
} PERMISSIONS FULL;

DEFINE FUNCTION OVERWRITE fn::prof::write_old($request: any, $vectors: option<object>) -> object {
    -- one statement, one transaction: a THROW anywhere (a bad triple, a vector
    -- mismatch, a refused row) leaves the database as it was
    LET $d = fn::amem::facts::check($request);
    LET $hash = fn::amem::facts::body_hash($request);
    LET $stored = fn::amem::facts::replay($d.idempotency_key, $hash);
    IF $stored != NONE { RETURN $stored };
    LET $p = fn::amem::facts::plan($d);
    LET $v = fn::prof::check_vectors_old($p, $vectors);
    LET $write = rand::ulid();
    LET $ids = $p.entities.map(|$e| $e.id);
    LET $made = $d.triples.map(|$t| [$t.entity, $t.target]).flatten().filter(|$e| $e != NONE)
        .map(|$e| fn::prof::upsert_old($e, $d.scopes, $v.entities[array::find_index($ids, $e.id)], $write, $d.observed_at));
    LET $aliases = $d.triples.filter(|$t| array::len($t.aliases) > 0)
        .map(|$t| fn::amem::entities::add_names($t.entity.id, $t.aliases, true, $d.scopes, $write, $d.observed_at));
    LET $speaker = IF $d.speaker = NONE { NONE } ELSE {
        fn::prof::upsert_old($d.speaker, $d.scopes, $v.entities[array::find_index($ids, $d.speaker.id)], $write, $d.observed_at) };
    fn::amem::facts::place($d.triples);
    -- the names this write added, in passages already stored (surql/280_mentions)
    -- (a write without triples or speaker added no name: nothing to look up)
    LET $mentioned = IF array::len($d.triples) = 0 AND $speaker = NONE { 0 } ELSE { fn::amem::mentions::of_names($write) };
    LET $attr = $p.attributes.map(|$a| $a.triple);
    LET $c = { write: $write, scopes: $d.scopes, labels: $d.labels, observed_at: $d.observed_at, session_id: $d.session_id, role: $d.role, source: $d.source };
    LET $results = $d.triples.map(|$t, $i| fn::amem::facts::apply(object::extend($t, {
        index: $i, vector: $v.attributes[array::find_index($attr, $i)] }), $c));
    LET $made = fn::prof::passages_old($d, $p, $v, $write);
    fn::amem::mentions::spoken($made, $speaker, $d.scopes);
    -- speaker only when given: a stored response drops NONE fields, so a replay would differ
    LET $response = object::extend({ write: $write, scopes: $d.scopes, observed_at: $d.observed_at, triples: $results,
                      passages: $made }, IF $speaker = NONE { {} } ELSE { { speaker: $speaker } });
    fn::amem::facts::remember($d.idempotency_key, $hash, $write, $response);
    RETURN $response;
} PERMISSIONS FULL;
"""

# pieces of a fact write, each timed alone on the same data (one entity, one attribute)
PIECES = """
DEFINE FUNCTION OVERWRITE fn::prof::pieces($request: any, $vectors: object) -> object {
    LET $t0 = time::now();
    LET $d = fn::amem::facts::check($request);
    LET $t1 = time::now();
    LET $tr = fn::amem::facts::check_triple($request.triples[0], 0, $d);
    LET $t2 = time::now();
    LET $ref = fn::amem::entities::ref('topic', $request.triples[0].entity.name, 'x');
    LET $t3 = time::now();
    LET $hash = fn::amem::facts::body_hash($request);
    LET $t4 = time::now();
    LET $tm = fn::amem::facts::time('2024-01-01T00:00:00Z', 'x');
    LET $t5 = time::now();
    LET $sc = fn::amem::scope::check_write([]);
    LET $t6 = time::now();
    %MS%
    RETURN { 'piece: check (whole)': $ms($t0, $t1), 'piece: check_triple': $ms($t1, $t2), 'piece: entities::ref': $ms($t2, $t3),
             'piece: body_hash': $ms($t3, $t4), 'piece: facts::time (a string)': $ms($t4, $t5), 'piece: scope::check_write': $ms($t5, $t6) };
} PERMISSIONS FULL;
""".replace("%MS%", MS)


def instrumented_store_many() -> str:
    """fn::prof::store_new: fn::amem::facts::store_new of this tree (surql/275_facts: the steps
    of store_many once the replays are set aside) with a clock before each top-level
    statement; it returns {step: ms} (steps named by the variable they set), and
    fn::prof::write_many: stage + entangled + that."""
    text = (Path(__file__).resolve().parents[2] / "surql" / "275_facts.surql.j2").read_text()
    a = text.index("DEFINE FUNCTION OVERWRITE fn::amem::facts::store_new(")
    body = text[a: text.index("} COMMENT", a)].splitlines()
    out, names = [], []
    for line in body[1:]:
        if line.startswith(("    RETURN $staged.map", "    IF array::len($new) = array::len($staged)")):
            continue  # the responses: the copy returns its clocks instead
        if line.startswith(("    LET $", "    fn::", "    IF ")):
            names.append(line.split()[1] if line.startswith("    LET") else line.split("(")[0].strip())
            out.append(f"    LET $__t{len(names)} = time::now();")
        out.append(line)
    names.append("end")
    out.append(f"    LET $__t{len(names)} = time::now();")
    pairs = ", ".join(f"'{i:02d} {names[i - 1]}': $ms($__t{i}, $__t{i + 1})" for i in range(1, len(names)))
    return ("DEFINE FUNCTION OVERWRITE fn::prof::store_new($staged: array<object>, $new: array<object>, $vecs: array) -> object {\n" + "\n".join(out)
            + f"\n    {MS}\n    RETURN {{ {pairs} }};\n}} PERMISSIONS FULL;\n" + """
DEFINE FUNCTION OVERWRITE fn::prof::write_many($requests: array, $vectors: array) -> object {
    LET $t0 = time::now();
    LET $recorded = (SELECT VALUE model FROM ONLY amem_setting:embedding);
    LET $staged = SELECT VALUE object::extend(fn::amem::facts::stage($this[0], $this[1], $recorded), { i: $this[2] })
        FROM array::transpose([$requests, $vectors, array::range(0, array::len($requests))]);
    LET $t1 = time::now();
    LET $tangled = fn::amem::facts::entangled($staged);
    LET $t2 = time::now();
    LET $steps = fn::prof::store_new($staged, $staged, $vectors);
    LET $t3 = time::now();
    %MS%
    RETURN object::extend({ '00 stage (check, hash, replay, plan, check_vectors)': $ms($t0, $t1), '00 entangled': $ms($t1, $t2), 'total': $ms($t0, $t3) }, $steps);
} PERMISSIONS FULL;
""".replace("%MS%", MS))


async def fill(conn, emb, rng, upto: int, start: int) -> int:
    (n,) = await conn.query("SELECT count() FROM attribute GROUP ALL")
    have = n[0]["count"] if n else 0
    i = start
    while have < upto:
        k = min(64, upto - have)
        reqs = [fact_request(rng, i + j) for j in range(k)]
        await call(conn, "fn::amem::facts::write_many", reqs, [raw_vectors(emb, r) for r in reqs])
        i, have = i + k, have + k
    return i


async def timed(conn, sql: str, items: list) -> float:
    t0 = time.perf_counter()
    await conn.query(sql, {"items": items})
    return time.perf_counter() - t0


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--per", type=int, default=64, help="requests of each kind per path and size")
    ap.add_argument("--group", type=int, default=16, help="requests per transaction")
    ap.add_argument("--store", help="profile on a copy of this store instead (e.g. surrealkv://<copy of a bench's "
                    "data/amem-10000>, ns bench, db b): no fill, --sizes ignored; it is written to")
    ap.add_argument("--ns", default="bench")
    ap.add_argument("--db", default="b")
    a = ap.parse_args()
    if a.store:
        conn = await open_connection(Target(url=a.store, ns=a.ns, db=a.db))
    else:
        conn = await open_connection(Target(url="mem://", ns="prof", db="facts"))
        await Migrator(conn).migrate()
    await conn.query(WRITE + OLD + PIECES + instrumented_store_many())
    emb, rng, i = LookupEmbedder(), random.Random(3), 0
    print(f"load {os.getloadavg()}")
    paths = {
        "before: SELECT VALUE write (5afee0c)": "SELECT VALUE fn::prof::write_old(r, v) FROM $items",
        "after: fn::amem::facts::write_many": "RETURN fn::amem::facts::write_many($items.r, $items.v)",
    }
    for size in ([0] if a.store else [int(s) for s in a.sizes.split(",")]):
        t0 = time.perf_counter()
        i = 10**7 if a.store else await fill(conn, emb, rng, size, i)  # a store's own topics end below 10**7
        if a.store:  # its recorded model (the vectors stay random)
            emb.name = (await conn.query("SELECT VALUE model FROM ONLY amem_setting:embedding"))[0]
        print(f"filled to {size} facts in {time.perf_counter() - t0:.1f} s, load {os.getloadavg()}", flush=True)
        for kind, make in (("fact", fact_request), ("passage", passage_request)):
            old_steps: dict[str, float] = defaultdict(float)
            new_steps: dict[str, float] = defaultdict(float)
            wall: dict[str, list[float]] = defaultdict(list)
            for _ in range(a.per // a.group):  # one group of each path in turn (interleaved)
                for name, sql in paths.items():
                    part = [make(rng, i + j) for j in range(a.group)]
                    i += a.group
                    wall[name].append(1000 * await timed(conn, sql, [{"r": r, "v": raw_vectors(emb, r)} for r in part]) / a.group)
                part = [make(rng, i + j) for j in range(a.group)]
                i += a.group
                (rows,) = await conn.query("SELECT VALUE fn::prof::write(r, v) FROM $items",
                                           {"items": [{"r": r, "v": raw_vectors(emb, r)} for r in part]})
                for row in rows:
                    for k, ms in row.items():
                        old_steps[k] += ms
                part = [make(rng, i + j) for j in range(a.group)]
                i += a.group
                (row,) = await conn.query("RETURN fn::prof::write_many($items.r, $items.v)",
                                          {"items": [{"r": r, "v": raw_vectors(emb, r)} for r in part]})
                for k, ms in row.items():
                    new_steps[k] += ms
            n = (a.per // a.group) * a.group
            print(f"\n{kind} requests at {size} facts: mean ms per request, {n} per path, groups of {a.group}, load {os.getloadavg()}")
            for name in paths:
                med = statistics.median(wall[name])
                print(f"  {name:60s} median {med:7.2f} ms a request = {1000 / med:6.1f}/s, mean {statistics.mean(wall[name]):7.2f} (client clock)")
            old_ms, new_ms = wall[list(paths)[0]], wall[list(paths)[1]]
            print(f"  after / before, median of the paired groups: {statistics.median(b / a for a, b in zip(old_ms, new_ms)):.2f}")
            print("  before, steps of facts::write (engine clock):")
            for k, ms in old_steps.items():
                print(f"    {k:58s} {ms / n:7.2f}")
            print("  after, steps of write_many (engine clock):")
            for k, ms in sorted(new_steps.items()):
                print(f"    {k:58s} {ms / n:7.2f}")
            sys.stdout.flush()
    print(f"load {os.getloadavg()}")
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
