"""Index maintenance and the engine checks (amem_db/maintain.py, amem_db/doctor.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ._base import _Model, _Returned

__all__ = [
    "DoctorCheck",
    "DoctorReport",
    "IndexStatus",
    "MaintainReport",
]


class IndexStatus(_Returned):
    """One HNSW index of ``fn::amem::maintain::status`` (amem_db/maintain.py): rows of its
    table, rows written since its last build (``unbuilt``: the pending queue every KNN
    scans, docs/ENGINE-ISSUES.md #19), their share, whether a rebuild is ``due``."""

    index: str
    table: str
    field: str
    rows: int
    unbuilt: int
    share: float
    due: bool
    building: bool
    started_at: datetime | None = None
    built_at: datetime | None = None
    built_rows: int | None = None
    seconds: float | None = None
    builds: int = 0


class MaintainReport(_Model):
    """``mem.maintain``: the indexes rebuilt (their status after the build) and the
    status of every index before, with the threshold that chose them."""

    threshold: float
    min_rows: int
    rebuilt: list[IndexStatus] = []
    before: list[IndexStatus] = []
    seconds: float = 0.0
    # the term statistics counted by this pass (amem_db/termstats.py count), None: not due
    term_stats: dict[str, Any] | None = None
    # the BM25 champion lists built by this pass (amem_db/bm25lists.py build), None: not due
    bm25_lists: dict[str, Any] | None = None


class DoctorCheck(_Model):
    """One check of ``amem-db doctor``: ``ok`` (the hazard is absent), ``handled``
    (present, and amem-db works around it: ``handling`` says how), ``unhandled``
    (present and not worked around: doctor exits 1), ``error`` (the check could not run)."""

    name: str
    status: Literal["ok", "handled", "unhandled", "error"]
    finding: str
    handling: str = ""
    details: dict[str, Any] = {}


class DoctorReport(_Model):
    """``amem-db doctor``: the engine version and every check; ``healthy`` unless one
    is unhandled or failed to run."""

    engine: str
    checks: list[DoctorCheck]
    healthy: bool
