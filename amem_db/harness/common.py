"""Small helpers both the evaluation and the benchmark use."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (0-100) by linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    s = sorted(values)
    idx = (len(s) - 1) * p / 100
    lo, hi = math.floor(idx), math.ceil(idx)
    return s[lo] + (s[hi] - s[lo]) * (idx - lo)

def dir_size(path: Path) -> int:
    if not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def json_safe(v: Any) -> Any:
    """NaN and infinities -> None, recursively, so a report is strict JSON."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v
