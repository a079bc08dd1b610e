"""`amem-db mcp` under clients we did not write: the official MCP Python SDK client over
stdio, and the MCP Inspector CLI from npm (where node is on the machine).

The server subprocess connects over ws to the loopback dev server of this module (one
engine session per connection), each run with one tenant's key: an embedded surrealkv
path would belong to the server process alone, and two principals at once need two
servers on one database."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import pytest_asyncio
from devserver_fixture import dev_server, tenants  # noqa: F401
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from amem_db.client import Memory
from amem_db.embedding import get_embedder

ROOT = Path(__file__).resolve().parents[1]
EMBEDDER = "hash:384"  # the migrated dimension; no model to load in a subprocess
TOOLS = {"remember", "recall", "forget", "entity", "search_documents", "feedback", "remember_answer"}


class World:
    pass


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(dev_server, tmp_path_factory):
    grants = {"tenant-a": dict(read=[], write=["org/a"], forget=["org/a"]), "tenant-b": dict(read=[], write=["org/b"])}
    async with tenants(dev_server, "mcp", grants) as t:
        w = World()
        w.url, w.ns, w.keys, w.root = t.url, t.ns, t.keys, t.root
        w.cache = tmp_path_factory.mktemp("mcp-cache")
        # B's memory, written as B (the database scopes it to org/b)
        b = Memory(t.conns["tenant-b"], embedder=get_embedder(EMBEDDER))
        w.b_write = await b.remember("Zebulon Quartz keeps the bsecret vault code in the blue folder.",
                                     facts=["person:Zebulon Quartz role=bsecretrole"], session_id="b-session")
        yield w


def server_params(w: World, key: str, *extra: str) -> StdioServerParameters:
    env = {"PYTHONPATH": str(ROOT), "AMEM_CACHE_DIR": str(w.cache), "AMEM_EMBEDDER": EMBEDDER}
    return StdioServerParameters(command=sys.executable, args=["-m", "amem_db", "mcp", "--url", w.url, "--ns", w.ns,
                                                               "--db", "test", "--key", key, *extra], env=env, cwd=str(ROOT))


@asynccontextmanager
async def mcp_client(w: World, tenant: str):
    with open(os.devnull, "w") as errlog:  # the server's log lines (stderr) are not the test's output
        async with stdio_client(server_params(w, w.keys[tenant]), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def test_lists_the_tools_with_schemas_from_the_client_types(world):
    async with mcp_client(world, "tenant-a") as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    assert set(tools) == TOOLS
    recall = tools["recall"].input_schema
    assert recall["required"] == ["query"]
    assert set(recall["properties"]["mode"]["enum"]) == {"hybrid", "vector", "bm25", "graph"}  # models.RecallMode
    assert tools["recall"].output_schema and "hits" in tools["recall"].output_schema["properties"]
    assert tools["forget"].input_schema["properties"]["dry_run"]["default"] is True
    assert all(len(t.description or "") < 130 for t in tools.values())  # short: models read them


async def test_remember_recall_forget_dry_run_and_a_bad_call(world):
    async with mcp_client(world, "tenant-a") as s:
        done = await s.call_tool("remember", {"text": "Ada Lovelace leads the analytical engine project.",
                                              "facts": ["person:Ada Lovelace role=lead engineer",
                                                        "person:Ada Lovelace works_on->project:Analytical Engine"],
                                              "session_id": "a-session", "observed_at": "2024-05-01T00:00:00Z"})
        assert not done.is_error, text_of(done)
        assert [t["outcome"] for t in done.structured_content["triples"]] == ["added", "added"]
        assert done.structured_content["scopes"] == ["org/a"]

        found = await s.call_tool("recall", {"query": "What is Ada Lovelace's role?", "k": 5, "include": ["facts"]})
        assert not found.is_error, text_of(found)
        hits = found.structured_content["hits"]
        assert any(h["source"] == "attribute" and "lead engineer" in h["text"] for h in hits), hits
        assert all(h["citation"] for h in hits) and all("validFrom" in h for h in hits if h["source"] == "attribute")
        assert "lead engineer" in text_of(found) and found.structured_content["trace"]["id"] in text_of(found)

        dry = await s.call_tool("forget", {"entity": "person:Ada Lovelace", "key": "role"})
        assert not dry.is_error, text_of(dry)
        assert dry.structured_content["dryRun"] is True and dry.structured_content["forgotten"]["attribute"] == 1
        still = await s.call_tool("entity", {"type": "person", "name": "ada lovelace"})
        assert "lead engineer" in text_of(still)  # the dry run changed nothing

        bad = await s.call_tool("recall", {"query": "anything", "mode": "telepathy"})
        assert bad.is_error  # the schema refuses it: a tool error, not a dead server
        typed = await s.call_tool("recall", {"query": "anything", "as_of": "not a time"})
        assert typed.is_error and "amem:invalid_input: asOf" in text_of(typed), text_of(typed)
        missing = await s.call_tool("entity", {"type": "person", "name": "Nobody Here"})
        assert missing.is_error and "amem:not_found" in text_of(missing)
        again = await s.call_tool("entity", {"type": "person", "name": "Ada Lovelace", "history_key": "role"})
        assert not again.is_error and "lead engineer" in text_of(again)  # the same server still answers


async def test_tenant_a_server_never_returns_tenant_b_rows(world):
    async with mcp_client(world, "tenant-a") as a:
        answers = [await a.call_tool("recall", {"query": q, "k": 50}) for q in
                   ("Zebulon Quartz role", "bsecret vault code blue folder", "bsecretrole")]
        answers.append(await a.call_tool("entity", {"type": "person", "name": "Zebulon Quartz"}))
        answers.append(await a.call_tool("forget", {"session_id": "b-session"}))
        answers.append(await a.call_tool("search_documents", {"query": "bsecret vault"}))
    for result in answers:
        dump = json.dumps(result.structured_content or {}) + text_of(result)
        assert "bsecret" not in dump and world.b_write.write not in dump, dump
    assert answers[3].is_error  # B's entity does not exist for A
    assert answers[4].structured_content["ids"] == [] and sum(answers[4].structured_content["forgotten"].values()) == 0
    # the same questions through B's own server do find B's rows: the absence above is the scope, not the query
    async with mcp_client(world, "tenant-b") as b:
        own = await b.call_tool("recall", {"query": "bsecret vault code blue folder", "k": 5})
    assert any("bsecret" in h["text"] for h in own.structured_content["hits"])


async def test_a_second_principal_sees_nothing_of_the_first(world):
    async with mcp_client(world, "tenant-a") as a:
        wrote = await a.call_tool("remember", {"facts": ["person:Grace Ahmed role=asecretrole"], "session_id": "a2"})
        assert not wrote.is_error, text_of(wrote)
        async with mcp_client(world, "tenant-b") as b:  # both servers at once, one database
            seen = await b.call_tool("recall", {"query": "Grace Ahmed asecretrole", "k": 50})
            entity = await b.call_tool("entity", {"type": "person", "name": "Grace Ahmed"})
        own = await a.call_tool("recall", {"query": "Grace Ahmed asecretrole", "k": 5})
    assert not seen.is_error and "asecret" not in json.dumps(seen.structured_content) + text_of(seen)
    assert entity.is_error
    assert any("asecretrole" in h["text"] for h in own.structured_content["hits"])


async def test_feedback_and_remember_answer_round_trip(world):
    async with mcp_client(world, "tenant-a") as s:
        await s.call_tool("remember", {"facts": ["person:Lin Wei role=archivist"]})
        found = await s.call_tool("recall", {"query": "Lin Wei role", "k": 3, "include": ["facts"]})
        hit = found.structured_content["hits"][0]
        marked = await s.call_tool("feedback", {"trace": found.structured_content["trace"]["id"], "hit": hit["id"], "verdict": "useful"})
        assert not marked.is_error and marked.structured_content["verdict"] == "useful", text_of(marked)
        kept = await s.call_tool("remember_answer", {"query": "What is Lin Wei's role?", "answer": "Lin Wei is the archivist.",
                                                     "cited": [hit["id"]]})
        assert not kept.is_error and kept.structured_content["cited"] == [hit["id"]], text_of(kept)
        reused = await s.call_tool("recall", {"query": "What is Lin Wei's role?", "reuse": True})
        assert reused.structured_content["tier"] == "cache" and "archivist" in text_of(reused)
        wrong = await s.call_tool("feedback", {"trace": "retrieval_trace:nope", "hit": 1, "verdict": "useful"})
        assert wrong.is_error and "amem:" in text_of(wrong), text_of(wrong)


# --- the MCP Inspector CLI (npm) ----------------------------------------------------------
INSPECTOR_DIR = ROOT / "tests" / "mcp_inspector"  # package.json pins @modelcontextprotocol/inspector 2.12.0


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    """The official Inspector in CLI mode (npm), installed by `npm ci` on first use."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js/npm not on this machine: the MCP Inspector CLI (npm @modelcontextprotocol/inspector) needs them")
    launcher = INSPECTOR_DIR / "node_modules" / ".bin" / "mcp-inspector"
    if not launcher.exists():
        done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=INSPECTOR_DIR,
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            pytest.skip(f"npm ci of the MCP Inspector failed (offline registry?): {done.stderr.strip()[:200]}")
    return ["node", str(launcher), "--cli"]


async def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = await asyncio.create_subprocess_exec(*cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT))
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)  # the dev server in this loop keeps serving
    return subprocess.CompletedProcess(cmd, proc.returncode or 0, out.decode(), err.decode())


@pytest.mark.slow  # four server starts and node: ~40 s on a loaded 2-core machine
async def test_inspector_cli_lists_the_tools_and_calls_recall(world, inspector, tmp_path):
    p = server_params(world, world.keys["tenant-a"])
    # the host configuration of README "Agents": command, args, env
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"amem-db": {"command": p.command, "args": p.args, "env": p.env}}}))
    env = {**os.environ, "MCP_INSPECTOR_SECRET_STORE": "memory"}
    base = [*inspector, "--config", str(config), "--server", "amem-db"]
    listed = await _run([*base, "--method", "tools/list"], env)
    assert listed.returncode == 0, listed.stderr
    assert {t["name"] for t in json.loads(listed.stdout)["tools"]} == TOOLS
    wrote = await _run([*base, "--method", "tools/call", "--tool-name", "remember",
                        "--tool-arg", "text=Inspector note: Ada Lovelace reviews the loom designs."], env)
    assert wrote.returncode == 0 and not json.loads(wrote.stdout).get("isError"), wrote.stdout + wrote.stderr
    called = await _run([*base, "--method", "tools/call", "--tool-name", "recall", "--tool-arg", "query=Ada Lovelace loom designs",
                         "--tool-arg", "k=3"], env)
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert not result.get("isError"), result
    assert any("loom designs" in h["text"] for h in result["structuredContent"]["hits"]) and "bsecret" not in called.stdout


def test_readme_host_configuration_starts_this_command():
    section = (ROOT / "README.md").read_text().split("\n## Agents\n", 1)[1].split("\n## ", 1)[0]
    config = json.loads(section.split("```json\n", 1)[1].split("```", 1)[0])
    entry = config["mcpServers"]["amem-db"]
    assert entry["command"] == "amem-db" and entry["args"][0] == "mcp" and set(entry["env"]) == {"AMEM_KEY"}
    from typer.testing import CliRunner

    from amem_db.cli import app

    assert CliRunner().invoke(app, [*entry["args"], "--help"]).exit_code == 0  # every option it names exists
