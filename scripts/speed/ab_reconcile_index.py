"""A single ``mem.facts.write`` (one triple, a new entity) at a store of N facts, with
fn::amem::facts::current / recorded as they were before issue 25 (``WHERE entity =
$t.entity.id``: the planner does not seek the index for a field path of a parameter
and scans the table, decoding every vector; docs/ENGINE-ISSUES.md #26) and as they are
now (plain parameters), interleaved in one process on one database, so both sides share
the machine's load. The store is filled by a bulk INSERT of rows shaped like the write
path's (entity, entity_name, attribute with a 384-d vector; their events run), which is
far faster than writing them one by one.

    PYTHONPATH=. python scripts/speed/ab_reconcile_index.py --facts 10000 --rounds 4 --per 10
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time

from amem_db.client import Memory
from amem_db.connection import Target, open_connection
from amem_db.migrator import Migrator

OLD = """
DEFINE FUNCTION OVERWRITE fn::amem::facts::current($t: object, $scopes: array<string>, $attributes: bool, $relations: bool) -> array<object> {
    LET $now = time::now();
    LET $open = |$r: object| $r.scopes = $scopes AND $r.superseded_at = NONE AND $r.forgotten_at = NONE
        AND $r.retracted = false AND ($r.valid_until = NONE OR $r.valid_until > $now);
    RETURN array::concat(
        IF $attributes { SELECT id, value, NONE AS target, confidence, valid_from, valid_until, superseded_at, forgotten_at, retracted, scopes
            FROM attribute WHERE entity = $t.entity.id AND key_norm = $t.key_norm } ELSE { [] },
        IF $relations { SELECT id, NONE AS value, out AS target, confidence, valid_from, valid_until, superseded_at, forgotten_at, retracted, scopes
            FROM relation WHERE in = $t.entity.id AND key_norm = $t.key_norm } ELSE { [] }
    ).filter($open);
} PERMISSIONS FULL;
DEFINE FUNCTION OVERWRITE fn::amem::facts::recorded($t: object, $scopes: array<string>, $is_rel: bool) -> array<object> {
    LET $rows = IF $is_rel {
        SELECT id, valid_from, scopes, retracted, forgotten_at FROM relation WHERE in = $t.entity.id AND key_norm = $t.key_norm AND out = $t.target.id
    } ELSE {
        SELECT id, valid_from, scopes, retracted, forgotten_at FROM attribute WHERE entity = $t.entity.id AND key_norm = $t.key_norm AND value = $t.value
    };
    RETURN $rows.filter(|$r| $r.scopes = $scopes AND $r.valid_from = $t.valid_from AND $r.retracted = false AND $r.forgotten_at = NONE);
} PERMISSIONS FULL;
"""


class RandomEmbedder:
    name = "ab-random-384"
    dimension = 384

    def __init__(self) -> None:
        self.rng = random.Random(5)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[self.rng.gauss(0, 1) for _ in range(self.dimension)] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


async def fill(conn, n: int, rng: random.Random) -> None:
    for at in range(0, n, 100):
        part = range(at, min(at + 100, n))
        await conn.query("""
            INSERT INTO entity (SELECT *, type::record(id) AS id FROM $e) RETURN NONE;
            INSERT INTO entity_name (SELECT *, type::record(entity) AS entity FROM $names) RETURN NONE;
            INSERT INTO attribute (SELECT *, type::record(id) AS id, type::record(entity) AS entity FROM $a) RETURN NONE;""", {
            "e": [{"id": f"entity:⟨topic/fill {i}⟩", "name": f"fill {i}", "name_norm": f"fill {i}", "type": "topic", "kind": "topic",
                   "category": "knowledge", "importance": 0.8} for i in part],
            "names": [{"entity": f"entity:⟨topic/fill {i}⟩", "name": f"fill {i}", "name_norm": f"fill {i}", "alias": False,
                       "write": f"fill{i}", "scopes": []} for i in part],
            "a": [{"id": f"attribute:fill{i}_0", "entity": f"entity:⟨topic/fill {i}⟩", "key": "summary", "key_norm": "summary",
                   "value": f"value {i}", "text": f"fill {i}: summary = value {i}", "write": f"fill{i}",
                   "embedding": [rng.gauss(0, 1) for _ in range(384)], "scopes": []} for i in part],
        })


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--per", type=int, default=10, help="single writes per side per round")
    a = ap.parse_args()
    conn = await open_connection(Target(url="mem://", ns="ab", db="reconcile"))
    await Migrator(conn).migrate()
    (new_defs,) = await conn.query("RETURN [(INFO FOR DB).functions['amem::facts::current'], (INFO FOR DB).functions['amem::facts::recorded']]")
    rng = random.Random(1)
    t0 = time.perf_counter()
    await fill(conn, a.facts, rng)
    (n,) = await conn.query("SELECT count() FROM attribute WHERE type::is_record(entity) GROUP ALL")
    print(f"filled {n[0]['count']} facts in {time.perf_counter() - t0:.0f} s", flush=True)
    mem = Memory(conn, embedder=RandomEmbedder())
    lat: dict[str, list[float]] = {"before (field path)": [], "after (plain parameters)": []}
    i = 0
    for _ in range(a.rounds):
        for side, defs in (("before (field path)", OLD), ("after (plain parameters)", "".join(d.replace("DEFINE FUNCTION ", "DEFINE FUNCTION OVERWRITE ", 1) + ";\n" for d in new_defs))):
            await conn.query(defs)
            for _ in range(a.per):
                t = time.perf_counter()
                await mem.facts.write({"triples": [{"entity": {"type": "topic", "name": f"ab {i}"}, "key": "summary", "value": f"v {i}"}]})
                lat[side].append((time.perf_counter() - t) * 1000)
                i += 1
    out = {side: {"p50_ms": round(statistics.median(v), 1), "mean_ms": round(statistics.mean(v), 1), "calls": len(v)} for side, v in lat.items()}
    print(json.dumps({"store_facts": a.facts, "load_average": os.getloadavg(), **out}, indent=1))
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
