"""`amem-db mcp` start time and recall overhead (issue 28's "done when"; not a test: wall clock).

python scripts/measure_mcp.py DATA_DIR [ROUNDS] > out.json

Builds (once) a migrated surrealkv database in DATA_DIR with the sample corpus and a few
facts, then, in turn so machine load hits both alike:
* start: spawn `python -m amem_db mcp --url surrealkv://DATA_DIR` under the official SDK's
  stdio client; time to the initialize answer, and to the first tools/list answer;
* recall: the same queries through MCP (tools/call recall) and through the client's
  `Memory.recall` in this process (the database closed between the two, as a surrealkv
  path belongs to one process). Both use the default embedder with its disk cache warm.
Reports medians (ms) and the per-query difference of the medians.
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

ROOT = Path(__file__).resolve().parents[1]
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


async def client_recall(url: str, rounds: int) -> list[float]:
    mem = await Memory.open(url)
    try:
        for q in QUERIES:  # warm: the model loaded, each query's vector in the cache
            await mem.recall(q, k=5)
        times = []
        for _ in range(rounds):
            for q in QUERIES:
                t0 = time.perf_counter()
                await mem.recall(q, k=5)
                times.append((time.perf_counter() - t0) * 1000)
        return times
    finally:
        await mem.close()


async def mcp_run(url: str, rounds: int) -> dict[str, object]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "amem_db", "mcp", "--url", url],
                                   env={"PYTHONPATH": str(ROOT), **{k: v for k, v in os.environ.items() if k.startswith("AMEM_CACHE")}})
    t0 = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            initialized = (time.perf_counter() - t0) * 1000
            await s.list_tools()
            listed = (time.perf_counter() - t0) * 1000
            for q in QUERIES:
                await s.call_tool("recall", {"query": q, "k": 5})
            times = []
            for _ in range(rounds):
                for q in QUERIES:
                    t1 = time.perf_counter()
                    result = await s.call_tool("recall", {"query": q, "k": 5})
                    times.append((time.perf_counter() - t1) * 1000)
                    assert not result.is_error, result
    return {"initialize_ms": initialized, "tools_list_ms": listed, "recall_ms": times}


async def main() -> None:
    data = Path(sys.argv[1]).resolve()
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    url = f"surrealkv://{data}"
    if not data.exists():
        await build(url)
    starts, listed, via_mcp, via_client = [], [], [], []
    for _ in range(3):
        run = await mcp_run(url, rounds)
        starts.append(run["initialize_ms"])
        listed.append(run["tools_list_ms"])
        via_mcp += run["recall_ms"]  # type: ignore[operator]
        via_client += await client_recall(url, rounds)
    med_mcp, med_client = statistics.median(via_mcp), statistics.median(via_client)
    print(json.dumps({"load_average": os.getloadavg(), "start_initialize_ms": starts, "start_tools_list_ms": listed,
                      "recall_mcp_median_ms": med_mcp, "recall_client_median_ms": med_client,
                      "overhead_median_ms": med_mcp - med_client, "n_per_side": len(via_mcp)}, indent=2))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
