"""LoCoMo as a conversation collection of `amem-db eval` (amem_db/harness/locomo.py),
on a hand-made slice in the shared layout: the loader (split, categories, the
adversarial evidence), the turn -> memory write request, writing through
facts.write on the real engine, hit -> turn id mapping and the per-category
aggregation (ranx). Retrieval quality itself is measured by `make eval`, never
asserted here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amem_db.client import Memory
from amem_db.embedding import CachedEmbedder, get_embedder
from amem_db.harness import locomo
from amem_db.harness.evaluation import ModeRun


def turn(conv: str, session: int, t: int, speaker: str, text: str, day: str) -> dict:
    dia = f"D{session}:{t}"
    return {"_id": f"{conv}:{dia}", "title": f"{speaker} (session {session}, {day})", "text": text,
            "metadata": {"conversation": conv, "session": session, "speaker": speaker,
                         "observed_at": f"{day}T10:00:00Z", "dia_id": dia}}


CORPUS = [
    turn("conv-1", 1, 1, "Ann", "I adopted a grey kitten called Pixel last weekend!", "2023-05-08"),
    turn("conv-1", 1, 2, "Bob", "Congrats! I started pottery classes at the community centre.", "2023-05-08"),
    turn("conv-1", 2, 1, "Ann", "Pixel knocked my sourdough starter off the shelf.", "2023-06-01"),
    turn("conv-1", 2, 2, "Bob", "My first pottery bowl came out lopsided but I love it.", "2023-06-01"),
    turn("conv-2", 1, 1, "Cy", "We hiked the ridge trail and saw a pottery kiln in the village.", "2023-07-03"),
    turn("conv-2", 1, 2, "Di", "The kiln owner sold us two mugs.", "2023-07-03"),
    turn("conv-9", 1, 1, "Ed", "A conversation of another split: never written.", "2023-08-01"),
]
QUERIES = [
    {"_id": "conv-1:q0", "text": "When did Bob start pottery classes?", "metadata": {"conversation": "conv-1", "category": 2}},
    {"_id": "conv-1:q1", "text": "What did Pixel knock over?", "metadata": {"conversation": "conv-1", "category": 4}},
    {"_id": "conv-2:q0", "text": "Where did Cy and Di buy mugs?", "metadata": {"conversation": "conv-2", "category": 1}},
    {"_id": "conv-9:q0", "text": "unjudged in dev", "metadata": {"conversation": "conv-9", "category": 4}},
]
QRELS = [("conv-1:q0", "conv-1:D1:2"), ("conv-1:q1", "conv-1:D2:1"), ("conv-2:q0", "conv-2:D1:1"), ("conv-2:q0", "conv-2:D1:2")]
ADVERSARIAL = [
    {"_id": "conv-1:q2", "text": "What is Bob's kitten called?", "metadata": {"conversation": "conv-1", "category": 5, "evidence": ["D1:1"]}},
    {"_id": "conv-2:q1", "text": "Which turn is missing?", "metadata": {"conversation": "conv-2", "category": 5, "evidence": ["D9:9"]}},
    {"_id": "conv-9:q1", "text": "another split", "metadata": {"conversation": "conv-9", "category": 5, "evidence": ["D1:1"]}},
]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def slice_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("locomo-slice") / "locomo"
    (root / "qrels").mkdir(parents=True)
    write_jsonl(root / "corpus.jsonl", CORPUS)
    write_jsonl(root / "queries.jsonl", QUERIES)
    write_jsonl(root / "queries-adversarial.jsonl", ADVERSARIAL)
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in QRELS))
    return root


def test_only_a_corpus_of_dialog_turns_is_a_conversation_collection(slice_dir, tmp_path):
    assert locomo.is_conversation_collection(slice_dir)
    write_jsonl(tmp_path / "corpus.jsonl", [{"_id": "d1", "title": "t", "text": "a document"}])
    assert not locomo.is_conversation_collection(tmp_path)
    assert not locomo.is_conversation_collection(tmp_path / "absent")


def test_loader_reads_the_split_its_categories_and_the_adversarial_evidence(slice_dir):
    cs = locomo.load_conversations(slice_dir)
    assert cs.split == "dev" and cs.conversations == ["conv-1", "conv-2"]
    # conv-9 has no judged question in dev: its turns are never loaded, its questions never asked
    assert [t.id for t in cs.turns] == [r["_id"] for r in CORPUS if r["metadata"]["conversation"] != "conv-9"]
    assert list(cs.questions) == ["conv-1:q0", "conv-1:q1", "conv-1:q2", "conv-2:q0"]
    assert {c: ids for c, ids in cs.by_category().items() if ids} == {
        1: ["conv-2:q0"], 2: ["conv-1:q0"], 4: ["conv-1:q1"], 5: ["conv-1:q2"]}
    # category 5: evidence from its metadata, as turn ids; no valid evidence -> left out and listed
    assert cs.qrels["conv-1:q2"] == {"conv-1:D1:1": 1}
    assert cs.adversarial_without_evidence == ["conv-2:q1"] and cs.adversarial_file == "queries-adversarial.jsonl"
    assert cs.qrels["conv-2:q0"] == {"conv-2:D1:1": 1, "conv-2:D1:2": 1}
    first = locomo.load_conversations(slice_dir, limit_queries=2)
    assert list(first.questions) == ["conv-1:q0", "conv-1:q1"] and {t.conversation for t in first.turns} == {"conv-1"}
    with pytest.raises(ValueError, match="no qrels/test.tsv"):
        locomo.load_conversations(slice_dir, "test")


def test_a_turn_becomes_one_scoped_knowledge_write():
    t = locomo.Turn("conv-1:D2:1", "conv-1", 2, "Ann", "2023-06-01T10:00:00Z", "Pixel knocked it over.")
    # the default: "Speaker: text", no speaker entity (opt-in: its graph walk costs latency, issue 26)
    assert locomo.turn_request(t) == {
        "text": "Ann: Pixel knocked it over.", "observed_at": "2023-06-01T10:00:00Z", "session_id": "conv-1:session-2",
        "role": "user", "source": {"kind": "turn", "ref": "conv-1:D2:1"}, "scopes": ["locomo/conv-1"],
        "category": "knowledge"}
    assert locomo.turn_request(t, speaker="prefix")["speaker"] == "Ann"
    # the prefix with the entity, the speaker entity without the prefix, neither
    assert {k: locomo.turn_request(t, speaker=k)["text"] for k in ("prefix", "entity", "none")} == {
        "prefix": "Ann: Pixel knocked it over.", "entity": "Pixel knocked it over.", "none": "Pixel knocked it over."}
    assert [locomo.turn_request(t, speaker=k).get("speaker") for k in ("prefix", "entity", "none")] == ["Ann", "Ann", None]
    assert locomo.lens_of("conv-1") == [["locomo/conv-1"]]
    with pytest.raises(ValueError, match="speaker must be one of prefix, prefix-text, entity, none"):
        locomo.turn_request(t, speaker="title")


async def test_turns_are_written_through_facts_write_many_once(slice_dir, db):
    cs = locomo.load_conversations(slice_dir)
    mem = Memory(db, embedder=CachedEmbedder(get_embedder("hash:384")))
    requests = [locomo.turn_request(t) for t in cs.turns]
    got = await locomo.write_turns(mem, requests, batch_size=4)
    assert (got["turns"], got["written"], got["passages"]) == (6, 6, 6)
    (rows,) = await db.query("SELECT text, source, scopes, category, role, session_id, observed_at, array::len(embedding) AS dim "
                             "FROM memory_chunk")
    rows.sort(key=lambda r: r["source"]["ref"])
    assert [r["source"] for r in rows] == [{"kind": "turn", "ref": t.id} for t in sorted(cs.turns, key=lambda t: t.id)]
    by_ref = {r["source"]["ref"]: r for r in rows}
    ann = by_ref["conv-1:D2:1"]
    assert ann["text"] == "Ann: Pixel knocked my sourdough starter off the shelf."
    assert (ann["scopes"], ann["category"], ann["role"], ann["session_id"], ann["dim"]) == (
        ["locomo/conv-1"], "knowledge", "user", "conv-1:session-2", 384)
    assert ann["observed_at"].isoformat().startswith("2023-06-01T10:00:00")
    assert by_ref["conv-2:D1:2"]["scopes"] == ["locomo/conv-2"]
    # a second run finds every turn stored and writes nothing
    again = await locomo.write_turns(mem, requests)
    assert (again["written"], again["already_stored"]) == (0, 6)
    (count,) = await db.query("SELECT count() FROM memory_chunk GROUP ALL")
    assert count[0]["count"] == 6


def test_hits_map_to_turn_ids_at_their_best_rank():
    def hit(source: str, ref: str | None) -> dict:
        return {"id": "x", "source": source, "score": 1.0, "citation": {"source": {"kind": "turn", "ref": ref}} if ref else {}}

    hits = [hit("memory_chunk", "conv-1:D2:1"), hit("attribute", "conv-1:D1:1"), hit("memory_chunk", "conv-1:D1:2"),
            hit("memory_chunk", "conv-1:D2:1"), hit("memory_chunk", None), hit("chunk", "doc#1")]
    assert locomo.turn_ranking(hits) == ["conv-1:D2:1", "conv-1:D1:2"]


def test_metrics_per_category_overall_and_with_adversarial(slice_dir):
    cs = locomo.load_conversations(slice_dir)
    run = ModeRun("bm25", rankings={
        "conv-1:q0": ["conv-1:D1:2"],                              # temporal: found at rank 1
        "conv-1:q1": ["conv-1:D1:1", "conv-1:D2:2"],               # single-hop: missed
        "conv-2:q0": ["conv-2:D1:2"] + [f"conv-2:x{i}" for i in range(10)] + ["conv-2:D1:1"],  # multi-hop: 1 of 2 in the top 10
        "conv-1:q2": [],                                           # adversarial: nothing returned
    }, latency_ms=[1.0, 2.0, 3.0, 4.0], empty=1)
    names = locomo.metric_names(50)
    assert names == ["recall@5", "recall@10", "ndcg@10", "recall@25", "recall@50"]
    assert locomo.metric_names(10) == ["recall@5", "recall@10", "ndcg@10"]
    s = locomo.recall_summary(cs, run, names)
    cat = s["by_category"]
    assert {c: v["n"] for c, v in cat.items()} == {"multi-hop": 1, "temporal": 1, "open-domain": 0, "single-hop": 1, "adversarial": 1}
    assert cat["temporal"]["recall@5"] == pytest.approx(1.0) and cat["single-hop"]["recall@50"] == 0.0
    assert cat["multi-hop"]["recall@10"] == pytest.approx(0.5) and cat["multi-hop"]["recall@25"] == pytest.approx(1.0)
    assert cat["adversarial"]["recall@50"] == 0.0 and set(cat["open-domain"]) == {"category", "n"}
    # overall = categories 1-4 (3 questions); with category 5 the empty adversarial question counts as 0
    assert s["metrics"]["recall@10"] == pytest.approx((1 + 0 + 0.5) / 3)
    assert s["metrics_with_adversarial"]["recall@10"] == pytest.approx((1 + 0 + 0.5 + 0) / 4)
    assert s["empty_results"] == 1 and s["top10"]["conv-2:q0"][0] == "conv-2:D1:2"
    off = locomo.recall_summary(cs, ModeRun("graph", available=False, error="amem:not_implemented: graph"), names)
    assert off == {"available": False, "reason": "amem:not_implemented: graph"}


def test_exact_knn_reference_ranks_within_the_question_conversation(slice_dir):
    cs = locomo.load_conversations(slice_dir)
    cs.questions["conv-1:q1"] = locomo.Question("conv-1:q1", "conv-1", 4, "Ann: Pixel knocked my sourdough starter off the shelf.")
    run = locomo.exact_knn_rankings(cs, get_embedder("hash:384"), k=3)
    assert run.rankings["conv-1:q1"][0] == "conv-1:D2:1"  # the question is that passage's exact text
    assert all(len(r) == 3 for q, r in run.rankings.items() if q.startswith("conv-1"))
    assert sorted(run.rankings["conv-2:q0"]) == ["conv-2:D1:1", "conv-2:D1:2"]  # conv-2 has two turns: nothing else


def test_eval_command_recalls_each_question_within_its_conversation(slice_dir, tmp_path):
    from typer.testing import CliRunner

    from amem_db.cli import app

    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["--url", "mem://", "--embedder", "hash:384", "eval", str(slice_dir),
                                      "--modes", "bm25,hybrid", "--k", "10", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "per category" in result.output
    report = json.loads((out / "report.json").read_text())
    assert report["kind"] == "conversations" and report["conversations"] == ["conv-1", "conv-2"]
    assert (report["turns"], report["queries"], report["ingest"]["written"]) == (6, 4, 6)
    assert report["categories"] == {"multi-hop": 1, "temporal": 1, "open-domain": 0, "single-hop": 1, "adversarial": 1}
    assert report["metrics"] == ["recall@5", "recall@10", "ndcg@10"]
    for mode in ("bm25", "hybrid"):
        s = report["modes"][mode]
        assert s["available"] and s["queries"] == 4
        # the lens keeps every question inside its own conversation ("pottery" is said in both)
        for qid, ranking in s["top10"].items():
            assert ranking and all(t.startswith(qid.split(":")[0] + ":") for t in ranking), (mode, qid, ranking)
        assert s["top10"]["conv-1:q1"][0] == "conv-1:D2:1"  # "Pixel knocked ..." names the only turn with both words
    # the ranx figures are the mean of what the rankings say (no score is asserted beyond that)
    bm25 = report["modes"]["bm25"]
    found = [any(t in report_qrels for t in bm25["top10"][q][:10]) for q, report_qrels in
             {"conv-1:q0": ["conv-1:D1:2"], "conv-1:q1": ["conv-1:D2:1"]}.items()]
    assert bm25["by_category"]["temporal"]["recall@10"] == float(found[0])
    assert bm25["by_category"]["single-hop"]["recall@10"] == float(found[1])
    md = (out / "report.md").read_text()
    assert "paper DRAGON" in md and "exact kNN" in md


def test_eval_graph_mode_walks_the_speaker_entities_and_says_when_there_are_none(slice_dir, tmp_path):
    from typer.testing import CliRunner

    from amem_db.cli import app

    def run(speaker: str) -> tuple[dict, str]:
        out = tmp_path / speaker
        result = CliRunner().invoke(app, ["--url", "mem://", "--embedder", "hash:384", "eval", str(slice_dir),
                                          "--modes", "graph", "--k", "10", "--speaker", speaker, "--out", str(out)])
        assert result.exit_code == 0, result.output
        return json.loads((out / "report.json").read_text())["modes"]["graph"], (out / "report.md").read_text()

    graph, md = run("prefix")
    # "When did Bob start pottery classes?": Bob's two turns, no one else's (the order of equal walks
    # is tests/test_speakers.py's; here the evidence turn is also the older one)
    assert graph["top10"]["conv-1:q0"] == ["conv-1:D1:2", "conv-1:D2:2"]
    assert graph["by_category"]["temporal"]["recall@10"] == 1.0
    assert "without speaker entities" not in md
    graph, md = run("prefix-text")
    assert graph["metrics"]["recall@10"] == 0.0 and not any(graph["top10"].values())
    assert "without speaker entities (speaker prefix-text)" in md and "`--speaker prefix`" in md


# --- observations (issue 26 lever 6) ---------------------------------------------------

def observation(conv: str, session: int, speaker: str, i: int, text: str, day: str, evidence: list[str]) -> dict:
    return {"_id": f"{conv}:O{session}:{speaker}:{i}", "text": text,
            "metadata": {"conversation": conv, "session": session, "speaker": speaker, "observed_at": f"{day}T10:00:00Z",
                         "evidence": [f"{conv}:{e}" for e in evidence]}}


OBSERVATIONS = [
    observation("conv-1", 1, "Bob", 0, "Bob takes pottery classes at the community centre.", "2023-05-08", ["D1:2"]),
    observation("conv-1", 2, "Ann", 0, "Ann's kitten Pixel is clumsy and knocks things over.", "2023-06-01", ["D1:1", "D2:1"]),
    observation("conv-1", 2, "Bob", 0, "Bob's first pottery bowl came out lopsided.", "2023-06-01", ["D2:2"]),
    observation("conv-9", 1, "Ed", 0, "Another split's observation: never written.", "2023-08-01", ["D1:1"]),
]


@pytest.fixture(scope="module")
def observed_dir(slice_dir) -> Path:
    write_jsonl(slice_dir / locomo.OBSERVATIONS_FILE, OBSERVATIONS)
    return slice_dir


def test_an_observation_becomes_a_scoped_write_carrying_its_evidence(observed_dir):
    cs = locomo.load_conversations(observed_dir)
    obs = locomo.load_observations(cs)
    assert [o.id for o in obs] == ["conv-1:O1:Bob:0", "conv-1:O2:Ann:0", "conv-1:O2:Bob:0"]  # conv-9 is not in the split
    assert obs[1].evidence == ("conv-1:D1:1", "conv-1:D2:1")
    common = {"observed_at": "2023-06-01T10:00:00Z", "source": {"kind": "upsert", "ref": "conv-1:O2:Ann:0"},
              "scopes": ["locomo/conv-1"], "category": "knowledge",
              "labels": ["observation", "evidence:conv-1:D1:1", "evidence:conv-1:D2:1"]}
    assert locomo.observation_request(obs[1]) == {"text": "Ann's kitten Pixel is clumsy and knocks things over."} | common
    assert locomo.observation_request(obs[1], kind="facts") == {"triples": [{
        "entity": {"type": "person", "name": "Ann"}, "key": "observation",
        "value": "Ann's kitten Pixel is clumsy and knocks things over."}]} | common
    with pytest.raises(ValueError, match="observations must be one of passages, facts"):
        locomo.observation_request(obs[0], kind="triples")


async def test_an_observation_hit_credits_its_evidence_turns_at_its_rank(observed_dir, db):
    """Written through facts.write_many beside the turns on the real engine; the evidence read back from the
    stored rows maps a recalled observation to its turns: at the observation's rank, each turn once."""
    cs = locomo.load_conversations(observed_dir)
    mem = Memory(db, embedder=CachedEmbedder(get_embedder("hash:384")))
    await locomo.write_turns(mem, [locomo.turn_request(t) for t in cs.turns]
                             + [locomo.observation_request(o) for o in locomo.load_observations(cs)])
    evidence = await locomo.stored_evidence(db)
    assert evidence == {"conv-1:O1:Bob:0": ["conv-1:D1:2"], "conv-1:O2:Ann:0": ["conv-1:D1:1", "conv-1:D2:1"],
                        "conv-1:O2:Bob:0": ["conv-1:D2:2"]}
    resp = await mem.recall("clumsy kitten knocks things over", mode="bm25", k=10, include=["passages"],
                            lens=locomo.lens_of("conv-1"))
    assert locomo.observation_id_of(resp.hits[0]) == "conv-1:O2:Ann:0"  # only the observation holds "clumsy"
    assert locomo.hit_turns(resp.hits[0], evidence) == ["conv-1:D1:1", "conv-1:D2:1"]
    ranking = locomo.turn_ranking(resp.hits, evidence)
    assert ranking[:2] == ["conv-1:D1:1", "conv-1:D2:1"] and len(ranking) == len(set(ranking))
    assert locomo.turn_ranking(resp.hits[:1]) == []  # without the evidence an observation hit credits nothing


async def test_observations_as_facts_are_current_attributes_of_the_speaker_with_their_evidence(observed_dir):
    """--observations facts: the key is declared multi-valued first, so Bob's second observation
    does not supersede his first; each attribute keeps its source and evidence labels."""
    from amem_db.connection import close_quietly

    cs = locomo.load_conversations(observed_dir)
    prepared = await locomo.prepare_conversations(cs, get_embedder("hash:384"), url="mem://", observations="facts",
                                                  observations_only=True)
    try:
        (rows,) = await prepared.mem.conn.query(
            "SELECT entity.name AS who, key, value, source, labels, scopes FROM attribute WHERE superseded_at = NONE ORDER BY value")
        (turns,) = await prepared.mem.conn.query("SELECT count() FROM memory_chunk GROUP ALL")
    finally:
        await close_quietly(prepared.mem.conn)
    assert turns == [{"count": 0}]  # observations only: no turn written
    assert [(r["who"], r["key"], r["source"]["ref"]) for r in rows] == [
        ("Ann", "observation", "conv-1:O2:Ann:0"), ("Bob", "observation", "conv-1:O1:Bob:0"), ("Bob", "observation", "conv-1:O2:Bob:0")]
    assert rows[0]["labels"] == ["evidence:conv-1:D1:1", "evidence:conv-1:D2:1", "observation"]
    assert {r["source"]["kind"] for r in rows} == {"upsert"} and all(r["scopes"] == ["locomo/conv-1"] for r in rows)


def test_k_counts_hits_with_a_placeholder_for_a_hit_that_credits_nothing_new():
    def turn_hit(ref: str) -> dict:
        return {"id": ref, "source": "memory_chunk", "score": 1.0, "citation": {"source": {"kind": "turn", "ref": ref}}}

    def obs_hit(ref: str, source: str = "memory_chunk") -> dict:
        return {"id": ref, "source": source, "score": 1.0, "citation": {"source": {"kind": "upsert", "ref": ref}}}

    evidence = {"O1": ["c:D1:2"], "O2": ["c:D1:1", "c:D2:1"]}
    hits = [obs_hit("O2", "attribute"), turn_hit("c:D2:1"), turn_hit("c:D1:2"), obs_hit("O1"), {"id": "e", "source": "entity"},
            turn_hit("c:D3:1")]
    assert locomo.turn_ranking(hits, evidence) == ["c:D1:1", "c:D2:1", "c:D1:2", "c:D3:1"]
    assert locomo.turn_ranking(hits, evidence, count="hits") == ["c:D1:1", "c:D2:1", "~2", "c:D1:2", "~4", "~5", "c:D3:1"]
    assert locomo.turn_ranking(hits) == ["c:D2:1", "c:D1:2", "c:D3:1"]  # turns only: observations stand for nothing


def test_eval_option_writes_the_observations_with_their_evidence(observed_dir, tmp_path):
    from typer.testing import CliRunner

    from amem_db.cli import app

    for kind, only in (("passages", False), ("facts", True)):
        out = tmp_path / f"{kind}-{only}"
        args = ["--url", "mem://", "--embedder", "hash:384", "eval", str(observed_dir), "--modes", "bm25,hybrid",
                "--k", "10", "--out", str(out), "--observations", kind] + (["--observations-only"] if only else [])
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        report = json.loads((out / "report.json").read_text())
        assert report["observations"] == {"as": kind, "only": only, "file": "observations.jsonl", "stored": 3,
                                          "include": ["facts", "passages"] if kind == "facts" else ["passages"], "k_counts": "hits"}
        ing = report["ingest"]
        assert (ing["written"], ing["passages"], ing["facts"]) == ((3, 0, 3) if only else (9, 9, 0))
        hybrid = report["modes"]["hybrid"]
        assert hybrid["available"] and hybrid["metrics_k_in_turns"]["metrics"]
        assert "observations: 3 written as" in (out / "report.md").read_text()
    result = CliRunner().invoke(app, ["--url", "mem://", "eval", str(observed_dir), "--observations-only"])
    assert result.exit_code != 0 and "needs --observations" in result.output
