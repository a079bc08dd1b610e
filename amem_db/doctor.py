"""`amem-db doctor`: canary checks of the running engine for the hazards amem-db works
around (docs/ENGINE-ISSUES.md), each reported with what amem-db does about it.

Canaries run in a throwaway database of the connection's namespace
(``amem_doctor_<random>``), removed afterwards whatever happens; the checks of the
amem-db database itself only read (index state, INFO, one record id). Useful against
a server whose engine version differs from the one amem-db was measured on: a hazard
that is gone reads ``ok``, one that changed shape reads ``unhandled``.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from surrealdb import RecordID

from .connection import Target
from .constants import MAINTAIN_MIN_ROWS, MAINTAIN_THRESHOLD
from .db import plain
from .errors import PermissionDenied
from .maintain import status as index_status
from .models import DoctorCheck, DoctorReport

MEASURED_ON = "surrealdb-3.2.4"  # the engine docs/ENGINE-ISSUES.md was written against
DIM = 8


def _vectors(n: int, seed: int) -> list[list[float]]:
    rng = random.Random(seed)
    return [[rng.random() for _ in range(DIM)] for _ in range(n)]


async def _one(conn: Any, sql: str, params: dict[str, Any] | None = None) -> Any:
    """The result of a one-statement query (the SDK returns one result per statement)."""
    (result,) = await conn.query(sql, params or {})
    return result


# --- canaries (throwaway database) ----------------------------------------------------------
async def check_knn_all_rows(conn: Any) -> DoctorCheck:
    """#20: `<|K,EF|>` on a field without a usable index matches every row."""
    await conn.query("DEFINE TABLE plain SCHEMALESS; INSERT INTO plain $rows RETURN NONE;",
                     {"rows": [{"e": v} for v in _vectors(30, 1)]})
    got = len(await _one(conn, "SELECT id FROM plain WHERE e <|3,40|> $q", {"q": [0.5] * DIM}))
    details = {"k": 3, "rows": 30, "returned": got}
    if got == 3:
        return DoctorCheck(name="knn_all_rows", status="ok", finding="a KNN without a usable index returns K rows",
                           details=details)
    return DoctorCheck(name="knn_all_rows", status="handled",
                       finding=f"a KNN without a usable index (or while one builds) returned {got} of 30 rows for K = 3",
                       handling="the document legs take the exact path when a KNN returns more than the pool; "
                                "amem-db maintain marks an index before rebuilding it and the legs go exact for it",
                       details=details)


async def check_hnsw_compaction(conn: Any) -> DoctorCheck:
    """#19: is the pending queue scanned exactly (no compaction), and does REBUILD build a graph?
    Exact answers at EF = K on random vectors are what a graph walk cannot give."""
    n, dim, k = 1500, 32, 10
    rng = random.Random(19)
    rows = [{"id": RecordID("hq", f"r{i}"), "e": [rng.gauss(0, 1) for _ in range(dim)]} for i in range(n)]
    await conn.query(f"DEFINE TABLE hq SCHEMALESS; DEFINE INDEX hq_e ON hq FIELDS e HNSW DIMENSION {dim} DIST COSINE TYPE F32 EFC 150 M 12;")
    for i in range(0, n, 500):
        await conn.query("INSERT INTO hq $rows RETURN NONE", {"rows": rows[i:i + 500]})
    queries = [[rng.gauss(0, 1) for _ in range(dim)] for _ in range(8)]
    truth = [{str(r["id"]) for r in await _one(conn, f"SELECT id FROM hq WHERE e <|{k},COSINE|> $q", {"q": q})} for q in queries]

    async def recall() -> float:
        hits = 0
        for q, t in zip(queries, truth):
            hits += len({str(r["id"]) for r in await _one(conn, f"SELECT id FROM hq WHERE e <|{k},{k}|> $q", {"q": q})} & t)
        return hits / (k * len(queries))

    queued = await recall()
    await conn.query("REBUILD INDEX hq_e ON hq")
    built = await recall()
    details = {"rows": n, "recall_at_ef_k_queued": queued, "recall_at_ef_k_after_rebuild": built}
    if queued == 1.0 and built < 1.0:
        return DoctorCheck(name="hnsw_compaction", status="handled",
                           finding="vectors written to an HNSW index stay in a queue every KNN scans exactly "
                                   f"(recall {queued:.2f} at EF = K; {built:.2f} once REBUILD built the graph)",
                           handling="writes are logged (migrations/0014); amem-db maintain and the end of an ingest "
                                    "rebuild an index past 20% unbuilt rows", details=details)
    if queued < 1.0:
        return DoctorCheck(name="hnsw_compaction", status="ok",
                           finding=f"new vectors reached the graph without a rebuild (recall {queued:.2f} at EF = K): "
                                   "this engine compacts", handling="amem-db maintain is still safe to run", details=details)
    return DoctorCheck(name="hnsw_compaction", status="ok",
                       finding="could not tell a queue scan from a graph walk (recall 1.0 before and after REBUILD)",
                       details=details)


async def check_hnsw_array_ids(conn: Any, amem: Any) -> DoctorCheck:
    """#9: HNSW never returns records whose id is an array or an object."""
    await conn.query("DEFINE TABLE ids SCHEMALESS; DEFINE INDEX ids_e ON ids FIELDS e HNSW DIMENSION 2 DIST COSINE TYPE F32;"
                     "CREATE ids:['k', 0] SET e = [1, 0.5]; CREATE ids:plain SET e = [1, 0.4]; CREATE ids:{a: 1} SET e = [1, 0.41];")
    got = [plain(r["id"]) for r in await _one(conn, "SELECT id FROM ids WHERE e <|3,40|> [1, 0.5]")]
    sample = await _one(amem, "SELECT VALUE record::id(id) FROM chunk LIMIT 1")
    ours_plain = all(isinstance(x, (str, int)) for x in sample)
    details = {"returned": got, "chunk_id_sample": sample}
    if len(got) == 3:
        return DoctorCheck(name="hnsw_array_ids", status="ok", finding="HNSW returns array and object ids",
                           details=details)
    if not ours_plain:
        return DoctorCheck(name="hnsw_array_ids", status="unhandled",
                           finding=f"HNSW returned {len(got)} of 3 rows (array / object ids skipped) and this database's chunks have array ids",
                           handling="re-ingest: amem-db writes string chunk ids since session 2", details=details)
    return DoctorCheck(name="hnsw_array_ids", status="handled",
                       finding=f"HNSW returned {len(got)} of 3 rows: records with array or object ids are skipped",
                       handling="chunk, section and audio_chunk ids are strings <document>_<generation>_<position>",
                       details=details)


async def check_bm25_zero(conn: Any, amem: Any) -> DoctorCheck:
    """#3: BM25 scores of 0 without explicit parameters."""
    await conn.query(
        "DEFINE ANALYZER an TOKENIZERS blank FILTERS lowercase;"
        "DEFINE TABLE bare SCHEMALESS; DEFINE INDEX bare_t ON bare FIELDS text FULLTEXT ANALYZER an BM25;"
        "DEFINE TABLE given SCHEMALESS; DEFINE INDEX given_t ON given FIELDS text FULLTEXT ANALYZER an BM25(1.2,0.75);"
        "FOR $t IN ['bare', 'given'] { FOR $x IN ['apple pie', 'banana split', 'cherry tart', 'plum jam'] {"
        " CREATE type::table($t) SET text = $x; }; };")
    bare = await _one(conn, "SELECT VALUE search::score(1) FROM bare WHERE text @1@ 'banana'")
    given = await _one(conn, "SELECT VALUE search::score(1) FROM given WHERE text @1@ 'banana'")
    info = await _one(amem, "INFO FOR TABLE chunk_fts")
    ours = " ".join(str(v) for v in (info.get("indexes") or {}).values()) if isinstance(info, dict) else ""
    details = {"bare": bare, "explicit": given, "chunk_fts_index": ours}
    if "BM25(1.2,0.75)" not in ours:
        return DoctorCheck(name="bm25_zero_scores", status="unhandled",
                           finding="chunk_fts's full-text index does not name BM25(1.2,0.75)",
                           handling="run amem-db migrate (surql/010_fulltext writes the parameters)", details=details)
    zero = not bare or bare[0] == 0
    return DoctorCheck(name="bm25_zero_scores", status="handled" if zero else "ok",
                       finding=("BM25 without parameters scored a rare term 0" if zero else
                                f"BM25 without parameters scores like BM25(1.2,0.75) here ({bare[0]:.3f}); "
                                "a term in half the documents still scores 0 (the engine's IDF)"),
                       handling="every full-text index names BM25(1.2,0.75); fusion ranks (RRF), so a 0 score still ranks",
                       details=details)


async def check_filtered_knn(conn: Any) -> DoctorCheck:
    """Filtered KNN: filtering after the KNN under-fills; a filter inside the KNN walks the graph."""
    rows = [{"id": RecordID("f", f"r{i}"), "e": v, "cat": "b" if i % 10 == 0 else "a"} for i, v in enumerate(_vectors(300, 2))]
    await conn.query("DEFINE TABLE f SCHEMALESS; DEFINE INDEX f_e ON f FIELDS e HNSW DIMENSION 8 DIST COSINE TYPE F32;"
                     "INSERT INTO f $rows RETURN NONE;", {"rows": rows})
    q = {"q": [0.5] * DIM}
    post = len(await _one(conn, "SELECT id FROM (SELECT id, cat FROM f WHERE e <|5,40|> $q) WHERE cat = 'b'", q))
    inside = len(await _one(conn, "SELECT id FROM f WHERE e <|5,40|> $q AND cat = 'b'", q))
    details = {"k": 5, "post_filter": post, "filter_in_walk": inside}
    return DoctorCheck(name="filtered_knn_underfill", status="handled" if post < 5 else "ok",
                       finding=f"KNN then filter kept {post} of 5 (10% of rows admitted); the filter inside the KNN gave {inside}",
                       handling="filtered legs over-fetch 4x the pool, then fall back to an exact scan of the admitted rows "
                                "when fewer than the pool survive; the in-walk filter is never used (seconds at 10k rows)",
                       details=details)


# --- the amem-db database itself (read only) ----------------------------------------------------
async def check_indexes(amem: Any) -> list[DoctorCheck]:
    """Unbuilt shares (#19) and builds in progress (#20) of the maintained HNSW indexes."""
    rows = await index_status(amem, threshold=MAINTAIN_THRESHOLD, min_rows=MAINTAIN_MIN_ROWS)
    due = [s for s in rows if s.due]
    unbuilt = {s.index: {"unbuilt": s.unbuilt, "rows": s.rows} for s in rows if s.unbuilt}
    checks = [DoctorCheck(
        name="hnsw_unbuilt", status="handled" if due else "ok",
        finding=(f"{', '.join(f'{s.index} {s.unbuilt}/{s.rows}' for s in due)} rows unbuilt: every KNN scans them exactly"
                 if due else f"no index past {MAINTAIN_THRESHOLD:.0%} unbuilt rows"),
        handling="the embedded engine never compacts HNSW; ingests rebuild indexes past the threshold at their end: "
                 "run amem-db maintain --auto now" if due else "rebuilt by amem-db maintain and after ingests",
        details={"unbuilt": unbuilt})]
    marked = [s.index for s in rows if s.building]
    engine_building = []
    for s in rows:
        info = await _one(amem, f"INFO FOR INDEX {s.index} ON {s.table}")
        state = ((info or {}).get("building") or {}).get("status") if isinstance(info, dict) else None
        if state not in (None, "ready"):
            engine_building.append(f"{s.index} ({state})")
    checks.append(DoctorCheck(
        name="index_building", status="handled" if marked or engine_building else "ok",
        finding=(f"being built: {', '.join(marked + engine_building)}" if marked or engine_building else "no index is being built"),
        handling=("vector legs answer these tables exactly until the build ends; a mark left by a killed maintain "
                  "stays until amem-db maintain --reset" if marked or engine_building else
                  "a KNN over an index being built returns every row or too few: maintain marks the index first"),
        details={"marked": marked, "engine": engine_building}))
    return checks


Check = Callable[[], Awaitable[DoctorCheck]]


async def _guarded(name: str, check: Check) -> DoctorCheck:
    try:
        return await check()
    except Exception as exc:  # a check that cannot run is reported, the others still run
        return DoctorCheck(name=name, status="error", finding=f"the check could not run: {str(exc).splitlines()[0][:200]}")


async def run_doctor(conn: Any, target: Target) -> DoctorReport:
    """Every check; canaries in a throwaway database that is removed before returning.
    Operator only: a credential (record user) may not define the scratch database, and
    is told so instead of an engine NotAllowedError (issue 27 item 8)."""
    (auth,) = await conn.query("RETURN $auth")
    if auth is not None:
        raise PermissionDenied("amem-db doctor is for the database operator (root, namespace or database user): "
                               "its canaries define and remove a scratch database, which a credential (--key) may not")
    engine = str(await conn.version())
    checks = [DoctorCheck(name="engine_version", status="ok",
                          finding=f"{engine}" + ("" if engine == MEASURED_ON else f" (amem-db's workarounds were measured on {MEASURED_ON}: the canaries decide)"))]
    checks += await _guarded_list("indexes", lambda: check_indexes(conn))
    scratch = f"amem_doctor_{uuid.uuid4().hex[:12]}"
    try:
        await conn.query(f"DEFINE DATABASE {scratch} COMMENT 'amem-db doctor canaries: removed when the run ends'")
        await conn.use(target.ns, scratch)
        canaries: list[tuple[str, Check]] = [
            ("hnsw_compaction", lambda: check_hnsw_compaction(conn)),
            ("knn_all_rows", lambda: check_knn_all_rows(conn)),
            ("hnsw_array_ids", lambda: _in_amem(conn, target, scratch, check_hnsw_array_ids)),
            ("bm25_zero_scores", lambda: _in_amem(conn, target, scratch, check_bm25_zero)),
            ("filtered_knn_underfill", lambda: check_filtered_knn(conn)),
        ]
        for name, check in canaries:
            checks.append(await _guarded(name, check))
    finally:
        await conn.use(target.ns, target.db)
        await conn.query(f"REMOVE DATABASE IF EXISTS {scratch}")
    return DoctorReport(engine=engine, checks=checks, healthy=all(c.status in ("ok", "handled") for c in checks))


async def _in_amem(conn: Any, target: Target, scratch: str, check: Callable[[Any, Any], Awaitable[DoctorCheck]]) -> DoctorCheck:
    """A canary that also reads the amem-db database: the canary part in the scratch
    database, the reads through a second `use` (one connection, switched back after)."""

    class _Amem:
        async def query(self, sql: str, params: dict[str, Any] | None = None) -> Any:
            await conn.use(target.ns, target.db)
            try:
                return await conn.query(sql, params or {})
            finally:
                await conn.use(target.ns, scratch)

    return await check(conn, _Amem())


async def _guarded_list(name: str, checks: Callable[[], Awaitable[list[DoctorCheck]]]) -> list[DoctorCheck]:
    try:
        return await checks()
    except Exception as exc:
        return [DoctorCheck(name=name, status="error", finding=f"the check could not run: {str(exc).splitlines()[0][:200]}")]
