"""Hostile input against every stored function: hypothesis-generated options,
lenses, documents and strings (huge, deeply nested, Unicode, SurrealQL
injection). Every call either succeeds or raises a typed amem error (an
``AmemError`` via ``amem_db.db.call``); a refused call changes nothing (a
checksum of every table before/after); a successful read changes nothing but
its own trace. Plus the input limits, each with a clear error.
docs/SECURITY.md quotes the counts."""

from __future__ import annotations

import hashlib
import json

import pytest
import pytest_asyncio
from devserver_fixture import dev_server, tenants  # noqa: F401
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem_db.db import call
from amem_db.embedding import get_embedder
from amem_db.errors import AmemError, InvalidInput
from amem_db.ingest import Item, ingest_items

DIM = 384
TABLES = ["document", "section", "chunk", "audio_chunk", "keyword", "knowledge_has_keyword", "document_link",
          "entity", "attribute", "relation", "mentions", "chunk_fts", "audio_chunk_fts", "amem_principal", "amem_setting", "amem_migration", "amem_lock",
          # typed memory (migrations/0005-0008)
          "entity_name", "memory_chunk", "memory_chunk_fts", "attribute_fts", "uncertainty", "fact_key", "memory_write"]

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
QUERY_KEYS = ["mode", "k", "threshold", "vectorWeight", "rrfK", "filter", "lens", "expandContext", "useHyde",
              "decomposeQuery", "useReranker", "caller", "embeddingModel", "graphAlpha", "graphDepth", "expandGraph", "graphEdges"]
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
RECALL_KEYS = ["mode", "k", "include", "lens", "labels", "threshold", "vectorWeight", "graphWeight", "rrfK", "graphDepth",
               "expandContext", "caller", "embeddingModel", "bogus"]
recall_opts = st.one_of(hostile, st.dictionaries(st.sampled_from(RECALL_KEYS), st.one_of(
    hostile, lens, st.sampled_from(["hybrid", "vector", "bm25", "graph"]), st.lists(st.sampled_from(["facts", "passages", "x"]), max_size=3)),
    max_size=6))
entity_ref = st.one_of(hostile, st.fixed_dictionaries({"type": st.one_of(hostile, st.sampled_from(["person", "org"])),
                                                       "name": st.one_of(hostile, st.text(max_size=30))}))
triple = st.one_of(hostile, st.fixed_dictionaries({"entity": entity_ref, "key": st.one_of(hostile, st.text(max_size=20))}, optional={
    k: hostile for k in ["value", "target", "category", "confidence", "retract", "valid_from", "valid_until", "x"]}))
fact_request = st.one_of(hostile, st.fixed_dictionaries({}, optional={
    "triples": st.one_of(hostile, st.lists(triple, max_size=3)), "text": st.one_of(st.text(max_size=200), hostile),
    "scopes": st.one_of(hostile, st.lists(paths, max_size=3)), **{k: hostile for k in [
        "observed_at", "valid_from", "valid_until", "session_id", "role", "source", "category", "confidence", "labels",
        "idempotency_key", "x"]}}))
forget_request = st.one_of(hostile, st.fixed_dictionaries({}, optional={
    "ids": st.one_of(hostile, st.lists(st.one_of(hostile, st.sampled_from(INJECTIONS)), max_size=3)),
    "query": st.one_of(hostile, st.fixed_dictionaries({}, optional={"entity": entity_ref, "key": hostile, "write": hostile})),
    "dryRun": hostile, "purge": hostile, "scopes": hostile, "x": hostile}))
small_int = st.one_of(st.integers(min_value=-5, max_value=5000), st.integers(min_value=-(2**63), max_value=2**63 - 1))

FUNCTIONS = {  # name -> strategy of the argument tuple
    "fn::amem::documents::ref": st.tuples(hostile),
    "fn::amem::documents::check": st.tuples(doc),
    "fn::amem::documents::prepare": st.tuples(doc),
    "fn::amem::documents::ingest": st.tuples(doc, st.one_of(st.none(), hostile)),
    "fn::amem::documents::get": st.tuples(hostile),
    "fn::amem::documents::list": st.tuples(page_opts),
    "fn::amem::documents::chunks": st.tuples(hostile, page_opts),
    "fn::amem::documents::delete": st.tuples(hostile),
    "fn::amem::documents::source_of": st.tuples(hostile),
    "fn::amem::documents::query": st.tuples(st.one_of(st.text(max_size=200), hostile), vector, query_opts),
    "fn::amem::keywords::normalise": st.tuples(hostile),
    "fn::amem::keywords::for_document": st.tuples(hostile, lens),
    "fn::amem::keywords::list": st.tuples(page_opts),
    "fn::amem::keywords::get": st.tuples(hostile, lens),
    "fn::amem::keywords::search": st.tuples(vector, st.one_of(small_int, hostile), lens),
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
    "fn::amem::facts::write": st.tuples(fact_request, st.one_of(st.none(), hostile)),
    "fn::amem::entities::get": st.tuples(hostile, hostile, st.one_of(st.none(), hostile)),
    "fn::amem::entities::history": st.tuples(hostile, hostile, hostile, st.one_of(st.none(), hostile)),
    "fn::amem::entities::list": st.tuples(page_opts),
    "fn::amem::recall": st.tuples(st.one_of(st.text(max_size=200), hostile), vector, recall_opts),
    "fn::amem::inspect": st.tuples(st.one_of(hostile, entity_ref), st.one_of(st.none(), hostile)),
    "fn::amem::forget": st.tuples(forget_request),
}
EXAMPLES = 16  # per function and principal


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
    return {"root": root, "a": a, "b": b}


async def checksum(root) -> str:
    h = hashlib.sha256()
    for t in TABLES:
        (rows,) = await root.query(f"SELECT * FROM {t} ORDER BY id")
        h.update(t.encode() + json.dumps(rows, default=str, sort_keys=True).encode())
    return h.hexdigest()


WRITES = {"fn::amem::documents::ingest", "fn::amem::documents::delete", "fn::amem::facts::write", "fn::amem::forget"}


@pytest.mark.slow  # every function x every hostile value
async def test_hostile_input_every_function(env):
    root = env["root"]
    counts = {"cases": 0, "ok": 0, "typed_errors": 0}
    failures = []
    base = await checksum(root)
    for fi, (fn, strategy) in enumerate(FUNCTIONS.items()):
        for ci, args in enumerate(generate(strategy, EXAMPLES)):
            who = ("a", "root", "b")[(fi + ci) % 3]
            counts["cases"] += 1
            try:
                await call(env[who], fn, *args)
                ok = True
                counts["ok"] += 1
            except AmemError as exc:
                ok = False
                counts["typed_errors"] += 1
                if str(exc).startswith("the database refused a value"):  # a schema error: validation missed it
                    failures.append((fn, who, repr(args)[:300], f"unvalidated: {exc}"))
            except ValueError as exc:  # refused by the client before sending (int outside 64 bits...)
                ok = False
                counts["typed_errors"] += 1
                assert "64-bit" in str(exc) or "JSON" in str(exc), exc
            except Exception as exc:
                ok = False
                failures.append((fn, who, repr(args)[:300], f"{type(exc).__name__}: {str(exc)[:300]}"))
            after = await checksum(root)
            if after != base:
                if not (ok and fn in WRITES):
                    failures.append((fn, who, repr(args)[:300], "the database changed"))
                base = after
    (alive,) = await root.query("RETURN 1")
    assert alive == 1  # no engine panic took the server down
    print(f"\nhostile input: {counts['cases']} cases over {len(FUNCTIONS)} functions: {counts['ok']} succeeded, "
          f"{counts['typed_errors']} typed errors, {len(failures)} findings")
    assert failures == [], "\n".join(sorted({f"{f[0]} {f[3][:160]}" for f in failures}))


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
