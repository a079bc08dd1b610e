"""An ingest of files runs index maintenance (HNSW rebuilds, BM25 term counts) at its
end only when it stored something: a failed ingest changes no row (the hostile CLI test
found a failed ingest that still wrote term_stat)."""

from __future__ import annotations

from helpers import hash_memory


async def term_rows(conn) -> int:
    (n,) = await conn.query("RETURN count(SELECT VALUE id FROM term_stat)")
    return n


async def test_a_failed_ingest_runs_no_maintenance(db, tmp_path):
    mem = hash_memory(db)
    for i in range(3):  # passages with no term counts yet: maintenance would count them
        await mem.documents.ingest_text(f"Kiwi orchard note {i} about pruning and frost.", source=f"n{i}", embed=False)
    assert await term_rows(db) == 0
    bad = tmp_path / "bad.txt"
    bad.write_text("A note the scope check refuses.")
    report = await mem.documents.ingest_paths([bad], scopes=[""])
    assert [r.status for r in report.results] == ["failed"]
    assert report.maintenance is None and await term_rows(db) == 0
    good = tmp_path / "good.txt"
    good.write_text("A kiwi note that lands.")
    report = await mem.documents.ingest_paths([good])  # something stored: maintenance runs and counts
    assert report.count("added") == 1 and report.maintenance is not None and await term_rows(db) > 0
