"""The migrator on the real engine: fresh install, idempotency, and every refusal."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from helpers import drop, make_target

from amem_db.connection import close_quietly, open_connection
from amem_db.constants import HNSW_FIELDS, VECTOR_FIELDS
from amem_db.errors import (
    DimensionChangeRefused,
    InvalidInput,
    MigrationDrift,
    MigrationError,
    MigrationLocked,
    MigrationMissing,
    MigrationOutOfOrder,
)
from amem_db.migrator import Migrator, bundled_dir, render_dir
from amem_db.settings import SchemaSettings

EXPECTED_TABLES = {
    "document", "section", "chunk", "audio_chunk", "keyword", "knowledge_has_keyword",
    "document_link", "entity", "attribute", "relation", "mentions", "retrieval_trace",
    "chunk_fts", "audio_chunk_fts",
}
EXPECTED_INDEXES = {
    "chunk": {"chunk_embedding", "chunk_document", "chunk_section"},
    "audio_chunk": {"audio_chunk_embedding"},
    "chunk_fts": {"chunk_fts_text"},
    "audio_chunk_fts": {"audio_chunk_fts_text"},
    "keyword": {"keyword_embedding"},  # keyword_text removed by migrations/0019
    "entity": {"entity_embedding"},  # entity_name (over entity.name) removed by migrations/0025
}
# stored vectors with no HNSW index: no KNN reads them (migrations/0027)
UNINDEXED_VECTORS = {"section": "heading_embedding", "document": "summary_embedding"}


@pytest.fixture
async def conn():
    target = make_target("mig")
    c = await open_connection(target)
    yield c
    await drop(c, target)
    await close_quietly(c)


@pytest.fixture
def sql_dirs(tmp_path: Path):
    """A private copy of migrations/ and surql/ that a test may edit."""
    mig, surql = tmp_path / "migrations", tmp_path / "surql"
    shutil.copytree(bundled_dir("migrations"), mig)
    shutil.copytree(bundled_dir("surql"), surql)
    return mig, surql


async def info(conn) -> dict:
    return (await conn.query("INFO FOR DB"))[0]


async def schema_snapshot(conn) -> dict:
    db = await info(conn)
    tables = {t: (await conn.query(f"INFO FOR TABLE {t}"))[0] for t in sorted(db["tables"])}
    return {"db": db, "tables": tables}


async def test_fresh_migrate_creates_the_whole_schema(conn):
    plan = await Migrator(conn).migrate()
    assert plan.pending
    db = await info(conn)
    assert EXPECTED_TABLES <= set(db["tables"])
    assert "knowledge_text" in db["analyzers"]
    assert "BLANK,CLASS,CAMEL,PUNCT" in db["analyzers"]["knowledge_text"]
    assert "SNOWBALL(ENGLISH)" in db["analyzers"]["knowledge_text"]
    for table, wanted in EXPECTED_INDEXES.items():
        have = set((await conn.query(f"INFO FOR TABLE {table}"))[0]["indexes"])
        assert wanted <= have, (table, wanted - have)
    for table, field in UNINDEXED_VECTORS.items():
        t = (await conn.query(f"INFO FOR TABLE {table}"))[0]
        assert field in t["fields"] and not any("HNSW" in d for d in t["indexes"].values()), table
        assert "amem_index_written" not in t["events"], table  # no index, no write log
    chunk_indexes = (await conn.query("INFO FOR TABLE chunk"))[0]["indexes"]
    # full-text search reads the text-only copy (migrations/0004); no FT index on chunk
    assert "chunk_text" not in chunk_indexes
    assert "BM25(1.2,0.75)" in (await conn.query("INFO FOR TABLE chunk_fts"))[0]["indexes"]["chunk_fts_text"]
    assert "DIMENSION 384" in chunk_indexes["chunk_embedding"] and "COSINE" in chunk_indexes["chunk_embedding"]
    assert any(name.startswith("amem::") for name in db["functions"])
    # no full-text index stores term offsets: nothing reads them (issue 25 item 4, surql/010)
    for table in ("chunk_fts", "audio_chunk_fts", "memory_chunk_fts"):
        assert not any("HIGHLIGHTS" in d for d in (await conn.query(f"INFO FOR TABLE {table}"))[0]["indexes"].values()), table


async def test_second_migrate_is_a_no_op(conn):
    m = Migrator(conn)
    await m.migrate()
    before = await conn.query("SELECT key, applied_at FROM amem_migration ORDER BY key")
    plan = await m.migrate()
    assert plan.up_to_date
    assert await conn.query("SELECT key, applied_at FROM amem_migration ORDER BY key") == before


async def test_tracking_rows_record_who_when_and_checksum(conn):
    await Migrator(conn).migrate()
    (rows,) = await conn.query("SELECT * FROM amem_migration WHERE kind = 'migration'")
    row = rows[0]
    assert row["key"] == "0001_core_schema"
    assert len(row["checksum"]) == 64 and row["applied_by"] and row["package_version"]
    assert row["duration"] is not None


async def test_drifted_migration_is_refused(conn, sql_dirs):
    mig, surql = sql_dirs
    await Migrator(conn, migrations_dir=mig, surql_dir=surql).migrate()
    f = mig / "0001_core_schema.surql.j2"
    f.write_text(f.read_text() + "\nDEFINE FIELD sneaky ON document TYPE option<string>;\n")
    with pytest.raises(MigrationDrift, match="0001_core_schema"):
        await Migrator(conn, migrations_dir=mig, surql_dir=surql).migrate()
    plan = await Migrator(conn, migrations_dir=mig, surql_dir=surql).plan()
    assert [s.state for s in plan.states if s.key == "0001_core_schema"] == ["drifted"]
    assert "sneaky" not in (await conn.query("INFO FOR TABLE document"))[0]["fields"]


async def test_missing_migration_is_refused(conn, sql_dirs):
    mig, surql = sql_dirs
    (mig / "0002_extra.surql.j2").write_text("DEFINE FIELD extra ON document TYPE option<string>;\n")
    await Migrator(conn, migrations_dir=mig, surql_dir=surql).migrate()
    (mig / "0002_extra.surql.j2").unlink()
    with pytest.raises(MigrationMissing, match="0002_extra"):
        await Migrator(conn, migrations_dir=mig, surql_dir=surql).migrate()


async def test_out_of_order_migration_is_refused(conn, sql_dirs):
    mig, surql = sql_dirs
    await Migrator(conn, migrations_dir=mig, surql_dir=surql).migrate()
    (mig / "0000_too_early.surql.j2").write_text("DEFINE FIELD early ON document TYPE option<string>;\n")
    with pytest.raises(MigrationOutOfOrder, match="0000_too_early"):
        await Migrator(conn, migrations_dir=mig, surql_dir=surql).migrate()
    assert "early" not in (await conn.query("INFO FOR TABLE document"))[0]["fields"]


async def test_a_held_lock_excludes_a_second_migrator(conn):
    first, second = Migrator(conn), Migrator(conn)
    second.holder = "other-host pid 42"
    await conn.query(
        "DEFINE TABLE IF NOT EXISTS amem_lock SCHEMALESS PERMISSIONS NONE;"
        "CREATE amem_lock:migrate CONTENT { holder: 'other-host pid 42', acquired_at: time::now() }"
    )
    with pytest.raises(MigrationLocked, match="other-host pid 42"):
        await first.migrate()
    assert "document" not in (await info(conn))["tables"]
    # the operator's override removes the stale lock and migrates
    await first.migrate(force_unlock=True)
    assert "document" in (await info(conn))["tables"]
    assert await first.lock_holder() is None


async def test_failed_script_releases_the_lock_and_keeps_nothing(conn, sql_dirs):
    mig, surql = sql_dirs
    (mig / "0002_broken.surql.j2").write_text("DEFINE FIELD ok ON document TYPE string;\nTHROW 'boom';\n")
    m = Migrator(conn, migrations_dir=mig, surql_dir=surql)
    with pytest.raises(MigrationError, match="boom"):
        await m.migrate()
    assert await m.lock_holder() is None
    fields = (await conn.query("INFO FOR TABLE document"))[0]["fields"]
    assert "ok" not in fields  # the failed transaction left nothing behind
    (keys,) = await conn.query("SELECT VALUE key FROM amem_migration")
    assert "0002_broken" not in keys


async def test_dry_run_changes_nothing(conn):
    before = await info(conn)
    plan = await Migrator(conn).migrate(dry_run=True)
    assert plan.pending
    assert await info(conn) == before


async def test_dry_run_reports_a_broken_plan(conn, sql_dirs):
    mig, surql = sql_dirs
    (surql / "999_broken.surql.j2").write_text("DEFINE FUNCTION OVERWRITE fn::amem::broken() { RETURN 1 +; };\n")
    with pytest.raises(MigrationError, match="dry run: the engine refused the plan"):
        await Migrator(conn, migrations_dir=mig, surql_dir=surql).migrate(dry_run=True)


async def test_upgrade_from_an_older_set_equals_a_fresh_install(sql_dirs):
    mig, surql = sql_dirs
    # the "older release": an older function body, a desired-state file it did not have
    # yet, and a file and functions the current release no longer has (renamed helpers)
    meta = surql / "110_meta.surql.j2"
    meta.write_text(meta.read_text().replace("?? {}", "?? { old: true }"))
    (surql / "100_scope.surql.j2").unlink()
    (surql / "105_retired.surql.j2").write_text(
        "DEFINE FUNCTION OVERWRITE fn::amem::retired::helper() -> int { RETURN 1; } COMMENT 'gone in the next release' PERMISSIONS FULL;\n")
    query = surql / "400_query.surql.j2"
    query.write_text(query.read_text().replace("fn::amem::query::weights(", "fn::amem::query::old_weights("))
    upgraded_target, fresh_target = make_target("up"), make_target("fresh")
    upgraded, fresh = await open_connection(upgraded_target), await open_connection(fresh_target)
    try:
        await Migrator(upgraded, migrations_dir=mig, surql_dir=surql).migrate()
        old = set((await info(upgraded))["functions"])
        assert {"amem::retired::helper", "amem::query::old_weights"} <= old
        plan = await Migrator(upgraded).migrate()  # upgrade to the current set
        assert plan.stale_functions == ["amem::query::old_weights", "amem::retired::helper"]
        assert plan.stale_desired == ["105_retired"]
        await Migrator(fresh).migrate()
        assert await schema_snapshot(upgraded) == await schema_snapshot(fresh)
        keys = "SELECT VALUE [kind, key] FROM amem_migration ORDER BY kind, key"
        assert (await upgraded.query(keys))[0] == (await fresh.query(keys))[0]
        assert (await Migrator(upgraded).plan()).up_to_date
    finally:
        for c, t in ((upgraded, upgraded_target), (fresh, fresh_target)):
            await drop(c, t)
            await close_quietly(c)


# `FROM <table> WHERE <field> <|K,EF|>`: how every KNN of surql/ is written
KNN = re.compile(r"FROM\s+(\w+)\s+WHERE\s+(\w+)\s*<\|")


def test_every_knn_reads_an_indexed_field_and_every_index_has_a_knn():
    # A KNN over a field without an index matches every row (docs/ENGINE-ISSUES.md #20), and an
    # index no KNN reads costs every write and ~10 KB a vector (migrations/0027): the two lists agree.
    settings = SchemaSettings()
    scripts = render_dir(bundled_dir("surql"), "desired", settings.model_dump() | {"hnsw_ef": settings.hnsw_ef})
    code = ["\n".join(line.split("--")[0] for line in s.text.splitlines()) for s in scripts]  # SurrealQL comments out
    read = {m.groups() for text in code for m in KNN.finditer(text)}
    assert read == set(HNSW_FIELDS)
    assert sum(text.count("<|") for text in code) == sum(len(KNN.findall(text)) for text in code)  # none written otherwise
    assert set(HNSW_FIELDS) <= set(VECTOR_FIELDS)
    assert set(UNINDEXED_VECTORS.items()) == set(VECTOR_FIELDS) - set(HNSW_FIELDS)


async def test_upgrade_removes_the_hnsw_indexes_no_knn_reads(sql_dirs):
    # the release before migrations/0027: an HNSW index, a write-log event and maintenance rows
    # for every vector field; upgraded, the store equals a fresh install and keeps its vectors
    mig, surql = sql_dirs
    (mig / "0027_unread_hnsw_indexes.surql.j2").unlink()
    every = json.dumps([list(x) for x in VECTOR_FIELDS])
    for name in ("020_vector_indexes.surql.j2", "060_maintain.surql.j2"):
        f = surql / name
        f.write_text(f"{{%- set hnsw_fields = {every} %}}\n" + f.read_text())
    upgraded_target, fresh_target = make_target("up"), make_target("fresh")
    upgraded, fresh = await open_connection(upgraded_target), await open_connection(fresh_target)
    try:
        await Migrator(upgraded, migrations_dir=mig, surql_dir=surql).migrate({"embedding_dim": 4})
        assert "document_summary_embedding" in (await upgraded.query("INFO FOR TABLE document"))[0]["indexes"]
        await upgraded.query(
            "CREATE document:d SET mime_type = 'text/plain', content_hash = 'x', text = 'hello', summary_embedding = [0.5, 0.5, 0.5, 0.5];"
            "CREATE section:s SET document = document:d, heading = 'H', position = 0, char_start = 0, char_end = 5,"
            " heading_embedding = [1.0, 0.0, 0.0, 0.0];"
            "UPSERT amem_index_state:document_summary_embedding SET tb = 'document', field = 'summary_embedding', builds = 1;")
        log = "SELECT VALUE index FROM amem_index_write WHERE index IN ['document_summary_embedding', 'section_heading_embedding']"
        assert sorted((await upgraded.query(log))[0]) == ["document_summary_embedding", "section_heading_embedding"]
        plan = await Migrator(upgraded).migrate()  # the current set: 0027 and the re-rendered surql/020, 060
        assert "0027_unread_hnsw_indexes" in [s.key for s in plan.pending]
        await Migrator(fresh).migrate({"embedding_dim": 4})
        assert await schema_snapshot(upgraded) == await schema_snapshot(fresh)
        assert (await upgraded.query(log))[0] == []
        assert (await upgraded.query("SELECT VALUE id FROM amem_index_state"))[0] == []
        (kept,) = await upgraded.query("RETURN [document:d.summary_embedding, section:s.heading_embedding]")
        assert kept == [[0.5, 0.5, 0.5, 0.5], [1.0, 0.0, 0.0, 0.0]]  # the vectors stay; the cosine reads need them
        (indexed,) = await upgraded.query("RETURN fn::amem::maintain::indexes().index")
        assert indexed == [f"{t}_{f}" for t, f in HNSW_FIELDS]
        # and a later write logs nothing for them
        await upgraded.query("UPDATE document:d SET summary_embedding = [0.0, 1.0, 0.0, 0.0]")
        assert (await upgraded.query(log))[0] == []
    finally:
        for c, t in ((upgraded, upgraded_target), (fresh, fresh_target)):
            await drop(c, t)
            await close_quietly(c)


async def test_settings_are_recorded_and_kept(conn):
    await Migrator(conn).migrate({"candidate_pool": 128, "hnsw_m": 16})
    plan = await Migrator(conn).migrate()  # no options: keeps them
    assert plan.up_to_date
    assert plan.settings.candidate_pool == 128 and plan.settings.hnsw_m == 16
    stored = await conn.query("RETURN fn::amem::meta::settings()")
    assert stored[0]["candidate_pool"] == 128
    idx = (await conn.query("INFO FOR TABLE chunk"))[0]["indexes"]["chunk_embedding"]
    assert "M 16" in idx


async def test_recall_pool_is_a_setting_of_recall_legs_only(conn):
    """recall's own legs read recall_pool rows (their EF twice that); documents.query keeps
    candidate_pool (surql/450_recall, settings.py)."""
    await Migrator(conn).migrate({"candidate_pool": 256, "recall_pool": 80})
    assert (await Migrator(conn).migrate()).settings.recall_pool == 80
    fns = (await conn.query("INFO FOR DB"))[0]["functions"]
    assert "<|80,160|>" in fns["amem::recall::vector_memory_chunk"] and "<|160,320|>" in fns["amem::recall::vector_memory_chunk_wide"]
    assert "<|256,512|>" in fns["amem::query::vector_chunk"]
    with pytest.raises(InvalidInput, match="recall_pool"):
        await Migrator(conn).migrate({"recall_pool": 10})  # below recall's largest k (50)


async def test_dimension_change_without_vectors_reindexes(conn):
    await Migrator(conn).migrate()
    await Migrator(conn).migrate({"embedding_dim": 8})
    idx = (await conn.query("INFO FOR TABLE chunk"))[0]["indexes"]["chunk_embedding"]
    assert "DIMENSION 8" in idx


async def test_dimension_change_with_vectors_is_refused(conn):
    await Migrator(conn).migrate({"embedding_dim": 4})
    await conn.query(
        "CREATE document:d SET mime_type = 'text/plain', content_hash = 'x', text = 'hello';"
        "CREATE chunk SET document = document:d, text = 'hello', position = 0, char_start = 0, char_end = 5,"
        " mime_type = 'text/plain', embedding = [0.1, 0.2, 0.3, 0.4];"
    )
    with pytest.raises(DimensionChangeRefused, match="re-embed"):
        await Migrator(conn).migrate({"embedding_dim": 8})
    idx = (await conn.query("INFO FOR TABLE chunk"))[0]["indexes"]["chunk_embedding"]
    assert "DIMENSION 4" in idx
    assert (await conn.query("RETURN fn::amem::meta::settings()"))[0]["embedding_dim"] == 4


async def test_migrations_are_rendered_without_settings(sql_dirs, conn):
    mig, surql = sql_dirs
    (mig / "0002_bad.surql.j2").write_text("DEFINE FIELD v ON chunk TYPE array<float, {{ embedding_dim }}>;\n")
    with pytest.raises(MigrationError, match="rendered without settings"):
        await Migrator(conn, migrations_dir=mig, surql_dir=surql).plan()
