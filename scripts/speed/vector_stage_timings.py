"""Where a vector-mode query spends its time, old threshold against new (issue 16 goal
"no mode slower at p50 by more than 20%"): every query of a collection through
``mem.documents.query`` with threshold 0.5 (the old default) and with the model's
calibrated default (0.3 for MiniLM), interleaved query by query in one process so
machine load falls on both alike; per stage, the p50 of the engine's own trace timings
(optionsMs, vectorMs, fuseMs, hydrateMs, contextMs, traceMs, totalMs) and the client's
wall clock (embedding + round trip).

    python scripts/speed/vector_stage_timings.py ../shared/datasets/cisi \\
        --url surrealkv://$PWD/results/.db-chunking/cisi-<key16> --reps 3 --out results/vector-p50/cisi.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

STAGES = ["optionsMs", "vectorMs", "fuseMs", "hydrateMs", "contextMs", "traceMs", "totalMs"]


async def main() -> int:
    from amem_db.connection import close_quietly
    from amem_db.harness.database import open_eval_url
    from amem_db.harness.datasets import load_dataset

    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--url", required=True)
    ap.add_argument("--mode", default="vector")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--out")
    a = ap.parse_args()
    ds = load_dataset(a.dataset, limit_queries=a.limit)
    mem = await open_eval_url(a.url)
    conn = mem.conn
    sides: dict[str, dict[str, list[float]]] = {s: {k: [] for k in [*STAGES, "client", "hits"]} for s in ("0.5", "default")}
    try:
        for text in list(ds.queries.values())[:3]:  # warm-up
            await mem.documents.query(text, mode=a.mode, k=50)
        for _ in range(a.reps):
            for text in ds.queries.values():
                for side in ("0.5", "default") if hash(text) % 2 else ("default", "0.5"):
                    t0 = time.perf_counter()
                    resp = await mem.documents.query(text, mode=a.mode, k=50, threshold=0.5 if side == "0.5" else None)
                    wall = (time.perf_counter() - t0) * 1000
                    timings = (resp.trace or {}).get("timings") or {}
                    for k in STAGES:
                        if timings.get(k) is not None:
                            sides[side][k].append(float(timings[k]))
                    sides[side]["client"].append(wall)
                    sides[side]["hits"].append(len(resp.results) + len(resp.context_hits))
            await conn.query("DELETE retrieval_trace")
    finally:
        await close_quietly(conn)
    out: dict[str, Any] = {"dataset": ds.name, "mode": a.mode, "queries": len(ds.queries), "reps": a.reps, "p50": {}}
    for side, vals in sides.items():
        out["p50"][side] = {k: round(statistics.median(v), 2) for k, v in vals.items() if v}
    print(json.dumps(out, indent=1))
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
