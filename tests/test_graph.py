"""mode hybrid_graph (surql/500_graph.surql.j2) on the real engine.

A hand-built corpus of small scenarios, one per signal. In each, a target chunk
T (cosine 0.75 to the query) loses to a competitor B (0.80) under plain hybrid,
and only the signal under test connects T to the query; with that signal alone
T must move above B. Embeddings are chosen exactly (e = a*q + sqrt(1-a^2)*u),
chunk texts share no word with the query (the BM25 leg finds nothing), and each
test narrows the query to its scenario with filter.documentIds.

fn::amem::graph::pagerank is checked against networkx.pagerank on random graphs.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from surrealdb import RecordID
from surrealdb.errors import ThrownError

DIM = 384
Q_CALL = "RETURN fn::amem::documents::query($q, $e, $o)"
QUERY = "zephyr blade inspection"
DEFAULTS = ["mentions", "relation", "section_match", "document_link", "document_summary"]
KINDS = ["knowledge_has_keyword", "mentions", "relation", "section_match", "document_link", "document_summary", "pagerank"]


def unit(v):
    return v / np.linalg.norm(v)


def with_cosine(q, a, rng):
    u = rng.standard_normal(q.shape[0])
    u = unit(u - (u @ q) * q)
    return [float(x) for x in a * q + math.sqrt(1.0 - a * a) * u]


def rid(t, k):
    return RecordID(t, k)


# scenario -> chunk key -> cosine with the query
SCENARIOS = {
    "kw": {"kwA": 0.75, "kwB": 0.80, "kwC": 0.10},
    "men": {"menA": 0.75, "menB": 0.80, "menR": 0.74, "menS": 0.73},
    "sec": {"secA": 0.75, "secB": 0.80},
    "link": {"linkH": 0.95, "linkA": 0.75, "linkB": 0.80},
    "sum": {"sumA": 0.75, "sumB": 0.80},
}
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
         "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]
ACME = ["org/acme"]


@pytest.fixture(scope="module")
async def corpus(db):
    rng = np.random.default_rng(7)
    q = unit(rng.standard_normal(DIM))
    docs, chunks, sections = [], [], []
    i = 0
    for scen, members in SCENARIOS.items():
        for key, sim in members.items():
            doc = {"id": rid("document", key), "text": key, "content_hash": key, "title": key,
                   "mime_type": "text/html" if key == "kwC" else "text/plain", "scopes": ACME}
            if scen == "sum":
                doc["summary_embedding"] = with_cosine(q, 0.9 if key == "sumA" else -0.1, rng)
            docs.append(doc)
            row = {"id": rid("chunk", key), "document": rid("document", key), "position": 0, "char_start": 0,
                   "char_end": 10, "text": f"{WORDS[i % 20]} {WORDS[(i + 7) % 20]} {key.lower()}",
                   "mime_type": doc["mime_type"], "scopes": ACME, "embedding": with_cosine(q, sim, rng)}
            i += 1
            if scen == "sec":
                sections.append({"id": rid("section", key), "document": rid("document", key), "heading": "Heading",
                                 "position": 0, "char_start": 0, "char_end": 10, "scopes": ACME,
                                 "heading_embedding": with_cosine(q, 0.9 if key == "secA" else -0.1, rng)})
                row |= {"section": rid("section", key), "section_heading": "Heading"}
            chunks.append(row)
    keywords = [{"id": rid("keyword", "zephyr blade"), "text": "zephyr blade", "normalised": "zephyr blade",
                 "embedding": with_cosine(q, 0.9, rng), "scopes": ACME}]
    entities = [
        {"id": rid("entity", "e1"), "name": "Zephyr Corporation", "embedding": with_cosine(q, 0.9, rng), "scopes": ACME},
        {"id": rid("entity", "e2"), "name": "Quux", "embedding": with_cosine(q, -0.2, rng), "scopes": ACME},
        {"id": rid("entity", "e3"), "name": "Plugh", "embedding": with_cosine(q, -0.2, rng), "scopes": ACME},
    ]
    await db.query(
        "INSERT INTO document $docs RETURN NONE; INSERT INTO section $sections RETURN NONE;"
        "INSERT INTO chunk $chunks RETURN NONE; INSERT INTO keyword $keywords RETURN NONE;"
        "INSERT INTO entity $entities RETURN NONE;"
        "RELATE document:kwA->knowledge_has_keyword->keyword:⟨zephyr blade⟩ SET score = 2.0, scopes = ['org/acme'];"
        "RELATE document:kwC->knowledge_has_keyword->keyword:⟨zephyr blade⟩ SET score = 1.5, scopes = ['org/acme'];"
        "RELATE chunk:menA->mentions->entity:e1 SET scopes = ['org/acme'];"
        "RELATE chunk:menR->mentions->entity:e2 SET scopes = ['org/acme'];"
        "RELATE chunk:menS->mentions->entity:e3 SET scopes = ['org/acme'];"
        "RELATE entity:e1->relation->entity:e2 SET kind = 'partner_of', scopes = ['org/acme'];"
        # both endpoints visible under org/acme, the edge itself is not
        "RELATE entity:e1->relation->entity:e3 SET kind = 'secret_of', scopes = ['org/secret'];"
        "RELATE document:linkH->document_link->document:linkA SET href = 'linkA', scopes = ['org/acme'];",
        {"docs": docs, "sections": sections, "chunks": chunks, "keywords": keywords, "entities": entities},
    )
    return {"q": [float(x) for x in q]}


async def query(db, corpus, **opts):
    (res,) = await db.query(Q_CALL, {"q": QUERY, "e": corpus["q"], "o": opts})
    return res


def scen_filter(scen, extra=()):
    return {"documentIds": [f"document:{k}" for k in SCENARIOS[scen]] + list(extra)}


def order(res):
    return [str(h["chunk"]["id"]) for h in res["results"]]


def evidence(res, key):
    for h in res["results"]:
        if str(h["chunk"]["id"]) == f"chunk:{key}":
            return {e["edgeKind"]: e for e in h["graphEvidence"]}
    return None


@pytest.mark.parametrize("scen,signal", [
    ("kw", "knowledge_has_keyword"), ("kw", "pagerank"), ("men", "mentions"),
    ("sec", "section_match"), ("link", "document_link"), ("sum", "document_summary"),
])
async def test_each_signal_alone_moves_its_target_up(db, corpus, scen, signal):
    target, competitor = f"chunk:{scen}A", f"chunk:{scen}B"
    base = await query(db, corpus, mode="hybrid", filter=scen_filter(scen))
    assert order(base).index(competitor) < order(base).index(target)
    res = await query(db, corpus, mode="hybrid_graph", graphEdges=[signal], filter=scen_filter(scen))
    got = order(res)
    assert got.index(target) < got.index(competitor), (signal, got)
    ev = evidence(res, f"{scen}A")
    assert signal in ev and ev[signal]["contribution"] > 0
    assert signal not in (evidence(res, f"{scen}B") or {}) or evidence(res, f"{scen}B")[signal]["contribution"] < ev[signal]["contribution"]
    # scores stay in [0, 1]: (1 - alpha) * base + alpha * density
    assert all(0 <= h["score"] <= 1 for h in res["results"])


async def test_keyword_bridge_adds_a_candidate_and_filters_hold(db, corpus):
    # kwC (cosine 0.1, below the threshold: neither leg finds it) is reached through the keyword
    base = await query(db, corpus, mode="hybrid", filter=scen_filter("kw"))
    assert "chunk:kwC" not in order(base)
    res = await query(db, corpus, mode="hybrid_graph", graphEdges=["knowledge_has_keyword"], filter=scen_filter("kw"))
    assert "chunk:kwC" in order(res)
    assert res["trace"]["legs"]["graph"]["added"] >= 1
    # a node outside the filter is never reached: documentIds without kwC, or a MIME filter excluding it
    only_ab = {"documentIds": ["document:kwA", "document:kwB"]}
    res = await query(db, corpus, mode="hybrid_graph", graphEdges=["knowledge_has_keyword"], filter=only_ab)
    assert "chunk:kwC" not in order(res)
    res = await query(db, corpus, mode="hybrid_graph", graphEdges=["knowledge_has_keyword"],
                      filter=scen_filter("kw") | {"mimeType": ["text/plain"]})
    assert "chunk:kwC" not in order(res) and "chunk:kwA" in order(res)


async def test_relation_hop_and_edge_scope_gating(db, corpus):
    f = scen_filter("men")
    # mentions alone: menR (mentions e2, reachable only through e1->e2) gets nothing
    res = await query(db, corpus, mode="hybrid_graph", graphEdges=["mentions"], filter=f)
    assert "mentions" not in (evidence(res, "menR") or {})
    # with relation hops both e2 and e3 are reached (no lens)
    res = await query(db, corpus, mode="hybrid_graph", graphEdges=["mentions", "relation"], filter=f)
    assert "mentions" in evidence(res, "menR") and "mentions" in evidence(res, "menS")
    assert res["trace"]["legs"]["graph"]["signals"]["relation"]["edges"] >= 2
    # under lens org/acme the e1->e3 edge (scopes org/secret) is not traversed, though e1 and e3 are visible
    res = await query(db, corpus, mode="hybrid_graph", graphEdges=["mentions", "relation"], filter=f, lens=[["org/acme"]])
    assert "mentions" in evidence(res, "menR")
    assert "mentions" not in (evidence(res, "menS") or {})
    ents = (await query(db, corpus, mode="hybrid_graph", graphEdges=["mentions", "relation"], filter=f,
                        lens=[["org/acme"]], expandGraph=True))["graph"]["entities"]
    assert "entity:e3" not in [str(e["id"]) for e in ents]
    assert "entity:e2" in [str(e["id"]) for e in ents]


async def test_keyword_edge_scope_gating(db, corpus):
    await db.query("UPDATE knowledge_has_keyword SET scopes = ['org/secret'] WHERE in = document:kwA")
    try:
        res = await query(db, corpus, mode="hybrid_graph", graphEdges=["knowledge_has_keyword"],
                          filter=scen_filter("kw"), lens=[["org/acme"]])
        assert "knowledge_has_keyword" not in (evidence(res, "kwA") or {})
        res = await query(db, corpus, mode="hybrid_graph", graphEdges=["knowledge_has_keyword"], filter=scen_filter("kw"))
        assert "knowledge_has_keyword" in evidence(res, "kwA")
    finally:
        await db.query("UPDATE knowledge_has_keyword SET scopes = ['org/acme'] WHERE in = document:kwA")


async def test_all_signals_evidence_matches_trace(db, corpus):
    res = await query(db, corpus, mode="hybrid_graph", graphEdges=KINDS, expandGraph=True)
    trace = res["trace"]
    assert trace["mode"] == "hybrid_graph"
    g = trace["legs"]["graph"]
    assert sorted(g["edges"]) == sorted(KINDS) and g["alpha"] == 0.3 and g["depth"] == 1
    assert g["poolCap"] >= g["pool"]
    for hit, th in zip(res["results"], trace["hits"]):
        assert th["id"] == hit["chunk"]["id"]
        assert th["graph"]["graphEvidence"] == hit["graphEvidence"]
        kinds = [e["edgeKind"] for e in hit["graphEvidence"]]
        singles = [k for k in kinds if k != "hybrid_graph"]
        assert set(singles) <= set(KINDS)
        # several signals: a merged hybrid_graph entry carrying their sum
        if len(singles) > 1:
            merged = hit["graphEvidence"][0]
            assert merged["edgeKind"] == "hybrid_graph"
            assert merged["contribution"] == pytest.approx(sum(e["contribution"] for e in hit["graphEvidence"][1:]))
        assert hit["score"] == pytest.approx((1 - 0.3) * th["graph"]["base"] + sum(
            e["contribution"] for e in hit["graphEvidence"] if e["edgeKind"] != "hybrid_graph"))
        for k in singles:
            assert g["signals"][k]["ran"] and g["signals"][k]["candidatesTouched"] >= 1
            assert g["signals"][k]["ms"] >= 0
    assert [k["text"] for k in res["graph"]["keywords"]] == ["zephyr blade"]
    assert "entity:e1" in [str(e["id"]) for e in res["graph"]["entities"]]
    # other modes carry no graph
    plain = await query(db, corpus, mode="hybrid")
    assert plain.get("graph") is None and plain["trace"]["legs"].get("graph") is None


async def test_default_signals(db, corpus):
    # knowledge_has_keyword and pagerank are off by default (docs/GRAPH.md ablation)
    res = await query(db, corpus, mode="hybrid_graph")
    assert res["trace"]["legs"]["graph"]["edges"] == DEFAULTS
    assert res["trace"]["options"]["graph"]["edges"] == DEFAULTS
    kinds = {e["edgeKind"] for h in res["results"] for e in h["graphEvidence"]}
    assert not kinds & {"knowledge_has_keyword", "pagerank"}
    assert "document_summary" in kinds and "mentions" in kinds


async def test_alpha_zero_is_hybrid_order(db, corpus):
    base = await query(db, corpus, mode="hybrid", filter=scen_filter("kw"))
    res = await query(db, corpus, mode="hybrid_graph", graphAlpha=0, filter=scen_filter("kw"))
    assert order(res)[: len(order(base))] == order(base)


@pytest.mark.parametrize("opts,needle", [
    ({"graphEdges": ["keywords"]}, "graphEdges holds keywords"),
    ({"graphEdges": ["hybrid_graph"]}, "graphEdges holds hybrid_graph"),
    ({"graphEdges": ["mentions", "pagerank", "PageRank"]}, "graphEdges holds PageRank"),
    ({"graphEdges": []}, "graphEdges must be a non-empty list"),
    ({"graphEdges": "mentions"}, "graphEdges must be a non-empty list"),
    ({"graphAlpha": 1.5}, "graphAlpha"),
    ({"graphDepth": 4}, "graphDepth"),
    ({"graphDepth": 1.5}, "graphDepth"),
    ({"expandGraph": "yes"}, "expandGraph"),
])
async def test_graph_option_validation(db, corpus, opts, needle):
    with pytest.raises(ThrownError) as info:
        await query(db, corpus, mode="hybrid_graph", **opts)
    msg = str(info.value)
    assert "amem:invalid_input" in msg and needle in msg
    if "graphEdges holds" in needle:
        for kind in KINDS:
            assert kind in msg


async def test_graph_options_ignored_outside_hybrid_graph(db, corpus):
    res = await query(db, corpus, mode="hybrid", graphEdges=["bogus"])
    assert any("graphEdges applies to mode hybrid_graph only" in w for w in res["warnings"])


@pytest.mark.parametrize("depth", [1, 2, 3])
async def test_depths_run(db, corpus, depth):
    res = await query(db, corpus, mode="hybrid_graph", graphDepth=depth)
    assert res["trace"]["legs"]["graph"]["depth"] == depth and res["results"]


# --- personalised PageRank == networkx ---------------------------------------------

@st.composite
def graphs(draw):
    n = draw(st.integers(1, 14))
    nodes = [f"n{i}" for i in range(n)]
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40, unique=True))
    weights = draw(st.lists(st.floats(0.1, 5.0), min_size=len(pairs), max_size=len(pairs)))
    pers = draw(st.one_of(st.none(), st.lists(st.floats(0.0, 3.0), min_size=n, max_size=n).filter(lambda p: sum(p) > 0.01)))
    damping = draw(st.floats(0.0, 0.85))
    return nodes, [[nodes[a], nodes[b], w] for (a, b), w in zip(pairs, weights)], pers, damping


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(graphs())
async def test_pagerank_equals_networkx(db, g):
    nodes, edges, pers, damping = g
    (got,) = await db.query("RETURN fn::amem::graph::pagerank($n, $e, $p, $d, 100)",
                            {"n": nodes, "e": edges, "p": pers, "d": damping})
    G = nx.DiGraph()
    G.add_nodes_from(nodes)
    G.add_weighted_edges_from(edges)
    personalization = None if pers is None else dict(zip(nodes, pers))
    want = nx.pagerank(G, alpha=damping, personalization=personalization, tol=1e-14, max_iter=100000)
    assert [r["node"] for r in got] == nodes
    for r in got:
        assert r["score"] == pytest.approx(want[r["node"]], abs=1e-6)


async def test_pagerank_dangling_and_validation(db):
    (got,) = await db.query("RETURN fn::amem::graph::pagerank(['a', 'b', 'c'], [['a', 'b']], [1, 0, 0], 0.85, 100)")
    assert got[0]["score"] == pytest.approx(0.15 / (1 - 0.85 ** 2), abs=1e-6)
    assert got[2]["score"] == 0
    for bad, needle in [
        ("RETURN fn::amem::graph::pagerank(['a'], [['a', 'z']], NONE, 0.85, 10)", "not in nodes"),
        ("RETURN fn::amem::graph::pagerank(['a'], [], [0], 0.85, 10)", "positive sum"),
        ("RETURN fn::amem::graph::pagerank(['a'], [], NONE, 1.0, 10)", "damping"),
        ("RETURN fn::amem::graph::pagerank(['a'], [], NONE, 0.85, 0)", "iterations"),
    ]:
        with pytest.raises(ThrownError) as info:
            await db.query(bad)
        assert "amem:invalid_input" in str(info.value) and needle in str(info.value)
