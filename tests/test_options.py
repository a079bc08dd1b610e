"""Read options as typed models (issue 29 item 1): amem_db/options is the one list of
option names. Each test here fails when a new option is missing from one of the places
that must know it:

* the client's signatures (``Memory.recall``, ``Documents.query``, the entity reads):
  every public field is an argument, every argument a field or a declared client knob;
* the CLI: every field's flag exists on ``amem-db query`` / ``amem-db recall``
  (``cli=False`` in the model says "API only"), and every flag maps to a field;
* SurrealQL: the known-keys checks of surql/400 and surql/450 are rendered from
  ``wire_keys()`` (the "known:" list of the error is exactly it); the clock's and the
  tier ladder's own key lists are inside it; both pipelines refuse an unknown key alike,
  before any other check;
* the hostile fuzzer sends every wire key (tests/test_hostile.py derives its lists).
"""

from __future__ import annotations

import inspect
import re
from datetime import datetime

import pytest
import typer.main

from amem_db.cli import app
from amem_db.client import Documents, Entities, Memory
from amem_db.db import call
from amem_db.errors import InvalidInput
from amem_db.options import GeoOptions, Near, QueryOptions, RecallOptions, TimeOptions

# client-side arguments that are not stored-function options (the reranker object, the
# LLM provider, the rewrite switches the client resolves before the round trip)
CLIENT_KNOBS = {
    "recall": {"use_reranker", "reranker", "rerank_depth", "hyde", "llm"},
    "query": {"reranker", "hyde", "decompose", "llm"},
}
# CLI flags that are not one field each: display, or a second flag of a field
CLI_EXTRA = {
    "query": {"--json", "--within", "--nearest", "--document-id"},
    "recall": {"--json", "--within", "--nearest", "--rerank"},
}


def _arguments(fn) -> set[str]:
    return {p.name for p in inspect.signature(fn).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}


@pytest.mark.parametrize(("fn", "model", "knobs"), [(Memory.recall, RecallOptions, "recall"), (Documents.query, QueryOptions, "query")])
def test_client_signature_is_the_model(fn, model, knobs):
    args = _arguments(fn)
    assert set(model.public_fields()) - args == set(), "an option without a client argument"
    assert args - set(model.public_fields()) - CLIENT_KNOBS[knobs] == set(), "an argument that is no option (or an undeclared knob)"


def test_entity_reads_take_every_time_option():
    for fn in (Entities.get, Entities.history):
        assert set(TimeOptions.model_fields) <= _arguments(fn), fn.__name__


# the connection options every database command takes (amem_db/cli/app.py)
CONNECTION = {"--url", "--ns", "--db", "--user", "--pass", "--key", "--embedder"}


def _cli_flags(name: str) -> set[str]:
    cmd = typer.main.get_command(app).commands[name]
    return {opt for p in cmd.params for opt in p.opts if opt.startswith("--")} - CONNECTION


@pytest.mark.parametrize(("command", "model"), [("query", QueryOptions), ("recall", RecallOptions)])
def test_cli_flags_are_the_model(command, model):
    flags = _cli_flags(command)
    wanted = {f: flag for f, flag in model.cli_flags().items() if flag is not None}
    missing = {f: flag for f, flag in wanted.items() if flag not in flags}
    assert missing == {}, "an option whose flag the CLI lacks (add it, or cli=False in the model)"
    assert flags - set(wanted.values()) - CLI_EXTRA[command] == set(), "a flag that maps to no option"


def test_dump_is_the_stored_functions_object():
    when = datetime(2024, 5, 1)
    opts = RecallOptions(k=5, as_of=when, page_size=3, lens=[["org/a"]], hyde_embedding=(0.5, 0.25), valid_during=("2024-01-01", when),
                         location=GeoOptions(near=Near(lat=1, lng=2, radius_km=3), within="POLYGON((0 0, 1 0, 1 1, 0 0))"))
    assert opts.dump() == {"asOf": when, "validDuring": ["2024-01-01", when], "k": 5, "lens": [["org/a"]], "pageSize": 3,
                           "hydeEmbedding": [0.5, 0.25], "location": {"near": {"lat": 1, "lng": 2, "radiusKm": 3},
                                                                      "within": "POLYGON((0 0, 1 0, 1 1, 0 0))"}}
    # values are the stored function's to judge: a bad one goes through as given
    assert QueryOptions(k="many", reranked_in_client="client").dump() == {"k": "many", "reranker": "client"}
    # the shapes the client refuses before a round trip, with its messages
    with pytest.raises(TypeError, match="lens must be a list of clauses"):
        RecallOptions(lens="org/a")
    with pytest.raises(TypeError, match="labels must be a list of strings"):
        RecallOptions(labels="x")
    with pytest.raises(TypeError, match="valid_during must be a pair"):
        TimeOptions(valid_during="2024")
    with pytest.raises(TypeError, match="filter.mimeType must be a list of strings"):
        QueryOptions(filter={"mimeType": "text/plain"})
    with pytest.raises(ValueError, match="frobnicate"):
        RecallOptions(frobnicate=1)


def _known(message: str) -> list[str]:
    return re.search(r"\(known: (.*)\)", message).group(1).split(", ")


async def test_surrealql_known_keys_are_the_models(db):
    for fn, model in (("fn::amem::documents::query", QueryOptions), ("fn::amem::recall", RecallOptions)):
        with pytest.raises(InvalidInput, match="unknown (query|recall) option frobnicate") as info:
            await call(db, fn, "x", None, {"mode": "bm25", "frobnicate": 1})
        assert _known(str(info.value)) == model.wire_keys(), fn
    assert await call(db, "fn::amem::clock::keys") == TimeOptions.wire_keys()
    assert set(await call(db, "fn::amem::tiers::keys")) <= set(RecallOptions.wire_keys())
    # every wire key is accepted (a value of its type or a harmless one; no "unknown option")
    for key in RecallOptions.wire_keys():
        try:
            await call(db, "fn::amem::recall", "x", None, {"mode": "bm25", key: _sample(key)})
        except InvalidInput as exc:
            assert "unknown recall option" not in str(exc), key
    for key in QueryOptions.wire_keys():
        try:
            await call(db, "fn::amem::documents::query", "x", None, {"mode": "bm25", key: _sample(key)})
        except InvalidInput as exc:
            assert "unknown query option" not in str(exc), key


async def test_both_pipelines_refuse_an_unknown_key_before_any_other_check(db):
    # the same rendered check (surql/_macros.j2 known_keys) is the first of each pipeline's
    # options: with a bad mode and k beside it, the unknown key is what both name
    for fn, what in (("fn::amem::documents::query", "query"), ("fn::amem::recall", "recall")):
        with pytest.raises(InvalidInput, match=f"unknown {what} option frobnicate"):
            await call(db, fn, "x", None, {"mode": "nope", "k": 0, "frobnicate": 1})


def _sample(key: str):
    return {"mode": "bm25", "k": 3, "lens": [["org"]], "include": ["facts"], "labels": ["x"], "location": {"within": "POLYGON((0 0, 1 0, 1 1, 0 0))"},
            "filter": {}, "validDuring": ["2024-01-01", "2025-01-01"]}.get(key, True)


def test_hostile_fuzzer_sends_every_option():
    import test_hostile

    assert set(QueryOptions.wire_keys()) < set(test_hostile.QUERY_KEYS)
    assert set(RecallOptions.wire_keys()) < set(test_hostile.RECALL_KEYS)
    assert set(TimeOptions.wire_keys()) == set(test_hostile.TIME_KEYS)
