"""`amem-db eval` plumbing on a tiny hand-made BEIR-layout dataset (mem://,
hash embedder): ranx metrics, query-type tagging, report files, --compare.
Retrieval quality itself is measured by the harness, never asserted here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amem_db.cli import app
from amem_db.harness import metrics, query_types
from amem_db.harness.datasets import load_dataset

CORPUS = [
    {"_id": "d1", "title": "Error codes", "text": "ERR-482 means the upstream payment gateway timed out; retry after 30 seconds."},
    {"_id": "d2", "title": "Returns", "text": "Customers may send back unopened items within thirty days for a full refund."},
    {"_id": "d3", "title": "Shipping", "text": "Standard delivery takes three to five business days inside the country."},
    {"_id": "d4", "title": "Products", "text": "The MLWK3LL/A laptop ships with a 70W charger and a braided cable."},
    {"_id": "d5", "title": "Warranty", "text": "Manufacturing defects are covered for one year from the purchase date."},
]
QUERIES = [
    {"_id": "1", "text": "ERR-482"},                                          # identifier
    {"_id": "2", "text": "how long do I have to give back a purchase"},       # paraphrase, low overlap
    {"_id": "3", "text": "which charger comes in the box with the MLWK3LL/A laptop model"},  # mixed
    {"_id": "4", "text": "a question nobody judged"},                         # no qrels: not scored
]
QRELS = [("1", "d1", 1), ("2", "d2", 1), ("3", "d4", 2), ("3", "d5", 0)]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tiny-beir") / "tiny"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in CORPUS))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in QRELS))
    return root


def test_load_dataset_defaults_to_the_only_split(dataset):
    ds = load_dataset(dataset)
    assert ds.split == "dev" and ds.name == "tiny" and ds.corpus_docs == 5
    assert list(ds.queries) == ["1", "2", "3"]  # judged queries only, in id order
    assert ds.relevant("3") == ["d4"]  # score 0 is judged non-relevant
    with pytest.raises(ValueError, match="no qrels/test.tsv"):
        load_dataset(dataset, "test")


@pytest.mark.slow  # ranx JIT-compiles its metrics on first use (~25 s)
def test_perfect_run_scores_one_and_misses_score_zero(dataset):
    ds = load_dataset(dataset)
    names = metrics.metric_names(50)
    assert names == ["ndcg@10", "recall@10", "recall@50", "mrr@10"]
    perfect = {"1": ["d1"], "2": ["d2", "d3"], "3": ["d4", "d5"]}
    assert metrics.evaluate(ds.qrels, perfect, names) == {m: pytest.approx(1.0) for m in names}
    # a query with no hits counts as 0 (not dropped); a hit at rank 2 halves MRR
    partial = {"1": ["d3", "d1"], "3": ["d4"]}
    got = metrics.evaluate(ds.qrels, partial, names)
    assert got["mrr@10"] == pytest.approx((0.5 + 0 + 1) / 3)
    assert got["recall@10"] == pytest.approx(2 / 3)
    assert metrics.evaluate(ds.qrels, {}, names) == {m: 0.0 for m in names}


def test_hits_map_to_corpus_ids_at_their_best_rank():
    hits = [{"document": {"source": "/data/corpus.jsonl#d4"}}, {"document": {"source": "/data/corpus.jsonl#d2"}},
            {"document": {"source": "/data/corpus.jsonl#d4"}}, {"document": {"source": None, "source_id": "d9"}}]
    assert metrics.document_ranking(hits) == ["d4", "d2", "d9"]


@pytest.mark.parametrize("text,expected", [
    ("ERR-482", ["ERR-482"]),
    ("MLWK3LL/A keeps rebooting", ["MLWK3LL/A"]),
    ("p53 and BRCA1 interact with DNA repair", ["p53", "BRCA1", "DNA"]),
    ("1 in 5 million in UK have abnormal PrP positivity.", ["UK", "PrP"]),
    ("what similarity laws must be obeyed", []),
])
def test_identifier_tokens(text, expected):
    assert query_types.identifier_tokens(text) == expected


def test_query_type_table(dataset):
    ds = load_dataset(dataset)
    tags = query_types.tag_queries(ds)
    assert {q: t["type"] for q, t in tags.items()} == {"1": "identifier", "2": "paraphrase", "3": "mixed"}
    assert tags["2"]["overlap_bucket"] == "low-overlap"  # "give back a purchase" vs "send back unopened items"
    assert tags["1"]["overlap_bucket"] == "high-overlap"
    assert query_types.tag_query("anything at all", [])["type"] == "no-answer"
    table = query_types.tag_table(tags)
    assert table == {"identifier": 1, "mixed": 1, "paraphrase": 1, "no-answer": 0, "low-overlap": 1, "high-overlap": 2}


def test_eval_command_writes_reports_and_compares(dataset, tmp_path):
    runner = CliRunner()
    out1 = tmp_path / "run1"
    args = ["--url", "mem://", "--embedder", "hash:384", "eval", str(dataset), "--modes", "bm25,hybrid_graph",
            "--k", "10"]
    first = runner.invoke(app, args + ["--out", str(out1)])
    assert first.exit_code == 0, first.output
    for name in ("report.json", "report.md", "report.png"):
        assert (out1 / name).stat().st_size > 0
    report = json.loads((out1 / "report.json").read_text())
    assert report["dataset"] == "tiny" and report["split"] == "dev" and report["queries"] == 3
    assert report["metrics"] == ["ndcg@10", "recall@10", "mrr@10"]  # recall@k == recall@10 here
    assert report["query_types"]["identifier"] == 1
    bm25 = report["modes"]["bm25"]
    assert bm25["available"] and set(bm25["metrics"]) == set(report["metrics"])
    assert all(0.0 <= v <= 1.0 for v in bm25["metrics"].values())
    assert bm25["by_type"]["identifier"]["n"] == 1
    # hybrid_graph is reported, not fatal, until the engine implements it
    if not report["modes"]["hybrid_graph"]["available"]:
        assert "hybrid_graph" in (out1 / "report.md").read_text()
    assert report["ingest"]["documents"] == 5

    out2 = tmp_path / "run2"
    second = runner.invoke(app, args + ["--out", str(out2), "--compare", str(out1 / "report.json")])
    assert second.exit_code == 0, second.output
    assert "compared with" in second.output and "delta" in second.output
    cmp = json.loads((out2 / "report.json").read_text())["comparison"]
    rows = [r for r in cmp if r["mode"] == "bm25"]
    assert [r["metric"] for r in rows] == report["metrics"]
    assert all(r["delta"] == pytest.approx(0.0) for r in rows)  # same data, same engine: no change
    assert "Compared with the previous report" in (out2 / "report.md").read_text()


def test_eval_help_has_an_example():
    result = CliRunner().invoke(app, ["eval", "--help"])
    assert result.exit_code == 0 and "Example: amem-db eval" in result.output
    result = CliRunner().invoke(app, ["bench", "--help"])
    assert result.exit_code == 0 and "Example: amem-db bench" in result.output


def test_missing_extra_is_a_one_line_error_naming_the_install():
    from amem_db.cli.harness import require_extra
    from amem_db.errors import AmemError

    require_extra(["json"], "eval")  # present: nothing happens
    with pytest.raises(AmemError, match=r"no_such_module_xyz not installed: pip install 'amem-db\[eval\]'"):
        require_extra(["json", "no_such_module_xyz"], "eval")


async def test_bench_term_mirror_agrees_with_the_stored_function(db):
    # the LanceDB / bm25s peers run without SurrealDB, so amem_db.harness.bench.peers
    # keeps a Python copy of fn::amem::query::terms; both must send the same words
    from amem_db.harness.bench.peers import query_terms

    for q in ["What is the refund window for unopened items?", "MLWK3LL/A keyboard", "the of and",
              "0-dimensional biomaterials show inductive properties", "IL-6 and TNF_alpha in 2019?"]:
        (t,) = await db.query("RETURN fn::amem::query::terms($q)", {"q": q})
        assert query_terms(q) == t["text"], q
