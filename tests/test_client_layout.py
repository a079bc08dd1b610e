"""The client's layout (issue 29 item 3): packages without import cycles, public import
paths that keep working, and one way a result becomes its model.

* every module of ``amem_db.client``, ``amem_db.models`` and ``amem_db.options`` (and the
  modules around them) imports alone in a fresh interpreter: an import cycle fails here;
* a stored function's result of the wrong shape is a ``ServerError`` from every
  namespace (``validated``), never a raw pydantic ``ValidationError``;
* no client module validates a result by itself (``model_validate`` only in
  ``amem_db.models._base.validated``).
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pydantic
import pytest

import amem_db
from amem_db import ServerError
from amem_db.client import Memory, _call
from amem_db.models import TracePage, validated

ROOT = Path(amem_db.__file__).parent
PACKAGES = ["amem_db.client", "amem_db.models", "amem_db.options"]


def _modules() -> list[str]:
    names = ["amem_db", "amem_db._args", "amem_db.sync", "amem_db.traces", "amem_db.answers", "amem_db.maintain",
             "amem_db.doctor", "amem_db.migrator", "amem_db.agents.mcp_server", "amem_db.cli"]
    for pkg in PACKAGES:
        names.append(pkg)
        names += [f"{pkg}.{m.name}" for m in pkgutil.iter_modules([str(ROOT / pkg.split(".")[1])])]
    return names


def test_each_module_imports_alone_in_a_fresh_interpreter():
    def run(name: str) -> tuple[str, int, str]:
        p = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True, timeout=120,
                           env={**__import__("os").environ, "PYTHONPATH": str(ROOT.parent)})
        return name, p.returncode, p.stderr[-800:]

    modules = _modules()
    assert len(modules) > 20
    with ThreadPoolExecutor(max_workers=2) as pool:
        failed = [(n, err) for n, rc, err in pool.map(run, modules) if rc != 0]
    assert failed == []


def test_public_import_paths_keep_working():
    from amem_db import Memory as top
    from amem_db.answers import Answers
    from amem_db.client import Documents, Entities, Facts, Keywords, Lens, QueryFilter, Traces
    from amem_db.models import KeywordMatch, RecallResponse, Tier, TraceSummary
    from amem_db.traces import Traces as old_traces

    assert top is Memory and old_traces is Traces and Answers.__module__ == "amem_db.client.answers"
    assert {Documents, Entities, Facts, Keywords} and Lens and QueryFilter and KeywordMatch
    # one tier vocabulary: the wire's "cache" is Tier.CACHE (2), the traces' 2 too
    r = RecallResponse.model_validate({"hits": [], "tier": "cache"})
    t = TraceSummary.model_validate({"id": "t", "query": "q", "mode": "recall", "created_at": "2026-01-01T00:00:00Z", "tier": 2})
    assert r.tier is Tier.CACHE and t.tier is Tier.CACHE and r.tier == t.tier == 2 and t.tier == "cache"
    assert r.model_dump(by_alias=True)["tier"] == "cache" and t.model_dump(by_alias=True)["tier"] == 2
    assert RecallResponse.model_validate({"hits": [], "tier": 4}).tier is Tier.ESCALATED != "cache"


def test_no_client_module_validates_a_result_by_itself():
    offenders = []
    for path in [*(ROOT / "client").glob("*.py"), ROOT / "sync.py", ROOT / "maintain.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("model_validate", "model_validate_json"):
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []


def test_a_wrong_shape_is_a_server_error():
    with pytest.raises(ServerError, match=r"unexpected result shape for TracePage: \('traces',\)"):
        validated(TracePage, {"traces": 3})
    with pytest.raises(ServerError) as info:
        validated(TracePage, None)
    assert isinstance(info.value.__cause__, pydantic.ValidationError)


# every namespace call that validates a result: (namespace path, method, args)
CALLS = [
    ("traces", "list", ()), ("traces", "stats", ()), ("traces", "get", ("retrieval_trace:x",)),
    ("traces", "explain", ("retrieval_trace:x", 1)), ("traces", "feedback", ("retrieval_trace:x", 1, "useful")),
    ("traces", "retention", ()), ("answers", "remember", ("q", "a", ["attribute:x"])),
    ("documents", "list", ()), ("documents", "get", ("document:x",)), ("documents", "chunks", ("document:x",)),
    ("documents", "delete", ("document:x",)), ("documents", "recompute_links", ()),
    ("documents.keywords", "list", ()), ("documents.keywords", "get", ("x",)), ("documents.keywords", "for_document", ("document:x",)),
    ("entities", "list", ()), ("entities", "get", ("person", "A")), ("entities", "history", ("person", "A", "role")),
    ("facts", "prepare", ({"triples": []},)), ("facts", "diff", ("2026-01-01", "2026-02-01")), ("facts", "declare_key", ("k",)),
    ("", "forget", (["attribute:x"],)), ("", "inspect", ("attribute:x",)),
    ("documents", "query", ("q",), {"mode": "bm25"}), ("", "recall", ("q",), {"mode": "bm25"}),
]


@pytest.mark.parametrize("case", CALLS, ids=lambda c: f"{c[0] or 'mem'}.{c[1]}")
async def test_every_namespace_maps_a_wrong_shape_to_server_error(monkeypatch, case):
    path, method, args, *kw = case

    async def wrong(conn, fn, *a):  # the database answers with an object of the wrong shape
        return {"unexpected": [1, 2, 3]}

    import amem_db.client._read as read
    import amem_db.client.documents as documents
    import amem_db.client.entities as entities
    import amem_db.client.facts as facts
    import amem_db.client.keywords as keywords
    import amem_db.client.memory as memory

    for module in (_call, read, documents, entities, facts, keywords, memory):
        monkeypatch.setattr(module, "call", wrong)
    mem = Memory(None, embedder="hash:384")
    target = mem
    for part in filter(None, path.split(".")):
        target = getattr(target, part)
    with pytest.raises(ServerError, match="unexpected result shape"):
        await getattr(target, method)(*args, **(kw[0] if kw else {}))
