"""docs/ENGINE-ISSUES.md #17: full-text and HNSW indexes are not versioned.

On surrealkv+versioned:// (SurrealDB core 3.2.4, embedded), a row changed after
instant t1 and a row created after it, then the same queries with and without
`VERSION t1`. Plain SELECTs and record lookups answer as of t1; a full-text match
(`@@`) under VERSION finds nothing that matched at t1, and a KNN (`<|k,ef|>`) walks
today's graph, fetching each hit's old version (rows created since drop out, rows
that were nearest at t1 are missed). Usage: python scripts/engine/repro_version_indexes.py
"""

from __future__ import annotations

import asyncio
import tempfile

from surrealdb import AsyncSurreal


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = AsyncSurreal(f"surrealkv+versioned://{tmp}/v")
        await db.connect()
        await db.use("t", "t")
        await db.query("DEFINE ANALYZER an TOKENIZERS class FILTERS lowercase; DEFINE TABLE d SCHEMALESS;"
                       "DEFINE INDEX ft ON d FIELDS text FULLTEXT ANALYZER an BM25;"
                       "DEFINE INDEX hv ON d FIELDS emb HNSW DIMENSION 2 DIST COSINE;")
        await db.query("CREATE d:1 SET text = 'apple banana', emb = [1, 0]; CREATE d:2 SET text = 'cherry', emb = [0, 1];")
        await asyncio.sleep(1.1)
        (t1,) = await db.query("RETURN time::now()")  # one statement: a list of one value
        await asyncio.sleep(1.1)
        await db.query("UPDATE d:1 SET text = 'durian', emb = [0, 1]; CREATE d:3 SET text = 'apple pie', emb = [1, 0.1];")
        for label, sql in [
            ("scan at t1 (d:1 apple banana, d:2)", "SELECT id, text FROM d VERSION $t"),
            ("record at t1 (apple banana)", "SELECT id, text FROM d:1 VERSION $t"),
            ("@@ apple now (d:3)", "SELECT id, text FROM d WHERE text @@ 'apple'"),
            ("@@ apple at t1 (expected d:1)", "SELECT id, text FROM d WHERE text @@ 'apple' VERSION $t"),
            ("KNN [1,0] k=2 now", "SELECT id, text FROM d WHERE emb <|2,40|> [1, 0]"),
            ("KNN [1,0] k=2 at t1 (expected d:1, d:2)", "SELECT id, text FROM d WHERE emb <|2,40|> [1, 0] VERSION $t"),
        ]:
            print(f"{label:42} -> {await db.query(sql, {'t': t1})}")
        await db.close()


if __name__ == "__main__":
    asyncio.run(main())
