"""Hostile input against every stored function: hypothesis-generated options,
lenses, documents and strings (huge, deeply nested, Unicode, SurrealQL
injection). Every call either succeeds or raises a typed amem error (an
``AmemError`` via ``amem_db.db.call``); a refused call changes nothing (a
checksum of every table before/after); a successful read changes nothing but
its own trace. Plus the input limits, each with a clear error.
docs/SECURITY.md quotes the counts."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC
from pathlib import Path

import pytest
import pytest_asyncio
from devserver_fixture import dev_server, tenants  # noqa: F401
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem_db.constants import BM25_LIST_TABLES
from amem_db.db import call
from amem_db.embedding import get_embedder
from amem_db.errors import AmemError, InvalidInput, ServerError
from amem_db.ingest import Item, ingest_items
from amem_db.options import QueryOptions, RecallOptions, TimeOptions

DIM = 384
# every table of the migrated database but the ones a successful read writes (its trace;
# recall's reinforcement rows): checksummed after every call (see `tables`)
READ_WRITTEN = {"retrieval_trace", "reinforcement"}

INJECTIONS = [
    "'); DELETE chunk; --", "\"); DELETE chunk; --", "'; REMOVE TABLE document; --", "document:x; DELETE document",
    "document:⟨x⟩; DELETE document", "} ; DELETE keyword; {", "$auth", "$session", "fn::amem::documents::delete('x')",
    "<future> { DELETE chunk }", "/* */ DELETE chunk", "org/a'); UPDATE chunk SET scopes = ['org/b']; --",
    "org/../b", "org//a", "org/a/", "/org", "⟨⟩", "`", "\\", "\u0000", "\u202eevil", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ‮ 🙂", "ｏｒｇ/ａ",
    "NaN", "NONE", "NULL", "document:a", "keyword:⟨return policy⟩", "amem_principal:`tenant-b`", "retrieval_trace:x",
]
HUGE = ["x" * 5_000_001, "word " * 200_000, "/".join(["a"] * 2000), "é" * 70_000]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=60), st.sampled_from(INJECTIONS),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=6), st.dictionaries(st.one_of(st.text(max_size=12), st.sampled_from(INJECTIONS)), inner, max_size=6)),
    max_leaves=25)


def nest(depth: int, kind: str):
    v: object = "org/a"
    for _ in range(depth):
        v = [v] if kind == "list" else {"k": v}
    return v


deep = st.builds(nest, st.integers(min_value=1, max_value=120), st.sampled_from(["list", "dict"]))
hostile = st.one_of(values, deep, st.sampled_from(HUGE), st.sampled_from(INJECTIONS))
paths = st.one_of(st.sampled_from(["org/a", "org/b", "org", "org/a/team", "org/a/x"]), st.sampled_from(INJECTIONS), st.text(max_size=20))
lens = st.one_of(st.none(), hostile, st.lists(st.lists(paths, max_size=10), max_size=20))
vector = st.one_of(st.none(), hostile,
                   st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=DIM, max_size=DIM),
                   st.just([0.0] * DIM), st.just([1.0] * (DIM + 1)))
# The option names are the models' (amem_db/options), which SurrealQL's known-keys checks
# render too (issue 29): a new option is fuzzed the day it exists; "bogus" is refused.
QUERY_KEYS = [*QueryOptions.wire_keys(), "bogus"]
query_opts = st.one_of(hostile, st.dictionaries(st.sampled_from(QUERY_KEYS), st.one_of(
    hostile, lens, st.sampled_from(["hybrid", "vector", "bm25", "hybrid_graph"]),
    st.fixed_dictionaries({}, optional={"mimeType": hostile, "documentIds": st.one_of(hostile, st.lists(st.sampled_from(INJECTIONS), max_size=5)), "x": hostile})),
    max_size=8))
doc = st.one_of(hostile, st.fixed_dictionaries({"text": st.one_of(st.text(min_size=1, max_size=300), hostile)}, optional={
    k: hostile for k in ["title", "source", "mime_type", "sections", "segments", "links", "metadata", "source_id",
                         "chunk_size", "chunk_overlap", "keyword_top_n", "keyword_min_score", "force"]} | {
    "scopes": st.one_of(hostile, st.lists(paths, max_size=5))}))
page_opts = st.one_of(hostile, st.dictionaries(st.sampled_from(["limit", "offset", "status", "mimeType", "lens", "minDocumentCount", "sort"]),
                                               st.one_of(hostile, lens), max_size=5))
TIME_KEYS = TimeOptions.wire_keys()
instant = st.one_of(hostile, st.datetimes(timezones=st.just(UTC)), st.sampled_from(["2024-02-30", "2024-01-01T25:00:00Z", "0000-01-01", "9999-12-31"]))
time_opts = st.dictionaries(st.sampled_from([*TIME_KEYS, "lens"]), st.one_of(instant, st.lists(instant, max_size=3), lens), max_size=4)
RECALL_KEYS = [*RecallOptions.wire_keys(), "bogus"]
recall_opts = st.one_of(hostile, st.dictionaries(st.sampled_from(RECALL_KEYS), st.one_of(
    hostile, lens, st.sampled_from(["hybrid", "vector", "bm25", "graph"]), st.lists(st.sampled_from(["facts", "passages", "x"]), max_size=3)),
    max_size=6))
# Options combined, not one at a time (issue 27 item 2: a geo filter broke recall only when the
# query also named a known entity): well-formed values of several options at once, with the
# entity the env fixture wrote (HARBOUR) named in the query, plus a hostile value now and then.
HARBOUR = "Harbour Master Hal"
locations = st.sampled_from([
    {"near": {"lat": 60.0, "lng": 5.0, "radiusKm": 100}}, {"within": "POLYGON((0 55, 10 55, 10 65, 0 65, 0 55))"},
    {"nearest": {"lat": 60.0, "lng": 5.0, "k": 5}}, {"near": {"lat": 60.0, "lng": 5.0, "radiusKm": 5000}, "nearest": {"lat": 1, "lng": 2}},
    {"within": {"type": "Polygon", "coordinates": [[[0, 55], [10, 55], [10, 65], [0, 65], [0, 55]]]}, "nearest": {"lat": 60, "lng": 5, "weight": 1}}])
named_query = st.sampled_from([f"{HARBOUR} post", f"what does {HARBOUR} keep", f"{HARBOUR}'s post and the return policy", "return policy"])
combined_opts = st.fixed_dictionaries({"location": locations}, optional={
    "mode": st.sampled_from(["hybrid", "bm25", "vector", "graph"]), "k": st.integers(min_value=1, max_value=30),
    "asOf": st.sampled_from(["2030-01-01", "2000-01-01T00:00:00Z"]), "now": st.sampled_from(["2030-01-01", "1999-12-31"]),
    # well-formed values here (hostile ones are the per-function fuzzer's): the combination is the test
    "queryWindow": st.sampled_from(["last week", "2024", None]), "strictWindow": st.booleans(),
    "windowWeight": st.floats(min_value=0, max_value=1), "fusion": st.sampled_from(["rrf", "linear", "dbsf", "x"]),
    "lens": st.sampled_from([None, [["org/a"]], [["org/b"]], [["org"]]]), "include": st.sampled_from([["facts"], ["passages"], ["facts", "passages"]]),
    "graphDepth": st.integers(min_value=1, max_value=3), "feedback": st.booleans(), "pageSize": st.integers(min_value=1, max_value=5),
    "adjacentWeight": st.floats(min_value=0, max_value=1)})
harbour_vector = st.just(get_embedder("hash:384").embed_query(HARBOUR))
# recall takes no `fusion` (a documents.query option): a call carrying it is refused, typed
combined_recall = st.tuples(named_query, st.one_of(harbour_vector, st.none()), combined_opts.map(
    lambda o: {k: v for k, v in o.items() if k != "fusion"}))
combined_query = st.tuples(named_query, st.one_of(harbour_vector, st.none()), combined_opts.map(
    lambda o: {k: v for k, v in o.items() if k not in ("include", "graphDepth", "queryWindow", "strictWindow", "windowWeight", "now",
                                                      "adjacentWeight")}))
entity_ref = st.one_of(hostile, st.fixed_dictionaries({"type": st.one_of(hostile, st.sampled_from(["person", "org"])),
                                                       "name": st.one_of(hostile, st.text(max_size=30))}))
triple = st.one_of(hostile, st.fixed_dictionaries({"entity": entity_ref, "key": st.one_of(hostile, st.text(max_size=20))}, optional={
    k: hostile for k in ["value", "target", "category", "confidence", "retract", "valid_from", "valid_until", "x"]}))
fact_request = st.one_of(hostile, st.fixed_dictionaries({}, optional={
    "triples": st.one_of(hostile, st.lists(triple, max_size=3)), "text": st.one_of(st.text(max_size=200), hostile),
    "scopes": st.one_of(hostile, st.lists(paths, max_size=3)), **{k: hostile for k in [
        "observed_at", "valid_from", "valid_until", "session_id", "role", "source", "category", "confidence", "labels",
        "idempotency_key", "speaker", "x"]}}))
forget_request = st.one_of(hostile, st.fixed_dictionaries({}, optional={
    "ids": st.one_of(hostile, st.lists(st.one_of(hostile, st.sampled_from(INJECTIONS)), max_size=3)),
    "query": st.one_of(hostile, st.fixed_dictionaries({}, optional={"entity": entity_ref, "key": hostile, "write": hostile})),
    "dryRun": hostile, "purge": hostile, "scopes": hostile, "x": hostile}))
small_int = st.one_of(st.integers(min_value=-5, max_value=5000), st.integers(min_value=-(2**63), max_value=2**63 - 1))

trace_opts = st.dictionaries(st.sampled_from(["limit", "mode", "tier", "since", "until", "caller"]), st.one_of(hostile, instant, small_int), max_size=4)
NO_ARGS = st.tuples()
FUNCTIONS = {  # name -> strategy of the argument tuple
    "fn::amem::documents::ref": st.tuples(hostile),
    "fn::amem::documents::check": st.tuples(doc),
    "fn::amem::documents::prepare": st.tuples(doc),
    "fn::amem::documents::ingest": st.tuples(doc, st.one_of(st.none(), hostile)),
    "fn::amem::ingest::batch": st.tuples(st.one_of(hostile, st.lists(st.one_of(hostile, st.fixed_dictionaries({"doc": doc}, optional={
        "keywords": st.one_of(hostile, st.lists(st.one_of(hostile, st.fixed_dictionaries({
            "text": st.one_of(hostile, st.text(max_size=20)), "normalised": st.one_of(hostile, st.text(max_size=20)),
            "score": st.one_of(hostile, st.floats(allow_nan=True))})), max_size=3)),
        "vectors": st.one_of(st.none(), hostile),
        # prepare's chunks and seal (chunking once, surql/255_ingest): a forged or hostile pair is chunked again
        "chunks": st.one_of(hostile, st.lists(st.one_of(hostile, st.fixed_dictionaries({
            "text": st.one_of(hostile, st.text(max_size=20)), "position": st.one_of(hostile, small_int),
            "char_start": st.one_of(hostile, small_int), "char_end": st.one_of(hostile, small_int)})), max_size=3)),
        "seal": st.one_of(hostile, st.text(max_size=64))})), max_size=3))),
    "fn::amem::documents::get": st.tuples(hostile),
    "fn::amem::documents::list": st.tuples(page_opts),
    "fn::amem::documents::chunks": st.tuples(hostile, page_opts),
    "fn::amem::documents::delete": st.tuples(hostile),
    "fn::amem::documents::source_of": st.tuples(hostile),
    "fn::amem::documents::query": st.one_of(st.tuples(st.one_of(st.text(max_size=200), hostile), vector, query_opts), combined_query),
    "fn::amem::versions::of": st.tuples(hostile),
    "fn::amem::keywords::normalise": st.tuples(hostile),
    "fn::amem::keywords::for_document": st.tuples(hostile, lens),
    "fn::amem::keywords::list": st.tuples(page_opts),
    "fn::amem::keywords::get": st.tuples(hostile, lens),
    "fn::amem::keywords::search": st.tuples(vector, st.one_of(small_int, hostile), lens),
    "fn::amem::keywords::unembedded": st.tuples(st.one_of(st.none(), st.text(max_size=50), hostile), st.one_of(small_int, hostile)),
    "fn::amem::keywords::set_vectors": st.tuples(st.one_of(st.text(max_size=20), hostile),
                                                 st.one_of(st.lists(st.one_of(hostile, st.fixed_dictionaries({"normalised": st.one_of(st.text(max_size=20), hostile), "embedding": st.one_of(vector, hostile)})), max_size=3), hostile)),
    "fn::amem::keywords::rake": st.tuples(st.one_of(st.text(max_size=500), hostile), st.one_of(small_int, hostile), st.one_of(st.floats(), hostile)),
    "fn::amem::chunk::split": st.tuples(st.one_of(st.text(max_size=500), hostile), st.one_of(st.lists(values, max_size=4), hostile),
                                        st.one_of(small_int, hostile), st.one_of(small_int, hostile)),
    "fn::amem::scope::closure": st.tuples(st.one_of(st.lists(paths, max_size=8), hostile)),
    "fn::amem::scope::check_path": st.tuples(st.one_of(paths, hostile), st.one_of(st.text(max_size=10), hostile)),
    "fn::amem::scope::check_lens": st.tuples(lens),
    "fn::amem::scope::matches": st.tuples(st.one_of(st.lists(paths, max_size=5), hostile), lens),
    "fn::amem::scope::check_write": st.tuples(st.one_of(st.lists(paths, max_size=5), hostile)),
    # typed memory
    "fn::amem::facts::prepare": st.tuples(fact_request),
    "fn::amem::facts::prepare_many": st.tuples(st.one_of(st.lists(fact_request, max_size=3), hostile)),
    "fn::amem::facts::write": st.tuples(fact_request, st.one_of(st.none(), hostile)),
    "fn::amem::facts::write_many": st.tuples(st.one_of(st.lists(fact_request, max_size=3), hostile), st.one_of(st.none(), hostile)),
    # the BM25 champion lists (surql/315): the build's steps, operator only, with their checks
    "fn::amem::bm25::store": st.tuples(hostile, st.sampled_from(["chunk_fts", "audio_chunk_fts", "chunk"]), st.one_of(
        st.lists(st.fixed_dictionaries({"list": hostile, "h": hostile, "top": st.one_of(hostile, st.lists(
            st.fixed_dictionaries({"c": hostile, "s": hostile}), max_size=2))}), max_size=2), hostile)),
    "fn::amem::bm25::impacts": st.tuples(st.one_of(st.lists(st.fixed_dictionaries({"tf": hostile, "df": hostile, "dl": hostile}),
                                                             max_size=3), hostile),
                                         st.one_of(st.fixed_dictionaries({"n": hostile, "avgdl": hostile, "k1": hostile, "b": hostile}), hostile)),
    "fn::amem::bm25::params": st.tuples(st.one_of(st.sampled_from(["chunk_fts", "memory_chunk_fts", "nope"]), hostile)),
    "fn::amem::bm25::drop_build": st.tuples(hostile),
    "fn::amem::bm25::begin": NO_ARGS,
    "fn::amem::bm25::publish": st.tuples(hostile, hostile, hostile),
    "fn::amem::bm25::status": NO_ARGS,
    "fn::amem::entities::get": st.tuples(hostile, hostile, st.one_of(st.none(), hostile, time_opts)),
    "fn::amem::entities::history": st.tuples(hostile, hostile, hostile, st.one_of(st.none(), hostile, time_opts)),
    "fn::amem::facts::diff": st.tuples(instant, instant, st.one_of(st.none(), hostile, time_opts)),
    "fn::amem::clock::options": st.tuples(st.one_of(time_opts, hostile), st.one_of(st.booleans(), hostile)),
    "fn::amem::clock::versioned": st.tuples(),
    "fn::amem::clock::current": st.tuples(instant),
    "fn::amem::geo::stored": st.tuples(st.one_of(hostile, st.fixed_dictionaries({"lat": hostile, "lng": hostile}),
                                                 st.sampled_from(["59.9,10.7", "91,0", "0,181", "POINT(1 2)", "nan,nan"])), st.just("location")),
    "fn::amem::geo::option": st.tuples(st.one_of(hostile, st.fixed_dictionaries({}, optional={
        "near": st.one_of(hostile, st.fixed_dictionaries({"lat": hostile, "lng": hostile, "radiusKm": hostile})),
        "within": st.one_of(hostile, st.sampled_from(["POLYGON((0 0, 1 0, 1 1, 0 0))", "POLYGON((0 0, 1 1, 1 0, 0 1, 0 0))", "POLYGON((0 0, 1 0))"])),
        "nearest": st.one_of(hostile, st.fixed_dictionaries({"lat": hostile, "lng": hostile, "k": hostile}))}))),
    "fn::amem::entities::list": st.tuples(page_opts),
    "fn::amem::recall": st.one_of(st.tuples(st.one_of(st.text(max_size=200), hostile), vector, recall_opts), combined_recall),
    # index maintenance (surql/060_maintain): operator-only writes, refused for anybody else
    "fn::amem::maintain::status": st.tuples(st.one_of(st.floats(), hostile), st.one_of(small_int, hostile)),
    "fn::amem::maintain::known": st.tuples(hostile),
    "fn::amem::maintain::begin": st.tuples(hostile),
    "fn::amem::maintain::rebuild": st.tuples(hostile),
    "fn::amem::maintain::finish": st.tuples(hostile, instant, st.one_of(small_int, hostile), st.one_of(st.floats(), hostile)),
    "fn::amem::maintain::reset": st.tuples(hostile),
    # term statistics (surql/310_termstats): counted and stored by the operator only
    "fn::amem::termstats::status": NO_ARGS,
    "fn::amem::termstats::tokens_chunk_fts": st.tuples(st.one_of(st.none(), hostile), st.one_of(small_int, hostile)),
    "fn::amem::termstats::tokens_audio_chunk_fts": st.tuples(st.one_of(st.none(), hostile), st.one_of(small_int, hostile)),
    "fn::amem::termstats::store": st.tuples(st.one_of(hostile, st.lists(st.one_of(hostile, st.fixed_dictionaries(
        {"id": st.one_of(hostile, st.tuples(st.sampled_from(["chunk_fts", "chunk", "x"]), hostile).map(list)),
         "df": st.one_of(small_int, hostile)})), max_size=3)), st.one_of(small_int, hostile)),
    "fn::amem::termstats::publish": st.tuples(st.one_of(small_int, hostile), st.one_of(hostile, st.fixed_dictionaries(
        {t: st.one_of(small_int, hostile) for t in BM25_LIST_TABLES}))),
    "fn::amem::answers::remember": st.tuples(st.one_of(st.text(max_size=200), hostile), vector, st.one_of(st.text(max_size=200), hostile),
                                             st.one_of(hostile, st.lists(st.sampled_from(INJECTIONS), max_size=3)), st.one_of(st.none(), hostile)),
    "fn::amem::inspect": st.tuples(st.one_of(hostile, entity_ref), st.one_of(st.none(), hostile)),
    "fn::amem::forget": st.tuples(forget_request),
    "fn::amem::facts::declare_key": st.tuples(st.one_of(hostile, st.text(max_size=20)), st.one_of(st.none(), hostile, st.fixed_dictionaries(
        {}, optional={"multi_valued": hostile, "scopes": st.one_of(hostile, st.lists(paths, max_size=3)), "x": hostile}))),
    "fn::amem::mentions::link": st.tuples(st.one_of(hostile, st.lists(st.one_of(hostile, st.fixed_dictionaries(
        {"id": st.one_of(hostile, st.sampled_from(INJECTIONS)), "text": st.one_of(st.text(max_size=80), hostile)},
        optional={"scopes": st.one_of(hostile, st.lists(paths, max_size=3))})), max_size=3)),
        st.one_of(st.none(), hostile)),
    "fn::amem::query::terms": st.tuples(st.one_of(st.text(max_size=200), hostile)),
    # traces (surql/470_traces)
    "fn::amem::traces::list": st.tuples(st.one_of(st.none(), hostile, trace_opts)),
    "fn::amem::traces::stats": st.tuples(st.one_of(st.none(), hostile, trace_opts)),
    "fn::amem::traces::get": st.tuples(st.one_of(hostile, st.sampled_from(["retrieval_trace:x", "chunk:x"]))),
    "fn::amem::traces::explain": st.tuples(hostile, st.one_of(hostile, small_int)),
    "fn::amem::traces::feedback": st.tuples(hostile, st.one_of(hostile, small_int), st.one_of(hostile, st.sampled_from(["useful", "wrong"]))),
    "fn::amem::traces::retention": st.tuples(st.one_of(st.none(), hostile, st.dictionaries(st.sampled_from(["maxAge", "maxCount"]), st.one_of(
        hostile, st.sampled_from(["30d", "1h", "999999y", "0", 0, 3650])), max_size=2))),
    # a client reranker's scores into a trace (surql/480_rerank): only the caller's own traces
    "fn::amem::rerank::record": st.tuples(st.one_of(hostile, st.sampled_from(INJECTIONS)), st.one_of(hostile, st.fixed_dictionaries(
        {"method": hostile}, optional={"scores": st.one_of(hostile, st.lists(st.fixed_dictionaries(
            {"id": st.one_of(hostile, st.sampled_from(INJECTIONS)), "score": hostile}), max_size=3)), "error": hostile}))),
    "fn::amem::scope::within": st.tuples(st.one_of(paths, hostile), st.one_of(st.lists(paths, max_size=5), hostile)),
    "fn::amem::scope::writable": st.tuples(st.one_of(st.lists(paths, max_size=5), hostile)),
    "fn::amem::scope::forgettable": st.tuples(st.one_of(st.lists(paths, max_size=5), hostile)),
    # no arguments: each principal calls them once (an admin function: refused to the tenants)
    "fn::amem::documents::recompute_links": NO_ARGS,
    "fn::amem::meta::settings": NO_ARGS,
    # read by the client's models and option checks (amem_db/models, amem_db/options)
    "fn::amem::chunk::defaults": NO_ARGS,
    "fn::amem::clock::keys": NO_ARGS,
    "fn::amem::traces::tier": st.tuples(hostile, hostile, hostile),
    "fn::amem::meta::info": NO_ARGS,
}
EXAMPLES = 60  # per function (fewer where the argument space is smaller: the no-argument ones)


def generate(strategy, n: int) -> list:
    """Hypothesis examples, collected without a database (calls are async)."""
    out: list = []

    @settings(max_examples=n, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(x):
        out.append(x)

    collect()
    return out


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(dev_server):
    grants = {"tenant-a": dict(read=[], write=["org/a"]), "tenant-b": dict(read=[], write=["org/b"])}
    async with tenants(dev_server, "hostile", grants) as t:
        root, a, b = t.root, t.conns["tenant-a"], t.conns["tenant-b"]
        yield await _ingest_both(root, a, b)


async def _ingest_both(root, a, b) -> dict:
    emb = get_embedder("hash:384")
    for conn, t in ((a, "a"), (b, "b")):
        items = [Item(f"{t}{i}", {"text": f"# T{i}\n\nReturn policy {t} {i}: refunds within 30 days for unopened items. Shipping rates vary.",
                                  "mime_type": "text/markdown", "source": f"d{i}.md"}) for i in range(3)]
        rep = await ingest_items(conn, emb, items)
        assert all(r.status == "added" for r in rep.results)
        # a known, located entity both tenants name: what the combined options aim at
        await call(conn, "fn::amem::facts::write", {"triples": [{"entity": {"type": "person", "name": HARBOUR}, "key": "post",
                                                                   "value": f"pier {t}"}],
                                                     "text": f"{HARBOUR} keeps pier {t}.", "location": {"lat": 60.0, "lng": 5.0}}, None)
    return {"root": root, "a": a, "b": b}


async def tables(root) -> list[str]:
    (info,) = await root.query("INFO FOR DB")
    return sorted(set(info["tables"]) - READ_WRITTEN)


async def checksum(root, names: list[str]) -> tuple[str, dict[str, int]]:
    """A hash of every row of every table and the row count of each, both computed in the
    database: one round trip, a few bytes back, instead of shipping every row to hash its
    JSON here (this module checks ~3,700 times). A row is hashed through its SurrealQL text,
    objects with sorted keys."""
    sql = ("RETURN [" + ", ".join(f"(SELECT * FROM {t} ORDER BY id)" for t in names)
           + "].map(|$rows| [crypto::blake3(<string> $rows), array::len($rows)])")
    (per_table,) = await root.query(sql)
    h = hashlib.sha256()
    for t, (digest, _) in zip(names, per_table, strict=True):
        h.update(f"{t}:{digest};".encode())
    return h.hexdigest(), {t: n for t, (_, n) in zip(names, per_table, strict=True)}


async def test_checksum_sees_one_changed_value(db):
    # the checks below are only as strong as this: one float in one row must move the hash
    await db.query("DEFINE TABLE cs_a SCHEMALESS; DEFINE TABLE cs_b SCHEMALESS;"
                   "CREATE cs_a:1 SET v = [0.5, 1.25], t = 'x'; CREATE cs_b:1 SET n = 1")
    names = ["cs_a", "cs_b"]
    before, counts = await checksum(db, names)
    assert counts == {"cs_a": 1, "cs_b": 1} and await checksum(db, names) == (before, counts)
    await db.query("UPDATE cs_a:1 SET v[1] = 1.26")
    changed, _ = await checksum(db, names)
    assert changed != before
    await db.query("CREATE cs_b:2")
    assert (await checksum(db, names))[1] == {"cs_a": 1, "cs_b": 2}


WRITES = {"fn::amem::documents::ingest", "fn::amem::ingest::batch", "fn::amem::documents::delete", "fn::amem::facts::write", "fn::amem::forget",
          "fn::amem::facts::declare_key", "fn::amem::mentions::link", "fn::amem::documents::recompute_links",
          "fn::amem::traces::feedback", "fn::amem::traces::retention", "fn::amem::answers::remember",
          "fn::amem::termstats::store", "fn::amem::termstats::publish", "fn::amem::facts::write_many",
          "fn::amem::bm25::store", "fn::amem::bm25::drop_build", "fn::amem::keywords::set_vectors"}


def client_functions() -> set[str]:
    """The stored functions the Python client (and so the CLI) calls by name."""
    names: set[str] = set()
    for f in (Path(__file__).resolve().parent.parent / "amem_db").rglob("*.py"):
        code = "\n".join(line.split("#", 1)[0] for line in f.read_text().splitlines())  # not the comments
        names |= set(re.findall(r"fn::amem::[a-z0-9_]+(?:::[a-z0-9_]+)*", code))
    return names


async def test_every_function_the_client_calls_is_fuzzed(env):
    (info,) = await env["root"].query("INFO FOR DB")
    defined = {f"fn::{n}" for n in info["functions"]}
    missing = sorted((client_functions() & defined) - set(FUNCTIONS))
    assert not missing, f"public stored functions without a hostile-input strategy in FUNCTIONS: {missing}"


@pytest.mark.slow  # every function x every hostile value
async def test_hostile_input_every_function(env):
    """Every call succeeds or raises a typed AmemError; after every call the operator's
    checksum of every table (row counts and contents) is unchanged unless a write succeeded."""
    root = env["root"]
    names = await tables(root)
    counts = {"cases": 0, "ok": 0, "typed_errors": 0, "row_checks": 0}
    failures = []
    base, rows_before = await checksum(root, names)
    for fi, (fn, strategy) in enumerate(FUNCTIONS.items()):
        for ci, args in enumerate(generate(strategy, EXAMPLES) if strategy is not NO_ARGS else [()] * 3):
            who = ("a", "root", "b")[(fi + ci) % 3]
            counts["cases"] += 1
            ok = await hostile_call(env[who], fn, args, who, counts, failures)
            after, rows_after = await checksum(root, names)
            counts["row_checks"] += len(names)
            if after != base:
                if not (ok and fn in WRITES):
                    grew = {t: rows_after[t] - rows_before[t] for t in names if rows_after[t] != rows_before[t]}
                    failures.append((fn, who, repr(args)[:300], f"the database changed (rows {grew or 'same count, contents'})"))
                base, rows_before = after, rows_after
    (alive,) = await root.query("RETURN 1")
    assert alive == 1  # no engine panic took the server down
    print(f"\nhostile input: {counts['cases']} cases over {len(FUNCTIONS)} functions: {counts['ok']} succeeded, "
          f"{counts['typed_errors']} typed errors, {len(failures)} findings; {counts['row_checks']} table checksums")
    assert counts["cases"] >= 2000
    assert failures == [], "\n".join(sorted({f"{f[0]} {f[3][:160]}" for f in failures}))


async def hostile_call(conn, fn: str, args: tuple, who: str, counts: dict, failures: list) -> bool:
    """One call; True when it succeeded. An untyped exception or a schema error is a finding."""
    try:
        await call(conn, fn, *args)
        counts["ok"] += 1
        return True
    except AmemError as exc:
        counts["typed_errors"] += 1
        if str(exc).startswith("the database refused a value"):  # a schema error: validation missed it
            failures.append((fn, who, repr(args)[:300], f"unvalidated: {exc}"))
        elif type(exc) is ServerError:  # the engine failed on something no check caught (issue 27 item 2)
            failures.append((fn, who, repr(args)[:300], f"untyped engine error: {exc}"))
    except ValueError as exc:  # refused by the client before sending (int outside 64 bits...)
        counts["typed_errors"] += 1
        assert "64-bit" in str(exc) or "JSON" in str(exc), exc
    except Exception as exc:
        failures.append((fn, who, repr(args)[:300], f"{type(exc).__name__}: {str(exc)[:300]}"))
    return False


async def test_combined_options_never_fail_untyped(env):
    """The combined-options generator on its own, in the default suite: recall and
    documents.query with a geo filter and a named entity (and other options at once) as
    each principal; every call succeeds or fails typed (issue 27 item 2 failed them all)."""
    counts = {"ok": 0, "typed_errors": 0}
    failures: list = []
    for i, (fn, strategy) in enumerate([("fn::amem::recall", combined_recall), ("fn::amem::documents::query", combined_query)]):
        for j, args in enumerate(generate(strategy, 30)):
            await hostile_call(env[("a", "root", "b")[(i + j) % 3]], fn, args, "", counts, failures)
    assert failures == [], "\n".join(f"{f[0]} {f[2][:200]}: {f[3][:200]}" for f in failures[:10])
    assert counts["ok"] >= 20, counts  # mostly well-formed: the calls get past validation


# --- input limits ---------------------------------------------------------------------
async def test_input_limits_are_enforced_with_clear_errors(env):
    a = env["a"]
    e = get_embedder("hash:384").embed_query("return policy")
    cases = [
        ("query length", "fn::amem::documents::query", ("x" * 4097, None, {"mode": "bm25"}), "limit is 4096"),
        ("k", "fn::amem::documents::query", ("policy", None, {"mode": "bm25", "k": 0}), "k must be"),
        ("lens clauses", "fn::amem::documents::query", ("policy", None, {"mode": "bm25", "lens": [["org/a"]] * 17}), "at most 16 clauses"),
        ("lens paths", "fn::amem::documents::query", ("policy", None, {"mode": "bm25", "lens": [["org/a"] * 9]}), "at most 8 scope paths"),
        ("lens path length", "fn::amem::scope::check_lens", ([["a" * 257]],), "at most 256 characters"),
        ("filter mimeType", "fn::amem::documents::query", ("policy", None, {"mode": "bm25", "filter": {"mimeType": ["text/plain"] * 65}}), "at most 64"),
        ("filter documentIds", "fn::amem::documents::query", ("policy", None, {"mode": "bm25", "filter": {"documentIds": ["x"] * 1001}}), "at most 1000"),
        ("document size", "fn::amem::documents::check", ({"text": "x" * 200_001},), "200,000"),
        ("document scopes", "fn::amem::documents::check", ({"text": "x", "scopes": ["org/a"] * 33},), "at most 32"),
        ("sections", "fn::amem::documents::check", ({"text": "x", "sections": [{"heading": 1}]},), "each section"),
        ("keyword search k", "fn::amem::keywords::search", (e, 51, None), "1..50"),
        ("page size", "fn::amem::documents::list", ({"limit": 201},), "1..200"),
        ("keyword text", "fn::amem::keywords::get", ("k" * 201, None), "1..200"),
        # issue 15 finding 11: no relative segments in scope paths
        ("scope path ..", "fn::amem::scope::check_path", ("org/../b", "scopes"), "segment"),
        ("scope path .", "fn::amem::documents::check", ({"text": "x", "scopes": ["./org"]},), "segment"),
        # issue 15 finding 8: no NaN or infinity gets in anywhere a number does
        ("k NaN", "fn::amem::documents::query", ("policy", None, {"mode": "bm25", "k": float("nan")}), "k must be"),
        ("k infinite", "fn::amem::documents::query", ("policy", None, {"mode": "bm25", "k": float("inf")}), "k must be"),
        ("embedding NaN", "fn::amem::documents::query", ("policy", [float("nan")] * 384, {"mode": "vector"}), "finite numbers"),
        ("embedding infinite", "fn::amem::documents::query", ("policy", [float("inf")] + e[1:], {"mode": "vector"}), "finite numbers"),
        ("embedding 1e308", "fn::amem::documents::query", ("policy", [1e308] + e[1:], {"mode": "vector"}), "finite numbers"),
        ("recall embedding NaN", "fn::amem::recall", ("policy", [float("nan")] + e[1:], {"mode": "vector"}), "finite numbers"),
        ("recall k NaN", "fn::amem::recall", ("policy", None, {"mode": "bm25", "k": float("nan")}), "k must be"),
        ("fact value infinite", "fn::amem::facts::prepare", ({"triples": [{"entity": {"type": "person", "name": "a"}, "key": "k",
                                                                          "value": float("inf")}]},), "finite number"),
        ("segment seconds NaN", "fn::amem::documents::check", ({"text": "hello", "segments": [
            {"start_s": float("nan"), "end_s": 1.0, "char_start": 0, "char_end": 5}]},), "each segment"),
    ]
    for _name, fn, args, message in cases:
        with pytest.raises(InvalidInput, match=message):
            await call(a, fn, *args)
    # k above the maximum is clamped, not refused (spec), and says so
    res = await call(a, "fn::amem::documents::query", "policy", None, {"mode": "bm25", "k": 51})
    assert res["trace"]["options"]["k"] == 50 and any("clamped" in w for w in res["warnings"])
    print(f"\ninput limits: {len(cases) + 1} checked")


# --- the CLI ----------------------------------------------------------------------------
# Hostile arguments to every command that reads or writes memory, in process (typer's
# runner), against a migrated database on a dev server of its own thread, as a scoped
# credential and as the operator. Every run exits 0, 1 with one typed line
# (`error (<code>): ...`) or 2 (usage); no exception escapes; a run that did not exit 0
# (or a read) changes nothing.
CLI_EXAMPLES = 10  # per command template
cli_text = st.one_of(st.text(max_size=40), st.sampled_from(INJECTIONS), st.sampled_from(["", "-", "--k", "x" * 5000, "é" * 3000]))
cli_int = st.one_of(st.integers(min_value=-(2**70), max_value=2**70).map(str), st.sampled_from(["nan", "1e9", "0x10", ""]), cli_text)
cli_float = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), cli_text)
cli_mode = st.one_of(st.sampled_from(["hybrid", "vector", "bm25", "hybrid_graph", "graph"]), cli_text)
CLI_TEMPLATES: dict[str, tuple] = {  # name -> (argv with placeholders, strategies for T / I / F / M)
    "query": (["query", "T", "--mode", "M", "--k", "I", "--lens", "T", "--json"]),
    "query filters": (["query", "T", "--threshold", "F", "--vector-weight", "F", "--document-id", "T", "--mime-type", "T",
                       "--graph-edges", "T", "--graph-depth", "I"]),
    "recall": (["recall", "T", "--mode", "M", "--k", "I", "--include", "T", "--label", "T", "--lens", "T", "--json"]),
    "remember": (["remember", "T", "--fact", "T", "--category", "T", "--confidence", "F", "--observed-at", "T",
                  "--idempotency-key", "T", "--json"]),
    "remember scoped": (["remember", "--fact", "T", "--scope", "T", "--valid-from", "T", "--role", "T", "--session", "T"]),
    "forget": (["forget", "T", "--entity", "T", "--fact-key", "T", "--dry-run", "--json"]),
    "forget purge": (["forget", "--write", "T", "--session", "T", "--label", "T", "--scope", "T", "--purge"]),
    "inspect": (["inspect", "T", "--lens", "T", "--json"]),
    "documents get": (["documents", "get", "T"]),
    "documents list": (["documents", "list", "--status", "T", "--mime-type", "T", "--lens", "T", "--limit", "I", "--offset", "I"]),
    "documents chunks": (["documents", "chunks", "T"]),
    "documents delete": (["documents", "delete", "T"]),
    "documents reprocess": (["documents", "reprocess", "T"]),
    "keywords list": (["keywords", "list", "--min-document-count", "I", "--sort", "T", "--limit", "I", "--lens", "T"]),
    "keywords get": (["keywords", "get", "T"]),
    "keywords search": (["keywords", "search", "T"]),
    "entities get": (["entities", "get", "T", "T"]),
    "entities history": (["entities", "history", "T", "T", "T"]),
    "entities list": (["entities", "list", "--type", "T", "--limit", "I", "--lens", "T"]),
    "ingest": (["ingest", "FILE", "--title", "T", "--scope", "T", "--mime-type", "T", "--json"]),
}
PLACEHOLDERS = {"T": cli_text, "I": cli_int, "F": cli_float, "M": cli_mode}
# hostile files for ingest (issue 15 finding 7: each a per-file, one-line, typed error)
HOSTILE_FILES = {
    "deep.jsonl": b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
    "surrogate.jsonl": b'{"text": "lone \\ud800 surrogate"}\n',
    "bad-utf8.md": b"# Title\n\n\xff\xfe\xfa not utf-8",
    "empty.md": b"",
    "truncated.pdf": b"%PDF-1.7 truncated",
    "huge-line.txt": b"word " * 300_000,
    "injection '); DELETE chunk; --.md": b"# Note\n\nfine text",
    "nul.txt": b"a\x00b\x00c",
}
CLI_WRITES = {"remember", "remember scoped", "forget", "forget purge", "documents delete", "documents reprocess", "ingest"}


def cli_cases(rng_seed: int = 0) -> list[tuple[str, list[str]]]:
    cases = []
    for name, template in CLI_TEMPLATES.items():
        holes = [t for t in template if t in PLACEHOLDERS]
        for values in generate(st.tuples(*(PLACEHOLDERS[h] for h in holes)), CLI_EXAMPLES):
            it = iter(values)
            cases.append((name, [next(it) if t in PLACEHOLDERS else t for t in template]))
    return cases


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    import asyncio

    from devserver_fixture import ROOT_PASSWORD, ROOT_USER, background_dev_server, unique_name

    from amem_db import access
    from amem_db.connection import Target, close_quietly, open_connection
    from amem_db.migrator import Migrator

    files = tmp_path_factory.mktemp("hostile-files")
    for name, body in HOSTILE_FILES.items():
        (files / name).write_bytes(body)
    (files / "dangling.md").symlink_to(files / "nowhere.md")
    with background_dev_server() as server:
        ns = unique_name("hostile_cli")
        target = Target(url=server.ws_url, ns=ns, db="test", user=ROOT_USER, password=ROOT_PASSWORD)

        async def setup() -> str:
            root = await open_connection(target)
            try:
                await Migrator(root).migrate()
                items = [Item(f"c{i}", {"text": f"# C{i}\n\nReturn policy {i}: refunds within 30 days.", "mime_type": "text/markdown",
                                        "source": f"c{i}.md", "scopes": ["org/a"]}) for i in range(3)]
                await ingest_items(root, get_embedder("hash:384"), items)
                return (await access.grant(root, "cli-a", read=[], write=["org/a"], forget=["org/a"]))[1]
            finally:
                await close_quietly(root)

        key = asyncio.run(setup())
        yield {"server": server, "target": target, "key": key, "files": files}


@pytest.mark.slow  # a connection and a checksum per run
def test_hostile_cli(cli_env):
    import asyncio

    from typer.testing import CliRunner

    from amem_db.cli import app
    from amem_db.connection import close_quietly, open_connection

    t = cli_env["target"]
    base = ["--url", t.url, "--ns", t.ns, "--db", "test", "--embedder", "hash:384"]
    as_key, as_root = [*base, "--key", cli_env["key"]], [*base, "--user", t.user or "", "--pass", t.password or ""]
    files = sorted(cli_env["files"].iterdir())

    async def snapshot() -> tuple[str, dict[str, int]]:
        root = await open_connection(t)
        try:
            return await checksum(root, await tables(root))
        finally:
            await close_quietly(root)

    runner, failures = CliRunner(), []
    codes: dict[int, int] = {}
    before, rows = asyncio.run(snapshot())
    cases = cli_cases()
    for i, (name, argv) in enumerate(cases):
        argv = [str(files[i % len(files)]) if a == "FILE" else a for a in argv]
        result = runner.invoke(app, (as_root if i % 3 == 2 else as_key) + argv, prog_name="amem-db")
        codes[result.exit_code] = codes.get(result.exit_code, 0) + 1
        problem = cli_problem(result)
        after, rows_after = asyncio.run(snapshot())
        if after != before and not (result.exit_code == 0 and name in CLI_WRITES):
            grew = {k: rows_after[k] - rows[k] for k in rows if rows_after[k] != rows[k]}
            problem = problem or f"exit {result.exit_code} yet the database changed (rows {grew or 'same count, contents'})"
        before, rows = after, rows_after
        if problem:
            failures.append(f"{name} {[a[:40] for a in argv]}: {problem}")
    print(f"\nhostile CLI: {len(cases)} runs over {len(CLI_TEMPLATES)} command templates, exit codes {dict(sorted(codes.items()))}, "
          f"{len(failures)} findings")
    assert len(cases) >= 10 * len(CLI_TEMPLATES)
    assert failures == [], "\n".join(failures[:20])


def cli_problem(result) -> str:
    """'' for a clean run: exit 0, 1 with one typed error line, or 2 (usage)."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"{type(result.exception).__name__} escaped: {str(result.exception)[:200]}"
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    if "Traceback" in text:
        return "a traceback"
    if result.exit_code not in (0, 1, 2):
        return f"exit code {result.exit_code}"
    untyped = re.search(r"error \(([A-Z]\w*)\)", text)
    if untyped:
        return f"an untyped error ({untyped.group(1)}): {text.strip().splitlines()[-1][:200]}"
    if result.exit_code == 1 and not re.search(r"error \([a-z_]+\): ", text) and "failed" not in text:
        return f"exit 1 without a typed error line: {text.strip()[-200:]}"
    return ""


# --- issue 27: the findings of the hostile pass on the memory half, one test each ----------
PERSON = {"type": "person", "name": "Hostile Hana"}


def fact(value=None, **triple):
    return {"triples": [{"entity": PERSON, "key": "k", "value": value, **triple}]}


YEARS_OUT = ["0000-01-01", "0000-12-31T23:59:59Z", "0001-01-01T00:30:00+01:00"]


async def test_time_options_outside_the_years_name_the_field(env):
    """Item 4: a year the database cannot hold is a typed error naming the option, for every
    time option (no 'Could not cast ... 0-02-01')."""
    a = env["a"]
    cases = [("observed_at", "fn::amem::facts::prepare", lambda v: ({"text": "t", "observed_at": v},)),
             ("valid_from", "fn::amem::facts::prepare", lambda v: ({"text": "t", "valid_from": v},)),
             ("triples[0].valid_until", "fn::amem::facts::prepare", lambda v: (fact("x", valid_until=v),)),
             ("t1", "fn::amem::facts::diff", lambda v: (v, "2024-01-01", None))]
    cases += [(k, "fn::amem::entities::get", lambda v, k=k: ("person", "x", {k: v})) for k in ["asOf", "validAt", "validFrom", "validUntil"]]
    cases += [("validDuring[0]", "fn::amem::entities::history", lambda v: ("person", "x", "k", {"validDuring": [v, "2024-01-01"]})),
              ("asOf", "fn::amem::recall", lambda v: ("x", None, {"mode": "bm25", "asOf": v})),
              ("now", "fn::amem::recall", lambda v: ("x", None, {"mode": "bm25", "now": v})),
              ("since", "fn::amem::traces::list", lambda v: ({"since": v},))]
    for field, fn, args in cases:
        for v in YEARS_OUT:
            with pytest.raises(InvalidInput, match=re.escape(field) + " must lie in the years 0001 to 9999"):
                await call(a, fn, *args(v))
    # the edges of the range still work
    await call(a, "fn::amem::facts::prepare", {"text": "t", "observed_at": "0001-01-01", "valid_until": "9999-12-31T23:59:59Z"})


async def test_numbers_render_as_a_person_writes_them(env):
    """Item 5: the stored fact text and error messages: 1.5 not 1.5f, 0 not -0f, 1e-300 not 300 digits."""
    a = env["a"]
    for value, shown in ((1.5, "1.5"), (-0.0, "0"), (1e-300, "1e-300"), (42, "42"), (3.0, "3"), (-2.5e-7, "-2.5e-7"),
                         (1e21, "1e21"), (123456.25, "123456.25"), (True, "true")):
        p = await call(a, "fn::amem::facts::prepare", fact(value))
        assert [x["text"] for x in p["attributes"]] == [f"Hostile Hana: k = {shown}"], value
    with pytest.raises(InvalidInput, match=r"got 91$"):
        await call(a, "fn::amem::geo::stored", {"lat": 91.0, "lng": 0}, "location")
    with pytest.raises(InvalidInput, match=r"got 0\.5$"):
        await call(a, "fn::amem::recall", "x", None, {"mode": "bm25", "location": {"nearest": {"lat": 0, "lng": 0, "k": 0.5}}})
    # the option checks of both read paths (every `got ' + <value>` message): no float suffix
    for fn, opts in (("fn::amem::recall", {"k": 1.5}), ("fn::amem::recall", {"graphDepth": 1.5}),
                     ("fn::amem::recall", {"rrfK": -2.5}), ("fn::amem::documents::query", {"rrfK": -2.5}),
                     ("fn::amem::documents::query", {"vectorWeight": 1.5})):
        with pytest.raises(InvalidInput) as info:
            await call(a, fn, "x", None, {"mode": "bm25", **opts})
        assert re.search(r"got -?\d+\.5\b", str(info.value)) and "5f" not in str(info.value), (fn, opts, str(info.value))


async def test_invisible_and_control_characters_are_refused_naming_the_field(env):
    """Item 6: NUL in a key, value, text or query; bidi overrides in a key or name; a name of
    zero-width characters only; a 1,000-character entity type."""
    a = env["a"]
    cases = [
        ("triples[0].key holds a NUL", "fn::amem::facts::prepare", (fact("v", key="a\x00b"),)),
        ("triples[0].value holds a NUL", "fn::amem::facts::prepare", (fact("a\x00b"),)),
        ("text holds a NUL", "fn::amem::facts::prepare", ({"text": "hello\x00world"},)),
        ("query holds a NUL", "fn::amem::recall", ("a\x00b", None, {"mode": "bm25"})),
        ("query holds a NUL", "fn::amem::documents::query", ("a\x00b", None, {"mode": "bm25"})),
        ("triples[0].key holds a bidirectional", "fn::amem::facts::prepare", (fact("v", key="role\u202egnp"),)),
        ("triples[0].entity.name holds a bidirectional", "fn::amem::facts::prepare",
         ({"triples": [{"entity": {"type": "person", "name": "Eve\u2066x"}, "key": "k", "value": "v"}]},)),
        ("triples[0].entity.name has no visible character", "fn::amem::facts::prepare",
         ({"triples": [{"entity": {"type": "person", "name": "\u200b\u200d\ufeff"}, "key": "k", "value": "v"}]},)),
        ("triples[0].key has no visible character", "fn::amem::facts::prepare", (fact("v", key="\u200b\u2060"),)),
        ("triples[0].entity.aliases[1] holds a NUL", "fn::amem::facts::prepare",
         ({"triples": [{"entity": {"type": "person", "name": "Al", "aliases": ["ok", "b\x00"]}, "key": "k", "value": "v"}]},)),
        ("triples[0].entity.type is longer than 100", "fn::amem::facts::prepare",
         ({"triples": [{"entity": {"type": "t" * 1000, "name": "Al"}, "key": "k", "value": "v"}]},)),
    ]
    for message, fn, args in cases:
        with pytest.raises(InvalidInput, match=re.escape(message)):
            await call(a, fn, *args)
    # what stays allowed: joiners inside a name (emoji, scripts), RTL text itself, long free text
    ok = await call(a, "fn::amem::facts::prepare", {"triples": [{"entity": {"type": "person", "name": "👩\u200d💻 مریم"},
                                                                 "key": "role", "value": "مهندس"}]})
    assert ok["attributes"][0]["text"].startswith("👩\u200d💻 مریم")


async def test_raw_writes_obey_the_scope_path_rules(env):
    """Item 7: a record user's raw CREATE / UPDATE with a "." / ".." scope segment is refused by
    the field ASSERT (as the functions refuse it), on every table that carries scopes."""
    from amem_db.errors import from_engine_error

    a, root = env["a"], env["root"]
    names = await tables(root)
    before = await checksum(root, names)
    for bad in (["org/a/../b"], ["org/a/."], ["org/a", "./org/a"], ["org/a/x y"]):
        for sql in ("CREATE document SET scopes = $s, text = 'x', mime_type = 'text/plain', content_hash = 'h'",
                    "CREATE memory_chunk SET scopes = $s, text = 'x', write = 'w', char_start = 0, char_end = 1, position = 0",
                    "UPDATE document SET scopes = $s"):
            with pytest.raises(Exception) as err:
                await a.query(sql, {"s": bad})
            typed = from_engine_error(err.value)
            assert isinstance(typed, InvalidInput) and "scopes" in str(typed), (sql, bad, err.value)
    assert await checksum(root, names) == before
    # every table with a scopes field carries the ASSERT (a table added later must join surql/100_scope)
    (info,) = await root.query("INFO FOR DB")
    missing = []
    for t in sorted(info["tables"]):
        (ti,) = await root.query(f"INFO FOR TABLE {t}")
        if "scopes" in ti["fields"] and "fn::amem::scope::stored_paths" not in ti["fields"]["scopes"]:
            missing.append(t)
    assert missing == []


async def test_item_8_small_fixes(env):
    """Item 8, the small ones (decisions in docs/SECURITY.md): each a typed, accurate error
    or the behaviour the documentation promised."""
    from amem_db.connection import Target
    from amem_db.doctor import run_doctor
    from amem_db.errors import PermissionDenied
    from amem_db.maintain import maintain

    a, root = env["a"], env["root"]
    # options nested 500 deep: a typed error, not RecursionError
    with pytest.raises(InvalidInput, match="nests"):
        await call(a, "fn::amem::recall", "x", None, nest(500, "dict"))
    # `remember --location abc` is not told about WKT polygons
    with pytest.raises(InvalidInput, match='location "abc" is not a location') as err:
        await call(a, "fn::amem::geo::stored", "abc", "location")
    assert "WKT" not in str(err.value)
    # the validDuring message shows the value
    with pytest.raises(InvalidInput, match="2024-03-01"):
        await call(a, "fn::amem::entities::get", "person", "x", {"validDuring": ["2024-03-01", "2024-01-01"]})
    with pytest.raises(InvalidInput, match=r"got \['2024-03-01'\]"):
        await call(a, "fn::amem::entities::get", "person", "x", {"validDuring": ["2024-03-01"]})
    # an idempotent retry that spells a default out (observed_at=None) is the same request
    body = {"triples": [{"entity": PERSON, "key": "desk", "value": "d7"}], "idempotency_key": "item8-retry"}
    first = await call(a, "fn::amem::facts::write", body, None)
    again = await call(a, "fn::amem::facts::write", {**body, "observed_at": None, "labels": None,
                                                     "triples": [{**body["triples"][0], "valid_from": None}]}, None)
    assert again["write"] == first["write"]
    # doctor with a credential: one typed line, not NotAllowedError
    with pytest.raises(PermissionDenied, match="operator"):
        await run_doctor(a, Target(url="ws://unused", ns="x", db="y"))
    # a build that died, then --reset: the next maintain rebuilds it whatever its share
    await call(root, "fn::amem::maintain::begin", "memory_chunk_embedding")
    assert await call(root, "fn::amem::maintain::reset", "memory_chunk_embedding") is True
    (row,) = [s for s in await call(root, "fn::amem::maintain::status", 1.0, 10**9) if s["index"] == "memory_chunk_embedding"]
    assert row["due"] is True  # share 1.0 and 10^9 rows would never make it due by themselves
    report = await maintain(root, threshold=1.0, min_rows=10**9, indexes=["memory_chunk_embedding"])
    assert [r.index for r in report.rebuilt] == ["memory_chunk_embedding"]
    (row,) = [s for s in await call(root, "fn::amem::maintain::status", 1.0, 10**9) if s["index"] == "memory_chunk_embedding"]
    assert row["due"] is False


async def test_purge_redacts_the_traces_that_returned_the_record(env):
    """Item 8, decided: after a purge no trace (nor feedback) of anybody still holds the
    query that found the purged record (its words may be what was forgotten)."""
    a, root = env["a"], env["root"]
    w = await call(a, "fn::amem::facts::write", {"triples": [{"entity": {"type": "person", "name": "Quillon Vexford"},
                                                               "key": "codename", "value": "zanzibarite"}]}, None)
    rid = w["triples"][0]["id"]
    res = await call(a, "fn::amem::recall", "Quillon Vexford zanzibarite codename", None, {"mode": "bm25", "include": ["facts"]})
    trace = res["trace"]["id"]
    assert rid in [h["id"] for h in res["hits"]]
    await call(a, "fn::amem::traces::feedback", trace, rid, "useful")
    other = await call(a, "fn::amem::recall", "return policy refunds", None, {"mode": "bm25"})  # returns no fact of Quillon
    await call(root, "fn::amem::forget", {"ids": [rid], "purge": True})
    (mine, fb, kept) = await a.query(
        "SELECT query, query_embedding, redacted_at FROM type::record($t); SELECT query, query_norm FROM trace_feedback WHERE trace = $t;"
        "SELECT VALUE query FROM type::record($o)", {"t": trace, "o": other["trace"]["id"]})
    assert mine[0]["query"] == "" and mine[0].get("query_embedding") is None and mine[0]["redacted_at"] is not None
    assert fb and all(f["query"] == "" and f["query_norm"] == "" for f in fb)
    assert kept == ["return policy refunds"]  # a trace that never returned it keeps its query
    (words,) = await root.query("SELECT VALUE id FROM retrieval_trace WHERE string::contains(query, 'zanzibarite')")
    assert words == []
