"""What a regex costs per use in SurrealQL (docs/ENGINE-ISSUES.md #31).

    python scripts/engine/repro_regex_literal.py

`string::replace` over one 85-character sentence, 200 rows in one statement, median of 5,
ms per row: a Unicode-class regex as a literal, as a `<regex>` cast, cast once into a
variable; an ASCII-class literal; a plain string replace.
"""
import asyncio, time, statistics
from surrealdb import AsyncSurreal
async def main():
    db = AsyncSurreal("mem://"); await db.connect(); await db.use("p","p")
    t = "Alice met Bob at the café; they talked about the launch, the budget and the review."
    qs = {
     "stmt literal unicode": "SELECT VALUE string::replace($t, /[^\\p{L}]+/, ' ') FROM array::range(0, 200)",
     "stmt cast unicode": "SELECT VALUE string::replace($t, <regex> \"[^\\\\p{L}]+\", ' ') FROM array::range(0, 200)",
     "stmt literal ascii": "SELECT VALUE string::replace($t, /[^a-zA-Z]+/, ' ') FROM array::range(0, 200)",
     "stmt plain replace": "SELECT VALUE string::replace($t, ';', ' ') FROM array::range(0, 200)",
     "let cast once": "LET $r = <regex> \"[^\\\\p{L}]+\"; SELECT VALUE string::replace($t, $r, ' ') FROM array::range(0, 200)",
    }
    for k, q in qs.items():
        ts=[]
        for _ in range(5):
            t0=time.perf_counter(); await db.query(q, {"t": t}); ts.append((time.perf_counter()-t0)*1000/200)
        print(f"{k:22s} {statistics.median(ts):.4f} ms per row")
asyncio.run(main())
