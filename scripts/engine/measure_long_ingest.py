"""Time and peak memory of ingesting one long plain-text document (docs/ENGINE-ISSUES.md #14).

    python scripts/engine/measure_long_ingest.py 200000 300000 600000

Each size runs in a fresh process on `mem://` with the hash embedder: SciFact text
(../shared/datasets/scifact) repeated to that many characters, one
`Memory.documents.ingest_text`. Prints seconds and the peak RSS of that process.
Above 200,000 characters `documents::check` now refuses the text before any work;
pass --unchecked to lift the refusal in the throwaway database and measure anyway.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from amem_db.harness.paths import datasets_root

CORPUS = datasets_root() / "scifact" / "corpus.jsonl"


async def one(size: int, unchecked: bool) -> None:
    from amem_db import Memory

    mem = await Memory.open("mem://", "m", "m", embedder="hash:384", migrate=True)
    if unchecked:  # the throwaway database only: the limit as it was before session 4
        (info,) = await mem.conn.query("INFO FOR DB")
        fn = info["functions"]["amem::documents::check"]
        await mem.conn.query(fn.replace("DEFINE FUNCTION", "DEFINE FUNCTION OVERWRITE", 1).replace("> 200000", "> 5000000"))
    lines = [json.loads(ln) for ln in CORPUS.open()][:3000]
    corpus = " ".join(f"{d.get('title', '')}\n{d['text']}" for d in lines)
    text = (corpus * (size // len(corpus) + 1))[:size]
    t0 = time.perf_counter()
    try:
        status = (await mem.documents.ingest_text(text, source=f"long-{size}")).status
    except Exception as exc:  # reported, not raised
        status = f"error: {str(exc)[:120]}"
    seconds = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{size:>9,} chars: {status}, {seconds:.1f} s, peak RSS {peak_mb:,.0f} MB", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[200_000])
    ap.add_argument("--unchecked", action="store_true")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        asyncio.run(one(args.one, args.unchecked))
        return
    for size in args.sizes:  # a process per size: peak RSS is per process
        subprocess.run([sys.executable, __file__, "--one", str(size)] + (["--unchecked"] if args.unchecked else []), check=False)


if __name__ == "__main__":
    main()
