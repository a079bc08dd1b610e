"""``Memory.remember``: the CLI's `remember` as one call (the fact strings of
amem_db/fact_syntax.py, shared with the CLI and the MCP server)."""

from __future__ import annotations

import pytest
import pytest_asyncio

from amem_db import InvalidInput, Memory
from amem_db.cli.memory import parse_fact as cli_parse_fact
from amem_db.fact_syntax import parse_fact


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def mem():
    m = await Memory.open("mem://", embedder="hash:384", migrate=True)
    yield m
    await m.close()


async def test_text_and_fact_strings_in_one_write_as_the_request_would(mem):
    done = await mem.remember("Alice Smith joined Acme as VP Engineering.", session_id="s-1", observed_at="2024-01-10T00:00:00Z",
                              facts=["person:Alice Smith role=VP Engineering", "person:Alice Smith works_at->organisation:Acme",
                                     {"entity": {"type": "person", "name": "Alice Smith"}, "key": "team", "value": "platform"}],
                              labels=["onboarding"], location=(38.72, -9.14))
    assert [t.outcome for t in done.triples] == ["added", "added", "added"] and len(done.passages) == 1
    assert done.observed_at.year == 2024
    alice = await mem.entities.get("person", "alice smith")
    assert {(a.key, a.value) for a in alice.attributes} == {("role", "VP Engineering"), ("team", "platform")}
    assert [r.key for r in alice.relations] == ["works_at"]
    # a newer value supersedes, as through facts.write
    later = await mem.remember(facts=["person:Alice Smith role=CTO"], observed_at="2025-03-01T00:00:00Z")
    assert later.triples[0].outcome == "superseded"
    forgotten = await mem.forget(query={"session_id": "s-1", "labels": ["onboarding"]}, dry_run=True)
    assert forgotten.forgotten.memory_chunk == 1


async def test_mistakes_are_typed_and_write_nothing(mem):
    before = (await mem.entities.list()).total
    with pytest.raises(InvalidInput, match="nothing to remember"):
        await mem.remember("  ")
    with pytest.raises(InvalidInput, match="fact 'Bob role=CTO': expected 'TYPE:NAME KEY=VALUE'"):
        await mem.remember("Bob is the CTO.", facts=["person:Bob role=CTO", "Bob role=CTO"])
    with pytest.raises(TypeError, match="facts must be a list"):
        await mem.remember(facts="person:Bob role=CTO")  # type: ignore[arg-type]
    assert (await mem.entities.list()).total == before


def test_the_cli_parses_with_the_shared_parser():
    assert cli_parse_fact is parse_fact
    with pytest.raises(InvalidInput, match=r"^--fact 'x': expected"):  # the CLI's message is unchanged
        cli_parse_fact("x")
