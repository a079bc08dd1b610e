"""The Python client cannot be misused (issue 10): each footgun of the old
client has a test here that failed on the code before the fix.

* an unmigrated database says NotMigrated (run `amem-db migrate` or
  `await mem.migrate()`), not the engine's "function not found";
* a path and a text are never guessed apart: ingest_file / ingest_text /
  ingest_paths, and a str where a list belongs is a TypeError;
* results are models (Hit.chunk: Chunk, pages of Document ...) whose
  ``model_dump(by_alias=True)`` is exactly what the stored function returned;
* the error tree is closed (ParseError, pydantic errors, transport vs server);
* ``from amem_db import *`` exports exactly ``__all__``.

Vectors come from the hashing embedder (fast, named explicitly).
"""

from __future__ import annotations

import ast
import inspect
import os
import typing
from pathlib import Path

import pytest
import surrealdb.errors as sdk_errors
from helpers import hash_memory

import amem_db
from amem_db import (
    AmemError,
    AuthenticationFailed,
    InvalidInput,
    Memory,
    NotMigrated,
    ServerError,
    TransportError,
)
from amem_db.client import Documents, Keywords
from amem_db.db import call, plain
from amem_db.errors import from_engine_error
from amem_db.models import (
    Chunk,
    ChunkPage,
    ContextHit,
    Document,
    DocumentKeywords,
    DocumentPage,
    DocumentRef,
    Hit,
    KeywordDetail,
    KeywordPage,
    KeywordSearch,
    QueryResponse,
)
from amem_db.parsing import ParseError, parse_file

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "sample-corpus"
HASH = "hash:384"


@pytest.fixture(scope="module")
async def mem(db):
    m = hash_memory(db)
    report = await m.documents.ingest_paths([SAMPLE / "returns-policy.md", SAMPLE / "warranty.md",
                                             SAMPLE / "support-call-2024-03-14.vtt"], scopes=["org/acme"])
    assert report.count("added") == 3, report.results
    m.docs = {Path(r.name).name: r.document for r in report.results}
    # one long section: several chunks, so a hit has same-section context
    long = "# Store credit\n\n## Unopened items\n\n" + " ".join(
        f"Unopened item {i} may be returned within the return window for store credit." for i in range(60))
    m.docs["long"] = (await m.documents.ingest_text(long, source="long", mime_type="text/markdown")).document
    assert m.docs["long"].chunk_count > 3
    return m


async def raw_call(conn, fn: str, *args):
    """``RETURN fn(...)`` straight through the SDK (record ids made plain strings)."""
    (result,) = await conn.query(f"RETURN {fn}({', '.join(f'$a{i}' for i in range(len(args)))});",
                                 {f"a{i}": a for i, a in enumerate(args)})
    return plain(result)


# --- NotMigrated -----------------------------------------------------------------------
async def test_unmigrated_database_says_how_to_migrate():
    # as a new user would: open the in-memory engine and ingest at once
    mem = await Memory.open(url="mem://", embedder=HASH)
    try:
        with pytest.raises(NotMigrated, match=r"amem-db migrate.*await mem\.migrate\(\)"):
            await mem.documents.ingest_text("Unopened items may be returned within 30 days.")
        with pytest.raises(NotMigrated):
            await mem.documents.query("return window", mode="bm25")
        with pytest.raises(NotMigrated):  # every stored-function call, mapped once in db.py
            await call(mem.conn, "fn::amem::documents::list", {})
        with pytest.raises(NotMigrated):
            await mem.documents.ingest_paths([SAMPLE / "warranty.md"])
        await mem.migrate()
        result = await mem.documents.ingest_text("Unopened items may be returned within 30 days.", source="t")
        assert result.status == "added" and isinstance(result.document, Document)
    finally:
        await mem.close()


async def test_open_can_migrate():
    mem = await Memory.open(url="mem://", embedder=HASH, migrate=True)
    try:
        assert (await mem.documents.list()).total == 0
        plan = await mem.migrate()  # a second run has nothing to do
        assert plan.up_to_date
    finally:
        await mem.close()


async def test_migrate_settings_errors_are_invalid_input_naming_the_field_and_limit(fresh_db):
    m = Memory(fresh_db, embedder=HASH)
    with pytest.raises(InvalidInput, match=r"^hnsw_m must be between 4 and 128 \(got 2\)$"):
        await m.migrate(hnsw_m=2)
    with pytest.raises(InvalidInput, match=r"^embedding_dim must be between 2 and 16384 \(got 1000000\)$"):
        await m.migrate(embedding_dim=10**6)
    with pytest.raises(InvalidInput, match=r"no_such_setting.*embedding_dim"):
        await m.migrate(no_such_setting=1)
    with pytest.raises(InvalidInput, match="analyzer_language"):
        await m.migrate(analyzer_language="klingon")


async def test_open_with_a_key_signs_in_as_that_credential(tmp_path):
    from amem_db.access import grant

    url = f"surrealkv://{tmp_path / 'data'}"
    owner = await Memory.open(url=url, embedder=HASH, migrate=True)
    try:
        await owner.documents.ingest_text("Acme refunds take five days.", source="acme", scopes=["org/acme"])
        await owner.documents.ingest_text("Other refunds take nine days.", source="other", scopes=["org/other"])
        _, key = await grant(owner.conn, "reader", read=["org/acme"], write=[])
    finally:
        await owner.close()
    with pytest.raises(AuthenticationFailed, match="NAME:SECRET"):
        await Memory.open(url=url, key="no-secret")
    scoped = await Memory.open(url=url, key=key, embedder=HASH)
    try:
        page = await scoped.documents.list()
        assert [d.source for d in page.documents] == ["acme"]
    finally:
        await scoped.close()


# --- a path or a text, never guessed ---------------------------------------------------
def test_there_is_no_guessing_ingest():
    assert not hasattr(Documents, "ingest")


async def test_ingest_text_stores_the_text_even_when_it_looks_like_a_path(mem):
    result = await mem.documents.ingest_text("examples/sample-corpus", source="looks-like-a-path")
    assert result.document.mime_type == "text/plain" and result.document.chunk_count == 1
    page = await mem.documents.chunks(result.document.id)
    assert [c.text for c in page.chunks] == ["examples/sample-corpus"]
    with pytest.raises(TypeError, match="ingest_text takes a str"):
        await mem.documents.ingest_text(b"bytes are not text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ingest_text takes a str"):
        await mem.documents.ingest_text(Path("notes.md"))  # type: ignore[arg-type]


async def test_ingest_file_reads_a_file_and_refuses_a_folder(mem, tmp_path):
    f = tmp_path / "note.md"
    f.write_text("# Note\n\nGift cards cannot be returned or exchanged.\n")
    result = await mem.documents.ingest_file(str(f))
    assert result.status == "added" and result.document.mime_type == "text/markdown"
    assert (await mem.documents.ingest_file(f)).status == "unchanged"
    with pytest.raises(InvalidInput, match="is a folder.*ingest_paths"):
        await mem.documents.ingest_file(str(SAMPLE))
    with pytest.raises(ParseError, match="could not be read"):
        await mem.documents.ingest_file(tmp_path / "missing.md")
    with pytest.raises(InvalidInput, match="ingest_paths"):  # a corpus holds many documents
        await mem.documents.ingest_file(SAMPLE / "scifact-sample.jsonl")


async def test_ingest_paths_takes_a_list_of_paths(mem):
    with pytest.raises(TypeError, match="paths must be a list"):
        await mem.documents.ingest_paths(str(SAMPLE))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="paths must be a list"):
        await mem.documents.ingest_paths(SAMPLE)  # type: ignore[arg-type]


# --- sequence arguments ----------------------------------------------------------------
def _calls(m: Memory) -> list:
    d, kw = m.documents, m.documents.keywords
    return [
        ("scopes", lambda: d.ingest_text("text", scopes="org")),
        ("scopes", lambda: d.ingest_file(SAMPLE / "warranty.md", scopes="org/acme")),
        ("scopes", lambda: d.ingest_paths([SAMPLE / "warranty.md"], scopes="org/acme")),
        ("scopes", lambda: d.ingest_text("text", scopes=["org", 7])),
        ("paths", lambda: d.ingest_paths([SAMPLE, 7])),
        ("lens", lambda: d.query("refund", lens="org/acme")),
        ("lens", lambda: d.query("refund", lens=["org/acme"])),  # a clause is a list of paths
        ("lens", lambda: d.list(lens=["org/acme"])),
        ("lens", lambda: kw.list(lens="org")),
        ("lens", lambda: kw.get("RETURN POLICY", lens=[["org", 1]])),
        ("lens", lambda: kw.for_document("document:x", lens=["org"])),
        ("lens", lambda: kw.search("refund", lens="org")),
        ("graph_edges", lambda: d.query("refund", mode="hybrid_graph", graph_edges="mentions")),
        ("filter.documentIds", lambda: d.query("refund", filter={"documentIds": "document:abc"})),
        ("filter.mimeType", lambda: d.query("refund", filter={"mimeType": "application/pdf"})),
        ("filter", lambda: d.query("refund", filter=[("mimeType", ["text/plain"])])),
        ("mime_type", lambda: d.list(mime_type=["text/plain", 3])),
    ]


@pytest.mark.parametrize("case", range(17))
async def test_a_str_where_a_list_belongs_is_a_type_error(mem, case):
    name, make = _calls(mem)[case]
    before = (await mem.documents.list(limit=200)).total
    with pytest.raises(TypeError, match=name.replace(".", r"\.")):
        await make()
    assert (await mem.documents.list(limit=200)).total == before  # nothing stored


async def test_tuples_and_lists_are_both_sequences(mem):
    result = await mem.documents.ingest_text("Tuple scopes work too.", source="tuple-scopes", scopes=("org/acme",))
    assert result.document.scopes == ["org/acme"]
    page = await mem.documents.list(lens=(("org/acme",),), limit=200)
    assert any(d.source == "tuple-scopes" for d in page.documents)


# --- typed results whose dump is the stored function's JSON ----------------------------
QUERY_OPTS = {"mode": "hybrid_graph", "k": 4, "threshold": -1}


async def test_query_hits_are_models_dumping_to_the_raw_result(mem):
    q = "return window for unopened items"
    embedding = await mem.embed_query(q)
    opts = {**QUERY_OPTS, "embeddingModel": mem.embedder.name}
    raw = await raw_call(mem.conn, "fn::amem::documents::query", q, embedding, opts)
    assert raw["results"] and raw["contextHits"]  # both channels are exercised
    typed = QueryResponse.model_validate(raw)
    assert typed.model_dump(by_alias=True) == raw  # field for field, extra keys (trace, graph) included

    response = await mem.documents.query(q, mode="hybrid_graph", k=4, threshold=-1)
    dumped = response.model_dump(by_alias=True)
    for key in ("results", "contextHits", "warnings"):
        assert dumped[key] == raw[key]
    assert set(dumped) == set(raw)
    hit = response.results[0]
    assert isinstance(hit, Hit) and isinstance(hit.chunk, Chunk) and isinstance(hit.document, DocumentRef)
    assert hit.chunk.text == raw["results"][0]["chunk"]["text"]
    assert (hit.chunk.char_start, hit.chunk.char_end) == (raw["results"][0]["chunk"]["charStart"], raw["results"][0]["chunk"]["charEnd"])
    assert hit.document.title == raw["results"][0]["document"]["title"] and hit.chunk.document == hit.document.id
    assert hit.graph_evidence and hit.graph_evidence[0].edge_kind == "hybrid_graph"
    ctx = response.context_hits[0]
    assert isinstance(ctx, ContextHit) and isinstance(ctx.chunk, Chunk) and isinstance(ctx.document, DocumentRef)
    assert ctx.expands in {h.chunk.id for h in response.results}
    assert response.query_ms > 0 and response.trace is not None and response.trace["mode"] == "hybrid_graph"
    assert response.model_extra == {"graph": raw["graph"]}  # unknown keys stay reachable


async def test_transcript_hits_carry_their_times(mem):
    response = await mem.documents.query("Loom keyboard types letters twice firmware", mode="bm25", k=10)
    audio = [h for h in response.results if h.chunk.start_s is not None]
    assert audio and all(h.chunk.end_s >= h.chunk.start_s for h in audio)
    text = next(h for h in response.results if h.chunk.start_s is None)
    assert "startS" not in text.model_dump(by_alias=True)["chunk"]  # absent stays absent


async def test_llm_flags_fall_back_without_error(mem):
    response = await mem.documents.query("refund", mode="hybrid", use_hyde=True, decompose_query=True)
    assert response.results  # no error: single-query retrieval, fused order
    # the fall-backs are reported in the trace (surql/400_query: options.fallbacks); no
    # LLM provider is configured here (amem_db/llm.py), so both rewrites were skipped
    assert {f.split(":")[0] for f in response.trace["options"]["fallbacks"]} == {"useHyde", "decomposeQuery"}
    assert response.trace["options"]["hyde"] == "skipped (no provider)"


def test_modes_are_literal_types():
    hints = typing.get_type_hints(Documents.query)
    assert set(typing.get_args(hints["mode"])) == {"hybrid", "vector", "bm25", "hybrid_graph"}
    assert set(typing.get_args(typing.get_type_hints(Keywords.list)["sort"])) == {
        "-document_count", "document_count", "text", "-text"}


async def test_document_reads_are_models_dumping_to_the_raw_result(mem):
    doc_id = mem.docs["returns-policy.md"].id
    vtt_id = mem.docs["support-call-2024-03-14.vtt"].id
    cases = [
        (await mem.documents.get(doc_id), await raw_call(mem.conn, "fn::amem::documents::get", doc_id), Document),
        (await mem.documents.list(limit=3), await raw_call(mem.conn, "fn::amem::documents::list", {"limit": 3}), DocumentPage),
        (await mem.documents.chunks(vtt_id, limit=5), await raw_call(mem.conn, "fn::amem::documents::chunks", vtt_id, {"limit": 5}), ChunkPage),
        (await mem.documents.chunks(doc_id, limit=3), await raw_call(mem.conn, "fn::amem::documents::chunks", doc_id, {"limit": 3}), ChunkPage),
    ]
    for typed, raw, model in cases:
        assert isinstance(typed, model)
        assert typed.model_dump(by_alias=True) == raw
    page = cases[1][0]
    assert all(isinstance(d, Document) for d in page.documents) and page.documents[0].mime_type
    assert all(isinstance(c, Chunk) for c in cases[2][0].chunks) and cases[2][0].chunks[0].start_s == 0.0


async def test_keyword_reads_are_models_dumping_to_the_raw_result(mem):
    doc_id = mem.docs["returns-policy.md"].id
    listed = await mem.documents.keywords.list(limit=3)
    word = listed.keywords[0].text
    vector = await mem.embed_query("refund policies")
    cases = [
        (await mem.documents.keywords.for_document(doc_id), await raw_call(mem.conn, "fn::amem::keywords::for_document", doc_id, None), DocumentKeywords),
        (listed, await raw_call(mem.conn, "fn::amem::keywords::list", {"limit": 3}), KeywordPage),
        (await mem.documents.keywords.get(word), await raw_call(mem.conn, "fn::amem::keywords::get", word, None), KeywordDetail),
        (await mem.documents.keywords.search("refund policies", k=3), await raw_call(mem.conn, "fn::amem::keywords::search", vector, 3, None), KeywordSearch),
    ]
    for typed, raw, model in cases:
        assert isinstance(typed, model)
        assert typed.model_dump(by_alias=True) == raw
    assert listed.keywords[0].document_count >= 1


async def test_delete_and_links_are_models(mem):
    links = await mem.documents.recompute_links()
    assert links.links >= 1 and links.documents >= 1  # returns-policy.md and warranty.md link each other
    result = await mem.documents.ingest_text("A short note to delete.", source="to-delete")
    done = await mem.documents.delete(result.document.id)
    assert done.deleted == result.document.id and done.chunks == result.document.chunk_count


async def test_json_dump_is_the_cli_shape(mem):
    # the CLI prints model_dump(by_alias=True, mode="json"): camelCase hits, snake_case documents
    response = await mem.documents.query("warranty", mode="bm25", k=2)
    hit = response.model_dump(by_alias=True, mode="json")["results"][0]
    assert set(hit) == {"chunk", "score", "document"}
    assert set(hit["chunk"]) == {"id", "document", "text", "section", "position", "charStart", "charEnd"}
    doc = (await mem.documents.list(limit=1)).model_dump(by_alias=True, mode="json")["documents"][0]
    assert {"mime_type", "chunk_count", "created_at"} <= set(doc) and isinstance(doc["created_at"], str)


# --- the error tree is closed ------------------------------------------------------------
def test_parse_error_is_an_amem_error(tmp_path):
    assert issubclass(ParseError, AmemError)
    with pytest.raises(AmemError):
        parse_file(tmp_path / "missing.txt")


def test_sdk_errors_map_to_transport_or_server():
    transport = from_engine_error(sdk_errors.ConnectionUnavailableError("socket closed"))
    assert isinstance(transport, TransportError) and transport.retryable
    timeout = from_engine_error(sdk_errors.TransportTimeoutError("timed out"))
    assert isinstance(timeout, TransportError)
    server = from_engine_error(sdk_errors.InternalError("Internal", "something broke"))
    assert isinstance(server, ServerError) and not server.retryable and server.kind == "Internal"
    assert not issubclass(ServerError, TransportError) and not issubclass(TransportError, ServerError)
    thrown = from_engine_error(sdk_errors.ThrownError("Thrown", "An error occurred: amem:invalid_input: k must be an integer"))
    assert isinstance(thrown, InvalidInput) and str(thrown) == "k must be an integer"


async def test_engine_errors_are_server_errors(mem):
    with pytest.raises(ServerError):  # not one of ours: the engine's own refusal, typed
        await call(mem.conn, "fn::other::missing")
    with pytest.raises(InvalidInput, match="expects 0 to 1 arguments"):  # our function, a wrong call: InvalidInput
        await call(mem.conn, "fn::amem::documents::get", "document:x", "one argument too many")


def _bad_inputs(m: Memory) -> list:
    d, kw = m.documents, m.documents.keywords
    return [
        lambda: d.query("x", k=-1),
        lambda: d.query("x", mode="fuzzy"),
        lambda: d.query("x", k="ten"),
        lambda: d.query("x", threshold="high"),
        lambda: d.query("x", graph_edges=["no_such_edge"], mode="hybrid_graph"),
        lambda: d.list(limit=0),
        lambda: d.list(status="done"),
        lambda: d.chunks("document:missing"),
        lambda: d.chunks("x", limit=10**9),
        lambda: d.get(42),
        lambda: d.delete("document:missing"),
        lambda: d.reprocess("document:missing"),
        lambda: kw.list(sort="score"),
        lambda: kw.get(""),
        lambda: kw.search("x", k=0),
        lambda: d.ingest_text("x", title=7),
        lambda: d.ingest_text("x", mime_type="image/png"),
        lambda: d.ingest_file(ROOT / "pyproject.toml", mime_type="nope/nope"),
        lambda: m.migrate(hnsw_m="many"),
    ]


@pytest.mark.parametrize("case", range(19))
async def test_bad_input_raises_amem_error_or_type_error(mem, case):
    with pytest.raises((AmemError, TypeError)) as info:
        await _bad_inputs(mem)[case]()
    assert isinstance(info.value, (AmemError, TypeError)), repr(info.value)


def test_unknown_embedder_is_invalid_input_listing_the_choices():
    with pytest.raises(InvalidInput, match="minilm.*e5-small"):
        Memory(None, embedder="bogus")


# --- the package surface -----------------------------------------------------------------
def test_star_import_exports_exactly_all():
    namespace: dict = {}
    exec("from amem_db import *", namespace)
    namespace.pop("__builtins__")
    assert set(namespace) == set(amem_db.__all__)
    assert "re" not in namespace and "SyncMemory" in namespace and "Memory" in namespace
    errors = {n for n, v in vars(amem_db.errors).items() if inspect.isclass(v) and issubclass(v, AmemError)}
    assert errors <= set(amem_db.__all__)
    assert len(amem_db.__all__) == len(set(amem_db.__all__))


@pytest.mark.parametrize("module", ["amem_db.models", "amem_db.sync", "amem_db.client", "amem_db.options"])
def test_all_lists_every_public_class(module):
    """Issue 29: a model, option model, namespace or sync twin added later cannot be left out
    of ``__all__``: the package's ``__all__`` names every public class and Literal alias of
    its modules (a class defined in ``amem_db.models.facts`` counts for ``amem_db.models``)."""
    import importlib
    import pkgutil

    mod = importlib.import_module(module)
    parts = [mod] + [importlib.import_module(f"{module}.{m.name}") for m in pkgutil.iter_modules(getattr(mod, "__path__", []))
                     if not m.name.startswith("_")]
    public = set()
    for part in parts:
        # names the module itself assigns (a Literal alias imported from amem_db.models is the models')
        assigned = {t.id for node in ast.parse(inspect.getsource(part)).body if isinstance(node, ast.Assign)
                    for t in node.targets if isinstance(t, ast.Name)}
        for n, v in vars(part).items():
            if n.startswith("_"):
                continue
            if inspect.isclass(v) and (v.__module__ == module or v.__module__.startswith(module + ".")):
                public.add(n)
            elif typing.get_origin(v) is typing.Literal and n in assigned:
                public.add(n)
        assert set(getattr(part, "__all__", [])) <= set(vars(part)), part.__name__
    assert public - set(mod.__all__) == set()
    assert set(mod.__all__) <= set(vars(mod))


def test_models_are_pydantic_with_aliases():
    hit = Hit.model_validate({"chunk": {"id": "chunk:a", "document": "document:a", "text": "t", "section": None,
                                        "position": 0, "charStart": 0, "charEnd": 1},
                              "score": 0.5, "document": {"id": "document:a", "title": None, "source": None}})
    assert hit.chunk.char_end == 1
    same = Hit(chunk=Chunk(id="chunk:a", document="document:a", text="t", section=None, position=0, char_start=0, char_end=1),
               score=0.5, document=DocumentRef(id="document:a", title=None, source=None))
    assert same.model_dump(by_alias=True) == hit.model_dump(by_alias=True)


if os.environ.get("AMEM_TEST_URL"):  # the key test opens an embedded database of its own
    test_open_with_a_key_signs_in_as_that_credential = pytest.mark.skip("embedded only")(
        test_open_with_a_key_signs_in_as_that_credential)


async def test_a_lone_surrogate_is_invalid_input_and_stores_nothing(mem):
    before = (await mem.documents.list()).total
    with pytest.raises(InvalidInput, match="lone surrogate"):
        await mem.documents.ingest_text("bad \ud800 text")
    with pytest.raises(InvalidInput, match="lone surrogate"):
        await mem.facts.write({"triples": [{"entity": {"type": "person", "name": "A\ud800"}, "key": "k", "value": "v"}]})
    assert (await mem.documents.list()).total == before
    assert (await mem.entities.list()).total == 0
