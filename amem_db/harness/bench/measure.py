"""What the benchmark measures: latency percentiles, vector recall against
exact ground truth, peak memory, and the machine it ran on."""

from __future__ import annotations

import os
import platform
import resource
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..common import percentile


def pct(values: list[float], p: float) -> float | None:
    """evaluation.percentile, with None (JSON null) for no values."""
    return percentile(values, p) if values else None


def latency_summary(ms: list[float]) -> dict[str, Any]:
    return {"n": len(ms), "p50": pct(ms, 50), "p95": pct(ms, 95), "p99": pct(ms, 99),
            "mean": statistics.fmean(ms) if ms else None}


def peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def exact_topk(vectors: Any, qv: Any, k: int) -> list[list[int]]:
    """Exact cosine top-k (numpy): ground truth for recall."""
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1)
    sims = (vectors @ qv.T) / norms[:, None] / np.linalg.norm(qv, axis=1)[None, :]
    idx = np.argpartition(-sims, kth=min(k, len(vectors) - 1), axis=0)[:k]
    out = []
    for qi in range(qv.shape[0]):
        cand = idx[:, qi]
        out.append([int(i) for i in cand[np.argsort(-sims[cand, qi], kind="stable")]])
    return out


def recall_at(found: Sequence[Sequence[int | None]], truth: Sequence[Sequence[int]], k: int) -> float:
    vals = [len(set(f[:k]) & set(t[:k])) / k for f, t in zip(found, truth)]
    return statistics.fmean(vals) if vals else float("nan")


def machine_description() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions: dict[str, str | None] = {}
    from importlib.metadata import PackageNotFoundError, version

    for pkg in ("surrealdb-embedded", "surrealdb", "lancedb", "bm25s", "hnswlib", "numpy"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    return {"cpu": cpu, "cpus": cpus, "memory_gb": mem_gb, "python": platform.python_version(),
            "os": f"{platform.system()} {platform.release()}", "loadavg": os.getloadavg(), "packages": versions}
