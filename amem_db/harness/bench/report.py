"""bench.json -> report.md and latency.png."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .amem import AMEM_MODES
from .goals import curve_section, goals_section, machine_section, split_section, throughput_section


def _get(results: list[dict[str, Any]], system: str, n: int | None) -> dict[str, Any] | None:
    for r in results:
        if r.get("system") == system and (n is None or r.get("size") == n) and "error" not in r:
            return r
    return None


def _ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 1 else f"{v:.2f}"


def _ratio(a: float | None, b: float | None) -> str:
    if not a or not b:
        return "-"
    return f"{a / b:.2f}x"


def _agent_loop_section(res: list[dict[str, Any]]) -> list[str]:
    """The agent loop (bench/agent_loop.py): remember a turn, recall a question, turn by turn."""
    r = _get(res, "agent-loop", None)
    if r is None:
        return []
    w, a, late = r["write_ms"], r["recall_ms"], r["recall_last_quarter_ms"]
    lines = ["", f"## Agent loop: LoCoMo {r['conversation']} replayed turn by turn ({r['turns']} turns, {r['backend']}"
             + ("" if r.get("speaker") is None else ", speaker entities" if r["speaker"] else ", no speaker entities")
             + ")", "",
             "| call, ms | p50 | p95 |", "|---|---|---|",
             f"| remember the turn (facts.write, one request) | {_ms(w['p50'])} | {_ms(w['p95'])} |",
             f"| recall a question (hybrid, k 10, the conversation's lens) | {_ms(a['p50'])} | {_ms(a['p95'])} |",
             f"| recall over the last quarter of the turns | {_ms(late['p50'])} | {_ms(late['p95'])} |", ""]
    st = r.get("stages_last_quarter_p50_ms") or {}
    if st:
        lines += ["Recall's stages over the last quarter (p50 ms): " + ", ".join(f"{k} {_ms(v)}" for k, v in st.items()) + "."]
    return lines


def _recall_section(res: list[dict[str, Any]], sizes: list[int]) -> list[str]:
    """Recall (hybrid, facts + passages) beside documents.query in the same database (bench/recall.py)."""
    got = [(n, r["recall"]) for n in sizes if (r := _get(res, "amem", n)) and r.get("recall")]
    if not got:
        return []
    lines = ["", "## Recall beside documents.query (hybrid, k = 10, ms p50 / p95; same database)", "",
             "| size: chunks + memory passages + facts | recall | documents.query | recall / documents.query (p50) | "
             "writes: passages/s, facts/s |", "|---|---|---|---|---|"]
    for n, rc in got:
        a, b = rc["latency_ms"]["recall"], rc["latency_ms"]["documents.query"]
        lines.append(f"| {n:,} + {rc['passages']:,} + {rc['facts']:,} | {_ms(a['p50'])} / {_ms(a['p95'])} | "
                     f"{_ms(b['p50'])} / {_ms(b['p95'])} | {_ratio(a['p50'], b['p50'])} | "
                     f"{rc['passages_per_s']} / {rc['facts_per_s']} |")
    lines += ["", "Memory written through mem.facts.write_many (one passage or one fact a request; prepare, a lookup embedder of the bench passages' own vectors, "
              "then fn::amem::facts::write_many per group: 32 one-fact or 16 one-passage requests, two independent groups at once; the reopens a full WAL forces count in); "
              "recall includes facts and passages; both calls timed after the writes, on the same queries."]
    staged = [(n, rc["stages_p50_ms"]) for n, rc in got if rc.get("stages_p50_ms")]
    if staged:
        names = list(dict.fromkeys(k for _, st in staged for k in st))
        lines += ["", "### Inside fn::amem::recall (p50 ms per stage: trace.timings.stages, per table inside the legs)", "",
                  "| stage | " + " | ".join(f"{n:,}" for n, _ in staged) + " |", "|---|" + "---|" * len(staged)]
        lines += [f"| {k} | " + " | ".join(_ms(st.get(k)) for _, st in staged) + " |" for k in names]
    return lines


def render_markdown(report: dict[str, Any]) -> str:
    res = report["results"]
    sizes = sorted(report["sizes"])
    m = report["machine"]
    lines = ["# amem-db benchmark", "",
             f"Machine: {m['cpu']}, {m['cpus']} cores, {m['memory_gb']} GB RAM, {m['os']}, Python {m['python']}; "
             f"load average at start {tuple(round(x, 2) for x in m['loadavg'])}, at end "
             f"{tuple(round(x, 2) for x in report['machine_end_loadavg'])}. Packages: "
             + ", ".join(f"{k} {v}" for k, v in m["packages"].items() if v) + ".",
             f"Data: {report['data']['passages']} real passages ({', '.join(report['data']['datasets'])}), "
             f"{report['data']['embedder']} ({report['data']['dimension']}-dim); {report['queries']} queries per size "
             f"after {report['warmup']} warm-up; backend {report['backend']}; insert batch {report['batch']}. "
             f"Total {report['seconds']:.0f} s.", ""]
    errors = [r for r in res if "error" in r]
    if report.get("complete") is False:
        lines += ["", "**Partial report: written after a worker, before the last one ended.**"]
    lines += goals_section(lambda system, n: _get(res, system, n))
    # latency table
    lines += ["## Query latency (ms, p50 / p95 / p99), k = 10", "",
              "| system / mode | " + " | ".join(f"{n:,}" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    rows: list[tuple[str, str, tuple[str, str]]] = []
    for mode in AMEM_MODES:
        rows.append((f"amem {mode}", "amem", ("latency_ms", mode)))
    for name in ("bm25@256", "knn@256", "both@256", "bm25@50", "knn@50", "both@50"):
        rows.append((f"engine floor {name}", "amem", ("floor_ms", name)))
    for mode in ("bm25", "vector", "hybrid"):
        rows.append((f"lancedb {mode}", "lancedb", ("latency_ms", mode)))
    for mode in ("vector", "hybrid"):
        rows.append((f"lancedb-ann {mode} (IVF_HNSW_SQ)", "lancedb-ann", ("latency_ms", mode)))
    for mode in ("bm25s", "numpy_exact", "hnswlib", "hybrid_rrf"):
        rows.append((f"python {mode}", "python", ("latency_ms", mode)))
    for label, system, (section, key) in rows:
        cells = []
        for n in sizes:
            r = _get(res, system, n)
            s = (r or {}).get(section, {}).get(key)
            if system == "amem" and r and key in (r.get("unavailable") or {}):
                cells.append("not available")
            else:
                cells.append(f"{_ms(s['p50'])} / {_ms(s['p95'])} / {_ms(s['p99'])}" if s else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    # ratios
    lines += ["", "## Ratios (p50)", "",
              "| ratio | " + " | ".join(f"{n:,}" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    ratio_rows = [
        ("amem bm25 / floor bm25@256", ("amem", "latency_ms", "bm25"), ("amem", "floor_ms", "bm25@256")),
        ("amem vector / floor knn@256", ("amem", "latency_ms", "vector"), ("amem", "floor_ms", "knn@256")),
        ("amem hybrid / floor both@256 (goal <= 1.3x)", ("amem", "latency_ms", "hybrid"), ("amem", "floor_ms", "both@256")),
        ("amem hybrid / floor both@50", ("amem", "latency_ms", "hybrid"), ("amem", "floor_ms", "both@50")),
        ("amem hybrid / lancedb hybrid", ("amem", "latency_ms", "hybrid"), ("lancedb", "latency_ms", "hybrid")),
        ("amem bm25 / lancedb bm25", ("amem", "latency_ms", "bm25"), ("lancedb", "latency_ms", "bm25")),
        ("amem vector / lancedb vector", ("amem", "latency_ms", "vector"), ("lancedb", "latency_ms", "vector")),
        ("amem hybrid / lancedb-ann hybrid", ("amem", "latency_ms", "hybrid"), ("lancedb-ann", "latency_ms", "hybrid")),
        ("amem hybrid / python hybrid_rrf", ("amem", "latency_ms", "hybrid"), ("python", "latency_ms", "hybrid_rrf")),
        ("floor bm25@256 / bm25s", ("amem", "floor_ms", "bm25@256"), ("python", "latency_ms", "bm25s")),
        ("floor knn@256 / numpy exact", ("amem", "floor_ms", "knn@256"), ("python", "latency_ms", "numpy_exact")),
    ]
    for label, (sa, seca, ka), (sb, secb, kb) in ratio_rows:
        cells = []
        for n in sizes:
            a = ((_get(res, sa, n) or {}).get(seca) or {}).get(ka) or {}
            b = ((_get(res, sb, n) or {}).get(secb) or {}).get(kb) or {}
            cells.append(_ratio(a.get("p50"), b.get("p50")))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += _recall_section(res, sizes)
    lines += _agent_loop_section(res)
    # where the product's time goes (its own trace timings)
    staged = [(n, r) for n in sizes if (r := _get(res, "amem", n)) and r.get("stages_ms")]
    if staged:
        stage_keys = ["optionsMs", "vectorMs", "bm25Ms", "fuseMs", "graphMs", "hydrateMs", "contextMs", "traceMs", "totalMs"]
        lines += ["", "## Inside fn::amem::documents::query (mean ms per stage, from trace.timings)", "",
                  "| size / mode | " + " | ".join(k.removesuffix("Ms") for k in stage_keys) + " | round trip p50 |",
                  "|---|" + "---|" * (len(stage_keys) + 1)]
        for n, r in staged:
            for mode, st in r["stages_ms"].items():
                rt = (r.get("latency_ms", {}).get(mode) or {}).get("p50")
                lines.append(f"| {n:,} {mode} | " + " | ".join(_ms(st.get(k)) for k in stage_keys) + f" | {_ms(rt)} |")
    # ingest
    lines += ["", "## Ingest throughput (chunks/s)", "",
              "| system | " + " | ".join(f"{n:,}" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    ingest_rows: tuple[tuple[str, str, Callable[[dict[str, Any]], str]], ...] = (
        ("amem bulk INSERT (both indexes, vectors given)", "amem", lambda r: f"{r['ingest']['chunks_per_s']:.0f}"),
        ("amem product path, with embedding", "amem-ingest", lambda r: f"{r['chunks_per_s']:.1f}"),
        ("amem product path, without embedding time", "amem-ingest", lambda r: f"{r['chunks_per_s_without_embedding']:.1f}"),
        ("lancedb add + FTS index", "lancedb", lambda r: f"{r['ingest']['chunks_per_s']:.0f}"),
        ("lancedb-ann add + FTS + IVF_HNSW_SQ index", "lancedb-ann", lambda r: f"{r['ingest']['chunks_per_s']:.0f}"),
        ("python bm25s index + hnswlib build", "python", lambda r: f"{r['ingest']['chunks_per_s']:.0f}"),
    )
    for label, system, fmt in ingest_rows:
        lines.append(f"| {label} | " + " | ".join(fmt(r) if (r := _get(res, system, n)) else "-" for n in sizes) + " |")
    ing = [r for r in res if r.get("system") == "amem-ingest" and "error" not in r]
    if ing:
        lines += ["", "Product path detail: " + "; ".join(
            f"{r['size']:,}: {r['documents']} documents -> {r['chunks']} chunks + {r['keywords']} keywords, "
            f"{r['embedded_texts']} texts embedded ({r['cache_misses']} computed) in {r['embed_seconds']} s, "
            f"engine {r['engine_seconds']} s" for r in ing) + "."]
    # recall, size, memory
    lines += ["", "## Vector recall@10 against exact numpy search", "",
              "| system | " + " | ".join(f"{n:,}" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    for label, system, key in (("amem vector mode (HNSW, pool 256)", "amem", "vector"),
                               ("engine floor KNN top-50 (EF 64)", "amem", "floor_knn"),
                               ("lancedb vector (flat)", "lancedb", "vector"),
                               ("lancedb-ann vector (IVF_HNSW_SQ)", "lancedb-ann", "vector"),
                               ("hnswlib (M 12, EFC 150, EF 256)", "python", "hnswlib")):
        cells = []
        for n in sizes:
            r = _get(res, system, n)
            v = (r or {}).get("recall@10", {}).get(key)
            cells.append(f"{v:.3f}" if isinstance(v, (int, float)) and not math.isnan(v) else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "## Size on disk (MB) and peak RSS (MB)", "",
              "| system | " + " | ".join(f"{n:,}" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    for label, system in (("amem", "amem"), ("amem product path", "amem-ingest"), ("lancedb", "lancedb"), ("lancedb-ann", "lancedb-ann"),
                          ("python (in memory)", "python")):
        cells = []
        for n in sizes:
            r = _get(res, system, n)
            if not r:
                cells.append("-")
                continue
            size = r.get("size_bytes")
            cells.append(f"{size / 1e6:.0f} / {r['peak_rss_mb']:.0f}" if size else f"- / {r['peak_rss_mb']:.0f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += curve_section(res, sizes) + throughput_section(res, sizes) + split_section(res, sizes) + machine_section(report)
    if errors:
        lines += ["", "## Failed runs", ""] + [f"- {r['system']} at {r['size']:,}: {r['error']}" for r in errors]
    return "\n".join(lines) + "\n"


def plot_latency(report: dict[str, Any], path: Path) -> Path | None:
    """Latency (p50) vs corpus size, log-log, one line per system/mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = report["results"]
    sizes = report["sizes"]
    series = [("amem", "latency_ms", m, f"amem {m}", "-") for m in AMEM_MODES]
    series += [("amem", "floor_ms", k, f"floor {k}", ":") for k in ("bm25@256", "knn@256", "both@256")]
    series += [("lancedb", "latency_ms", m, f"lancedb {m}", "--") for m in ("bm25", "vector", "hybrid")]
    series += [("python", "latency_ms", m, f"python {m}", "-.") for m in ("bm25s", "numpy_exact", "hnswlib", "hybrid_rrf")]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    drawn = 0
    colours = [plt.get_cmap("tab20")(i) for i in range(20)]
    for i, (system, section, key, label, style) in enumerate(series):
        xs, ys = [], []
        for n in sizes:
            s = ((_get(res, system, n) or {}).get(section) or {}).get(key)
            if s and s.get("p50"):
                xs.append(n)
                ys.append(s["p50"])
        if xs:
            ax.plot(xs, ys, style, marker="os^D"[i % 4], color=colours[i % len(colours)], label=label)
            drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks")
    ax.set_ylabel("p50 latency (ms)")
    ax.set_title(f"Query latency vs corpus size (k=10; {report['machine']['cpus']} cores)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
