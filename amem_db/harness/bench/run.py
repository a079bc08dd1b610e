"""``amem-db bench``: build the data, run each system at each size in its own
process (so peak RSS is that system's alone), write bench.json, report.md and
latency.png."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..paths import datasets_root
from .agent_loop import worker_agent_loop
from .amem import worker_amem, worker_amem_ingest
from .curve import SPLIT_MAX_SIZE, worker_hnsw_curve, worker_vector_split
from .data import DEFAULT_DATASETS, Progress, build_data
from .measure import machine_description
from .peers import worker_lancedb, worker_python
from .report import plot_latency, render_markdown
from .throughput import worker_throughput

DEFAULT_SIZES = (1_000, 10_000, 100_000)
DEFAULT_SYSTEMS = ("amem", "amem-ingest", "agent-loop", "lancedb", "lancedb-ann", "python", "throughput", "hnsw-curve", "vector-split")
DEFAULT_INGEST_SIZES = (1_000, 10_000)
DEFAULT_THROUGHPUT_SIZES = (1_000, 10_000)
DEFAULT_OUT = Path("results") / "bench"
WORKER_MODULE = "amem_db.harness.bench"


def worker_main(argv: list[str]) -> None:
    """``python -m amem_db.harness.bench worker '{json}'``: one system at one size; prints JSON."""
    args = json.loads(argv[0])
    system, n = args["system"], int(args["size"])
    data_dir, db_root = Path(args["data_dir"]), Path(args["db_root"])
    db_root.mkdir(parents=True, exist_ok=True)
    code = 0
    try:
        if system == "amem":
            recall_sizes = args.get("recall_sizes")
            res = asyncio.run(worker_amem(n, data_dir, db_root, args["backend"], args["queries"], args["batch"], args["reps"],
                                          None if recall_sizes is None else tuple(recall_sizes)))
        elif system == "amem-ingest":
            res = asyncio.run(worker_amem_ingest(n, Path(args["data_root"]), tuple(args["datasets"]), db_root,
                                                 args["backend"], args.get("embedder")))
        elif system == "agent-loop":
            res = asyncio.run(worker_agent_loop(Path(args["data_root"]), db_root, args["backend"], args.get("embedder"),
                                                args.get("loop_speaker")))
        elif system == "throughput":
            res = asyncio.run(worker_throughput(n, data_dir, db_root, args["backend"], args["queries"], args["batch"]))
        elif system == "hnsw-curve":
            res = asyncio.run(worker_hnsw_curve(n, data_dir))
        elif system == "vector-split":
            res = asyncio.run(worker_vector_split(n, data_dir, args["queries"]))
        elif system in ("lancedb", "lancedb-ann"):
            res = worker_lancedb(n, data_dir, db_root, args["queries"], args["reps"], ann=system == "lancedb-ann")
        elif system == "python":
            res = worker_python(n, data_dir, args["queries"], args["reps"])
        else:
            raise ValueError(f"unknown system {system}")
        if not args.get("keep_db"):
            for p in [*db_root.glob(f"*-{n}"), db_root / "agent-loop"]:
                shutil.rmtree(p, ignore_errors=True)
    except Exception as exc:  # reported, the orchestrator goes on
        import traceback

        res = {"system": system, "size": n, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        code = 1
    sys.stdout.write("\n@@RESULT@@" + json.dumps(res, default=str) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the native engine may abort at interpreter exit (docs/ENGINE-ISSUES.md #4)


def run_worker(args: dict[str, Any], timeout: float, log: Path | None = None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", WORKER_MODULE, "worker", json.dumps(args)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"system": args["system"], "size": args["size"], "error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    if log is not None:
        with open(log, "a") as fh:
            fh.write(f"--- {args['system']} {args['size']} rc={proc.returncode} {wall:.1f}s\n{proc.stderr[-4000:]}\n")
    marker = proc.stdout.rfind("@@RESULT@@")
    if marker < 0:
        return {"system": args["system"], "size": args["size"],
                "error": f"worker exited {proc.returncode} without a result: {proc.stderr.strip()[-500:]}"}
    res: dict[str, Any] = json.loads(proc.stdout[marker + len("@@RESULT@@"):].strip().splitlines()[0])
    res["wall_seconds"] = round(wall, 1)
    return res


def run_bench(*, sizes: list[int], systems: list[str], out_dir: Path, embedder: Any, embedder_spec: str | None,
              queries: int = 20, reps: int = 2, backend: str = "mem", batch: int = 50,
              ingest_sizes: list[int] | None = None, recall_sizes: list[int] | None = None,
              throughput_sizes: list[int] | None = None, data_root: Path | None = None,
              datasets: tuple[str, ...] = DEFAULT_DATASETS, timeout: float = 2700, keep_db: bool = False,
              loop_speaker: str | None = None, progress: Progress | None = None) -> dict[str, Any]:
    data_root = data_root or datasets_root()
    out_dir.mkdir(parents=True, exist_ok=True)
    data_dir = out_dir / "data"
    db_root = out_dir / "db"
    log = out_dir / "workers.log"
    started = time.perf_counter()
    t0 = time.perf_counter()
    meta = build_data(data_dir, embedder, datasets=datasets, data_root=data_root, progress=progress)
    data_seconds = time.perf_counter() - t0
    ingest_sizes = list(DEFAULT_INGEST_SIZES if ingest_sizes is None else ingest_sizes)
    throughput_sizes = list(DEFAULT_THROUGHPUT_SIZES if throughput_sizes is None else throughput_sizes)
    results = []
    machine = machine_description()
    for n in sizes:
        for system in systems:
            if system == "amem-ingest" and n not in ingest_sizes:
                continue
            if system == "throughput" and n not in throughput_sizes:
                continue
            if system == "vector-split" and n > SPLIT_MAX_SIZE:
                continue
            if system == "agent-loop" and n != sizes[0]:
                continue  # one LoCoMo conversation: its size is its own (bench/agent_loop.py)
            if progress:
                progress(f"{system} at {n:,} chunks")
            args = {"system": system, "size": n, "data_dir": str(data_dir), "db_root": str(db_root),
                    "backend": backend, "queries": queries, "reps": reps, "batch": batch, "keep_db": keep_db,
                    "data_root": str(data_root), "datasets": list(datasets), "embedder": embedder_spec,
                    "recall_sizes": recall_sizes, "loop_speaker": loop_speaker}
            res = run_worker(args, timeout, log)
            if progress:
                progress(f"{system} at {n:,}: " + (res.get("error") or f"done in {res.get('wall_seconds')} s"))
            results.append(res)
            # after every worker, so a run stopped part-way keeps what it measured
            report = write_report(out_dir, machine, sizes, systems, queries, reps, backend, batch, meta, data_seconds,
                                  results, started, done=False)
    report = write_report(out_dir, machine, sizes, systems, queries, reps, backend, batch, meta, data_seconds,
                          results, started, done=True)
    plot_latency(report, out_dir / "latency.png")
    return report


def write_report(out_dir: Path, machine: dict[str, Any], sizes: list[int], systems: list[str], queries: int, reps: int,
                 backend: str, batch: int, meta: dict[str, Any], data_seconds: float, results: list[dict[str, Any]],
                 started: float, *, done: bool) -> dict[str, Any]:
    """bench.json and report.md from the results so far (``complete`` False until the last worker)."""
    report = {"machine": machine, "machine_end_loadavg": os.getloadavg(), "sizes": sizes, "systems": systems,
              "queries": queries, "warmup": reps, "backend": backend, "batch": batch,
              "data": {"passages": len(meta["passages"]), "queries": len(meta["queries"]), "embedder": meta["embedder"],
                       "dimension": meta["dimension"], "datasets": meta["datasets"], "seconds": round(data_seconds, 1)},
              "results": results, "seconds": round(time.perf_counter() - started, 1),
              "created_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "complete": done}
    (out_dir / "bench.json").write_text(json.dumps(report, indent=2, default=str))
    (out_dir / "report.md").write_text(render_markdown(report))
    return report
