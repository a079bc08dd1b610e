"""Scopes enforced by the database: two tenants with near-identical corpora,
tenant A's credential over the dev server (one engine session per connection),
and every retrieval path, keyword API, trace and raw SurrealQL checked for
tenant B's ids, text, counts and scores. docs/SECURITY.md quotes the counts."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys

import pytest
import pytest_asyncio
from devserver_fixture import ROOT_PASSWORD, ROOT_USER, dev_server, tenants, unique_name  # noqa: F401
from helpers import make_target
from permission_matrix import MATRIX
from surrealdb import RecordID
from surrealdb.errors import NotAllowedError, NotFoundError

from amem_db import access
from amem_db.connection import Target, close_quietly, open_connection
from amem_db.db import call, plain
from amem_db.embedding import get_embedder
from amem_db.errors import AmemError, AuthenticationFailed, NotFound, PermissionDenied
from amem_db.ingest import Item, ingest_items
from amem_db.migrator import Migrator

N_DOCS = 24  # per tenant
WORDS = ("return policy refund window unopened items shipping rates invoice warranty claim battery "
         "replacement courier tracking customs duty exchange voucher loyalty points").split()
# every table but the traces (a read writes its own): checksummed around refused writes;
# the matrix test keeps MATRIX equal to the tables of the migrated database
CHECKED = [t for t in MATRIX if t != "retrieval_trace"]


def corpus(tenant: str) -> list[Item]:
    """The same documents in both tenants; only a marker word differs (`asecretN` / `bsecretN`)."""
    rnd = random.Random(7)
    items = []
    for i in range(N_DOCS):
        body = []
        for s in range(2):
            paras = [" ".join(rnd.choice(WORDS) for _ in range(70)) + f" {tenant}secret{i}." for _ in range(3)]
            body.append(f"## Part {s}\n\n" + "\n\n".join(paras))
        text = f"# Policy {i}\n\n" + "\n\n".join(body) + f"\n\nSee [next](doc{(i + 1) % N_DOCS}.md)."
        team = "/team/support" if i % 3 == 0 else ""
        items.append(Item(f"{tenant}{i}", {
            "text": text, "mime_type": "text/markdown", "title": f"Policy {i} {tenant}secret{i}",
            "source": f"doc{i}.md", "scopes": [f"org/{tenant}{team}"],
            "sections": _sections(text), "links": [{"href": f"doc{(i + 1) % N_DOCS}.md", "text": "next"}],
        }))
    return items


def _sections(text: str) -> list[dict]:
    starts = [i for i in range(len(text)) if text.startswith("## ", i)]
    out = []
    for n, st in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(text)
        out.append({"heading": text[st + 3: text.index("\n", st)], "char_start": st, "char_end": end, "level": 2})
    return out


def dump(value) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


class World:
    pass


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(dev_server):
    grants = {"tenant-a": dict(read=[], write=["org/a"]), "tenant-b": dict(read=[], write=["org/b"]),
              "reader-a-team": dict(read=["org/a/team"], write=[]),
              "admin-a": dict(read=["org/a"], write=[], admin=True)}
    async with tenants(dev_server, "sec", grants) as t:
        yield await _world(t)


@pytest_asyncio.fixture(loop_scope="module")
async def doomed(world):
    """A credential of one test alone (reads and writes org/a): revoking it changes nothing the module's other tests see."""
    name = unique_name("doomed")
    _, key = await access.grant(world.root, name, read=["org/a"], write=["org/a"])
    conn = await open_connection(Target(url=world.url, ns=world.ns, db="test", key=key))
    yield name, key, conn
    await close_quietly(conn)


async def _world(t) -> World:
    w = World()
    w.ns, w.url, w.root, w.keys, w.conns = t.ns, t.url, t.root, t.keys, t.conns
    w.A, w.B = w.conns["tenant-a"], w.conns["tenant-b"]
    w.emb = get_embedder("hash:384")
    (w.a_caller,) = await w.A.query("RETURN <string> $auth.id")  # the engine's spelling: amem_principal:`tenant-a`
    for conn, t in ((w.A, "a"), (w.B, "b")):
        report = await ingest_items(conn, w.emb, corpus(t))
        assert [r.status for r in report.results] == ["added"] * N_DOCS, [r.error for r in report.results]
    # what belongs to B, seen by root
    (w.b_docs, w.a_docs) = await w.root.query(
        "SELECT VALUE record::id(id) FROM document WHERE scope_keys CONTAINS 'org/b';"
        "SELECT VALUE record::id(id) FROM document WHERE scope_keys CONTAINS 'org/a';")
    assert len(w.b_docs) == N_DOCS and len(w.a_docs) == N_DOCS
    (b_gens,) = await w.root.query("SELECT VALUE string::split(record::id(id), '_')[1] FROM chunk WHERE scope_keys CONTAINS 'org/b'")
    w.b_markers = set(w.b_docs) | set(b_gens)
    # typed memory: the same person in both tenants, with conflicting values, B's alias,
    # B's edge to a B-only entity and a B passage; B declares a key multi-valued
    shared = {"type": "person", "name": "Shared Person"}
    await call(w.A, "fn::amem::facts::write", {"triples": [{"entity": shared, "key": "role", "value": "asecretrole"}],
                                                "idempotency_key": "same-key"}, None)
    await call(w.B, "fn::amem::facts::declare_key", "hobby", {"multi_valued": True})
    b_write = await call(w.B, "fn::amem::facts::write", {
        "triples": [{"entity": {**shared, "aliases": ["bsecretalias"]}, "key": "role", "value": "bsecretrole", "confidence": 0.3},
                    {"entity": shared, "key": "employer", "target": {"type": "company", "name": "bsecretco"}},
                    {"entity": shared, "key": "hobby", "value": "bsecrethobby"}],
        "text": "bsecretnote about the shared person", "idempotency_key": "same-key"}, None)
    w.b_markers |= {b_write["write"]}
    (w.keyphrases,) = await w.root.query("SELECT VALUE normalised FROM keyword")  # both tenants'
    w.counts = {"queries": 0, "checks": 0}
    w.calls = {}
    return w


def assert_no_b(w: World, value, *, allow_scope_names: bool = False, own: str = "") -> None:
    """`own`: the caller's own input (a query naming bsecret3 is echoed in its trace)."""
    text = dump(value)
    for word in sorted(own.split(), key=len, reverse=True):
        text = text.replace(word, "")
    w.counts["checks"] += 1
    assert "bsecret" not in text, "tenant B text leaked"
    for m in w.b_markers:
        if m in text:
            pytest.fail(f"tenant B id {m} leaked: ...{text[max(0, text.index(m) - 200): text.index(m) + 80]}...")
        w.counts["checks"] += 1
    if not allow_scope_names:
        assert "org/b" not in text, "tenant B scope name leaked"


# --- the leak test -------------------------------------------------------------------
LENSES = [None, [["org/a"]], [["org/b"]], [["org"]], [["org/a/team"]], [["org/a"], ["org/b"]], [["org/b", "org/a"]],
          [["org/a/team/support"]], [["org/b/team/support"], ["org/a"]]]


LEAK_N = int(os.environ.get("AMEM_LEAK_N", 300))  # iterations of each randomised leak test


def catalogue_read(w: World, rnd: random.Random, lens) -> tuple[str, tuple]:
    """A random keyword or document API read, on ids and keyphrases of either tenant."""
    doc = f"document:{rnd.choice(w.a_docs + w.b_docs)}"
    opts = {"lens": lens} if lens is not None else {}
    return rnd.choice([
        ("fn::amem::keywords::list", ({"limit": rnd.choice([5, 50, 500]), **opts},)),
        ("fn::amem::keywords::get", (rnd.choice(w.keyphrases), lens)),
        ("fn::amem::keywords::search", (w.emb.embed_query(" ".join(rnd.sample(WORDS, 2))), rnd.choice([1, 10, 50]), lens)),
        ("fn::amem::keywords::for_document", (doc, lens)),
        ("fn::amem::documents::get", (doc,)),
        ("fn::amem::documents::list", ({"limit": rnd.choice([5, 200]), **opts},)),
        ("fn::amem::documents::chunks", (doc, None)),
        ("fn::amem::documents::source_of", (doc,)),
    ])


async def leak_checked_call(w: World, conn, fn: str, args: tuple, *, own: str, lens=None, echoes_lens: bool = False):
    """Calls `fn`; the response (or the typed refusal) must hold nothing of B. Counted per path.
    Scope names may come back only when the lens names them (or, `echoes_lens`, when the
    response repeats whatever lens it was given)."""
    w.calls[fn] = w.calls.get(fn, 0) + 1
    try:
        out = await call(conn, fn, *args)
    except AmemError as exc:  # a typed refusal is fine; it must not leak either (it may echo the input)
        assert_no_b(w, str(exc), allow_scope_names=True, own=own)
        return None
    names_b = lens is not None and (echoes_lens or any("org/b" in p for c in lens for p in c))
    assert_no_b(w, out, allow_scope_names=names_b, own=own)
    return out


async def check_own_traces(w: World, conn, caller: str, limit: int = 3) -> None:
    """The traces a principal reads are its own and hold nothing of B beyond its own query text."""
    w.calls["retrieval_trace (raw)"] = w.calls.get("retrieval_trace (raw)", 0) + 1
    (traces,) = await conn.query(f"SELECT * FROM retrieval_trace ORDER BY created_at DESC LIMIT {limit}")
    for t in traces:
        assert t["caller"] == caller
        mine = dump(t["hits"]) + dump(t["legs"])
        for word in t["query"].split():
            mine = mine.replace(word, "")
        assert "bsecret" not in mine and not any(m in mine for m in w.b_markers)


@pytest.mark.slow  # hundreds of random queries in every mode
async def test_leak_randomised_queries(world):
    """documents.query in every mode, lens, filter and k, each followed by a random keyword
    or document API read (ids and keyphrases of both tenants) and a read of the caller's
    latest traces: nothing of B, ever. Counts every call per read path."""
    w = world
    rnd = random.Random(2026)
    modes = ["bm25", "vector", "hybrid", "hybrid_graph"]
    a_hits, queries = 0, 0
    w.timing = {}
    w.calls = {}
    for n in range(LEAK_N):
        words = rnd.sample(WORDS, rnd.randint(1, 4)) + rnd.choice([[], [f"bsecret{rnd.randrange(N_DOCS)}"], [f"asecret{rnd.randrange(N_DOCS)}"]])
        q = " ".join(words)
        mode = "hybrid_graph" if n % 8 == 7 else modes[n % 3]
        lens = rnd.choice(LENSES)
        opts = {"mode": mode, "k": rnd.choice([1, 5, 10, 50, 80]), "threshold": rnd.choice([-1, 0, 0.2, 0.5]),
                "expandContext": rnd.random() < 0.8}
        if lens is not None:
            opts["lens"] = lens
        r = rnd.random()
        if r < 0.3:  # documentIds mixing both tenants: the exact vector path, under permissions
            ids = rnd.sample(w.a_docs, 3) + rnd.sample(w.b_docs, 3)
            opts["filter"] = {"documentIds": [f"document:{i}" for i in ids]}
        elif r < 0.45:
            opts["filter"] = {"mimeType": ["text/markdown"]}
        if mode == "hybrid":
            opts["vectorWeight"] = rnd.choice([0.2, 0.5, 0.8])
        emb = None if mode == "bm25" else w.emb.embed_query(q)
        own = q + " " + " ".join((opts.get("filter") or {}).get("documentIds", []))  # A's own input, echoed in the trace
        res = await leak_checked_call(w, w.A, "fn::amem::documents::query", (q, emb, opts), own=own, lens=lens)
        fn, args = catalogue_read(w, rnd, lens)
        own_args = " ".join(a for a in args if isinstance(a, str))  # the id or keyphrase asked for, echoed in a refusal
        out = await leak_checked_call(w, w.A, fn, args, own=own_args, lens=lens)
        if fn == "fn::amem::documents::get" and out is not None:
            assert out["id"].split(":", 1)[1] in w.a_docs
        if n % 4 == 0:
            await check_own_traces(w, w.A, w.a_caller)
        if res is None:
            continue
        queries += 1
        w.timing.setdefault(mode, []).append((res["queryMs"],))
        a_hits += len(res["results"])
        for hit in res["results"] + res["contextHits"]:
            assert hit["chunk"]["document"].split(":", 1)[1] in w.a_docs
        if lens is not None and all(any(p.startswith("org/b") for p in c) for c in lens):
            assert res["results"] == [] and res["contextHits"] == []
        assert res["trace"]["caller"] == w.a_caller
    # the traces A can read are its own, and hold nothing of B
    (traces,) = await w.A.query("SELECT * FROM retrieval_trace")
    assert len(traces) >= queries
    await check_own_traces(w, w.A, w.a_caller, limit=len(traces))
    (b_traces,) = await w.B.query("SELECT VALUE caller FROM retrieval_trace")
    assert w.a_caller not in b_traces
    assert a_hits > 5 * queries  # the corpus is found: the test is not vacuous
    total = sum(w.calls.values())
    assert total >= 500 or "AMEM_LEAK_N" in os.environ, w.calls  # issue 15: >= 500 per run
    medians = {m: sorted(x[0] for x in ts)[len(ts) // 2] for m, ts in w.timing.items()}
    print(f"\nleak test (queries): {total} calls over {len(w.calls)} read paths {dict(sorted(w.calls.items()))}; "
          f"{queries} queries ({', '.join(modes)}), {a_hits} hits, {w.counts['checks']} leak checks, 0 leaks; "
          f"median queryMs {medians}")


async def test_leak_keyword_and_document_apis(world):
    w = world
    (truth,) = await w.root.query(
        "SELECT out.normalised AS n, count() AS c FROM knowledge_has_keyword WHERE scope_keys CONTAINS 'org/a' GROUP BY n")
    expected = {r["n"]: r["c"] for r in truth}
    checks = 0
    for lens in LENSES:
        page = await call(w.A, "fn::amem::keywords::list", {"limit": 500, **({"lens": lens} if lens else {})})
        assert_no_b(w, page["keywords"])
        got = {k["normalised"]: k["document_count"] for k in page["keywords"]}
        if lens in (None, [["org/a"]], [["org"]], [["org/a"], ["org/b"]]):
            assert got == expected  # document_count counts only visible documents
        for k in page["keywords"]:
            assert k["document_count"] <= expected[k["normalised"]]
        checks += 1
    for n in list(expected)[:20]:
        d = await call(w.A, "fn::amem::keywords::get", n, None)
        assert d["document_count"] == expected[n] and all(x["id"].split(":", 1)[1] in w.a_docs for x in d["documents"])
        assert_no_b(w, d)
        checks += 1
    (b_only,) = await w.root.query("SELECT VALUE out.normalised FROM knowledge_has_keyword WHERE scope_keys CONTAINS 'org/b'")
    for n in {x for x in b_only if x not in expected}:
        with pytest.raises(NotFound):
            await call(w.A, "fn::amem::keywords::get", n, None)
        checks += 1
    s = await call(w.A, "fn::amem::keywords::search", w.emb.embed_query("bsecret3 return policy"), 50, None)
    assert_no_b(w, s)
    assert {r["normalised"] for r in s["results"]} <= set(expected)
    for b in w.b_docs[:5]:
        assert await call(w.A, "fn::amem::documents::get", f"document:{b}") is None
        for fn, args in (("fn::amem::documents::chunks", (f"document:{b}", None)), ("fn::amem::keywords::for_document", (f"document:{b}", None)),
                         ("fn::amem::documents::source_of", (f"document:{b}",))):
            with pytest.raises(NotFound):
                await call(w.A, fn, *args)
            checks += 1
    page = await call(w.A, "fn::amem::documents::list", {"limit": 200})
    assert page["total"] == N_DOCS
    assert_no_b(w, page)
    for a in w.a_docs[:5]:
        assert_no_b(w, await call(w.A, "fn::amem::keywords::for_document", f"document:{a}", None))
        doc = await call(w.A, "fn::amem::documents::get", f"document:{a}")
        assert_no_b(w, doc)
    # links were built inside each tenant only (same file names exist in both)
    (links,) = await w.root.query("SELECT in.scopes AS i, out.scopes AS o FROM document_link")
    assert links and all(e["i"] == e["o"] or e["i"][0].split("/")[1] == e["o"][0].split("/")[1] for e in links)
    print(f"\nkeyword/document API leak checks: {checks}")


# --- raw SurrealQL with a scoped credential ----------------------------------------------
async def checksum(conn, tables) -> dict:
    out = {}
    for t in tables:
        (rows,) = await conn.query(f"SELECT * FROM {t} ORDER BY id")
        out[t] = dump(rows)
    return out


async def test_raw_surrealql_cannot_cross_scopes(world):
    """Raw SurrealQL with A's key against the real corpus of both tenants, in the shapes
    the permission matrix (tests/test_permission_matrix.py: every table x verb x principal
    on seeded rows) does not take: RETURN clauses, UPSERT, traversals and record-link
    dereferences, table-wide statements over B's rows, forged callers, the statements of
    issue 15 findings 1-2 as reported, schema statements, other namespaces, the admin
    function and the write functions. Nothing of B comes back and nothing changes."""
    w = world
    A = w.A
    before = await checksum(w.root, CHECKED)
    n = 0
    b_doc = f"document:{w.b_docs[0]}"
    attempts = [
        f"SELECT * FROM {b_doc}", f"RETURN {b_doc}.text", f"SELECT * FROM chunk WHERE document = {b_doc}",
        f"SELECT ->knowledge_has_keyword->keyword FROM {b_doc}", "SELECT <-knowledge_has_keyword<-document.text AS t FROM keyword",
        "SELECT <-mentions<-memory_chunk.text AS t, <-relation<-entity.name AS n FROM entity",
        f"UPDATE {b_doc} SET title = 'pwned' RETURN AFTER", f"UPSERT {b_doc} SET title = 'pwned' RETURN AFTER",
        f"DELETE {b_doc} RETURN BEFORE", "DELETE chunk WHERE scope_keys CONTAINS 'org/b' RETURN BEFORE",
        "UPDATE document SET scopes = ['org/a', 'org/b'] RETURN AFTER",
        "CREATE document CONTENT {text: 'x', mime_type: 'text/plain', content_hash: 'h', scopes: []} RETURN AFTER",
        f"CREATE chunk_fts CONTENT {{text: 'x', document: {b_doc}, mime_type: 'text/plain', scopes: ['org/a']}} RETURN AFTER",
        "SELECT * FROM keyword WHERE scopes CONTAINS 'org/b'",
        # issue 15 findings 1-2, as reported: shared keyword nodes can be neither rescoped,
        # blanked, deleted nor planted
        "UPDATE keyword SET scopes = ['org/a'] RETURN VALUE text", "UPDATE keyword SET embedding = NONE, text = 'pwned' RETURN AFTER",
        "UPSERT keyword SET scopes = ['org/a', 'org/b'] RETURN AFTER", "DELETE keyword RETURN BEFORE",
        "CREATE keyword:⟨pwned phrase⟩ SET text = 'pwned', normalised = 'pwned phrase', scopes = ['org/b'] RETURN AFTER",
        f"RELATE document:{w.a_docs[0]}->knowledge_has_keyword->keyword:⟨pwned phrase⟩ SET score = 99, scopes = ['org/b'] RETURN AFTER",
        "SELECT * FROM amem_principal", "UPDATE amem_principal SET admin = true, write = ['org'] RETURN AFTER",
        "UPSERT amem_setting:embedding SET model = 'evil' RETURN AFTER", "DELETE amem_setting RETURN BEFORE",
        "SELECT * FROM amem_setting WHERE id = amem_setting:lock", "DELETE retrieval_trace RETURN BEFORE",
        "CREATE retrieval_trace CONTENT {query: 'x', mode: 'x', options: {}, legs: {}, hits: [], timings: {}, caller: 'amem_principal:tenant-b'} RETURN AFTER",
        "CREATE memory_write CONTENT {key: 'k', caller: 'amem_principal:`tenant-b`', body_hash: 'h', write: 'w', response: {}} RETURN AFTER",
        # typed memory of B, table-wide
        "UPDATE attribute SET value = 'pwned' WHERE scope_keys CONTAINS 'org/b' RETURN AFTER",
        "DELETE attribute WHERE scope_keys CONTAINS 'org/b' RETURN BEFORE", "DELETE relation WHERE scope_keys CONTAINS 'org/b' RETURN BEFORE",
        "DELETE entity RETURN BEFORE", "DELETE memory_chunk WHERE scope_keys CONTAINS 'org/b' RETURN BEFORE",
        "UPDATE entity SET name = 'pwned', type = 'other' RETURN AFTER", "UPSERT entity:⟨organisation/bsecretco⟩ SET name = 'pwned' RETURN AFTER",
        "SELECT * FROM entity_name", "SELECT * FROM memory_write",
        "RELATE entity:⟨person/shared person⟩->relation->entity:⟨organisation/bsecretco⟩ SET kind = 'x', scopes = ['org/a'] RETURN AFTER",
        # forget (migrations/0006): without a forget grant no soft forget or erase, table-wide
        "UPDATE attribute SET forgotten_at = time::now() RETURN AFTER", "DELETE attribute WHERE scope_keys CONTAINS 'org/a' RETURN BEFORE",
        "UPDATE amem_principal SET forget = ['org'] RETURN AFTER", "SELECT forget FROM amem_principal WHERE name != 'tenant-a'",
    ]
    for sql in attempts:
        try:
            res = await A.query(sql)
        except Exception as exc:  # refused outright is fine
            res = str(exc)
        assert_no_b(w, res, allow_scope_names=True, own=sql)  # an error may echo the statement
        assert "pwned" not in dump(res) and "argon2" not in dump(res) and "evil" not in dump(res).replace(sql, "")
        n += 1
    (own,) = await A.query("SELECT * FROM amem_principal")
    assert [r["name"] for r in own] == ["tenant-a"] and "key_hash" not in own[0]
    (settings,) = await A.query("SELECT VALUE record::id(id) FROM amem_setting")
    assert set(settings) <= {"schema", "embedding", "storage"}
    # schema statements are refused by the engine's IAM; another namespace is not even found
    refused = [(sql, NotAllowedError, "Not enough permissions") for sql in [
        "INFO FOR DB", "REMOVE TABLE chunk", "DEFINE TABLE OVERWRITE chunk PERMISSIONS FULL", "ALTER TABLE chunk PERMISSIONS FULL",
        "DEFINE FUNCTION OVERWRITE fn::amem::scope::closure($p: array) { RETURN $p }", "REMOVE ACCESS amem ON DATABASE",
        "DEFINE USER evil ON DATABASE PASSWORD 'x' ROLES OWNER"]]
    refused.append(("USE NS other DB other; SELECT * FROM chunk", NotFoundError, "namespace 'other' does not exist"))
    for sql, error, message in refused:
        with pytest.raises(error, match=message):
            await A.query(sql)
        n += 1
    for fn in ("fn::amem::documents::recompute_links",):
        with pytest.raises(PermissionDenied):
            await call(A, fn)
        n += 1
    # writes through the functions: outside the region is a typed refusal, nothing written
    for doc in ({"text": "hello world", "scopes": ["org/b"]}, {"text": "hello world", "scopes": ["org/a", "org"]},
                {"text": "hello world", "scopes": ["org/ab"]}):
        with pytest.raises(PermissionDenied):
            await call(A, "fn::amem::documents::ingest", doc, None)
        n += 1
    with pytest.raises(PermissionDenied):  # a reader cannot write at all
        await call(w.conns["reader-a-team"], "fn::amem::documents::ingest", {"text": "hello"}, None)
    with pytest.raises(NotFound):  # cannot see it, so cannot delete it
        await call(A, "fn::amem::documents::delete", b_doc)
    n += 2
    after = await checksum(w.root, CHECKED)
    changed = {t: [dump(r) for r in json.loads(after[t]) if dump(r) not in before[t]][:2] for t in before if before[t] != after[t]}
    assert changed == {}, changed
    print(f"\nraw SurrealQL attempts with a scoped credential: {n}")


async def test_facts_write_and_reads_are_scope_gated(world):
    """A conflicting value in another scope is neither superseded nor revealed;
    a writer outside its region is refused and nothing is written."""
    w = world
    before = await checksum(w.root, CHECKED)
    for req in ({"triples": [{"entity": {"type": "person", "name": "x"}, "key": "k", "value": "v"}], "scopes": ["org/b"]},
                {"text": "hello", "scopes": ["org/a", "org/ab"]}):
        for fn, args in (("fn::amem::facts::prepare", (req,)), ("fn::amem::facts::write", (req, None))):
            with pytest.raises(PermissionDenied):
                await call(w.A, fn, *args)
    with pytest.raises(PermissionDenied):  # a reader cannot write at all
        await call(w.conns["reader-a-team"], "fn::amem::facts::write", {"text": "hello"}, None)
    with pytest.raises(PermissionDenied):
        await call(w.A, "fn::amem::facts::declare_key", "role", {"scopes": ["org/b"]})
    assert await checksum(w.root, CHECKED) == before
    # A's confident write on the key B also holds: reconciles with A's own value only
    shared = {"type": "person", "name": "Shared Person"}
    out = await call(w.A, "fn::amem::facts::write", {"triples": [
        {"entity": shared, "key": "role", "value": "asecretrole2"}, {"entity": shared, "key": "hobby", "value": "a1"},
        {"entity": shared, "key": "hobby", "value": "a2"}]}, None)
    assert_no_b(w, out)
    assert [t["outcome"] for t in out["triples"]] == ["superseded", "added", "superseded"]  # hobby is multi-valued in B only
    (b_rows,) = await w.root.query("SELECT `value`, superseded_at FROM attribute WHERE scope_keys CONTAINS 'org/b' AND key = 'role'")
    assert b_rows == [{"value": "bsecretrole", "superseded_at": None}]
    (unc,) = await w.root.query("SELECT count() FROM uncertainty WHERE scope_keys CONTAINS 'org/a' GROUP ALL")
    assert unc in ([], [{"count": 0}])
    got = await call(w.A, "fn::amem::entities::get", "person", "shared person", None)
    assert_no_b(w, got)
    assert [a["value"] for a in got["attributes"]] == ["a2", "asecretrole2"] and got["relations"] == [] and got["aliases"] == []
    for lens in LENSES:
        assert_no_b(w, await call(w.A, "fn::amem::entities::list", {"limit": 500, **({"lens": lens} if lens else {})}),
                    allow_scope_names=True)
        assert_no_b(w, await call(w.A, "fn::amem::entities::history", "person", "shared person", "role", {"lens": lens} if lens else None),
                    allow_scope_names=lens is not None)
    assert await call(w.A, "fn::amem::entities::get", "company", "bsecretco", None) is None
    page = await call(w.A, "fn::amem::entities::list", {"limit": 500})
    assert [e["name"] for e in page["entities"]] == ["Shared Person"]
    # B still sees its own view, A's values hidden
    b_view = await call(w.B, "fn::amem::entities::get", "person", "shared person", None)
    assert "asecret" not in dump(b_view) and {a["value"] for a in b_view["attributes"]} == {"bsecretrole", "bsecrethobby"}
    assert b_view["relations"][0]["target"].endswith("bsecretco")


async def test_facts_write_many_is_scope_gated_like_write(world):
    """A batch runs with the caller's rights (issue 25): one request outside A's write
    region fails the whole call and nothing of the batch is written; a permitted batch
    reconciles with A's own rows only and reveals nothing of B."""
    w = world
    before = await checksum(w.root, CHECKED)
    ok, outside = {"text": "a note from a batch"}, {"text": "hello", "scopes": ["org/b"]}
    with pytest.raises(PermissionDenied):
        await call(w.A, "fn::amem::facts::write_many", [ok, outside], None)
    with pytest.raises(PermissionDenied):  # a reader cannot write a batch either
        await call(w.conns["reader-a-team"], "fn::amem::facts::write_many", [ok], None)
    assert await checksum(w.root, CHECKED) == before
    shared = {"type": "person", "name": "Shared Person"}
    out = await call(w.A, "fn::amem::facts::write_many", [
        {"triples": [{"entity": shared, "key": "role", "value": "abatchrole"}]}, ok], None)
    assert_no_b(w, out)
    (b_rows,) = await w.root.query("SELECT `value`, superseded_at FROM attribute WHERE scope_keys CONTAINS 'org/b' AND key = 'role'")
    assert b_rows == [{"value": "bsecretrole", "superseded_at": None}]


async def test_reader_sees_only_its_subtree_and_admin_function(world):
    w = world
    r = w.conns["reader-a-team"]
    (docs,) = await r.query("SELECT VALUE scopes FROM document")
    assert docs and all(s == ["org/a/team/support"] for s in docs)
    res = await call(r, "fn::amem::documents::query", "return policy refund", None, {"mode": "bm25", "k": 50})
    (team_docs,) = await w.root.query("SELECT VALUE record::id(id) FROM document WHERE scope_keys CONTAINS 'org/a/team'")
    assert res["results"] and all(h["document"]["id"].split(":", 1)[1] in team_docs for h in res["results"])
    # an admin principal may call the admin function; it sees (and relinks) only its grant
    out = await call(w.conns["admin-a"], "fn::amem::documents::recompute_links")
    assert out["documents"] == N_DOCS


async def test_revoke_cuts_live_sessions_and_signin(world, doomed):
    w = world
    name, key, d = doomed
    (n_before,) = await d.query("SELECT count() FROM document GROUP ALL")
    assert n_before[0]["count"] == N_DOCS
    await access.revoke(w.root, name)
    (n_after,) = await d.query("SELECT count() FROM document GROUP ALL")
    assert n_after in ([], [{"count": 0}])
    with pytest.raises(PermissionDenied):
        await call(d, "fn::amem::documents::ingest", {"text": "hello", "scopes": ["org/a"]}, None)
    with pytest.raises(AuthenticationFailed):
        await open_connection(Target(url=w.url, ns=w.ns, db="test", key=key))
    with pytest.raises(AuthenticationFailed):
        await open_connection(Target(url=w.url, ns=w.ns, db="test", key="tenant-a:wrong-secret"))
    listed = {k["name"]: k for k in await access.list_keys(w.root)}
    assert listed[name]["revoked"] and "key_hash" not in listed[name]
    with pytest.raises(PermissionDenied):  # a key cannot mint keys
        await access.grant(w.A, "x", read=["org"], write=[])


async def test_cli_grant_keys_revoke(world):
    w = world
    common = ("--url", w.url, "--ns", w.ns, "--db", "test", "--user", ROOT_USER, "--pass", ROOT_PASSWORD)

    async def cli(*args: str) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "from amem_db.cli import main; main()", *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
        return proc.returncode, out.decode(), err.decode()

    code, out, err = await cli(*common, "grant", "cli-bot", "--read", "org/a", "--write", "org/a/team")
    assert code == 0, err
    key = out.strip().splitlines()[-1]
    assert key.startswith("cli-bot:") and len(key) > 30
    code, out, err = await cli("--url", w.url, "--ns", w.ns, "--db", "test", "--key", key, "documents", "list", "--json")
    assert code == 0, err
    assert json.loads(out)["total"] == N_DOCS and "bsecret" not in out
    code, out, err = await cli(*common, "keys", "list", "--json")
    assert code == 0 and "cli-bot" in out and "argon2" not in out and key.split(":", 1)[1] not in out
    code, out, err = await cli(*common, "keys", "revoke", "cli-bot")
    assert code == 0, err
    code, out, err = await cli("--url", w.url, "--ns", w.ns, "--db", "test", "--key", key, "documents", "list")
    assert code == 1 and "authentication_failed" in err


# --- unified recall ---------------------------------------------------------------------
MEMORY_WORDS = ["Shared Person", "shared person role", "bsecretalias", "bsecretco", "bsecretnote", "employer", "hobby",
                "asecretrole2", "Shared Person's employer"]


async def test_leak_randomised_recall(world):
    """Random recalls by a writer and a read-only principal in every mode, include
    and lens, each followed by the typed reads (entities get / history / list and
    inspect of B's ids, B's traces or of the hits) and a read of the caller's latest
    traces: nothing of tenant B (values, alias, edge, passage, ids). Counts every call."""
    w = world
    rnd = random.Random(11)
    w.calls = {}
    callers = []
    for name in ("tenant-a", "reader-a-team"):
        (me,) = await w.conns[name].query("RETURN <string> $auth.id")
        callers.append((me, w.conns[name]))
    for q in ("bsecretnote shared person", "Shared Person employer bsecretco", "return policy"):  # B's own traces
        await call(w.B, "fn::amem::recall", q, None, {"mode": "bm25"})
    (b_traces,) = await w.root.query("SELECT VALUE record::id(id) FROM retrieval_trace WHERE caller CONTAINS 'tenant-b'")
    assert b_traces
    w.b_markers |= set(b_traces)
    (b_rows,) = await w.root.query("SELECT VALUE id FROM attribute, relation, memory_chunk WHERE scope_keys CONTAINS 'org/b'")
    b_ids = [plain(i) for i in b_rows] + [f"retrieval_trace:{t}" for t in b_traces]
    assert b_ids
    hits = 0
    n_calls = LEAK_N // 3
    for n in range(n_calls):
        q = " ".join(rnd.sample(WORDS, rnd.randint(0, 3)) + rnd.sample(MEMORY_WORDS, rnd.randint(1, 2))
                     + rnd.choice([[], [f"bsecret{rnd.randrange(N_DOCS)}"], [f"asecret{rnd.randrange(N_DOCS)}"]]))
        mode = ["hybrid", "vector", "bm25", "graph"][n % 4]
        lens = rnd.choice(LENSES)
        opts = {"mode": mode, "k": rnd.choice([1, 5, 10, 50]), "graphDepth": rnd.choice([1, 2])}
        if lens is not None:
            opts["lens"] = lens
        if rnd.random() < 0.3:
            opts["include"] = rnd.choice([["facts"], ["passages"]])
        me, conn = callers[n % 2]
        emb = None if mode in ("bm25", "graph") else w.emb.embed_query(q)
        res = await leak_checked_call(w, conn, "fn::amem::recall", (q, emb, opts), own=q, lens=lens)
        await check_own_traces(w, conn, me)
        res_hits = res["hits"] if res is not None else []
        if res is not None and "bsecretalias" in q and "shared" not in q.lower():  # B's alias names nothing A can see
            assert res["seedEntities"] == [], res["seedEntities"]
        for h in res_hits:
            if h["source"] == "chunk":
                assert h["citation"]["document"].split(":", 1)[1] in w.a_docs
        hits += len(res_hits)
        # the typed reads, with the same caller and lens, on names and ids of both tenants
        read_opts = {"lens": lens} if lens is not None else None
        name = rnd.choice(["shared person", "bsecretco", "bsecretalias", "Shared Person"])
        for fn, args in (("fn::amem::entities::get", ("person" if "person" in name.lower() else "company", name, read_opts)),
                         ("fn::amem::entities::history", ("person", name, rnd.choice(["role", "hobby", "employer"]), read_opts)),
                         ("fn::amem::entities::list", ({"limit": 500, **(read_opts or {})},)),
                         ("fn::amem::inspect", (rnd.choice(b_ids + [h["id"] for h in res_hits]), read_opts))):
            # an error may echo the name asked for; the typed reads echo their lens
            await leak_checked_call(w, conn, fn, args, own=f"{q} {name}", lens=lens, echoes_lens=True)
    assert hits > n_calls  # recall finds A's rows: the test is not vacuous
    total = sum(w.calls.values())
    assert total >= 500 or "AMEM_LEAK_N" in os.environ, w.calls  # issue 15: >= 500 per run
    print(f"\nleak test (recall): {total} calls over {len(w.calls)} read paths {dict(sorted(w.calls.items()))}; "
          f"{hits} hits, 0 leaks")


async def test_recall_reinforces_for_a_read_only_principal_never_across_scopes(world):
    """A read-only principal's recall reinforces what it read (through the trace's
    owner-rights event); a hand-made trace naming B's rows reinforces nothing."""
    w = world
    reader = w.conns["reader-a-team"]
    out = await call(w.A, "fn::amem::facts::write", {"triples": [{"entity": {"type": "person", "name": "Team Lead Tess"},
                                                                  "key": "desk", "value": "d42"}], "scopes": ["org/a/team"]}, None)
    tess = out["triples"][0]["id"]
    (b_attrs,) = await w.root.query("SELECT id FROM attribute WHERE scope_keys CONTAINS 'org/b' ORDER BY id")
    res = await call(reader, "fn::amem::recall", "Team Lead Tess desk d42", None, {"mode": "bm25", "include": ["facts"]})
    assert tess in [plain(h["id"]) for h in res["hits"]]
    (imp,) = await w.root.query("SELECT VALUE importance FROM reinforcement WHERE record = <record> $id", {"id": tess})
    assert imp == [pytest.approx(0.88)]
    with pytest.raises(PermissionDenied):  # the reader cannot write the row itself
        await call(reader, "fn::amem::facts::write", {"triples": [{"entity": {"type": "person", "name": "Team Lead Tess"},
                                                                    "key": "desk", "value": "d43"}]}, None)
    before = await checksum(w.root, ["reinforcement"])
    forged = [{"id": RecordID("attribute", a["id"].id), "source": "attribute"} for a in b_attrs]
    await reader.query("CREATE retrieval_trace CONTENT {query: 'x', mode: 'recall', options: {}, legs: {}, hits: $h, "
                       "timings: {}, caller: <string> $auth.id}", {"h": forged})
    assert await checksum(w.root, ["reinforcement"]) == before  # nothing of B reinforced


async def test_record_users_cannot_define_tables(world):
    """Issue 15 finding 3: migrate puts the database in STRICT mode, so a record
    user's write into an unknown table is refused instead of defining it (a name
    squatted that way would also make a later migration fail)."""
    w = world
    for sql in ["CREATE squat_a:1 SET a = 1", "INSERT INTO squat_b { a: 1 }", "UPSERT squat_c:1 SET a = 1",
                f"RELATE document:{w.a_docs[0]}->squat_d->document:{w.a_docs[1]}"]:
        with pytest.raises(NotFoundError, match=r"The table 'squat_[a-d]' does not exist"):
            await w.A.query(sql)
    (info,) = await w.root.query("INFO FOR DB")
    assert not [t for t in info["tables"] if t.startswith("squat")]

async def test_forget_needs_a_forget_grant_and_never_crosses_scopes(world):
    """The forget grant (migrations/0006): tenant-a writes org/a but holds no forget
    grant, so fn::amem::forget is refused and nothing changes; B's rows are ids that
    do not exist for A's functions (tests/test_forget.py covers a granted forgetter)."""
    w = world
    before = await checksum(w.root, CHECKED)
    (a_ids,) = await w.root.query("SELECT VALUE <string> id FROM attribute WHERE scope_keys CONTAINS 'org/a'")
    (b_ids,) = await w.root.query("SELECT VALUE <string> id FROM attribute WHERE scope_keys CONTAINS 'org/b'")
    assert a_ids and b_ids
    for req in ({"ids": a_ids[:1]}, {"ids": b_ids[:1], "purge": True}, {"query": {"entity": {"type": "person", "name": "Shared Person"}}, "dryRun": True}):
        for conn in (w.A, w.conns["reader-a-team"]):
            with pytest.raises(PermissionDenied, match="no forget grants"):
                await call(conn, "fn::amem::forget", req)
    # inspect of B's rows is NONE, exactly like an absent id, and A's own is readable
    for ref in [*b_ids, "attribute:nothing", "entity:organisation/bsecretco"]:
        assert await call(w.A, "fn::amem::inspect", ref, None) is None
    mine = await call(w.A, "fn::amem::inspect", a_ids[0], None)
    assert mine is not None
    assert_no_b(w, mine)
    assert await checksum(w.root, CHECKED) == before
    (own,) = await w.A.query("SELECT forget FROM amem_principal")
    assert own == [{"forget": []}]  # its own grant is readable (and empty), nobody else's


# --- mentions (surql/280_mentions) ---------------------------------------------------------
async def test_mentions_are_scope_gated(world):
    """A mentions edge is readable only where its passage and a name that made it are: another
    scope's alias never yields an edge a tenant could read, in either direction, whoever writes."""
    w = world
    R, A, B, team = w.root, w.A, w.B, w.conns["reader-a-team"]

    async def spans(conn, passage) -> list[str]:
        (rows,) = await conn.query("SELECT in.text AS t, char_start AS s, char_end AS e FROM mentions WHERE in = type::record($p)", {"p": passage})
        return sorted(r["t"][r["s"]:r["e"]] for r in rows)

    shared = {"type": "person", "name": "Shared Person"}
    await call(B, "fn::amem::facts::write", {"triples": [{"entity": {**shared, "aliases": ["Bravo Hidden"]}, "key": "nick", "value": "b"}]}, None)
    # direction 1, by A: B's alias row is invisible to A; only the name A reads links
    a_out = await call(A, "fn::amem::facts::write", {"text": "Shared Person and Bravo Hidden met; Bravo Later and Charlie Later too."}, None)
    (a_passage,) = await R.query("RETURN type::record($p)", {"p": a_out["passages"][0]})  # the driver may spell it as a string
    assert await spans(A, a_passage) == await spans(R, a_passage) == ["Shared Person"]
    # direction 1, by the owner (sees every name row): the scope rule drops B's alias
    (r_out,) = await R.query("RETURN fn::amem::facts::write({text: 'Owner note: Bravo Hidden, Shared Person.', scopes: ['org/a']}, NONE)")
    assert await spans(R, r_out["passages"][0]) == ["Shared Person"]
    # direction 2: B names an alias that A's passage contains (B cannot read the passage),
    # then the owner does so in org/b (the scope rule): no edge either time
    for conn, alias in ((B, "Bravo Later"), (R, "Charlie Later")):
        await call(conn, "fn::amem::facts::write", {"triples": [{"entity": {**shared, "aliases": [alias]}, "key": "nick", "value": "b"}],
                                                    "scopes": ["org/b"]}, None)
        assert await spans(R, a_passage) == ["Shared Person"]
    # B's own passage (fixture: "bsecretnote about the shared person") is linked, in B's scope
    (b_edges,) = await R.query("SELECT VALUE scopes FROM mentions WHERE scope_keys CONTAINS 'org/b'")
    assert b_edges and all(s == ["org/b"] for s in b_edges)
    # raw reads: A sees exactly the edges of org/a passages, nothing of B, no span on an alias of B
    (readable,) = await A.query("SELECT in.text AS t, char_start AS s, char_end AS e FROM mentions")
    assert readable and not any("Bravo" in r["t"][r["s"]:r["e"]] or "Charlie" in r["t"][r["s"]:r["e"]] for r in readable)
    for sql in ("SELECT * FROM mentions", "SELECT <-mentions.* AS m, <-mentions<-memory_chunk.text AS t FROM entity",
                "SELECT ->mentions->entity.name AS n FROM memory_chunk", "SELECT * FROM mentions WHERE scope_keys CONTAINS 'org/b'"):
        (rows,) = await A.query(sql)
        assert_no_b(w, rows, allow_scope_names=True, own=sql)
    (mine,) = await A.query("SELECT count() FROM mentions GROUP ALL")
    (visible,) = await R.query("SELECT count() FROM mentions WHERE scope_keys CONTAINSANY ['org/a'] GROUP ALL")
    assert mine == visible and mine[0]["count"] >= 2
    # a team reader cannot read the org/a and org/b names: a team passage gets no edge, and it reads none
    (t_out,) = await R.query("RETURN fn::amem::facts::write({text: 'Team: Shared Person.', scopes: ['org/a/team/support']}, NONE)")
    assert await spans(R, t_out["passages"][0]) == []
    (seen,) = await team.query("SELECT * FROM mentions")
    assert seen == []
    # writes: no edge outside the region, none to a node A cannot read, and a refused edge is a THROW
    before = await checksum(R, ["mentions"])
    ((b_passage,),) = await R.query("SELECT VALUE id FROM memory_chunk WHERE scope_keys CONTAINS 'org/b' LIMIT 1")
    assert await call(A, "fn::amem::mentions::link", [{"id": b_passage, "text": "Shared Person", "scopes": ["org/b"]}], None) == 0
    with pytest.raises(PermissionDenied):  # claims org/a scopes for B's passage: the engine refuses the edge
        await call(A, "fn::amem::mentions::link", [{"id": b_passage, "text": "Shared Person", "scopes": ["org/a"]}], None)
    for sql in ("RELATE $a->mentions->entity:⟨organisation/bsecretco⟩ SET scopes = ['org/a']",
                "RELATE $b->mentions->entity:⟨person/shared person⟩ SET scopes = ['org/a']",
                "UPDATE mentions SET scopes = ['org/b']", "DELETE mentions WHERE scope_keys CONTAINS 'org/b'"):
        try:
            await A.query(sql, {"a": a_passage, "b": b_passage})
        except Exception:  # refused outright is fine
            pass
    assert await checksum(R, ["mentions"]) == before


async def test_document_links_across_tenants_are_hidden_from_either_side(world):
    """Issue 15 finding 12: the operator's ingest links a document of org/a to one of
    org/b; the edge carries the linking document's scopes, so tenant A saw the edge and
    with it the id of B's document. Now an edge is read only when both ends are."""
    w = world
    items = [Item("link-a", {"text": "# Cross\n\nSee [theirs](cross-b.md).", "mime_type": "text/markdown", "source": "cross-a.md",
                             "scopes": ["org/a"], "links": [{"href": "cross-b.md", "text": "theirs"}]}),
             Item("link-b", {"text": "# Theirs\n\nbsecretlinked text.", "mime_type": "text/markdown", "source": "cross-b.md",
                             "scopes": ["org/b"]})]
    report = await ingest_items(w.root, w.emb, items)
    assert [r.status for r in report.results] == ["added", "added"]
    (edges,) = await w.root.query("SELECT out.source AS o FROM document_link WHERE in.source = 'cross-a.md'")
    assert edges == [{"o": "cross-b.md"}]  # the edge exists
    (b_id,) = await w.root.query("SELECT VALUE record::id(id) FROM document WHERE source = 'cross-b.md'")
    for conn in (w.A, w.conns["reader-a-team"]):
        (seen,) = await conn.query("SELECT * FROM document_link")
        assert b_id[0] not in dump(seen)
        (via,) = await conn.query("SELECT ->document_link AS l FROM document WHERE source = 'cross-a.md'")
        assert b_id[0] not in dump(via)
    (b_seen,) = await w.B.query("SELECT * FROM document_link WHERE out.source = 'cross-b.md'")
    assert b_seen == []  # nor from the other side
    await w.root.query("DELETE document WHERE source IN ['cross-a.md', 'cross-b.md']")


async def test_trace_feedback_stays_inside_its_caller(world):
    """Trace feedback (surql/470, migrations/0012): B's verdicts on its own hits never move
    A's ranking of the same query over the same corpus; A reads none of B's verdicts or
    traces through the trace functions or raw SurrealQL, and cannot plant one as B."""
    w = world
    q = "return policy refund window"
    emb = w.emb.embed_query(q)
    a_before = await call(w.A, "fn::amem::documents::query", q, emb, {"k": 5, "threshold": -1, "fusion": "rrf"})
    b_first = await call(w.B, "fn::amem::documents::query", q, emb, {"k": 5, "threshold": -1, "fusion": "rrf"})
    for rank, verdict in ((5, "useful"), (1, "wrong")):
        await call(w.B, "fn::amem::traces::feedback", b_first["trace"]["id"], rank, verdict)
    b_after = await call(w.B, "fn::amem::documents::query", q, emb, {"k": 5, "threshold": -1, "fusion": "rrf"})
    assert [h["chunk"]["id"] for h in b_after["results"]] != [h["chunk"]["id"] for h in b_first["results"]]  # B's signal works
    a_after = await call(w.A, "fn::amem::documents::query", q, emb, {"k": 5, "threshold": -1, "fusion": "rrf"})
    assert [h["chunk"]["id"] for h in a_after["results"]] == [h["chunk"]["id"] for h in a_before["results"]]
    assert all(h.get("feedback") is None for h in a_after["trace"]["hits"])
    (seen,) = await w.A.query("SELECT * FROM trace_feedback")
    assert seen == []
    page = await call(w.A, "fn::amem::traces::list", {"limit": 500})
    assert b_first["trace"]["id"] not in [t["id"] for t in page["traces"]]
    # (A's own queries may name bsecret words: its traces echo them; the callers tell whose they are)
    assert {t["caller"] for t in page["traces"]} == {w.a_caller}
    with pytest.raises(NotFound):
        await call(w.A, "fn::amem::traces::feedback", b_first["trace"]["id"], 1, "useful")
    (b_caller,) = await w.B.query("RETURN <string> $auth.id")
    before = await checksum(w.root, ["trace_feedback"])
    await w.A.query("CREATE trace_feedback CONTENT {trace: 't', hit: type::record($h), verdict: 'wrong', query: 'q', query_norm: 'q', "
                    "caller: $c}", {"h": plain(b_after["results"][0]["chunk"]["id"]), "c": b_caller})
    assert await checksum(w.root, ["trace_feedback"]) == before
async def test_tenant_vector_writes_are_logged_and_maintenance_is_operator_only(world):
    """Index maintenance (migrations/0014, surql/060_maintain): a tenant's vector writes
    are logged by the event (owner rights), the log and the index state stay hidden, and
    status / begin / reset refuse a record user (they show table sizes across scopes)."""
    w = world
    (chunks, logged) = await w.root.query(
        "RETURN (SELECT count() FROM chunk GROUP ALL)[0].count;"
        "RETURN (SELECT count() FROM amem_index_write WHERE index = 'chunk_embedding' GROUP ALL)[0].count;")
    assert chunks > 0 and logged >= chunks  # every tenant chunk was logged in its own transaction
    for table in ("amem_index_write", "amem_index_state"):
        (seen,) = await w.A.query(f"SELECT * FROM {table}")
        assert seen == []
    for fn, args in (("fn::amem::maintain::status", (0.2, 0)), ("fn::amem::maintain::begin", ("chunk_embedding",)),
                     ("fn::amem::maintain::reset", ("chunk_embedding",))):
        with pytest.raises(PermissionDenied, match="operator"):
            await call(w.A, fn, *args)
    (building,) = await w.root.query("RETURN $amem_index_building")
    assert building == []


async def test_reinforcement_of_a_shared_entity_stays_in_each_tenants_scope(world):
    """Issue 27 item 1: reinforcement rows are per scope (migrations/0017). B's recalls of
    an entity both tenants name show nowhere A can read: not B's scope, not B's count,
    not B's timestamp; A's own recall moves only A's row."""
    w = world
    bo = {"type": "person", "name": "Beacon Keeper Bo"}
    for conn, v in ((w.A, "north"), (w.B, "south")):
        await call(conn, "fn::amem::facts::write", {"triples": [{"entity": bo, "key": "post", "value": v}],
                                                     "text": f"Beacon Keeper Bo keeps the {v} light."}, None)
    (ent,) = await w.root.query("SELECT VALUE id FROM entity WHERE name_norm = 'beacon keeper bo'")
    ent = ent[0]
    for _ in range(3):
        res = await call(w.B, "fn::amem::recall", "Beacon Keeper Bo post", None, {"mode": "bm25"})
        assert ent in [h["id"] for h in res["trace"]["hits"]] or plain(ent) in [plain(h["id"]) for h in res["trace"]["hits"]]
    (rows,) = await w.root.query("SELECT scopes, times FROM reinforcement WHERE record = $e ORDER BY scopes", {"e": ent})
    assert [(r["scopes"], r["times"]) for r in rows] == [(["org/b"], 3)]  # one row per scope: B's only
    # A, raw SurrealQL: by the record, by a table scan, by the 0008 id: nothing of B
    legacy = f"reinforcement:`{plain(ent)}`"
    (by_record, scan, by_id) = await w.A.query(
        f"SELECT * FROM reinforcement WHERE record = $e; SELECT scopes, times, last_reinforced_at, scope_keys FROM reinforcement; "
        f"SELECT scopes, times, last_reinforced_at FROM {legacy}", {"e": ent})
    assert by_record == [] and by_id == []
    assert all(not any(k.startswith("org/b") for k in r["scope_keys"]) for r in scan), scan
    await call(w.A, "fn::amem::recall", "Beacon Keeper Bo post", None, {"mode": "bm25"})
    (mine,) = await w.A.query("SELECT scopes, times FROM reinforcement WHERE record = $e", {"e": ent})
    assert [(r["scopes"], r["times"]) for r in mine] == [(["org/a"], 1)]
    (rows,) = await w.root.query("SELECT scopes, times FROM reinforcement WHERE record = $e ORDER BY scopes", {"e": ent})
    assert [(r["scopes"], r["times"]) for r in rows] == [(["org/a"], 1), (["org/b"], 3)]


async def test_migration_0017_moves_single_scope_reinforcement_rows_and_drops_mixed_ones(tmp_path):
    """Issue 27 item 1, existing data: a 0008 row of one scope (or none) keeps its numbers
    under its per-scope id; a row of several scopes mixes tenants' activity and is dropped."""
    from pathlib import Path

    from helpers import older_release

    from amem_db.connection import close_quietly
    from amem_db.migrator import Migrator

    root = Path(__file__).resolve().parent.parent
    before, old_surql = older_release(tmp_path, "0017")
    conn = await open_connection(Target(url="mem://", ns=unique_name("m17"), db="test"))
    try:
        await Migrator(conn, migrations_dir=before, surql_dir=old_surql).migrate()
        await conn.query(
            "CREATE type::record('reinforcement', 'attribute:one') CONTENT {record: attribute:one, importance: 0.9, "
            "  last_reinforced_at: d'2026-01-01T00:00:00Z', times: 2, scopes: ['org/a']};"
            "CREATE type::record('reinforcement', 'attribute:bare') CONTENT {record: attribute:bare, importance: 0.7, "
            "  last_reinforced_at: d'2026-01-02T00:00:00Z', times: 1, scopes: []};"
            "CREATE type::record('reinforcement', 'entity:both') CONTENT {record: entity:both, importance: 1.0, "
            "  last_reinforced_at: d'2026-01-03T00:00:00Z', times: 9, scopes: ['org/a', 'org/b']};")
        await Migrator(conn, migrations_dir=root / "migrations", surql_dir=root / "surql").migrate()
        (rows,) = await conn.query("SELECT record::id(id) AS id, importance, times, scopes FROM reinforcement ORDER BY times")
        assert plain(rows) == [
            {"id": ["attribute:bare", ""], "importance": 0.7, "times": 1, "scopes": []},
            {"id": ["attribute:one", "org/a"], "importance": 0.9, "times": 2, "scopes": ["org/a"]},
        ]
    finally:
        await close_quietly(conn)


STORED_PATH_CASES = ["org", "org/acme/team", ".", "..", "...", "a/./b", "a/../b", "a/.../b", ".a", "a.", "a..b", "..x", "x..",
                     "org/.hidden", "", "a//b", "/a", "a/", "x" * 256, "x" * 257, "é", "a b", "a\n", "org/a\nb", "a:b@c-d_e.f", 5, None]


async def test_the_scopes_assert_accepts_exactly_what_check_path_accepts():
    """fn::amem::scope::stored_paths (the ASSERT on every table's scopes) tries one regex
    first (issue 25): the same paths pass and fail, with check_path's message, as checking
    each path with check_path."""
    conn = await open_connection(make_target("paths"))
    try:
        await Migrator(conn).migrate()
        for p in STORED_PATH_CASES:
            got = []
            for q in ["RETURN fn::amem::scope::stored_paths(['ok/x', $p]);",
                      "RETURN ['ok/x', $p].map(|$q| fn::amem::scope::check_path($q, 'scopes')).len() = 2;"]:
                try:
                    got.append(("ok", await conn.query(q, {"p": p})))
                except Exception as e:  # the message is what is compared
                    got.append(("error", str(e)))
            assert got[0] == got[1], p
            assert (got[0][0] == "ok") == (isinstance(p, str) and p in {"org", "org/acme/team", "...", "a/.../b", ".a", "a.", "a..b", "..x",
                                                                         "x..", "org/.hidden", "x" * 256, "a:b@c-d_e.f"}), p
    finally:
        await close_quietly(conn)
