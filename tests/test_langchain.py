"""The LangChain adapter (amem_db/integrations/langchain.py) under langchain-tests' standard
retriever tests, for recall and for documents.query, plus what the standard tests do not
check: the metadata, the async-native path on a Memory, and scoping by the memory's key."""

from __future__ import annotations

import pytest
import pytest_asyncio
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from amem_db import Memory, SyncMemory
from amem_db.integrations.langchain import AmemDocumentRetriever, AmemRetriever

EMBEDDER = "hash:384"
FACTS = ["person:Alice Smith role=CTO", "person:Alice Smith works_at->organisation:Acme",
         "person:Alice Smith owns->policy:Returns Policy", "person:Bob Jones role=support lead"]
RETURNS = ("# Returns\n\nUnopened items may be returned within 30 days. Alice Smith approved the returns policy.\n\n"
           "## Refunds\n\nRefunds reach the card in five days.")
STATE: dict[str, SyncMemory] = {}


@pytest.fixture(scope="module", autouse=True)
def memory():
    """One embedded database for the module: facts, passages and two documents."""
    mem = SyncMemory.open("mem://", embedder=EMBEDDER, migrate=True)
    mem.remember("Alice Smith is the CTO of Acme; she owns the returns policy.", facts=FACTS)
    mem.remember("Alice Smith asked for the return window to be written down.")
    mem.documents.ingest_text(RETURNS, source="returns.md")
    for topic in ("shipping rates", "gift card returns", "warranty returns", "exchange returns"):
        mem.documents.ingest_text(f"# {topic.title()}\n\nAlice Smith set the {topic} policy.", source=f"{topic.replace(' ', '-')}.md")
    STATE["mem"] = mem
    yield mem
    STATE.pop("mem")
    mem.close()


class TestRecallRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[AmemRetriever]:
        return AmemRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"memory": STATE["mem"]}

    @property
    def retriever_query_example(self) -> str:
        return "Alice Smith returns policy"


class TestDocumentRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[AmemDocumentRetriever]:
        return AmemDocumentRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"memory": STATE["mem"], "options": {"expand_context": False}}

    @property
    def retriever_query_example(self) -> str:
        return "Alice Smith returns"


def test_recall_metadata_carries_source_score_validity_and_citation(memory):
    docs = AmemRetriever(memory=memory, k=5, options={"include": ["facts"]}).invoke("What is Alice Smith's role?")
    raw = memory.recall("What is Alice Smith's role?", k=5, include=["facts"])
    assert [d.id for d in docs] == [h.id for h in raw.hits]  # the client's ranking, unchanged
    role = next(d for d in docs if d.metadata["source"] == "attribute" and "CTO" in d.page_content)
    assert role.metadata["citation"]["write"] and role.metadata["valid_from"] and role.metadata["valid_until"] is None
    assert all(isinstance(d.metadata["score"], float) for d in docs)


def test_document_metadata_names_the_document_and_the_span(memory):
    (doc,) = AmemDocumentRetriever(memory=memory, k=1).invoke("unopened items returned within 30 days")
    assert doc.metadata["document_source"] == "returns.md" and doc.metadata["source"] == "chunk"
    assert RETURNS[doc.metadata["char_start"]:doc.metadata["char_end"]] == doc.page_content


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def async_memory():
    mem = await Memory.open("mem://", embedder=EMBEDDER, migrate=True)
    await mem.remember("Carol Diaz runs the Lisbon office.", facts=["person:Carol Diaz role=office lead"])
    yield mem
    await mem.close()


async def test_async_native_on_a_memory_and_sync_refused_with_the_reason(async_memory):
    retriever = AmemRetriever(memory=async_memory, k=3)
    docs = await retriever.ainvoke("Carol Diaz role")
    assert docs and all(isinstance(d, Document) for d in docs)
    assert any("office lead" in d.page_content for d in docs)
    with pytest.raises(TypeError, match="async only"):
        retriever.invoke("Carol Diaz role")
    with pytest.raises(TypeError, match="Memory or SyncMemory"):
        AmemRetriever(memory="mem://")


def test_readme_langchain_example_runs_as_printed(tmp_path):
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    section = (root / "README.md").read_text().split("\n## Agents\n", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    (tmp_path / "example.py").write_text(example)
    env = os.environ | {"AMEM_URL": "mem://", "AMEM_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, str(tmp_path / "example.py")], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()
    assert lines and lines[0] == "attribute Alice Smith: role = CTO", done.stdout + done.stderr[-2000:]
