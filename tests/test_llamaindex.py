"""The LlamaIndex adapter (amem_db/integrations/llamaindex.py): NodeWithScore over recall and
documents.query, in the client's order with its scores, through LlamaIndex's own entry points
(retrieve / aretrieve, a RetrieverQueryEngine without an LLM), sync and async-native."""

from __future__ import annotations

import pytest
import pytest_asyncio
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers.no_text import NoText
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from amem_db import Memory, SyncMemory
from amem_db.integrations.llamaindex import AmemDocumentRetriever, AmemRetriever

EMBEDDER = "hash:384"
PASSAGE = "Unopened items may be returned within 30 days of delivery."
DOC = f"# Returns\n\n{PASSAGE}"


@pytest.fixture(scope="module")
def memory():
    mem = SyncMemory.open("mem://", embedder=EMBEDDER, migrate=True)
    mem.remember("Dana Reyes leads the warehouse team in Porto.", facts=["person:Dana Reyes role=warehouse lead",
                                                                          "person:Dana Reyes works_at->organisation:Porto Depot"])
    mem.documents.ingest_text(DOC, source="returns.md")
    yield mem
    mem.close()


def test_recall_nodes_in_the_clients_order_with_its_scores(memory):
    nodes = AmemRetriever(memory, k=4).retrieve("What is Dana Reyes' role?")
    raw = memory.recall("What is Dana Reyes' role?", k=4)
    assert nodes and all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    assert [(n.node.node_id, n.score) for n in nodes] == [(h.id, h.score) for h in raw.hits]
    role = next(n for n in nodes if n.node.metadata["source"] == "attribute" and "warehouse lead" in n.node.get_content())
    assert role.node.metadata["citation"]["write"] and role.node.metadata["valid_from"]
    # the metadata describes the hit; it is kept out of the text an embedding model would see
    assert role.node.get_content(metadata_mode=MetadataMode.EMBED) == role.node.get_content()


def test_documents_nodes_name_the_document_and_span(memory):
    (hit,) = AmemDocumentRetriever(memory, k=1, options={"expand_context": False}).retrieve(QueryBundle("returned within 30 days"))
    meta = hit.node.metadata
    assert hit.node.get_content() == DOC[meta["char_start"]:meta["char_end"]] and PASSAGE in hit.node.get_content()
    assert meta["document_source"] == "returns.md" and 0 < hit.score <= 1


def test_a_query_engine_returns_the_nodes_as_sources(memory):
    # NO_TEXT: the engine retrieves and synthesises nothing (LlamaIndex's MockLLM is never called)
    engine = RetrieverQueryEngine(retriever=AmemRetriever(memory, k=3),
                                  response_synthesizer=NoText(llm=MockLLM()))
    response = engine.query("Dana Reyes")
    assert [n.node.node_id for n in response.source_nodes] == [h.id for h in memory.recall("Dana Reyes", k=3).hits]


async def test_aretrieve_on_a_sync_memory_does_not_block_the_loop(memory):
    nodes = await AmemRetriever(memory, k=2).aretrieve("Dana Reyes role")
    assert len(nodes) == 2


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def async_memory():
    mem = await Memory.open("mem://", embedder=EMBEDDER, migrate=True)
    await mem.remember(facts=["person:Eli Novak role=night editor"])
    yield mem
    await mem.close()


async def test_async_native_on_a_memory_and_sync_refused_with_the_reason(async_memory):
    retriever = AmemRetriever(async_memory, k=3, options={"include": ["facts"]})
    nodes = await retriever.aretrieve("Eli Novak role")
    assert any("night editor" in n.node.get_content() for n in nodes)
    assert all(n.node.metadata["source"] in ("attribute", "relation", "entity") for n in nodes)
    with pytest.raises(TypeError, match="async only"):
        retriever.retrieve("Eli Novak role")
    with pytest.raises(TypeError, match="Memory or SyncMemory"):
        AmemRetriever("mem://")
