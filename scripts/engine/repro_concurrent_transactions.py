"""Two queries in flight on one embedded connection (docs/ENGINE-ISSUES.md #40): do they run
on two cores, and what does each see of the other? On a fresh store (URL, default mem://):

1. two CPU-bound queries, one after the other and then both at once (two cores: ~1x the time);
2. two ``SLEEP 200ms`` at once;
3. two transactions that read ``t:1`` and write it back + 1, at once: snapshot isolation with
   write-write conflicts only, so one fails ("failed transaction") and ``t:1`` ends at 1.

    PYTHONPATH=. python scripts/engine/repro_concurrent_transactions.py
    URL=surrealkv://<scratch folder>/conc PYTHONPATH=. python scripts/engine/repro_concurrent_transactions.py
"""
from __future__ import annotations

import asyncio
import os
import time

from amem_db.connection import Target, open_connection

BUSY = "FOR $i IN array::range(0, 80) { LET $x = math::sum(SELECT VALUE $this * 2 FROM array::range(0, 5000)); }; RETURN 1"
BUMP = ("BEGIN; LET $v = (SELECT VALUE n FROM ONLY t:1); FOR $i IN array::range(0, 40) { LET $x = math::sum(SELECT VALUE $this * 2 "
        "FROM array::range(0, 5000)); }; UPDATE t:1 SET n = $v + 1; COMMIT;")


async def main() -> None:
    conn = await open_connection(Target(url=os.environ.get("URL", "mem://"), ns="repro", db="concurrent"))
    await conn.query(BUSY)
    t0 = time.perf_counter()
    await conn.query(BUSY)
    t1 = time.perf_counter()
    await asyncio.gather(conn.query(BUSY), conn.query(BUSY))
    t2 = time.perf_counter()
    await asyncio.gather(conn.query("SLEEP 200ms"), conn.query("SLEEP 200ms"))
    t3 = time.perf_counter()
    print(f"CPU-bound query alone {1000 * (t1 - t0):.0f} ms, two at once {1000 * (t2 - t1):.0f} ms; two SLEEP 200ms at once {1000 * (t3 - t2):.0f} ms")
    await conn.query("CREATE t:1 SET n = 0")
    outcomes = await asyncio.gather(conn.query(BUMP), conn.query(BUMP), return_exceptions=True)
    print("read-modify-write at once:", ["failed: " + str(o)[:70] if isinstance(o, Exception) else "committed" for o in outcomes])
    print("t:1 is now", await conn.query("SELECT VALUE n FROM ONLY t:1"))
    os._exit(0)  # the native engine may abort at exit (docs/ENGINE-ISSUES.md #4)


if __name__ == "__main__":
    asyncio.run(main())
