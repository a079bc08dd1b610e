"""The bench's own logic, small enough for test-fast: the goal table reads the
right figures and says met / not met (bench/goals.py), and the bulk loader's
surrealkv WAL workaround reopens the real engine between batches without losing
a row (bench/load.py, docs/ENGINE-ISSUES.md #8). No timing is asserted."""

from __future__ import annotations

from typing import Any

import numpy as np

from amem_db.harness.bench import load as bench_load
from amem_db.harness.bench.goals import goal_rows
from amem_db.harness.bench.report import render_markdown


def lat(p50: float) -> dict[str, Any]:
    return {"n": 20, "p50": p50, "p95": p50, "p99": p50, "mean": p50}


RESULTS: list[dict[str, Any]] = [
    {"system": "amem", "size": 10_000, "backend": "surrealkv", "latency_ms": {"hybrid": lat(30.0)},
     "recall@10": {"vector": 0.991}, "ingest": {"chunks_per_s": 400.0}, "peak_rss_mb": 900.0,
     "recall": {"latency_ms": {"recall": lat(200.0), "documents.query": lat(50.0)}, "passages_per_s": 600.0, "facts_per_s": 300.0}},
    {"system": "amem", "size": 100_000, "backend": "mem", "latency_ms": {"hybrid": lat(120.0)},
     "recall@10": {"vector": 0.95}, "ingest": {"chunks_per_s": 350.0}, "peak_rss_mb": 3000.0, "size_bytes": 900},
    {"system": "lancedb", "size": 10_000, "latency_ms": {"hybrid": lat(20.0)}, "peak_rss_mb": 600.0},
    {"system": "lancedb", "size": 100_000, "latency_ms": {"hybrid": lat(60.0)}, "peak_rss_mb": 1000.0, "size_bytes": 100},
    {"system": "lancedb-ann", "size": 100_000, "latency_ms": {"hybrid": lat(8.0)}, "peak_rss_mb": 900.0, "size_bytes": 120},
    {"system": "amem-ingest", "size": 10_000, "chunks_per_s_without_embedding": 200.0},
    {"system": "agent-loop", "size": 419, "write_ms": lat(25.0), "recall_ms": lat(40.0), "recall_last_quarter_ms": lat(45.0)},
    {"system": "throughput", "size": 10_000, "error": "RuntimeError: boom"},
]
# what the sections of this session's workers read (the older tables need full records)
RENDERED: list[dict[str, Any]] = [
    {"system": "throughput", "size": 100_000, "error": "RuntimeError: boom"},
    {"system": "throughput", "size": 10_000, "clients": [1, 2, 4], "per_client": 5, "backend": "surrealkv",
     "results_match": True, "rounds": [{"shape": "embedded", "c": c, "qps": 10.0 * c, "errors": []} for c in (1, 2, 4)]},
    {"system": "hnsw-curve", "size": 10_000, "queries": 3, "rebuild_seconds": 1.0,
     "engine": [{"k": 10, "ef": 64, "recall": 0.95, "p50_ms": 2.0}], "hnswlib": [{"k": 10, "ef": 64, "recall": 0.96, "p50_ms": 0.1}]},
]


def get(system: str, n: int | None) -> dict[str, Any] | None:
    return next((r for r in RESULTS if r["system"] == system and n in (None, r["size"]) and "error" not in r), None)


def test_goal_rows_say_met_least_met_or_not_and_by_how_much():
    rows = {g: (m, t, v) for g, m, t, v in goal_rows(get)}
    # 2x LanceDB at 100k: the goal (<= 1x) is not met, its floor (<= 600 ms) is
    assert rows["hybrid p50 at 100,000 vs LanceDB hybrid"] == ("120 / 60 ms = 2.00x", "<= 1x (least <= 600 ms)",
                                                                "least met, goal not (2.0x too slow)")
    assert rows["hybrid p50 at 10,000 vs LanceDB hybrid"][2] == "**met** (1.00x margin)"
    assert rows["vector recall@10 at 10,000"][::2] == ("0.991", "**met** (+0.011)")
    assert rows["vector recall@10 at 100,000 (perturbed copies of the real vectors)"][2] == "not met (-0.030)"
    # 200 / 400 chunks/s = 0.5x: under 0.8x, over the floor of 0.4x
    assert rows["product ingest vs bulk INSERT floor at 10,000"] == ("200 / 400 chunks/s = 0.50x", ">= 0.8x (least 0.4x)",
                                                                      "least met, goal not (0.62 of the goal)")
    # 4x the time for 10x the rows: slope log10(4) = 0.60 > 0.5
    assert rows["hybrid latency growth 10k -> 100k (log-log slope of p50)"][::2] == (
        "4.00x for 10x rows: slope 0.60", "not met (+0.10)")
    assert rows["recall p50 at 10,000 + 10,000 + 10,000"] == ("200 ms", "<= 150 ms (least 300 ms)", "least met, goal not (1.3x over)")
    assert rows["recall / documents.query p50 at 10,000"][2] == "not met (2.0x over)"
    assert rows["recall p50 over one LoCoMo conversation (agent loop, last quarter)"][::2] == ("45 ms", "not met (1.5x over)")
    assert rows["batched memory writes at 10,000: passages/s"][2] == "**met** (1.20 of the goal)"
    assert rows["batched memory writes at 10,000: facts/s"][2] == "least met, goal not (0.60 of the goal)"
    assert rows["one facts.write p50 (agent loop)"][2] == "not met (1.2x over)"
    # 3x LanceDB's RSS, but on mem://: not the default backend, so not counted
    measured, _, verdict = rows["peak RSS at 100,000 vs LanceDB, default backend"]
    assert measured == "3.00x (mem)" and verdict.startswith("not measured")
    assert rows["size on disk at 100,000 vs LanceDB, default backend"][2].startswith("not measured")
    # LanceDB with a vector index is shown beside the goal, never judged as one
    assert rows["hybrid p50 at 100,000 vs LanceDB with a vector index (IVF_HNSW_SQ), for reading"] == (
        "120 / 8 ms = 15.00x", "not a goal", "-")


def test_goal_rows_without_peers_are_not_measured():
    rows = goal_rows(lambda system, n: None)
    assert len(rows) == 14 and all(v.startswith("not measured") for _, _, _, v in rows)


def test_report_renders_goals_machine_and_failed_runs():
    report = {"machine": {"cpu": "test cpu", "cpus": 2, "memory_gb": 8, "os": "Linux", "python": "3.11",
                          "loadavg": (1.0, 1.0, 1.0), "packages": {"numpy": "2"}},
              "machine_end_loadavg": (1.0, 1.0, 1.0), "sizes": [10_000, 100_000], "systems": ["amem"], "queries": 20,
              "warmup": 2, "backend": "mem", "batch": 50, "seconds": 1.0,
              "data": {"passages": 1, "queries": 1, "embedder": "e", "dimension": 3, "datasets": ["d"]}, "results": RENDERED}
    md = render_markdown(report)
    for heading in ("## Goals of issues 24 and 25", "## Machine", "## Failed runs", "## Throughput", "## Recall-latency curve"):
        assert heading in md
    assert "throughput at 100,000: RuntimeError: boom" in md
    assert "| 10,000 | embedded, one connection, c queries in flight | 10.00 | 20.00 | 40.00 |" in md
    assert "| 10 | 64 | 0.950 | 2.0 | 0.960 | 0.1 |" in md


async def test_bulk_load_reopens_surrealkv_when_the_wal_is_full(tmp_path, monkeypatch):
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.migrator import Migrator

    monkeypatch.setattr(bench_load, "WAL_REOPEN_BYTES", 0)  # any WAL at all counts as full
    rng = np.random.default_rng(1)
    vecs = rng.standard_normal((12, 8)).astype(np.float32)
    rows = [{"doc": f"d{i // 3}", "title": "t", "source": "s", "position": i % 3, "text": f"passage {i} about widgets",
             "char_start": 0, "char_end": 10} for i in range(12)]
    target = Target(url=f"surrealkv://{tmp_path / 'db'}", ns="bench", db="b")
    db = bench_load.Reopener(target, await open_connection(target))
    try:
        await Migrator(db.conn).migrate({"embedding_dim": 8})
        ingest = await bench_load.bulk_load(db, rows, vecs, batch=4)
        # a reopen before every batch after the first write, and one after the rebuild
        assert ingest["reopens"] >= 3 and ingest["chunks"] == 12 and ingest["documents"] == 4
        assert ingest["rebuild"].get("chunk_embedding") is not None
        counts = await db.conn.query("SELECT count() AS n FROM chunk GROUP ALL; SELECT count() AS n FROM document GROUP ALL;")
        assert [c[0]["n"] for c in counts] == [12, 4]
        (knn,) = await db.conn.query("SELECT id FROM chunk WHERE embedding <|3,64|> $v", {"v": vecs[5].tolist()})
        assert len(knn) == 3 and bench_load.chunk_key(knn[0]["id"]) == "d1_2"
    finally:
        await close_quietly(db.conn)


def test_bench_defaults_are_the_published_run():
    """`make bench` (= `amem-db bench`) is the full run docs/BENCHMARKS.md's "Make target"
    spells out: every option of that command line is the command's default."""
    import inspect
    import re
    from pathlib import Path

    from amem_db.cli.harness import bench_command

    doc = (Path(__file__).resolve().parent.parent / "docs" / "BENCHMARKS.md").read_text()
    line = re.search(r"^amem-db bench (--backend .*)$", doc, re.M)
    assert line, "BENCHMARKS.md no longer shows the full run's command"
    given = dict(re.findall(r"--([a-z-]+) (\S+)", line.group(1)))
    given.pop("out")  # where the report went, not a setting of the run
    params = inspect.signature(bench_command).parameters
    defaults = {k: params[k.replace("-", "_")].default.default for k in given}  # typer.Option(default, ...)
    assert given and defaults == {k: type(defaults[k])(v) for k, v in given.items()}
