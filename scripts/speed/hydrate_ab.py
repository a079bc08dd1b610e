"""hydrate at k = 50 before / after the lookup change (issue 16, vector-mode p50 goal).

fn::amem::query::hydrate paired each selected row with its ranked item through an
object keyed by id; reading `$obj[$key]` copies the whole object (all 50 texts) on
every lookup. It now pairs them by position (the rows of `SELECT ... FROM $ids` come in
the order of $ids). This script defines the old body under another name on the given
database, takes the ranked items of every query (vector mode, k = 50, the default
threshold), and calls both functions on the same items, interleaved, several times:
the outputs must be equal and the p50 of each is printed. The old function is removed
again at the end.

    python scripts/speed/hydrate_ab.py ../shared/datasets/cisi --url surrealkv://$PWD/results/.db-chunking/cisi-<key16> --reps 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# fn::amem::query::hydrate as it was before (surql/400_query.surql.j2 at b78b382)
BEFORE = """DEFINE FUNCTION OVERWRITE fn::ab::hydrate_before($items: array<object>) -> array<object> {
    -- {id, ...extra} -> the spec's hit shape {chunk, document, ...extra}, in
    -- the given order; startS/endS only on transcript segments. Missing values
    -- (no section, no title) are NONE, which keeps the key: None in Python,
    -- null in JSON (NULL would reach Python as the SDK's Null sentinel). A record gone
    -- since ranking (deleted concurrently) is dropped, not returned empty.
    -- One fetch per distinct document: a document record holds its whole text.
    -- a kept old version (passage_version) carries its own title and source, and says when it was replaced
    LET $rows = SELECT id, document, text, section_heading, position, char_start, char_end, start_s, end_s, kind, title, source, recorded_at, replaced_at FROM $items.id;
    LET $by_id = object::from_entries($rows.map(|$r| [<string> $r.id, $r]));
    LET $docs = object::from_entries((SELECT id, title, source FROM array::distinct($rows.document)).map(|$d| [<string> $d.id, $d]));
    RETURN $items.filter(|$it| $by_id[<string> $it.id] != NONE).map(|$it| {
        LET $r = $by_id[<string> $it.id];
        LET $d = $docs[<string> $r.document];
        LET $chunk = {
            id: $r.id,
            document: $r.document,
            text: $r.text,
            section: $r.section_heading,
            position: $r.position,
            charStart: $r.char_start,
            charEnd: $r.char_end,
        };
        LET $old = $r.replaced_at != NONE;
        LET $chunk = IF record::tb($r.id) = 'audio_chunk' OR $r.kind = 'audio_chunk' { object::extend($chunk, { startS: $r.start_s, endS: $r.end_s }) } ELSE { $chunk };
        RETURN object::extend(object::remove($it, 'id'), {
            chunk: IF $old { object::extend($chunk, { recordedAt: $r.recorded_at, replacedAt: $r.replaced_at }) } ELSE { $chunk },
            document: IF $old { { id: $r.document, title: $r.title, source: $r.source } } ELSE { { id: $r.document, title: $d.title, source: $d.source } },
        });
    });
} COMMENT 'ranked {id, ...} -> result hits {chunk, document, ...}' PERMISSIONS FULL;"""


async def main() -> int:
    from surrealdb import RecordID

    from amem_db.connection import close_quietly
    from amem_db.harness.database import open_eval_url
    from amem_db.harness.datasets import load_dataset

    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--url", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--mode", default="vector")
    ap.add_argument("--out")
    a = ap.parse_args()
    ds = load_dataset(a.dataset, limit_queries=a.limit)
    mem = await open_eval_url(a.url)
    conn = mem.conn
    times: dict[str, list[float]] = {"before": [], "after": []}
    try:
        await conn.query(BEFORE)
        items = []
        for text in ds.queries.values():
            resp = await mem.documents.query(text, mode=a.mode, k=50)
            items.append([{"id": RecordID("chunk", h.chunk.id.split(":", 1)[1]), "score": h.score} for h in resp.results])
        await conn.query("DELETE retrieval_trace")
        for rep in range(a.reps):
            for i, its in enumerate(items):
                order = ("before", "after") if (i + rep) % 2 else ("after", "before")
                out = {}
                for side in order:
                    fn = "fn::ab::hydrate_before" if side == "before" else "fn::amem::query::hydrate"
                    t0 = time.perf_counter()
                    (out[side],) = await conn.query(f"RETURN {fn}($items)", {"items": its})
                    times[side].append((time.perf_counter() - t0) * 1000)
                assert out["before"] == out["after"], f"query {i}: the outputs differ"
    finally:
        await conn.query("REMOVE FUNCTION IF EXISTS fn::ab::hydrate_before")
        await close_quietly(conn)
    res = {"dataset": ds.name, "mode": a.mode, "calls": len(times["after"]),
           "hits_p50": statistics.median(len(x) for x in items),
           "p50_ms": {k: round(statistics.median(v), 2) for k, v in times.items()},
           "mean_ms": {k: round(statistics.fmean(v), 2) for k, v in times.items()}}
    print(json.dumps(res))
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
