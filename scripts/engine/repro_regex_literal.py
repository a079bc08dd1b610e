"""What a regex costs per use in SurrealQL (docs/ENGINE-ISSUES.md #31).

    python scripts/engine/repro_regex_literal.py

`string::replace` over one 85-character sentence, 200 rows in one statement, median of 5,
ms per row: a Unicode-class regex as a literal, as a `<regex>` cast, cast once into a
variable; an ASCII-class literal; a plain string replace.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from surrealdb import AsyncSurreal

TEXT = "Alice met Bob at the café; they talked about the launch, the budget and the review."
ROWS = "FROM array::range(0, 200)"
STATEMENTS = {
    "literal, Unicode class": f"SELECT VALUE string::replace($t, /[^\\p{{L}}]+/, ' ') {ROWS}",
    "cast, Unicode class": f"SELECT VALUE string::replace($t, <regex> \"[^\\\\p{{L}}]+\", ' ') {ROWS}",
    "cast once into a LET": f"LET $r = <regex> \"[^\\\\p{{L}}]+\"; SELECT VALUE string::replace($t, $r, ' ') {ROWS}",
    "literal, ASCII class": f"SELECT VALUE string::replace($t, /[^a-zA-Z]+/, ' ') {ROWS}",
    "plain string replace": f"SELECT VALUE string::replace($t, ';', ' ') {ROWS}",
}


async def main() -> None:
    db = AsyncSurreal("mem://")
    await db.connect()
    await db.use("probe", "probe")
    for label, sql in STATEMENTS.items():
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            await db.query(sql, {"t": TEXT})
            times.append((time.perf_counter() - t0) * 1000 / 200)
        print(f"{label:24s} {statistics.median(times):.4f} ms per row")
    await db.close()


if __name__ == "__main__":
    asyncio.run(main())
