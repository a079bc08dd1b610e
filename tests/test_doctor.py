"""`amem-db doctor` (amem_db/doctor.py): the canaries find the engine hazards amem-db
works around (docs/ENGINE-ISSUES.md) on the engine we ship, say what is done about
each, leave nothing behind, and make the command fail when a hazard is unhandled.
Runs on mem:// and surrealkv://."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import make_target

from amem_db.connection import Target, close_quietly, open_connection
from amem_db.db import call
from amem_db.doctor import run_doctor
from amem_db.migrator import Migrator

CHECKS = {"engine_version", "hnsw_unbuilt", "index_building", "hnsw_compaction", "knn_all_rows", "hnsw_array_ids",
          "bm25_zero_scores", "filtered_knn_underfill"}


async def footprint(conn, target: Target) -> dict:
    """Databases of the namespace, and the tables / functions / params of the amem database."""
    (ns,) = await conn.query("INFO FOR NS")
    (db,) = await conn.query("INFO FOR DB")
    return {"databases": sorted(ns["databases"]), "tables": sorted(db["tables"]), "functions": sorted(db["functions"]),
            "params": db.get("params"), "db": target.db}


@pytest.fixture(params=["mem", "surrealkv"])
async def target_conn(request, tmp_path):
    target = make_target("doc")
    if request.param == "surrealkv":
        target = Target(url=f"surrealkv://{tmp_path}/data", ns=target.ns, db=target.db)
    conn = await open_connection(target)
    await Migrator(conn).migrate()
    yield target, conn
    await close_quietly(conn)


async def test_every_hazard_of_the_shipped_engine_is_found_and_handled(target_conn):
    target, conn = target_conn
    before = await footprint(conn, target)
    report = await run_doctor(conn, target)
    by = {c.name: c for c in report.checks}
    assert set(by) == CHECKS, [c.model_dump() for c in report.checks]
    assert report.healthy and report.engine.startswith("surrealdb-")
    # the canaries of core 3.2.4: every one of these hazards is present and handled
    compaction = by["hnsw_compaction"]
    assert compaction.status == "handled", compaction.details  # the queue is scanned exactly; REBUILD makes a graph
    assert compaction.details["recall_at_ef_k_queued"] == 1.0 > compaction.details["recall_at_ef_k_after_rebuild"]
    assert by["knn_all_rows"].status == "handled" and by["knn_all_rows"].details["returned"] == 30
    assert by["hnsw_array_ids"].status == "handled" and len(by["hnsw_array_ids"].details["returned"]) == 1
    assert by["filtered_knn_underfill"].status == "handled" and by["filtered_knn_underfill"].details["post_filter"] < 5
    assert by["bm25_zero_scores"].status in ("ok", "handled") and "BM25(1.2,0.75)" in by["bm25_zero_scores"].details["chunk_fts_index"]
    assert by["hnsw_unbuilt"].status == "ok" and by["index_building"].status == "ok"
    assert all(c.handling for c in report.checks if c.status == "handled")
    # nothing left behind: no scratch database, the amem database unchanged, the connection back on it
    assert await footprint(conn, target) == before
    (where,) = await conn.query("RETURN [session::ns(), session::db()]")
    assert where == [target.ns, target.db]


async def test_index_state_is_reported_with_what_amem_does(target_conn):
    target, conn = target_conn
    # 300 logged keyword vector writes with no build: due at the default threshold (20%, 200 rows)
    await conn.query("FOR $i IN 0..300 { CREATE amem_index_write SET index = 'keyword_embedding' };"
                     "FOR $i IN 0..300 { CREATE keyword SET text = 'k' + <string> $i, normalised = 'k' + <string> $i, scopes = ['org/a'] };")
    await call(conn, "fn::amem::maintain::begin", "entity_embedding")  # then "killed": the mark stays
    try:
        report = await run_doctor(conn, target)
    finally:
        await call(conn, "fn::amem::maintain::reset", "entity_embedding")
    by = {c.name: c for c in report.checks}
    assert by["hnsw_unbuilt"].status == "handled" and "keyword_embedding" in by["hnsw_unbuilt"].finding
    assert "amem-db maintain --auto" in by["hnsw_unbuilt"].handling
    assert by["index_building"].status == "handled" and by["index_building"].details["marked"] == ["entity_embedding"]
    assert "--reset" in by["index_building"].handling
    assert report.healthy  # handled hazards do not fail the run


async def test_an_unhandled_hazard_makes_the_report_unhealthy(target_conn):
    target, conn = target_conn
    # a chunk with an array id (what amem-db wrote before session 2): HNSW never returns it
    await conn.query("INSERT INTO document [{id: document:d, text: 'd', content_hash: 'd', title: 'D', source: 'd.txt', "
                     "mime_type: 'text/plain', scopes: ['org/a']}] RETURN NONE;"
                     "CREATE chunk:['d', 0, 0] SET document = document:d, text = 'x', position = 0, char_start = 0, "
                     "char_end = 1, mime_type = 'text/plain', scopes = ['org/a'] RETURN NONE;")
    report = await run_doctor(conn, target)
    by = {c.name: c for c in report.checks}
    assert by["hnsw_array_ids"].status == "unhandled" and "re-ingest" in by["hnsw_array_ids"].handling
    assert not report.healthy
    await conn.query("DELETE chunk; DELETE document;")


def amem(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "AMEM_EMBEDDER": "hash:384"}
    return subprocess.run([sys.executable, "-m", "amem_db", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_cli_exit_codes(tmp_path):
    url = f"surrealkv://{tmp_path}/data"
    assert amem("--url", url, "migrate", cwd=tmp_path).returncode == 0
    ok = amem("--url", url, "doctor", "--json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["healthy"] is True
    text = amem("doctor", "--url", url, cwd=tmp_path)
    assert text.returncode == 0 and "knn_all_rows" in text.stdout and "handled" in text.stdout
    # not migrated: the index checks cannot run -> exit 1
    bare = amem("--url", f"surrealkv://{tmp_path}/bare", "doctor", cwd=tmp_path)
    assert bare.returncode == 1 and "error" in bare.stdout
