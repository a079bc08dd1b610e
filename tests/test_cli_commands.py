"""ingest / query / documents / keywords in-process (typer's CliRunner: what
they print, not how the process exits: tests/test_cli.py covers that), on one
embedded surrealkv database (hash embedder: named explicitly, fast)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from amem_db.cli import app

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "sample-corpus"


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), prog_name="amem-db")


def one_line_error(result: Result) -> str:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def summary_row(stdout: str) -> dict[str, str]:
    """The ingest summary table (header: added | replaced | ... ; one row of figures)."""
    rows = [[c.strip() for c in line.strip("│ ").split("│")] for line in stdout.splitlines() if line.startswith("│")]
    keys = ["added", "replaced", "unchanged", "failed", "chunks", "keywords", "embedded texts", "time"]
    assert len(rows) == 1 and len(rows[0]) == len(keys), stdout
    return dict(zip(keys, rows[0]))


@pytest.fixture(scope="module")
def db_args(tmp_path_factory) -> tuple[str, ...]:
    path = tmp_path_factory.mktemp("cli") / "db"
    args = ("--url", f"surrealkv://{path}", "--embedder", "hash:384")
    assert cli(*args, "migrate").exit_code == 0
    done = cli(*args, "ingest", str(SAMPLE))
    assert done.exit_code == 0, done.output
    figures = summary_row(done.stdout)
    assert figures.pop("time").endswith("s")
    # 11 files, of which scifact-sample.jsonl holds 50 documents: 60 documents,
    # their chunks, RAKE keywords (top 5 per document) and every embedded text (passages and
    # headings: keywords get their vectors on request, `keywords embed`, since issue 25)
    assert figures == {"added": "60", "replaced": "0", "unchanged": "0", "failed": "0",
                       "chunks": "206", "keywords": "300", "embedded texts": "271"}
    assert "documents" in done.stderr  # the progress bar goes to stderr
    return args


def test_reingest_reports_unchanged(db_args):
    done = cli(*db_args, "ingest", str(SAMPLE), "--json")
    report = json.loads(done.stdout)
    assert [r["status"] for r in report["results"]] == ["unchanged"] * 60
    assert report["chunks"] == 0


def test_options_after_the_command_in_process(db_args):
    url, _, embedder = db_args[1], db_args[2], db_args[3]
    listing = json.loads(cli("documents", "list", "--url", url, "--embedder", embedder, "--json", "--limit", "1").stdout)
    assert listing["total"] == 60


def test_query_table_and_json(db_args):
    table = cli(*db_args, "query", "MLWK3LL/A", "--mode", "bm25", "--k", "3")
    assert table.exit_code == 0 and "3 results" in table.stdout
    as_json = json.loads(cli(*db_args, "query", "return window unopened items", "--json", "--k", "5").stdout)
    assert len(as_json["results"]) == 5
    hit = as_json["results"][0]
    assert set(hit["chunk"]) >= {"id", "document", "text", "section", "position", "charStart", "charEnd"}
    assert 0 <= hit["score"] <= 1 and hit["document"]["title"]
    assert as_json["trace"]["id"].startswith("retrieval_trace:")


def test_query_filters_by_mime_type(db_args):
    out = json.loads(cli(*db_args, "query", "battery", "--mime-type", "application/pdf", "--json").stdout)
    assert out["results"] and all(h["document"]["source"].endswith(".pdf") for h in out["results"])


def test_bad_query_option_is_one_line(db_args):
    line = one_line_error(cli(*db_args, "query", "x", "--mode", "fuzzy"))
    assert "invalid_input" in line and "hybrid" in line


def test_documents_commands(db_args):
    listing = json.loads(cli(*db_args, "documents", "list", "--mime-type", "text/markdown", "--json").stdout)
    assert listing["total"] == 5
    doc_id = listing["documents"][0]["id"]
    got = json.loads(cli(*db_args, "documents", "get", doc_id, "--json").stdout)
    assert got["id"] == doc_id and got["keywords"]
    shown = cli(*db_args, "documents", "get", doc_id)
    assert shown.exit_code == 0 and doc_id in shown.stdout and "keywords: " in shown.stdout
    chunks = cli(*db_args, "documents", "chunks", doc_id, "--limit", "2")
    assert chunks.exit_code == 0 and "#0" in chunks.stdout and "#1" in chunks.stdout and "#2" not in chunks.stdout
    assert "links across" in cli(*db_args, "documents", "recompute-links").stdout
    missing = one_line_error(cli(*db_args, "documents", "get", "document:nosuchthing"))
    assert missing == "error (not_found): no document document:nosuchthing"


def test_keywords_commands(db_args):
    listing = json.loads(cli(*db_args, "keywords", "list", "--min-document-count", "2", "--sort=-document_count", "--json").stdout)
    assert listing["keywords"] and all(k["document_count"] >= 2 for k in listing["keywords"])
    name = listing["keywords"][0]["text"]
    detail = json.loads(cli(*db_args, "keywords", "get", name, "--json").stdout)
    assert detail["document_count"] == listing["keywords"][0]["document_count"]
    doc = detail["documents"][0]["id"]
    for_doc = json.loads(cli(*db_args, "keywords", "for-document", doc, "--json").stdout)
    assert name.lower() in [k["normalised"] for k in for_doc["keywords"]]
    before = json.loads(cli(*db_args, "keywords", "search", name.lower(), "--k", "3", "--json").stdout)
    assert before["results"] == []  # no keyword has a vector yet
    embedded = json.loads(cli(*db_args, "keywords", "embed", "--json").stdout)
    assert embedded["embedded"] > 100  # the distinct keywords of the corpus, each once
    assert json.loads(cli(*db_args, "keywords", "embed", "--json").stdout)["embedded"] == 0
    found = json.loads(cli(*db_args, "keywords", "search", name.lower(), "--k", "3", "--json").stdout)
    assert found["results"][0]["normalised"] == name.lower()
    missing = one_line_error(cli(*db_args, "keywords", "get", "surely not a keyword"))
    assert "not_found" in missing


def test_ingest_of_a_missing_path_is_a_usage_error(db_args):
    result = cli(*db_args, "ingest", "no/such/file.md")
    assert result.exit_code == 2 and "no such file or folder" in result.output


def test_a_dangling_symlink_in_a_folder_is_reported_and_the_rest_goes_on(db_args, tmp_path):
    """Issue 15 finding 13: a link whose target is gone was skipped without a word."""
    (tmp_path / "ok.md").write_text("# Fine\n\nA readable note about dangling links.")
    (tmp_path / "gone.md").symlink_to(tmp_path / "missing.md")
    done = cli(*db_args, "ingest", str(tmp_path), "--json")
    assert done.exit_code == 0, done.output  # one file failed, one stored
    results = {Path(r["name"]).name: r for r in json.loads(done.stdout)["results"]}
    assert results["ok.md"]["status"] in ("added", "unchanged")
    assert results["gone.md"]["status"] == "failed" and "symbolic link" in results["gone.md"]["error"]


def test_a_failing_command_closes_what_it_opened(db_args):
    # the command decorator closes the database however the command ends: a
    # second process can open the same embedded path right after a failure
    assert cli(*db_args, "documents", "get", "document:nosuchthing").exit_code == 1
    assert cli(*db_args, "query", "x", "--mode", "fuzzy").exit_code == 1
    from test_cli import amem

    status = amem(*db_args[:2], "status")
    assert status.returncode == 0, status.stderr


# --- typed memory: remember / entities ---------------------------------------------------

def test_parse_fact_attribute_relation_and_bad_syntax():
    from amem_db.cli.memory import parse_fact
    from amem_db.errors import InvalidInput

    assert parse_fact("person:Alice Smith role=VP Engineering") == {
        "entity": {"type": "person", "name": "Alice Smith"}, "key": "role", "value": "VP Engineering"}
    assert parse_fact("person:Alice works_at->organisation:Acme Corp") == {
        "entity": {"type": "person", "name": "Alice"}, "key": "works_at", "target": {"type": "organisation", "name": "Acme Corp"}}
    for bad in ["bogus", "person:Alice", "Alice role=CTO", "person:Alice role->Acme"]:
        with pytest.raises(InvalidInput, match="expected 'TYPE:NAME KEY=VALUE'"):
            parse_fact(bad)


def test_remember_supersedes_and_entities_show_current_and_history(db_args):
    first = cli(*db_args, "remember", "Grace Hopper joined Navy Labs as a researcher.",
                "--fact", "person:Grace Hopper role=researcher", "--fact", "person:Grace Hopper works_at->organisation:Navy Labs",
                "--observed-at", "2024-01-10T00:00:00Z", "--json")
    assert first.exit_code == 0, first.output
    written = json.loads(first.stdout)
    assert [t["outcome"] for t in written["triples"]] == ["added", "added"] and len(written["passages"]) == 1
    second = cli(*db_args, "remember", "--fact", "person:Grace Hopper role=rear admiral", "--observed-at", "2025-03-01T00:00:00Z")
    assert second.exit_code == 0, second.output
    assert "superseded" in second.stdout and "1 facts, 0 memory passages" in second.stdout

    got = json.loads(cli(*db_args, "entities", "get", "person", "grace hopper", "--json").stdout)
    current = {row["key"]: row for row in got["attributes"] + got["relations"]}
    assert current["role"]["value"] == "rear admiral" and current["works_at"]["target"] == "entity:organisation/navy labs"
    hist = json.loads(cli(*db_args, "entities", "history", "person", "Grace Hopper", "role", "--json").stdout)
    assert [(r["value"], r["current"]) for r in hist["rows"]] == [("rear admiral", True), ("researcher", False)]
    assert hist["rows"][1]["valid_until"] == hist["rows"][0]["valid_from"]  # supersession closed the old value's valid time
    listed = json.loads(cli(*db_args, "entities", "list", "--type", "person", "--json").stdout)
    assert "Grace Hopper" in [e["name"] for e in listed["entities"]]
    table = cli(*db_args, "entities", "history", "person", "Grace Hopper", "role")
    assert table.exit_code == 0 and "rear admiral" in table.stdout


def test_time_options_on_entity_reads_and_facts_diff(db_args):
    for value, valid_from, observed in [("Bob Stone", "2019-01-01", "2019-02-01"), ("Carol Reyes", "2021-01-01", "2022-09-01")]:
        assert cli(*db_args, "remember", "--fact", f"organisation:Initech cto={value}", "--valid-from", valid_from,
                   "--observed-at", observed).exit_code == 0

    def cto(*opts: str) -> list[str]:
        got = json.loads(cli(*db_args, "entities", "get", "organisation", "Initech", *opts, "--json").stdout)
        return [a["value"] for a in got["attributes"]]

    assert cto() == ["Carol Reyes"]
    assert cto("--valid-at", "2021-06-01") == ["Carol Reyes"]
    assert cto("--as-of", "2022-06-01", "--valid-at", "2021-06-01") == ["Bob Stone"]  # what we believed last June
    assert cto("--valid-during", "2020-06-01,2021-06-01") == ["Carol Reyes", "Bob Stone"]
    hist = json.loads(cli(*db_args, "entities", "history", "organisation", "Initech", "cto", "--as-of", "2022-06-01", "--json").stdout)
    assert [r["value"] for r in hist["rows"]] == ["Bob Stone"]
    diff = cli(*db_args, "facts", "diff", "2022-06-01", "2022-10-01", "--entity", "organisation:Initech")
    assert diff.exit_code == 0 and "changed" in diff.stdout and "0 added, 1 changed, 0 closed" in diff.stdout
    assert "--valid-during takes FROM,TO" in one_line_error(cli(*db_args, "entities", "get", "organisation", "Initech", "--valid-during", "2021"))
    assert "asOf must be a datetime" in one_line_error(cli(*db_args, "entities", "get", "organisation", "Initech", "--as-of", "June"))
    assert "atInstant needs storage that keeps versions" in one_line_error(
        cli(*db_args, "entities", "get", "organisation", "Initech", "--at-instant", "2024-01-01"))


def test_remember_errors_are_one_line_and_change_nothing(db_args):
    before = json.loads(cli(*db_args, "entities", "list", "--json").stdout)["total"]
    assert "expected 'TYPE:NAME KEY=VALUE'" in one_line_error(cli(*db_args, "remember", "--fact", "bogus"))
    assert "nothing to remember" in one_line_error(cli(*db_args, "remember"))
    line = one_line_error(cli(*db_args, "remember", "--fact", "person:Nobody New role=x", "--category", "gossip"))
    assert line.startswith("error (invalid_input):") and "category" in line
    assert json.loads(cli(*db_args, "entities", "list", "--json").stdout)["total"] == before
    assert "no person named" in one_line_error(cli(*db_args, "entities", "get", "person", "Nobody New"))


def test_recall_table_json_and_one_line_errors(db_args):
    assert cli(*db_args, "remember", "Ada Byron writes the engine notes.", "--category", "knowledge",
               "--fact", "person:Ada Byron role=analyst").exit_code == 0
    table = cli(*db_args, "recall", "What is Ada Byron's role?", "--k", "5")
    assert table.exit_code == 0, table.output
    row1 = next(line for line in table.stdout.splitlines() if line.startswith("│ 1 "))
    assert "attribute" in row1 and "Ada Byron:" in row1 and "write" in row1  # the table wraps long cells
    assert "direct_lookup; names Ada Byron" in table.stdout
    tier_lines = [line for line in table.stdout.splitlines() if line.startswith("tier ")]
    assert len(tier_lines) == 1 and re.match(r"tier [34]: (?!tier)", tier_lines[0]), tier_lines  # once, not "tier 3: tier 3:"
    top = json.loads(cli(*db_args, "recall", "What is Ada Byron's role?", "--json").stdout)["hits"][0]
    assert top["text"] == "Ada Byron: role = analyst" and top["citation"]["key"] == "role"
    data = json.loads(cli(*db_args, "recall", "Ada Byron engine notes", "--include", "passages", "--json").stdout)
    assert data["hits"] and {h["source"] for h in data["hits"]} <= {"memory_chunk", "chunk", "audio_chunk"}
    assert any(h["text"] == "Ada Byron writes the engine notes." for h in data["hits"])
    assert "k must be a whole number from 1 to 50" in one_line_error(cli(*db_args, "recall", "x", "--k", "51"))
    assert "include must be" in one_line_error(cli(*db_args, "recall", "x", "--include", "everything"))


def test_hostile_jsonl_files_fail_one_line_each_and_the_run_goes_on(db_args, tmp_path):
    (tmp_path / "deep.jsonl").write_text('{"_id": "d", "text": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    (tmp_path / "surrogate.jsonl").write_text('{"_id": "s", "text": "bad \\ud800 here"}\n')
    (tmp_path / "fine.md").write_text("# Fine\n\nA file that ingests after two broken ones.\n")
    done = cli(*db_args, "ingest", str(tmp_path))
    assert done.exit_code == 0, done.output  # some files failed, not all
    figures = summary_row(done.stdout)
    assert (figures["added"], figures["failed"]) == ("1", "2")
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed ")]  # one line per file, on stderr
    assert len(failed) == 2 and any("deep.jsonl" in f and "nests" in f for f in failed)
    assert any("surrogate.jsonl" in f and "surrogate" in f for f in failed)
