"""Where the shared evaluation collections live.

``AMEM_DATASETS`` when set; otherwise ``../shared/datasets`` beside the
repository root (the layout CI and a fresh clone use: ``shared/`` next to the
checkout). Never a path of the machine the code was written on.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import AmemError

ENV_VAR = "AMEM_DATASETS"
#: the repository root of an editable install or a clone (amem_db/harness/paths.py -> ../..)
REPO_ROOT = Path(__file__).resolve().parents[2]


def datasets_root() -> Path:
    """``$AMEM_DATASETS``, else ``<repository>/../shared/datasets`` (it may not exist)."""
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else REPO_ROOT.parent / "shared" / "datasets"


def require_collections(root: Path, names: tuple[str, ...] | list[str]) -> Path:
    """``root`` if every named collection has a corpus.jsonl there; else a one-line AmemError."""
    missing = [n for n in names if not (root / n / "corpus.jsonl").is_file()]
    if missing:
        raise AmemError(f"no {', '.join(missing)} under {root}: set {ENV_VAR} or pass --data-root "
                        "to the folder holding the collections", code="datasets_not_found")
    return root
