"""Retrieval-quality levers (issue #16), measured on the shared splits.

Two steps, so that one expensive pass over the engine feeds many cheap sweeps:

``collect``  For one collection, through the product's own cached eval database
             (amem_db/harness/database.py, same key as ``amem-db eval``), run the
             two legs of documents.query for every judged query exactly as the
             product does (``fn::amem::query::options`` -> ``weights`` ->
             ``vector_leg`` with threshold -1 and ``bm25_leg``: the full
             256-candidate pools with their raw scores) and store them with the
             passage -> corpus id map in ``results/quality/legs/<name>.json``.
             Variants re-run one leg:
               --bm25 K1,B        the chunk_fts index redefined with BM25(K1, B)
                                  (restored to the default afterwards);
               --terms raw        query words without the stop-word drop;
               --title-bm25 prepend|field
                                  BM25 over a scratch copy of the passages with the
                                  document title prepended, or the title as a
                                  separate index whose score is added with a weight
                                  (scratch tables, dropped afterwards);
               --embed-context    the vector leg over "title / section / passage"
                                  embeddings computed here (numpy, exact cosine; the
                                  baseline vector leg is recomputed the same way).
``sweep``    Offline fusion of the stored legs (the product's RRF re-implemented,
             checked against the product's hybrid figures; z-score / min-max score
             fusion; thresholds; query-aware weights) scored with the harness's ranx
             metrics, overall and per query type. Writes a markdown table.

Usage (AMEM_CACHE_DIR keeps the embeddings; one collection at a time):
  python scripts/quality/quality_levers.py collect ../shared/datasets/cranfield
  python scripts/quality/quality_levers.py collect ../shared/datasets/cranfield --bm25 0.9,0.4
  python scripts/quality/quality_levers.py sweep --out results/quality/sweep.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from amem_db.harness.datasets import Dataset, load_dataset  # noqa: E402
from amem_db.harness.metrics import evaluate, metric_names  # noqa: E402
from amem_db.harness.query_types import OVERLAP_BUCKETS, QUERY_TYPES, tag_queries  # noqa: E402

LEGS_DIR = ROOT / "results" / "quality" / "legs"
K = 50  # passages per query, as the eval
POOL = 256

LEGS_SQL = """
LET $o = fn::amem::query::options($q, $e, { mode: 'hybrid' });
LET $w = fn::amem::query::weights($o, $q);
RETURN {
    v: fn::amem::query::vector_leg($e, $o.f, -1).rows.map(|$r| [<string> $r.id, $r.sim]),
    l: IF $w.runLex { fn::amem::query::bm25_leg($TERMS, $o.f).rows.map(|$r| [<string> $r.id, $r.score]) } ELSE { [] },
    terms: $w.terms.terms,
};
"""


# -- collect -----------------------------------------------------------------------


async def _q(conn: Any, sql: str, vars: dict[str, Any] | None = None) -> Any:
    """The last statement's result (the SDK returns one entry per statement)."""
    res = await conn.query(sql, vars or {})
    return res[-1] if isinstance(res, list) and res else res


async def _prepare(ds: Dataset, title_mode: str) -> Any:
    from amem_db.embedding import get_embedder
    from amem_db.harness.database import prepare_database

    return await prepare_database(ds, get_embedder("minilm"), title_mode=title_mode)


async def _passages(conn: Any) -> dict[str, dict[str, Any]]:
    rows = await _q(conn,
        "SELECT <string> id AS id, document.source AS source, document.title AS title, section_heading AS section, text FROM chunk")
    return {r["id"]: {"doc": (r["source"] or "").rsplit("#", 1)[-1], "title": r.get("title") or "",
                      "section": r.get("section") or "", "text": r["text"]} for r in rows}


async def _legs(conn: Any, mem: Any, ds: Dataset, terms: str, lex_table: str | None = None,
                lex_only: bool = False) -> dict[str, Any]:
    """Both legs per query; ``lex_only``: the BM25 leg only, the vector leg copied from
    the collection's base legs file (a lever that changes BM25 alone)."""
    out: dict[str, Any] = {}
    sql = LEGS_SQL.replace("$TERMS", "array::join(fn::amem::query::terms($q).terms, ' ')" if terms == "content"
                           else "array::join(string::split(string::trim(string::replace($q, <regex> '[^\\\\p{L}\\\\p{N}]+', ' ')), ' ').filter(|$x| $x != ''), ' ')")
    if lex_table:
        sql = sql.replace("fn::amem::query::bm25_leg($TERMS, $o.f).rows", "")  # not used
    base = None
    if lex_only:
        base = json.loads((LEGS_DIR / f"{ds.name}.json").read_text())["legs"]
        sql = sql.replace("fn::amem::query::vector_leg($e, $o.f, -1).rows.map(|$r| [<string> $r.id, $r.sim])", "[]")
    for i, (qid, text) in enumerate(ds.queries.items()):
        e = await mem.embed_query(text)
        t0 = time.perf_counter()
        res = await _q(conn, sql, {"q": text, "e": e})
        out[qid] = {"v": base[qid]["v"] if base else res["v"], "l": res["l"], "terms": res["terms"],
                    "ms": (time.perf_counter() - t0) * 1000}
        if lex_table:
            out[qid]["l"] = await _scratch_bm25(conn, lex_table, " ".join(res["terms"]))
        if (i + 1) % 100 == 0:
            print(f"  {i + 1}/{len(ds.queries)} queries", file=sys.stderr)
    return out


async def _scratch_bm25(conn: Any, table: str, text: str) -> list[list[Any]]:
    if not text:
        return []
    rows = await _q(conn,
        f"SELECT <string> id AS id, search::score(1) AS score FROM {table} WHERE text @1,OR@ $t "
        f"ORDER BY score DESC, id ASC LIMIT {POOL}", {"t": text})
    return [[r["id"].replace(f"{table}:", "chunk:", 1), r["score"]] for r in rows]


async def _title_field(conn: Any, ds: Dataset, legs: dict[str, Any], passages: dict[str, Any]) -> None:
    """The title as its own BM25 field: the matching titles' scores per corpus id,
    stored per query (the sweep adds them to the passage score with a weight)."""
    await conn.query("REMOVE TABLE IF EXISTS q_title; DEFINE TABLE q_title SCHEMALESS; "
                     "DEFINE INDEX q_title_text ON q_title FIELDS text FULLTEXT ANALYZER knowledge_text BM25(1.2,0.75);")
    titles = {p["doc"]: p["title"] for p in passages.values()}
    items = [{"id": d, "text": t} for d, t in titles.items() if t]
    for i in range(0, len(items), 500):
        await conn.query("FOR $r IN $rows { CREATE type::record('q_title', $r.id) SET text = $r.text };",
                         {"rows": items[i:i + 500]})
    for qid in ds.queries:
        text = " ".join(legs[qid]["terms"])
        rows = await _scratch_bm25(conn, "q_title", text) if text else []
        legs[qid]["t"] = [[r[0].split(":", 1)[1].strip("`⟨⟩"), r[1]] for r in rows]
    await conn.query("REMOVE TABLE q_title;")


async def _title_prepend_table(conn: Any) -> str:
    await conn.query("REMOVE TABLE IF EXISTS q_chunk_title; DEFINE TABLE q_chunk_title SCHEMALESS; "
                     "DEFINE INDEX q_chunk_title_text ON q_chunk_title FIELDS text FULLTEXT ANALYZER knowledge_text BM25(1.2,0.75);")
    ids = await _q(conn, "SELECT VALUE id FROM chunk")
    for i in range(0, len(ids), 500):
        await conn.query("FOR $c IN (SELECT id, text, document.title AS title FROM $ids) { "
                         "CREATE type::record('q_chunk_title', record::id($c.id)) SET text = "
                         "IF $c.title != NONE AND $c.title != '' { $c.title + '\n\n' + $c.text } ELSE { $c.text } };",
                         {"ids": ids[i:i + 500]})
    return "q_chunk_title"


def _context_text(p: dict[str, Any]) -> str:
    head = "\n".join(x for x in (p["title"], p["section"]) if x)
    return f"{head}\n\n{p['text']}" if head else p["text"]


def _exact_vector(mem: Any, ds: Dataset, passages: dict[str, Any], contextual: bool) -> dict[str, list[list[Any]]]:
    import numpy as np

    ids = sorted(passages)
    texts = [_context_text(passages[i]) if contextual else passages[i]["text"] for i in ids]
    vecs: list[list[float]] = []
    for j in range(0, len(texts), 64):
        vecs.extend(mem.embedder.embed_documents(texts[j:j + 64]))
        if (j // 64) % 10 == 0:
            print(f"  embedded {j + 64}/{len(texts)}", file=sys.stderr)
    m = np.asarray(vecs, dtype=np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    out = {}
    for qid, text in ds.queries.items():
        q = np.asarray(mem.embedder.embed_query(text), dtype=np.float32)
        sims = m @ (q / np.linalg.norm(q))
        top = np.argsort(-sims, kind="stable")[:POOL]
        out[qid] = [[ids[t], float(sims[t])] for t in top]
    return out


async def collect(args: argparse.Namespace) -> None:
    from amem_db.connection import close_quietly

    ds = load_dataset(args.dataset)
    name = ds.name + (f"-{args.tag}" if args.tag else "")
    prepared = await _prepare(ds, args.title_mode)
    conn, mem = prepared.mem.conn, prepared.mem
    LEGS_DIR.mkdir(parents=True, exist_ok=True)
    try:
        passages = await _passages(conn)
        if args.bm25:
            k1, b = (float(x) for x in args.bm25.split(","))
            t0 = time.perf_counter()
            await conn.query(f"DEFINE INDEX OVERWRITE chunk_fts_text ON chunk_fts FIELDS text FULLTEXT "
                             f"ANALYZER knowledge_text BM25({k1},{b}) HIGHLIGHTS;")
            print(f"  index rebuilt in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        lex_table = await _title_prepend_table(conn) if args.title_bm25 == "prepend" else None
        lex_only = bool(args.bm25 or args.title_bm25 or args.terms != "content") and (LEGS_DIR / f"{ds.name}.json").exists()
        legs = await _legs(conn, mem, ds, args.terms, lex_table, lex_only)
        if args.dump_passages:
            (LEGS_DIR / f"{ds.name}-passages.json").write_text(json.dumps(passages))
        if lex_table:
            await conn.query(f"REMOVE TABLE {lex_table};")
        if args.title_bm25 == "field":
            await _title_field(conn, ds, legs, passages)
        if args.embed_context:
            for contextual, key in ((False, "v_exact"), (True, "v")):
                vec = _exact_vector(mem, ds, passages, contextual)
                for qid in legs:
                    legs[qid][key] = vec[qid]
    finally:
        if args.bm25:
            await conn.query("DEFINE INDEX OVERWRITE chunk_fts_text ON chunk_fts FIELDS text FULLTEXT "
                             "ANALYZER knowledge_text BM25(1.2,0.75) HIGHLIGHTS;")
        await close_quietly(conn)
    doc_of = {pid: p["doc"] for pid, p in passages.items()}
    meta = {"dataset": ds.name, "split": ds.split, "path": str(ds.path), "variant": vars(args) | {"func": None},
            "chunks": len(passages), "db_size": prepared.ingest.get("chunks")}
    (LEGS_DIR / f"{name}.json").write_text(json.dumps({"meta": meta, "doc_of": doc_of, "legs": legs}))
    print(f"wrote {LEGS_DIR / (name + '.json')}", file=sys.stderr)


def embed_context_offline(args: argparse.Namespace) -> None:
    """``collect --embed-context`` from a passages dump and the base legs (the BM25 leg
    is reused): no database is opened, so it can run beside another collection's run."""
    from amem_db.embedding import CachedEmbedder, get_embedder

    ds = load_dataset(args.dataset)
    passages = json.loads((LEGS_DIR / f"{ds.name}-passages.json").read_text())
    base = json.loads((LEGS_DIR / f"{ds.name}.json").read_text())

    class _Mem:
        embedder = CachedEmbedder(get_embedder("minilm"))

    legs = {q: dict(leg) for q, leg in base["legs"].items()}
    for contextual, key in ((False, "v_exact"), (True, "v")):
        vec = _exact_vector(_Mem(), ds, passages, contextual)
        for q in legs:
            legs[q][key] = vec[q]
    meta = base["meta"] | {"variant": {"embed_context": True}}
    (LEGS_DIR / f"{ds.name}-ctx.json").write_text(json.dumps({"meta": meta, "doc_of": base["doc_of"], "legs": legs}))
    print(f"wrote {LEGS_DIR / (ds.name + '-ctx.json')}", file=sys.stderr)


# -- offline fusion -------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """One ranking rule over the stored legs. ``fusion``: rrf | zscore | minmax | vector | bm25."""

    fusion: str = "rrf"
    vw: float = 0.5
    rrf_k: float = 60.0
    threshold: float | None = 0.5  # absolute cosine floor (None: none)
    relative: float | None = None  # keep vector rows with sim >= best - relative
    id_vw: float | None = None  # vectorWeight for queries with an identifier token
    title_w: float = 0.0  # the title field's weight (legs "t")
    id_rule: str = "any"  # any: an identifier token at all; type: the eval's identifier type (<= 3 other content words)
    label: str = ""


def _vector_rows(rows: list[list[Any]], c: Config) -> list[list[Any]]:
    if c.threshold is not None:
        rows = [r for r in rows if r[1] >= c.threshold]
    if c.relative is not None and rows:
        best = rows[0][1]
        rows = [r for r in rows if r[1] >= best - c.relative]
    return rows


def rrf(lists: list[list[str]], weights: list[float], k: float) -> list[tuple[str, float]]:
    """fn::amem::fusion::rrf: each id once at its best rank; ties by id."""
    acc: dict[str, float] = {}
    for lst, w in zip(lists, weights, strict=True):
        seen: dict[str, None] = dict.fromkeys(lst)
        for r, i in enumerate(seen):
            acc[i] = acc.get(i, 0.0) + float(w) / (k + r + 1)
    return sorted(acc.items(), key=lambda x: (-round(x[1], 12), x[0]))


def _norm(rows: list[list[Any]], how: str) -> dict[str, float]:
    if not rows:
        return {}
    s = [float(r[1]) for r in rows]
    if how == "zscore":
        mu = statistics.fmean(s)
        sd = statistics.pstdev(s)
        return {r[0]: (float(r[1]) - mu) / sd if sd > 0 else 0.0 for r in rows}
    lo, hi = min(s), max(s)
    return {r[0]: (float(r[1]) - lo) / (hi - lo) if hi > lo else 1.0 for r in rows}


def score_fusion(v: list[list[Any]], lex: list[list[Any]], wv: float, how: str) -> list[tuple[str, float]]:
    """Per query, each leg's raw scores normalised over its own candidates
    (z-score or min-max); a passage missing from a leg gets that leg's lowest
    normalised score; fused = wv * vector + (1 - wv) * bm25 (fn::amem::fusion::scores:
    the same, less the constant floors); ties by id."""
    fused: dict[str, float] = {}
    for rows, w in ((v, wv), (lex, 1.0 - wv)):
        n = _norm(rows, how)
        if not n:
            continue
        lo, hi = min(n.values()), max(n.values())
        for i, x in n.items():  # a leg that cannot rank (all alike) gives each passage its whole weight
            fused[i] = fused.get(i, 0.0) + (w * (x - lo) if hi > lo else w)
    return sorted(fused.items(), key=lambda x: (-round(x[1], 12), x[0]))


def _with_title(lex: list[list[Any]], titles: list[list[Any]], doc_of: dict[str, str], w: float) -> list[list[Any]]:
    if not w or not titles:
        return lex
    t = {d: s for d, s in titles}
    rows = [[i, s + w * t.get(doc_of.get(i, ""), 0.0)] for i, s in lex]
    return sorted(rows, key=lambda r: (-r[1], r[0]))


def rank_query(leg: dict[str, Any], c: Config, doc_of: dict[str, str], is_identifier: bool) -> list[str]:
    v = _vector_rows(leg["v"], c)
    lex = _with_title(leg["l"], leg.get("t") or [], doc_of, c.title_w)
    vw = c.id_vw if (c.id_vw is not None and is_identifier) else c.vw
    if c.fusion == "vector":
        fused = [(i, s) for i, s in v]
    elif c.fusion == "bm25":
        fused = [(i, s) for i, s in lex]
    elif c.fusion == "rrf":
        fused = rrf([[r[0] for r in v], [r[0] for r in lex]], [vw, 1 - vw], c.rrf_k)
    else:
        fused = score_fusion(v, lex, vw, c.fusion)
    docs: dict[str, None] = {}
    for pid, _ in fused[:K]:
        d = doc_of.get(pid)
        if d is not None:
            docs.setdefault(d, None)
    return list(docs)


def query_is_identifier(text: str, rule: str = "any") -> bool:
    """The query-time half of the query-type heuristic (the overlap axis needs the
    judged documents): ``any`` identifier token (types identifier and mixed), or
    ``type`` identifier only (at most 3 other content words, query_types.tag_query)."""
    from amem_db.harness.query_types import tag_query

    t = tag_query(text, ["x"])
    return t["type"] == "identifier" or (rule == "any" and t["type"] == "mixed")


def score(ds: Dataset, data: dict[str, Any], c: Config, tags: dict[str, Any]) -> dict[str, Any]:
    metrics = metric_names(K)
    rankings = {q: rank_query(data["legs"][q], c, data["doc_of"], query_is_identifier(ds.queries[q], c.id_rule)) for q in ds.queries}
    out: dict[str, Any] = {"all": evaluate(ds.qrels, rankings, metrics),
                           "empty": sum(1 for q in ds.queries if not _vector_rows(data["legs"][q]["v"], c))}
    for group in QUERY_TYPES + OVERLAP_BUCKETS:
        ids = [q for q, t in tags.items() if group in (t["type"], t["overlap_bucket"])]
        if ids and group != "no-answer":
            out[group] = {"n": len(ids), **evaluate(ds.qrels, rankings, metrics, ids)}
    return out


def load_legs(name: str) -> tuple[Dataset, dict[str, Any]]:
    data = json.loads((LEGS_DIR / f"{name}.json").read_text())
    return load_dataset(data["meta"]["path"], data["meta"]["split"]), data


GROUPS = ("identifier", "mixed", "paraphrase", "low-overlap", "high-overlap")


def table(rows: Iterable[tuple[str, str, dict[str, Any], dict[str, Any] | None]]) -> str:
    lines = ["| collection | config | nDCG@10 | Δ | R@50 | vector-empty | " + " | ".join(GROUPS) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(GROUPS)]
    for coll, label, r, b in rows:
        nd = r["all"]["ndcg@10"]
        delta = f"{nd - b['all']['ndcg@10']:+.3f}" if b else ""
        cells = []
        for g in GROUPS:
            if g in r:
                x = r[g]["ndcg@10"]
                d = f" ({x - b[g]['ndcg@10']:+.3f})" if b and g in b else ""
                cells.append(f"{x:.3f}{d} n={r[g]['n']}" if g in ("identifier", "mixed", "low-overlap") else f"{x:.3f}{d}")
            else:
                cells.append("-")
        lines.append(f"| {coll} | {label} | {nd:.3f} | {delta} | {r['all'][f'recall@{K}']:.3f} | {r['empty']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_configs(names: list[str], configs: list[Config], base_label: str = "rrf") -> str:
    """Δ: against the product default (RRF) on the same legs; for a variant's legs
    (``<collection>-<tag>``), against the same config on the collection's own legs."""
    out_rows = []
    for name in names:
        ds, data = load_legs(name)
        tags = tag_queries(ds)
        base_data = load_legs(name.split("-")[0])[1] if "-" in name else None
        first = next(iter(data["legs"].values()))
        if "v_exact" in first:
            # --embed-context: the baseline is the same exact numpy leg over the plain passage texts
            base_data = {"doc_of": data["doc_of"],
                         "legs": {q: leg | {"v": leg["v_exact"]} for q, leg in data["legs"].items()}}
        default = score(ds, data, Config(label="rrf"), tags)
        for c in configs:
            r = score(ds, data, c, tags)
            b = score(ds, base_data, c, tags) if base_data is not None else default
            out_rows.append((name, c.label, r, b))
    return table(out_rows)


SWEEPS: dict[str, Callable[[], list[Config]]] = {
    "legs": lambda: [Config("bm25", label="bm25"), Config("vector", label="vector"), Config(label="rrf")],
    "fusion": lambda: [Config(label="rrf")] + [Config(f, vw=w, label=f"{f} vw={w}") for f in ("zscore", "minmax")
                                              for w in (0.3, 0.4, 0.5, 0.6, 0.7)]
    + [Config(f, vw=w, threshold=None, label=f"{f} vw={w} no-threshold") for f in ("zscore",) for w in (0.4, 0.5, 0.6)],
    "rrf": lambda: [Config(label="rrf")] + [Config(rrf_k=k, vw=w, label=f"rrf k={k:g} vw={w}")
                                           for k in (10, 30, 60, 100) for w in (0.4, 0.5, 0.6)],
    "threshold": lambda: [Config(label="rrf")] + [Config("vector", threshold=t, label=f"vector thr={t}") for t in (0.5, 0.4, 0.3, 0.2, None)]
    + [Config("vector", threshold=None, relative=r, label=f"vector rel={r}") for r in (0.1, 0.2, 0.3)]
    + [Config(threshold=t, label=f"rrf thr={t}") for t in (0.4, 0.3, None)]
    + [Config(threshold=None, relative=r, label=f"rrf rel={r}") for r in (0.1, 0.2)],
    "query-aware": lambda: [Config(label="rrf")] + [Config(id_vw=w, label=f"rrf id_vw={w}") for w in (0.2, 0.3, 0.4)]
    + [Config("zscore", vw=0.5, id_vw=w, label=f"zscore vw=0.5 id_vw={w}") for w in (0.3, 0.4)],
    "zscore-threshold": lambda: [Config(label="rrf")] + [Config("zscore", vw=w, threshold=t, label=f"zscore vw={w} thr={t}")
                                                        for w in (0.5, 0.6, 0.7) for t in (0.5, 0.4, 0.3, 0.2, None)],
    "candidates": lambda: [Config(label="rrf"), Config(threshold=0.3, label="rrf thr=0.3"),
                           Config("zscore", vw=0.5, threshold=0.3, label="zscore vw=0.5 thr=0.3"),
                           Config("zscore", vw=0.6, threshold=0.3, label="zscore vw=0.6 thr=0.3"),
                           Config("zscore", vw=0.5, threshold=0.3, id_vw=0.3, label="zscore vw=0.5 thr=0.3 id_vw=0.3"),
                           Config("zscore", vw=0.6, threshold=0.3, id_vw=0.4, label="zscore vw=0.6 thr=0.3 id_vw=0.4"),
                           Config("vector", threshold=0.3, label="vector thr=0.3"), Config("bm25", label="bm25")],
    "identifier": lambda: [Config("zscore", vw=0.5, threshold=0.3, label="zscore vw=0.5 thr=0.3")]
    + [Config("zscore", vw=0.5, threshold=0.3, id_vw=w, id_rule=r, label=f"zscore 0.5 thr 0.3 id_vw={w} rule={r}")
       for r in ("type", "any") for w in (0.0, 0.1, 0.2, 0.3, 0.4)],
    # before / after issue #16's default changes, every mode
    "defaults": lambda: [Config("bm25", label="bm25"), Config("vector", label="vector (before: thr 0.5)"),
                         Config("vector", threshold=0.3, label="vector (after: thr 0.3)"),
                         Config(label="hybrid (before: rrf, thr 0.5)"),
                         Config("zscore", vw=0.5, threshold=0.3, id_vw=0.1, id_rule="type",
                                label="hybrid (after: zscore 0.5, thr 0.3, identifier vw 0.1)")],
    "title-field": lambda: [Config(label="rrf")] + [Config("bm25", title_w=w, label=f"bm25 title_w={w}") for w in (0.0, 0.5, 1.0, 2.0)]
    + [Config(title_w=w, label=f"rrf title_w={w}") for w in (0.5, 1.0, 2.0)],
}


def sweep(args: argparse.Namespace) -> None:
    names = args.names.split(",")
    text = []
    for s in args.sweeps.split(","):
        text.append(f"### {s}\n\n" + run_configs(names, SWEEPS[s]()))
    md = "\n\n".join(text) + "\n"
    print(md)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(md)


# The one lever table: (lever, off config, on config, legs variant or "")
RRF = Config(label="rrf")
BM25 = Config("bm25", label="bm25")
VEC = Config("vector", label="vector")
NEW = Config("zscore", vw=0.5, threshold=0.3, id_vw=0.1, id_rule="type", label="new defaults")
LEVERS: list[tuple[str, Config, Config, str]] = [
    ("title prepended to the BM25 text: bm25", BM25, BM25, "tprepend"),
    ("title prepended to the BM25 text: hybrid", RRF, RRF, "tprepend"),
    ("title prepended to the BM25 text: hybrid on the new defaults", NEW, NEW, "tprepend"),
    ("title as a separate BM25 field (w 0.5): bm25", BM25, Config("bm25", title_w=0.5), "tfield"),
    ("title as a separate BM25 field (w 0.5): hybrid", RRF, Config(title_w=0.5), "tfield"),
    ("title + heading embedded with the passage: vector", VEC, VEC, "ctx"),
    ("title + heading embedded with the passage: hybrid", RRF, RRF, "ctx"),
    ("title + heading embedded with the passage: hybrid on the new defaults", NEW, NEW, "ctx"),
    ("threshold 0.5 -> 0.4: vector", VEC, Config("vector", threshold=0.4), ""),
    ("threshold 0.5 -> 0.3: vector", VEC, Config("vector", threshold=0.3), ""),
    ("threshold 0.5 -> none: vector", VEC, Config("vector", threshold=None), ""),
    ("threshold relative (best - 0.2): vector", VEC, Config("vector", threshold=None, relative=0.2), ""),
    ("threshold 0.5 -> 0.3: hybrid (RRF)", RRF, Config(threshold=0.3), ""),
    ("threshold relative (best - 0.2): hybrid (RRF)", RRF, Config(threshold=None, relative=0.2), ""),
    ("BM25 k1 0.9 b 0.4: bm25", BM25, BM25, "bm25_0.9_0.4"),
    ("BM25 k1 1.5 b 0.75: bm25", BM25, BM25, "bm25_1.5_0.75"),
    ("BM25 k1 1.2 b 0.9: bm25", BM25, BM25, "bm25_1.2_0.9"),
    ("BM25 k1 1.2 b 0.9: hybrid", RRF, RRF, "bm25_1.2_0.9"),
    ("query stop words kept: bm25", BM25, BM25, "rawterms"),
    ("fusion zscore vw 0.5 (threshold 0.5)", RRF, Config("zscore", vw=0.5), ""),
    ("fusion minmax vw 0.4 (threshold 0.5)", RRF, Config("minmax", vw=0.4), ""),
    ("fusion zscore vw 0.5 + threshold 0.3", RRF, Config("zscore", vw=0.5, threshold=0.3), ""),
    ("fusion zscore vw 0.6 + threshold 0.3", RRF, Config("zscore", vw=0.6, threshold=0.3), ""),
    ("RRF k 30 vw 0.4", RRF, Config(rrf_k=30, vw=0.4), ""),
    ("RRF k 60 vw 0.4", RRF, Config(vw=0.4), ""),
    ("query-aware: identifier queries vw 0.3 (RRF)", RRF, Config(id_vw=0.3), ""),
    ("query-aware: identifier-or-mixed vw 0.3 on zscore 0.5 + thr 0.3", Config("zscore", vw=0.5, threshold=0.3),
     Config("zscore", vw=0.5, threshold=0.3, id_vw=0.3), ""),
    ("query-aware: identifier type vw 0.1 on zscore 0.5 + thr 0.3", Config("zscore", vw=0.5, threshold=0.3),
     Config("zscore", vw=0.5, threshold=0.3, id_vw=0.1, id_rule="type"), ""),
    ("all new defaults (zscore 0.5, thr 0.3, identifier vw 0.1) vs before", RRF,
     Config("zscore", vw=0.5, threshold=0.3, id_vw=0.1, id_rule="type"), ""),
]


def levers(args: argparse.Namespace) -> None:
    colls = args.names.split(",")
    cache: dict[str, tuple[Dataset, dict[str, Any], dict[str, Any]]] = {}

    def legs(name: str) -> tuple[Dataset, dict[str, Any], dict[str, Any]] | None:
        if name not in cache:
            if not (LEGS_DIR / f"{name}.json").exists():
                return None
            ds, data = load_legs(name)
            first = next(iter(data["legs"].values()))
            if "v_exact" in first:  # the embed-context variant: its own exact baseline
                data = data | {"base": {"doc_of": data["doc_of"],
                                        "legs": {q: leg | {"v": leg["v_exact"]} for q, leg in data["legs"].items()}}}
            cache[name] = (ds, data, tag_queries(ds))
        return cache[name]

    head = "| lever | " + " | ".join(f"{c} Δ" for c in colls) + " | " + " | ".join(f"{colls[0]} {g}" for g in GROUPS) + " |"
    lines = [head, "|---|" + "---|" * (len(colls) + len(GROUPS))]
    for name, off, on, variant in LEVERS:
        cells, types = [], []
        for i, coll in enumerate(colls):
            base = legs(coll)
            var = legs(f"{coll}-{variant}") if variant else base
            if base is None or var is None:
                cells.append("not run")
                if i == 0:
                    types = ["-"] * len(GROUPS)
                continue
            ds, data, tags = var
            off_data = data.get("base", base[1]) if variant else base[1]
            r_off, r_on = score(ds, off_data, off, tags), score(ds, data, on, tags)
            d = r_on["all"]["ndcg@10"] - r_off["all"]["ndcg@10"]
            empty = f" (empty {r_off['empty']}→{r_on['empty']})" if r_off["empty"] != r_on["empty"] else ""
            cells.append(f"{d:+.3f} ({r_on['all']['ndcg@10']:.3f}){empty}")
            if i == 0:
                types = [f"{r_on[g]['ndcg@10'] - r_off[g]['ndcg@10']:+.3f}" if g in r_on else "-" for g in GROUPS]
        lines.append(f"| {name} | " + " | ".join(cells) + " | " + " | ".join(types) + " |")
    md = "\n".join(lines) + "\n"
    print(md)
    if args.out:
        Path(args.out).write_text(md)


BEFORE = {"fusion": "rrf", "threshold": 0.5}  # the defaults before issue #16, spelled out


async def latency(args: argparse.Namespace) -> None:
    """p50 / p95 client wall clock per mode, the old defaults (BEFORE) against the
    product's current defaults, interleaved query by query so that the machine's
    load falls on both alike; and the nDCG@10 of both (a check that the product's
    defaults give what the sweep said)."""
    from amem_db.connection import close_quietly
    from amem_db.harness.common import percentile
    from amem_db.harness.metrics import document_ranking

    ds = load_dataset(args.dataset)
    prepared = await _prepare(ds, "separate")
    mem = prepared.mem
    qids = list(ds.queries)[: args.limit or None]
    rows = []
    try:
        for mode in args.modes.split(","):
            times: dict[str, list[float]] = {"before": [], "after": []}
            ranks: dict[str, dict[str, list[str]]] = {"before": {}, "after": {}}
            for q in qids:
                for arm, opts in (("before", BEFORE), ("after", {})):
                    await mem.embed_query(ds.queries[q])  # warm the embedding cache: both arms pay the same
                    t0 = time.perf_counter()
                    res = await mem.documents.query(ds.queries[q], mode=mode, k=K, **opts)
                    times[arm].append((time.perf_counter() - t0) * 1000)
                    ranks[arm][q] = document_ranking(res.model_dump(by_alias=True, mode="json")["results"])
            nd = {arm: evaluate({q: ds.qrels[q] for q in qids}, ranks[arm], ["ndcg@10"])["ndcg@10"] for arm in times}
            rows.append(f"| {ds.name} | {mode} | {len(qids)} | {nd['before']:.3f} | {nd['after']:.3f} | "
                        f"{percentile(times['before'], 50):.0f} | {percentile(times['after'], 50):.0f} | "
                        f"{percentile(times['after'], 50) / percentile(times['before'], 50) - 1:+.0%} |")
            print(rows[-1], file=sys.stderr)
    finally:
        await close_quietly(mem.conn)
    print("| collection | mode | queries | nDCG@10 before | after | p50 ms before | after | Δ p50 |\n|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("dataset")
    c.add_argument("--tag", default="")
    c.add_argument("--title-mode", default="separate", choices=["separate", "prepend"])
    c.add_argument("--bm25", default="")
    c.add_argument("--terms", default="content", choices=["content", "raw"])
    c.add_argument("--title-bm25", default="", choices=["", "prepend", "field"])
    c.add_argument("--embed-context", action="store_true")
    c.add_argument("--dump-passages", action="store_true", help="also write <name>-passages.json (for embed-context)")
    ec = sub.add_parser("embed-context", help="the --embed-context variant from <name>-passages.json, without the database")
    ec.add_argument("dataset")
    ec.set_defaults(func=embed_context_offline)
    c.set_defaults(func=lambda a: asyncio.run(collect(a)))
    lv = sub.add_parser("levers")
    lv.add_argument("--names", default="scifact,cranfield,cisi")
    lv.add_argument("--out", default="")
    lv.set_defaults(func=levers)
    lat = sub.add_parser("latency")
    lat.add_argument("dataset")
    lat.add_argument("--modes", default="bm25,vector,hybrid")
    lat.add_argument("--limit", type=int, default=0)
    lat.set_defaults(func=lambda a: asyncio.run(latency(a)))
    s = sub.add_parser("sweep")
    s.add_argument("--names", default="cranfield,cisi,scifact")
    s.add_argument("--sweeps", default="legs,fusion,rrf,threshold,query-aware")
    s.add_argument("--out", default="")
    s.set_defaults(func=sweep)
    a = p.parse_args()
    a.func(a)


if __name__ == "__main__":
    main()
    _ = math
