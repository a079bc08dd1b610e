"""Index maintenance (amem_db/maintain.py, surql/060_maintain, migrations/0014): the
write log kept in the writing transactions, the state machine of a rebuild
(begin -> rebuild -> finish, busy, reset), the threshold, and the rule that no read
trusts an index that is being built (docs/ENGINE-ISSUES.md #19, #20). No timing."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import drop, make_target
from surrealdb import RecordID
from surrealdb.errors import QueryError

from amem_db import maintain
from amem_db.connection import close_quietly, open_connection
from amem_db.constants import HNSW_FIELDS
from amem_db.db import call
from amem_db.errors import AmemError, InvalidInput, ServerError
from amem_db.migrator import Migrator, bundled_dir, render_dir
from amem_db.settings import SchemaSettings

DIM = 384
POOL = 10  # the smallest pool the settings allow: a handful of rows shows every case
N_CHUNKS = 24


def unit(v: np.ndarray) -> list[float]:
    return [float(x) for x in v / np.linalg.norm(v)]


@pytest.fixture(scope="module")
async def mdb():
    """A database of this module's own, migrated with a pool of 10, holding 24 chunks."""
    target = make_target("maint")
    conn = await open_connection(target)
    await Migrator(conn).migrate({"candidate_pool": POOL})
    rng = np.random.default_rng(14)
    vecs = {f"c{i:02}": unit(rng.standard_normal(DIM)) for i in range(N_CHUNKS)}
    await conn.query(
        "INSERT INTO document [{id: document:d, text: 'd', content_hash: 'd', title: 'D', source: 'd.txt', "
        "mime_type: 'text/plain', scopes: ['org/a']}] RETURN NONE;"
        "INSERT INTO chunk $rows RETURN NONE;",
        {"rows": [{"id": RecordID("chunk", k), "document": RecordID("document", "d"), "text": f"text {k}", "position": i,
                   "char_start": i, "char_end": i + 1, "mime_type": "text/plain", "scopes": ["org/a"], "embedding": v}
                  for i, (k, v) in enumerate(vecs.items())]})
    yield conn, vecs, target
    await drop(conn, target)
    await close_quietly(conn)


async def logged(conn, index: str) -> int:
    (n,) = await conn.query("RETURN (SELECT count() FROM amem_index_write WHERE index = $i GROUP ALL)[0].count ?? 0", {"i": index})
    return n


async def row(conn, index: str, threshold: float = 0.2, min_rows: int = 0) -> maintain.IndexStatus:
    return next(s for s in await maintain.status(conn, threshold=threshold, min_rows=min_rows) if s.index == index)


async def vector_query(conn, e: list[float]) -> dict:
    (res,) = await conn.query("RETURN fn::amem::documents::query('', $e, {mode: 'vector', k: 5, threshold: -1})", {"e": e})
    return res


def exact_top(vecs: dict[str, list[float]], e: list[float], k: int = 5) -> list[str]:
    sims = sorted(((float(np.dot(v, e)), f"chunk:{key}") for key, v in vecs.items()), key=lambda r: (-r[0], r[1]))
    return [k_ for _, k_ in sims[:k]]


def hit_ids(res: dict) -> list[str]:
    return [f"{h['chunk']['id'].table_name}:{h['chunk']['id'].id}" for h in res["results"]]


# --- the write log --------------------------------------------------------------------------------
async def test_every_vector_write_is_logged_in_its_transaction(mdb):
    conn, vecs, _ = mdb
    assert await logged(conn, "chunk_embedding") == N_CHUNKS  # one row per inserted vector
    s = await row(conn, "chunk_embedding")
    assert (s.rows, s.unbuilt, s.share, s.due, s.builds, s.built_at) == (N_CHUNKS, N_CHUNKS, 1.0, True, 0, None)
    # a change of another field is no vector write; a new vector is
    await conn.query("UPDATE chunk:c00 SET text = 'changed' RETURN NONE")
    assert await logged(conn, "chunk_embedding") == N_CHUNKS
    await conn.query("UPDATE chunk:c00 SET embedding = $v RETURN NONE", {"v": vecs["c01"]})
    await conn.query("UPDATE chunk:c00 SET embedding = $v RETURN NONE", {"v": vecs["c00"]})
    assert await logged(conn, "chunk_embedding") == N_CHUNKS + 2
    # a failed write leaves no log row behind
    with pytest.raises(QueryError, match="failed transaction"):
        await conn.query("BEGIN; UPDATE chunk:c00 SET embedding = $v RETURN NONE; THROW 'amem:test: abort'; COMMIT;",
                         {"v": vecs["c02"]})
    assert await logged(conn, "chunk_embedding") == N_CHUNKS + 2
    # other indexes log their own table only
    assert await logged(conn, "keyword_embedding") == 0


async def test_the_migration_logs_the_vectors_stored_before_it(mdb):
    # a database upgraded to 0014 with rows in it: those rows sit in the pending queue too
    conn, _, _ = mdb
    (script,) = [x for x in render_dir(bundled_dir("migrations"), "migration", SchemaSettings().model_dump())
                 if x.key.startswith("0014")]
    backfill = [line for line in script.text.splitlines() if line.startswith("INSERT INTO amem_index_write")]
    assert len(backfill) == 8  # one per vector field of its day (migrations/0027 drops two of those logs again)
    saved = await logged(conn, "chunk_embedding")
    await conn.query("DELETE amem_index_write WHERE index = 'chunk_embedding'")
    await conn.query("\n".join(backfill))
    assert await logged(conn, "chunk_embedding") == N_CHUNKS  # the stored vectors, once each
    assert await logged(conn, "document_summary_embedding") == 0  # the document has no summary vector
    await conn.query("DELETE amem_index_write WHERE index = 'chunk_embedding'")
    await conn.query(f"FOR $i IN 0..{saved} {{ CREATE amem_index_write SET index = 'chunk_embedding' }}")


async def test_vector_fields_without_an_index_are_neither_logged_nor_maintained(mdb):
    # document.summary_embedding: stored and read by cosine, no KNN, so no HNSW index (migrations/0027)
    conn, vecs, _ = mdb
    assert [(s.table, s.field) for s in await maintain.status(conn)] == list(HNSW_FIELDS)
    await conn.query("UPDATE document:d SET summary_embedding = $v RETURN NONE", {"v": vecs["c00"]})
    try:
        assert await logged(conn, "document_summary_embedding") == 0
        with pytest.raises(InvalidInput, match="index must be one of"):
            await maintain.maintain(conn, indexes=["document_summary_embedding"])
    finally:
        await conn.query("UPDATE document:d SET summary_embedding = NONE RETURN NONE")


# --- the state machine -----------------------------------------------------------------------------
async def test_maintain_rebuilds_what_is_due_and_clears_the_log_up_to_the_build(mdb):
    conn, vecs, _ = mdb
    before = await row(conn, "chunk_embedding")
    assert before.due and before.unbuilt >= N_CHUNKS
    # min_rows keeps a small table from being rebuilt by --auto; a forced pass does not care
    report = await maintain.maintain(conn, auto=True, threshold=0.2, min_rows=10_000)
    assert report.rebuilt == [] and any(s.index == "chunk_embedding" and not s.due for s in report.before)
    report = await maintain.maintain(conn, auto=True, threshold=0.2, min_rows=0)
    assert [s.index for s in report.rebuilt] == ["chunk_embedding"]  # the only table with vectors
    done = report.rebuilt[0]
    assert (done.unbuilt, done.building, done.builds, done.built_rows, done.due) == (0, False, 1, N_CHUNKS, False)
    assert done.built_at is not None and done.seconds is not None and done.seconds >= 0
    assert await logged(conn, "chunk_embedding") == 0
    (building,) = await conn.query("RETURN $amem_index_building")
    assert building == []
    # the graph answers: the vector leg trusts it and ranks exactly on this small table
    res = await vector_query(conn, vecs["c05"])
    assert res["trace"]["legs"]["vector"]["tables"]["chunk"]["strategy"] == "hnsw"
    assert hit_ids(res) == exact_top(vecs, vecs["c05"])
    # writes after the build count again, as a share of the table
    for key in ("c01", "c02", "c03"):
        await conn.query("UPDATE type::record('chunk', $k) SET embedding = $v RETURN NONE", {"k": key, "v": vecs["c04"]})
        await conn.query("UPDATE type::record('chunk', $k) SET embedding = $v RETURN NONE", {"k": key, "v": vecs[key]})
    s = await row(conn, "chunk_embedding", threshold=0.5)
    assert (s.unbuilt, s.share, s.due) == (6, pytest.approx(6 / N_CHUNKS), False)
    assert (await row(conn, "chunk_embedding", threshold=0.2)).due
    # nothing unbuilt elsewhere: a forced pass rebuilds only chunk_embedding
    report = await maintain.maintain(conn, auto=False)
    assert [s.index for s in report.rebuilt] == ["chunk_embedding"] and report.rebuilt[0].builds == 2
    assert (await maintain.maintain(conn, auto=False)).rebuilt == []


async def test_a_second_maintainer_is_refused_and_a_stale_mark_is_reset(mdb):
    conn, _, _ = mdb
    begun = await call(conn, "fn::amem::maintain::begin", "keyword_embedding")
    assert begun["rows"] == 0
    with pytest.raises(AmemError, match="being rebuilt since") as info:
        await call(conn, "fn::amem::maintain::begin", "keyword_embedding")
    assert info.value.code == "maintenance_busy"
    assert (await row(conn, "keyword_embedding")).building
    with pytest.raises(AmemError, match="being rebuilt"):
        await maintain.rebuild(conn, "keyword_embedding")
    assert await maintain.reset(conn, "keyword_embedding") is True
    assert await maintain.reset(conn, "keyword_embedding") is False
    assert not (await row(conn, "keyword_embedding")).building
    (building,) = await conn.query("RETURN $amem_index_building")
    assert building == []


async def test_rebuild_without_begin_and_unknown_indexes_are_refused(mdb):
    conn, _, _ = mdb
    with pytest.raises(InvalidInput, match="not marked as building"):
        await call(conn, "fn::amem::maintain::rebuild", "chunk_embedding")
    before = await logged(conn, "chunk_embedding")
    (now,) = await conn.query("RETURN time::now()")
    with pytest.raises(InvalidInput, match="not being rebuilt"):
        await call(conn, "fn::amem::maintain::finish", "chunk_embedding", now, 0, 0.0)
    assert await logged(conn, "chunk_embedding") == before  # the log is cleared only by a build
    with pytest.raises(InvalidInput, match="index must be one of chunk_embedding"):
        await call(conn, "fn::amem::maintain::begin", "chunk; REMOVE TABLE chunk")
    with pytest.raises(InvalidInput, match="index must be one of"):
        await maintain.maintain(conn, indexes=["nope"])
    with pytest.raises(InvalidInput, match="threshold"):
        await maintain.status(conn, threshold=1.5)


# --- never query a building index ------------------------------------------------------------------
async def test_reads_go_exact_while_an_index_is_marked_as_building(mdb):
    conn, vecs, _ = mdb
    await call(conn, "fn::amem::maintain::begin", "chunk_embedding")
    try:
        res = await vector_query(conn, vecs["c07"])
        assert res["trace"]["legs"]["vector"]["tables"]["chunk"]["strategy"] == "exact_building"
        assert hit_ids(res) == exact_top(vecs, vecs["c07"])
        # filtered reads too (the filtered path would over-fetch from the same index)
        (flt,) = await conn.query("RETURN fn::amem::documents::query('', $e, {mode: 'vector', k: 5, threshold: -1, "
                                  "filter: {mimeType: ['text/plain']}})", {"e": vecs["c07"]})
        assert flt["trace"]["legs"]["vector"]["tables"]["chunk"]["strategy"] == "exact_building"
        assert hit_ids(flt) == exact_top(vecs, vecs["c07"])
    finally:
        await maintain.reset(conn, "chunk_embedding")
    res = await vector_query(conn, vecs["c07"])
    assert res["trace"]["legs"]["vector"]["tables"]["chunk"]["strategy"] == "hnsw"


async def test_a_knn_answered_by_no_index_is_not_trusted(mdb):
    # Without a usable index `<|K,EF|>` matches every row (24 > the pool of 10): the leg
    # sees an impossible answer and ranks exactly instead of returning the table.
    conn, vecs, _ = mdb
    await conn.query("REMOVE INDEX chunk_embedding ON chunk")
    try:
        (raw,) = await conn.query(f"SELECT id FROM chunk WHERE embedding <|{POOL},40|> $e", {"e": vecs["c09"]})
        assert len(raw) == N_CHUNKS  # the engine behaviour the guard exists for
        res = await vector_query(conn, vecs["c09"])
        chunk = res["trace"]["legs"]["vector"]["tables"]["chunk"]
        assert chunk["strategy"] == "exact_untrusted_knn" and chunk["candidates"] == POOL
        assert hit_ids(res) == exact_top(vecs, vecs["c09"])
    finally:
        await conn.query(f"DEFINE INDEX chunk_embedding ON chunk FIELDS embedding HNSW DIMENSION {DIM} DIST COSINE TYPE F32 EFC 150 M 12")
    res = await vector_query(conn, vecs["c09"])
    assert res["trace"]["legs"]["vector"]["tables"]["chunk"]["strategy"] == "hnsw"


async def test_a_failed_rebuild_clears_its_mark(mdb):
    # the index is gone: REBUILD fails, the mark must not stay behind (reads would stay exact)
    conn, _, _ = mdb
    await conn.query("REMOVE INDEX keyword_embedding ON keyword")
    try:
        with pytest.raises(ServerError, match="index 'keyword_embedding' does not exist"):
            await maintain.rebuild(conn, "keyword_embedding")
        assert not (await row(conn, "keyword_embedding")).building
        (building,) = await conn.query("RETURN $amem_index_building")
        assert "keyword_embedding" not in building
    finally:
        await conn.query(f"DEFINE INDEX keyword_embedding ON keyword FIELDS embedding HNSW DIMENSION {DIM} DIST COSINE TYPE F32 EFC 150 M 12")


def test_cli_maintain(tmp_path):
    import json
    import os
    import subprocess
    import sys

    def amem(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "amem_db", "--url", f"surrealkv://{tmp_path}/data", *args],
                              cwd=tmp_path, env={**os.environ, "AMEM_EMBEDDER": "hash:384"},
                              capture_output=True, text=True, timeout=300)

    assert amem("migrate").returncode == 0
    status = amem("maintain", "--status", "--json")
    assert status.returncode == 0, status.stderr
    rows = json.loads(status.stdout)
    assert {r["index"] for r in rows} >= {"chunk_embedding", "memory_chunk_embedding"} and not any(r["due"] for r in rows)
    done = amem("maintain", "--auto", "--threshold", "0.5", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["rebuilt"] == []
    assert "no index was marked as building" in amem("maintain", "--reset").stdout
    bad = amem("maintain", "--index", "nope")
    assert bad.returncode == 1 and "invalid_input" in bad.stderr
