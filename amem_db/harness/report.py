"""The evaluation report: Markdown, JSON, the PNG plot, and deltas against an earlier report."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .common import json_safe
from .query_types import OVERLAP_BUCKETS, QUERY_TYPES

DEFAULT_OUT_ROOT = Path("results") / "eval"


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)

def render_markdown(report: dict[str, Any], comparison: list[dict[str, Any]] | None = None) -> str:
    metrics = report["metrics"]
    lines = [f"# Retrieval evaluation: {report['dataset']} ({report['split']} split)", ""]
    db = report["database"]
    ing = report["ingest"]
    lines += [
        f"- corpus: {report['corpus_documents']} documents; {report['queries']} judged queries; "
        f"k = {report['k']} passages per query (deduplicated to documents); threshold = "
        f"{report['threshold'] if report['threshold'] is not None else 'default (calibrated per embedding model; MiniLM 0.3)'}; title = {report['title_mode']}"
        + (f"; filter = {json.dumps(report['filter'])}" if report.get("filter") else ""),
        f"- embedder: {report['embedder']}; engine {report['engine']['version']}",
        f"- database: {db['url']} ({'cached' if db['cached'] else 'ingested now'}"
        + (f", {db['size_bytes'] / 1e6:.1f} MB on disk" if db.get("size_bytes") else "") + ")",
        f"- ingest: {ing.get('documents')} documents"
        + (f" ({len(ing['skipped_empty'])} empty ones left out: {', '.join(x.rsplit('#', 1)[-1] for x in ing['skipped_empty'])})"
           if ing.get("skipped_empty") else "")
        + f" -> {ing.get('chunks')} chunks, {ing.get('keywords')} keywords, "
        f"{ing.get('embedded_texts')} texts embedded in {ing.get('embed_seconds')} s "
        f"(cache {ing.get('embedding_cache_hits')} hits / {ing.get('embedding_cache_misses')} misses); "
        f"total {ing.get('seconds')} s",
        f"- this run: {report['timings']['total_seconds']} s (database ready after {report['timings']['prepare_seconds']} s)",
        "",
        "## Metrics per mode (ranx)",
        "",
        "| mode | " + " | ".join(metrics) + " | empty | p50 ms | p95 ms |",
        "|---|" + "---|" * (len(metrics) + 3),
    ]
    for mode, s in report["modes"].items():
        if not s["available"]:
            lines.append(f"| {mode} | " + " | ".join("n/a" for _ in metrics) + " | - | - | - |")
            continue
        lines.append(f"| {mode} | " + " | ".join(_fmt(s["metrics"][m]) for m in metrics)
                     + f" | {s['empty_results']} | {_fmt(s['latency_ms']['p50'], 1)} | {_fmt(s['latency_ms']['p95'], 1)} |")
    na = [f"- {m}: not available ({s['reason']})" for m, s in report["modes"].items() if not s["available"]]
    na += [f"- {m}: the vector leg returned no candidate at all for {s['vector_leg_no_candidates']} of {s['queries']} "
           "queries (an empty index, or an engine fault: see docs/EVALUATION.md)"
           for m, s in report["modes"].items() if s.get("available") and s.get("vector_leg_no_candidates")]
    if na:
        lines += ["", *na]
    lines += ["", "## Per query type (nDCG@10 / Recall@10; n = queries)", "",
              "| type | n | " + " | ".join(m for m, s in report["modes"].items() if s["available"]) + " |",
              "|---|---|" + "---|" * sum(1 for s in report["modes"].values() if s["available"])]
    counts = report["query_types"]
    for group in QUERY_TYPES + OVERLAP_BUCKETS:
        cells = []
        for s in report["modes"].values():
            if not s["available"]:
                continue
            g = s["by_type"][group]
            if group == "no-answer":
                cells.append(f"top score {_fmt(g.get('mean_top_score'), 3)}" if g["n"] else "-")
            else:
                cells.append(f"{_fmt(g.get('ndcg@10'), 3)} / {_fmt(g.get('recall@10'), 3)}" if g["n"] else "-")
        lines.append(f"| {group} | {counts[group]} | " + " | ".join(cells) + " |")
    lines += ["", "Query types are a heuristic (amem_db/harness/query_types.py `tag_query`, docs/EVALUATION.md)."]
    if comparison:
        lines += ["", "## Compared with the previous report", "", render_comparison(comparison)]
    return "\n".join(lines) + "\n"

def compare_reports(new: dict[str, Any], old: dict[str, Any]) -> list[dict[str, Any]]:
    """Deltas (new - old) per mode and metric present in both."""
    rows = []
    for mode, s in new["modes"].items():
        o = old.get("modes", {}).get(mode)
        if not s.get("available") or not o or not o.get("available"):
            rows.append({"mode": mode, "metric": None, "old": None, "new": None, "delta": None,
                         "note": "not available in " + ("new" if not s.get("available") else "old")})
            continue
        for metric in new["metrics"]:
            if metric in o["metrics"]:
                nv, ov = s["metrics"][metric], o["metrics"][metric]
                rows.append({"mode": mode, "metric": metric, "old": ov, "new": nv, "delta": nv - ov})
    return rows

def render_comparison(rows: list[dict[str, Any]]) -> str:
    out = ["| mode | metric | old | new | delta |", "|---|---|---|---|---|"]
    for r in rows:
        if r["metric"] is None:
            out.append(f"| {r['mode']} | - | - | - | {r['note']} |")
        else:
            out.append(f"| {r['mode']} | {r['metric']} | {r['old']:.4f} | {r['new']:.4f} | {r['delta']:+.4f} |")
    return "\n".join(out)

def plot_reports(reports: list[dict[str, Any]], path: Path) -> Path:
    """Grouped bars: one panel per metric, datasets on x, one bar per mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = reports[0]["metrics"]
    modes = list(dict.fromkeys(m for r in reports for m, s in r["modes"].items() if s["available"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.2 * len(metrics) + 1, 3.6), squeeze=False)
    width = 0.8 / max(len(modes), 1)
    for ax, metric in zip(axes[0], metrics):
        for j, mode in enumerate(modes):
            vals = [r["modes"].get(mode, {}).get("metrics", {}).get(metric, float("nan"))
                    if r["modes"].get(mode, {}).get("available") else float("nan") for r in reports]
            xs = [i + (j - (len(modes) - 1) / 2) * width for i in range(len(reports))]
            ax.bar(xs, vals, width=width, label=mode)
        ax.set_xticks(range(len(reports)), [r["dataset"] for r in reports])
        ax.set_ylim(0, 1)
        ax.set_title(metric)
        ax.grid(axis="y", alpha=0.3)
    # one legend for the figure, below the panels, where it hides no bar
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=max(len(modes), 1), fontsize=8, frameon=False)
    fig.suptitle(f"amem-db retrieval ({reports[0]['embedder']}; shared splits)", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

def write_report(report: dict[str, Any], out_dir: Path, comparison: list[dict[str, Any]] | None = None) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "report.json", "md": out_dir / "report.md", "png": out_dir / "report.png"}
    data = dict(report)
    if comparison:
        data["comparison"] = comparison
    paths["json"].write_text(json.dumps(json_safe(data), indent=2, default=str))
    if report.get("kind") == "conversations":  # a conversation collection (harness/locomo.py) has its own tables
        from .locomo import render_markdown as render_conversations

        md = render_conversations(report) + (f"\n## Compared with the previous report\n\n{render_comparison(comparison)}\n"
                                             if comparison else "")
    else:
        md = render_markdown(report, comparison)
    paths["md"].write_text(md)
    plot_reports([report], paths["png"])
    return paths

def load_report(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if p.is_dir():
        p = p / "report.json"
    report: dict[str, Any] = json.loads(p.read_text())
    return report
