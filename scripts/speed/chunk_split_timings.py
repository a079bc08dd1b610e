"""How long fn::amem::chunk::split takes on the two large inputs tests/test_chunking.py
checks for correctness only (timing lives here, not in the test suite): 1,500 short
sections, and a 100 KB document of ten sections, at the default size 800 / overlap 120.

    PYTHONPATH=. python scripts/speed/chunk_split_timings.py --reps 5

Prints the median and the spread of the wall time per input on a migrated mem://
database; machine-specific, so nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from amem_db.connection import Target, close_quietly, open_connection
from amem_db.migrator import Migrator

SPLIT = "RETURN fn::amem::chunk::split($text, $sections, $size, $overlap)"


def section(start: int, end: int) -> dict:
    return {"heading": "h", "level": 1, "heading_path": ["h"], "char_start": start, "char_end": end}


def many_sections() -> tuple[str, list[dict]]:
    text = "".join(f"# H{i}\nbody of section {i} with some words\n" for i in range(1500))
    starts = [i for i in range(len(text)) if text.startswith("# H", i)]
    return text, [section(a, b) for a, b in zip(starts, starts[1:] + [len(text)])]


def hundred_kb() -> tuple[str, list[dict]]:
    words = ["memory", "agents", "retrieve", "chunks", "of", "text", "über", "中文", "🙂", "a"]
    parts, n, i = [], 0, 0
    while n < 100_000:
        w = words[(i * 7) % len(words)] + ("\n\n" if i % 97 == 0 else " ")
        parts.append(w)
        n += len(w)
        i += 1
    return "".join(parts)[:100_000], [section(k * 10_000, (k + 1) * 10_000) for k in range(10)]


async def main(reps: int) -> None:
    conn = await open_connection(Target(url="mem://", ns="chunk_timing", db="t"))
    try:
        await Migrator(conn).migrate()
        for name, (text, sections) in (("1,500 sections", many_sections()), ("100 KB, 10 sections", hundred_kb())):
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                (chunks,) = await conn.query(SPLIT, {"text": text, "sections": sections, "size": 800, "overlap": 120})
                times.append(time.perf_counter() - t0)
            print(f"{name:22} {len(chunks):5} chunks  median {statistics.median(times) * 1000:7.0f} ms  "
                  f"min {min(times) * 1000:7.0f}  max {max(times) * 1000:7.0f}  ({reps} runs)")
    finally:
        await close_quietly(conn)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    asyncio.run(main(ap.parse_args().reps))
