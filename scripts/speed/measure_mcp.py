"""`amem-db mcp` start time and recall overhead (issue 28's "done when"; not a test: wall clock).

python scripts/speed/measure_mcp.py DATA_DIR [ROUNDS] > out.json

Builds (once) a migrated surrealkv database in DATA_DIR with the sample corpus and a few
facts, then, in turn so machine load hits both alike:
* start: spawn `python -m amem_db mcp --url surrealkv://DATA_DIR` under the official SDK's
  stdio client; time to the initialize answer, to the first tools/list answer, and the CPU
  time the server process used until then (the wall time on an idle core);
* recall, paired: the same database behind the loopback dev server (ws), the MCP server
  (a subprocess, `--url ws://...`) and the client's `Memory.recall` in this process on it,
  alternating query by query so machine load hits both alike. Both use the default
  embedder with its disk cache warm. Reports the medians and the median of the paired
  differences (MCP minus client), in ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from amem_db.client import Memory
from amem_db.devserver import DevServer

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ["What is Alice Smith's role?", "how long do I have to return an unopened keyboard?",
           "Who owns the Returns Policy?", "MLWK3LL/A", "shipping rates for international orders"]


async def build(url: str) -> None:
    mem = await Memory.open(url, migrate=True)
    try:
        await mem.documents.ingest_paths([ROOT / "examples" / "sample-corpus"])
        await mem.remember("Alice Smith joined Acme as VP Engineering.", facts=["person:Alice Smith role=VP Engineering",
                                                                                "person:Alice Smith works_at->organisation:Acme"])
    finally:
        await mem.close()


def children_cpu_ms() -> float:
    """CPU time (user + system) used so far by this process's live children (Linux /proc):
    what the start costs on an idle core, whatever the load of the machine."""
    total = 0.0
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    return total


async def start_time(url: str) -> tuple[float, float, float]:
    """Spawn to the initialize answer, to the first tools/list answer, and the server's CPU until then (ms)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "amem_db", "mcp", "--url", url], env=_env())
    t0 = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            initialized = (time.perf_counter() - t0) * 1000
            await s.list_tools()
            return initialized, (time.perf_counter() - t0) * 1000, children_cpu_ms()


def _env() -> dict[str, str]:
    return {"PYTHONPATH": str(ROOT), **{k: v for k, v in os.environ.items() if k.startswith("AMEM_CACHE")}}


async def paired_recall(url: str, rounds: int) -> tuple[list[float], list[float]]:
    """(MCP ms, client ms) per query, alternating, over one dev server on the database."""
    server = DevServer(url, port=0)
    await server.start()
    try:
        mem = await Memory.open(server.ws_url, user="root", password="root")
        params = StdioServerParameters(command=sys.executable, env=_env(),
                                       args=["-m", "amem_db", "mcp", "--url", server.ws_url, "--user", "root", "--pass", "root"])
        via_mcp, via_client = [], []
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                for q in QUERIES:  # warm both: models loaded, query vectors cached
                    await s.call_tool("recall", {"query": q, "k": 5})
                    await mem.recall(q, k=5)
                for _ in range(rounds):
                    for q in QUERIES:
                        t0 = time.perf_counter()
                        result = await s.call_tool("recall", {"query": q, "k": 5})
                        t1 = time.perf_counter()
                        await mem.recall(q, k=5)
                        t2 = time.perf_counter()
                        assert not result.is_error, result
                        via_mcp.append((t1 - t0) * 1000)
                        via_client.append((t2 - t1) * 1000)
        await mem.close()
        return via_mcp, via_client
    finally:
        await server.stop()


async def main() -> None:
    data = Path(sys.argv[1]).resolve()
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    url = f"surrealkv://{data}"
    if not data.exists():
        await build(url)
    starts = [await start_time(url) for _ in range(3)]
    via_mcp, via_client = await paired_recall(url, rounds)
    diffs = [m - c for m, c in zip(via_mcp, via_client)]
    print(json.dumps({"load_average": os.getloadavg(), "start_initialize_ms": [s[0] for s in starts],
                      "start_tools_list_ms": [s[1] for s in starts], "start_server_cpu_ms": [s[2] for s in starts],
                      "recall_mcp_median_ms": statistics.median(via_mcp), "recall_client_median_ms": statistics.median(via_client),
                      "overhead_paired_median_ms": statistics.median(diffs), "pairs": len(diffs)}, indent=2))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
