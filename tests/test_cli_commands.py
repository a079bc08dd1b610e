"""ingest / query / documents / keywords through the real CLI process, on one
embedded surrealkv database (hash embedder: named explicitly, fast)."""

from __future__ import annotations

import json

import pytest
from test_cli import ROOT, amem, one_line_error

SAMPLE = ROOT / "examples" / "sample-corpus"


@pytest.fixture(scope="module")
def db_args(tmp_path_factory) -> tuple[str, ...]:
    path = tmp_path_factory.mktemp("cli") / "db"
    args = ("--url", f"surrealkv://{path}", "--embedder", "hash:384")
    assert amem(*args, "migrate").returncode == 0
    done = amem(*args, "ingest", str(SAMPLE))
    assert done.returncode == 0, done.stderr
    assert "60" in done.stdout and "added" in done.stdout  # the summary table
    assert "documents" in done.stderr  # the progress bar goes to stderr
    return args


def test_reingest_reports_unchanged(db_args):
    done = amem(*db_args, "ingest", str(SAMPLE), "--json")
    report = json.loads(done.stdout)
    assert {r["status"] for r in report["results"]} == {"unchanged"}


def test_query_table_and_json(db_args):
    table = amem(*db_args, "query", "MLWK3LL/A", "--mode", "bm25", "--k", "3")
    assert table.returncode == 0 and "3 results" in table.stdout
    as_json = json.loads(amem(*db_args, "query", "return window unopened items", "--json", "--k", "5").stdout)
    assert len(as_json["results"]) == 5
    hit = as_json["results"][0]
    assert set(hit["chunk"]) >= {"id", "document", "text", "section", "position", "charStart", "charEnd"}
    assert 0 <= hit["score"] <= 1 and hit["document"]["title"]
    assert as_json["trace"]["id"]


def test_query_filters_by_mime_type(db_args):
    out = json.loads(amem(*db_args, "query", "battery", "--mime-type", "application/pdf", "--json").stdout)
    assert out["results"] and all(h["document"]["source"].endswith(".pdf") for h in out["results"])


def test_bad_query_option_is_one_line(db_args):
    line = one_line_error(amem(*db_args, "query", "x", "--mode", "fuzzy"))
    assert "invalid_input" in line and "hybrid" in line


def test_documents_commands(db_args):
    listing = json.loads(amem(*db_args, "documents", "list", "--mime-type", "text/markdown", "--json").stdout)
    assert listing["total"] == 5
    doc_id = listing["documents"][0]["id"]
    got = json.loads(amem(*db_args, "documents", "get", doc_id, "--json").stdout)
    assert got["id"] == doc_id and got["keywords"]
    chunks = amem(*db_args, "documents", "chunks", doc_id, "--limit", "2")
    assert chunks.returncode == 0 and "#0" in chunks.stdout
    assert "links across" in amem(*db_args, "documents", "recompute-links").stdout


def test_keywords_commands(db_args):
    listing = json.loads(amem(*db_args, "keywords", "list", "--min-document-count", "2", "--sort=-document_count", "--json").stdout)
    assert listing["keywords"] and all(k["document_count"] >= 2 for k in listing["keywords"])
    name = listing["keywords"][0]["text"]
    detail = json.loads(amem(*db_args, "keywords", "get", name, "--json").stdout)
    assert detail["document_count"] == listing["keywords"][0]["document_count"]
    doc = detail["documents"][0]["id"]
    for_doc = json.loads(amem(*db_args, "keywords", "for-document", doc, "--json").stdout)
    assert name.lower() in [k["normalised"] for k in for_doc["keywords"]]
    found = json.loads(amem(*db_args, "keywords", "search", name.lower(), "--k", "3", "--json").stdout)
    assert found["results"][0]["normalised"] == name.lower()
    missing = one_line_error(amem(*db_args, "keywords", "get", "surely not a keyword"))
    assert "not_found" in missing


def test_ingest_of_a_missing_path_is_a_clear_error(db_args):
    result = amem(*db_args, "ingest", "no/such/file.md")
    assert result.returncode == 2 and "no such file or folder" in result.stderr
