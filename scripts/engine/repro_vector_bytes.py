"""What a vector costs on disk in the embedded engine (docs/ENGINE-ISSUES.md #34): N rows of
one 384-dimension unit vector each, written into a fresh `surrealkv://` store per encoding,
and the store folder's size after close, per row.

    PYTHONPATH=. python scripts/engine/repro_vector_bytes.py 2000

Encodings: no field (the row alone), 800 characters of text, the vector as a list of floats
(what the product stores, and what HNSW indexes), the same under `TYPE array<float>`, as
int8-scaled integers, as raw float32 bytes (1,536 bytes; HNSW cannot index it), and the float
list with an HNSW index defined (vectors queued, not REBUILT: ENGINE-ISSUES #19)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from amem_db.connection import Target, close_quietly, open_connection
from amem_db.harness.common import dir_size

HNSW = "DEFINE INDEX h ON t FIELDS v HNSW DIMENSION 384 DIST COSINE TYPE F32 EFC 150 M 12;"


async def bytes_per_row(root: Path, name: str, schema: str, row: Callable[[int], dict[str, Any]], n: int) -> float:
    path = root / name
    shutil.rmtree(path, ignore_errors=True)
    conn = await open_connection(Target(url=f"surrealkv://{path}", ns="x", db="y"))
    await conn.query("DEFINE TABLE t SCHEMALESS; " + schema)
    for i in range(0, n, 100):
        await conn.query("INSERT INTO t $rows RETURN NONE", {"rows": [row(j) for j in range(i, min(i + 100, n))]})
    await close_quietly(conn)
    return dir_size(path) / n


async def main(n: int) -> None:
    rng = np.random.default_rng(0)
    v = rng.standard_normal((n, 384)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    q = np.round(v * 127).astype(int)
    cases: list[tuple[str, str, Callable[[int], dict[str, Any]]]] = [
        ("row alone", "", lambda j: {"id": f"r{j}"}),
        ("800 characters of text", "", lambda j: {"id": f"r{j}", "t": "x" * 800}),
        ("384 floats (the product)", "", lambda j: {"id": f"r{j}", "v": v[j].tolist()}),
        ("384 floats, TYPE array<float>", "DEFINE FIELD v ON t TYPE array<float>;", lambda j: {"id": f"r{j}", "v": v[j].tolist()}),
        ("384 int8-scaled integers", "", lambda j: {"id": f"r{j}", "v": q[j].tolist()}),
        ("1,536 bytes (float32, not indexable)", "", lambda j: {"id": f"r{j}", "v": v[j].tobytes()}),
        ("384 floats + HNSW (queued)", HNSW, lambda j: {"id": f"r{j}", "v": v[j].tolist()}),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"| encoding ({n} rows) | bytes on disk per row |\n|---|---|")
        for i, (label, schema, row) in enumerate(cases):
            print(f"| {label} | {await bytes_per_row(Path(tmp), f'c{i}', schema, row, n):,.0f} |", flush=True)
    os._exit(0)  # the native engine may abort at interpreter exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
