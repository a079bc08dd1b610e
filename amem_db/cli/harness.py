"""`amem-db eval` (retrieval quality on BEIR-layout collections) and
`amem-db bench` (ingest / latency / size / memory against the raw engine and peers).

The work lives in ``amem_db.harness`` (the ``eval`` / ``bench`` extras); these
are the typer wrappers.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..constants import MAX_K
from ..errors import AmemError
from .app import EXIT_ERROR, Session, err, json_option, out

_COLUMNS = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
            TimeElapsedColumn())


def require_extra(modules: list[str], extra: str) -> None:
    """A clear one-line error instead of an ImportError traceback."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise AmemError(f"{', '.join(missing)} not installed: pip install 'amem-db[{extra}]'", code="missing_dependency")


def eval_progress(bar: Progress, task: TaskID, name: str) -> Any:
    """The progress callback of one dataset's evaluation, drawing on ``bar``."""

    def progress(kind: str, info: dict[str, Any]) -> None:
        if kind == "documents":
            bar.update(task, description=f"{name}: ingest", total=info["total"], completed=0)
        elif kind == "document":
            bar.advance(task)
            bar.update(task, info=f"{info['chunks']} chunks")
        elif kind == "turns":
            bar.update(task, description=f"{name}: write turns", total=info["total"], completed=0)
        elif kind == "turn":
            bar.update(task, completed=info["done"], info=f"{info['passages']} passages")
        elif kind == "embedded":
            rate = info["total"] / info["seconds"] if info["seconds"] else 0
            bar.update(task, info=f"embedding {rate:.1f} texts/s")
        elif kind == "mode":
            bar.update(task, description=f"{name}: {info['mode']}", total=info["total"], completed=0, info="")
        elif kind == "query":
            bar.update(task, completed=info["done"])

    return progress


async def eval_command(
    session: Session,
    datasets: list[Path] = typer.Argument(..., help="BEIR-layout folder(s): corpus.jsonl, queries.jsonl, qrels/<split>.tsv"),
    split: str | None = typer.Option(None, help="qrels split to score (default: the only one in qrels/)"),
    modes: str | None = typer.Option(None, help="comma-separated modes (documents: bm25,vector,hybrid,hybrid_graph, each also as MODE+rerank: the in-database rescore on; "
                                     "conversations: bm25,vector,hybrid, graph on request); a mode the engine does not "
                                     "implement yet is reported as not available"),
    k: int = typer.Option(50, help="passages requested per query (max 50); Recall@k is reported next to @10"),
    compare: Path | None = typer.Option(None, "--compare", help="an earlier report.json (or its folder): print deltas per metric and mode"),
    out_dir: Path | None = typer.Option(None, "--out", help="report folder (default results/eval/<dataset>/; "
                                           "with several datasets: <out>/<dataset>/ plus <out>/summary.*)"),
    limit_queries: int | None = typer.Option(None, help="score only the first N judged queries (quick runs)"),
    threshold: float | None = typer.Option(None, help="minimum cosine of the vector leg (default: the API default, calibrated per embedding model: MiniLM 0.3)"),
    filter_json: str | None = typer.Option(None, "--filter", help='query filter as JSON, passed to every query, '
                                              'e.g. \'{"mimeType": ["application/jsonl"]}\''),
    title: str = typer.Option("separate", help="separate: titles stay document metadata (the product's JSONL path); "
                              "prepend: title + blank line + text is what gets chunked, embedded and indexed"),
    vector_weight: float | None = typer.Option(None, help="conversations only: recall's vectorWeight (default 0.5), "
                                               "the vector leg's share of RRF in hybrid"),
    query_window: bool = typer.Option(True, "--query-window/--no-query-window",
                                      help="conversations only: recall reads time words in the questions (default on)"),
    strict_window: bool = typer.Option(False, "--strict-window", help="conversations only: keep only turns in the query window"),
    window_weight: float | None = typer.Option(None, help="conversations only: recall's windowWeight (the query-window boost)"),
    adjacent_weight: float | None = typer.Option(None, help="conversations only: recall's adjacentWeight (the share of a "
                                                 "strong hit's score its session neighbours get; 0 = off)"),
    graph_weight: float | None = typer.Option(None, help="conversations only: recall's graphWeight (the graph leg's RRF weight in hybrid)"),
    speaker_weight: float | None = typer.Option(None, help="conversations only: recall's speakerWeight (the boost of turns "
                                                "linked to a person the question names; 0 = off)"),
    speaker: str = typer.Option("prefix-text", help="conversations only: prefix-text (the default) writes each turn as "
                                "'Speaker: text'; prefix: the same with the speaker as the write's speaker entity (what mode "
                                "graph walks; hybrid R@10 on LoCoMo dev 80.2 -> 79.2, recall ~1.2x slower: issue 26); entity: the bare text with "
                                "the speaker entity; none: the bare text alone"),
    observations: str | None = typer.Option(None, help="conversations only: also write observations.jsonl (the dataset's "
                                            "LLM-written observations, each with its evidence turns) beside the turns, "
                                            "as 'passages' (knowledge memory passages) or 'facts' (an attribute "
                                            "'observation' of the speaker); a hit on one credits its evidence turns"),
    observations_only: bool = typer.Option(False, "--observations-only", help="conversations only: write the observations "
                                           "instead of the turns (needs --observations)"),
    db_dir: Path = typer.Option(Path("results/.db"), help="where the cached per-dataset databases live"),
    fresh: bool = typer.Option(False, "--fresh", help="re-ingest even if a cached database exists"),
    json_output: bool = json_option("print the report(s) as JSON"),
) -> None:
    """Score retrieval (nDCG@10, Recall@10, Recall@k, MRR@10 via ranx) per mode and per query type.

    Ingests the corpus into a database cached by content hash (results/.db/), runs every judged query through mem.documents.query, and writes report.md, report.json and report.png.

    A conversation collection (corpus lines are dialog turns with metadata.conversation / dia_id, e.g. LoCoMo) is written turn by turn through mem.facts.write as memory passages and its questions go through mem.recall with the conversation as lens; it reports Recall@5/10/25/50 and nDCG@10 overall and per question category. --observations passages|facts also writes the collection's observations.jsonl and scores an observation hit as its evidence turns.

    --url (e.g. mem://) replaces the cached database; --embedder picks the model.

    Example: amem-db eval ../shared/datasets/scifact --modes bm25,vector,hybrid --compare old/report.json

    Example: amem-db eval ../shared/datasets/locomo --observations passages --out results/eval-obs/passages
    """
    require_extra(["ranx", "matplotlib"], "eval")
    from ..embedding import get_embedder
    from ..harness import report as rp
    from ..harness.common import json_safe
    from ..harness.database import TITLE_MODES
    from ..harness.datasets import load_dataset
    from ..harness.evaluation import evaluate_dataset
    from ..harness.locomo import (
        OBSERVATION_KINDS,
        SPEAKER_MODES,
        Conversations,
        evaluate_conversations,
        is_conversation_collection,
        load_conversations,
    )

    if not 1 <= k <= MAX_K:  # recall's maximum is the same 50
        raise typer.BadParameter(f"k must be 1..{MAX_K} (the query API's maximum)", param_hint="--k")
    if title not in TITLE_MODES:
        raise typer.BadParameter(f"one of {', '.join(TITLE_MODES)}", param_hint="--title")
    if speaker not in SPEAKER_MODES:
        raise typer.BadParameter(f"one of {', '.join(SPEAKER_MODES)}", param_hint="--speaker")
    if observations is not None and observations not in OBSERVATION_KINDS:
        raise typer.BadParameter(f"one of {', '.join(OBSERVATION_KINDS)}", param_hint="--observations")
    if observations_only and observations is None:
        raise typer.BadParameter("needs --observations passages|facts", param_hint="--observations-only")
    if compare is not None and len(datasets) > 1:
        raise typer.BadParameter("--compare takes one dataset at a time", param_hint="--compare")
    try:
        filter_obj = json.loads(filter_json) if filter_json else None
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint="--filter") from None
    old = rp.load_report(compare) if compare is not None else None
    loaded = []
    for d in datasets:
        conversations = is_conversation_collection(d)
        if not conversations and vector_weight is not None:
            raise typer.BadParameter(f"{d} is a document collection: --vector-weight applies to conversations only",
                                     param_hint="--vector-weight")
        if not conversations and observations is not None:
            raise typer.BadParameter(f"{d} is a document collection: --observations applies to conversations only",
                                     param_hint="--observations")
        if conversations and (filter_obj is not None or title != "separate" or threshold is not None):
            raise typer.BadParameter(f"{d} is a conversation collection: --filter, --title and --threshold apply to "
                                     "documents only", param_hint="DATASETS")
        mode_list = _mode_list(modes, conversations)
        try:
            ds = load_conversations(d, split, limit_queries=limit_queries) if conversations else \
                load_dataset(d, split, limit_queries=limit_queries)
        except (FileNotFoundError, ValueError) as exc:
            raise typer.BadParameter(str(exc), param_hint="DATASETS") from None
        loaded.append((ds, mode_list))
    embedder = get_embedder(session.embedder_spec)

    reports = []
    for ds, mode_list in loaded:
        with Progress(*_COLUMNS, console=err, transient=True, disable=json_output) as bar:
            task = bar.add_task(f"{ds.name}: database", total=None, info="")
            progress = eval_progress(bar, task, ds.name)
            if isinstance(ds, Conversations):
                reports.append(await evaluate_conversations(
                    ds, embedder, modes=mode_list, k=k, speaker=speaker, vector_weight=vector_weight,
                    window={"query_window": query_window, "strict_window": strict_window, "window_weight": window_weight,
                            "adjacent_weight": adjacent_weight, "graph_weight": graph_weight,
                            "speaker_weight": speaker_weight},
                    url=session.options.url, db_dir=db_dir,
                    fresh=fresh, progress=progress, observations=observations, observations_only=observations_only))
            else:
                reports.append(await evaluate_dataset(
                    ds, embedder, modes=mode_list, k=k, threshold=threshold, filter=filter_obj, title_mode=title,
                    url=session.options.url, db_dir=db_dir, fresh=fresh, progress=progress))
    root = out_dir if (out_dir is not None and len(reports) > 1) else rp.DEFAULT_OUT_ROOT
    for report in reports:
        target = out_dir if (out_dir is not None and len(reports) == 1) else root / report["dataset"]
        comparison = rp.compare_reports(report, old) if old is not None else None
        paths = rp.write_report(report, target, comparison)
        if json_output:
            print(json.dumps(json_safe(report | ({"comparison": comparison} if comparison else {})), indent=2, default=str))
            continue
        print_eval_report(report)
        if comparison is not None:
            out.print(f"compared with {compare}:")
            print_comparison(comparison)
        out.print(f"wrote {paths['md']}, {paths['json'].name}, {paths['png'].name}")
    if len(reports) > 1:
        png = rp.plot_reports(reports, root / "summary.png")
        (root / "summary.json").write_text(json.dumps(json_safe(
            [{k: v for k, v in r.items() if k != "tags"} for r in reports]), indent=2, default=str))
        if not json_output:
            out.print(f"wrote {png} and summary.json")


def _mode_list(modes: str | None, conversations: bool) -> list[str]:
    """The modes asked for (or the collection kind's default), each one the kind knows."""
    from ..harness.evaluation import ALL_MODES, RERANK_MODES
    from ..harness.locomo import DEFAULT_RECALL_MODES, RECALL_MODES

    known, default = (RECALL_MODES, DEFAULT_RECALL_MODES) if conversations else (ALL_MODES + RERANK_MODES, ALL_MODES)
    mode_list = [m.strip() for m in modes.split(",") if m.strip()] if modes else list(default)
    bad = [m for m in mode_list if m not in known]
    if bad:
        raise typer.BadParameter(f"unknown mode {bad[0]!r}; modes{' of recall' if conversations else ''}: "
                                 f"{', '.join(known)}", param_hint="--modes")
    return mode_list


def print_eval_report(report: dict[str, Any]) -> None:
    metrics = report["metrics"]
    db = report["database"]
    unit = "turns" if report.get("kind") == "conversations" else "documents"
    out.print(f"[bold]{report['dataset']}[/] ({report['split']}): {report['queries']} queries, "
              f"{report['corpus_documents']} {unit}, database {'cached' if db['cached'] else 'ingested'} "
              f"in {report['timings']['prepare_seconds']} s, total {report['timings']['total_seconds']} s")
    table = Table("mode", *metrics, "empty", "p50 ms", "p95 ms")
    for mode, s in report["modes"].items():
        if not s["available"]:
            table.add_row(mode, *(["n/a"] * len(metrics)), "-", "-", "not available")
            continue
        table.add_row(mode, *(f"{s['metrics'][m]:.4f}" for m in metrics), str(s["empty_results"]),
                      f"{s['latency_ms']['p50']:.1f}", f"{s['latency_ms']['p95']:.1f}")
    out.print(table)
    if report.get("kind") == "conversations":
        print_category_table(report)


def print_category_table(report: dict[str, Any]) -> None:
    """Recall@10 per question category and mode (the rest is in report.md)."""
    live = [m for m, s in report["modes"].items() if s["available"]]
    table = Table("category", "n", *(f"{m} R@10" for m in live), title="per category")
    for name, n in report["categories"].items():
        table.add_row(name, str(n), *(f"{report['modes'][m]['by_category'][name].get('recall@10', float('nan')):.4f}"
                                      if n else "-" for m in live))
    out.print(table)


def print_comparison(rows: list[dict[str, Any]]) -> None:
    table = Table("mode", "metric", "old", "new", "delta")
    for r in rows:
        if r["metric"] is None:
            table.add_row(r["mode"], "-", "-", "-", r["note"])
        else:
            colour = "green" if r["delta"] > 0 else "red" if r["delta"] < 0 else ""
            delta = f"{r['delta']:+.4f}"
            table.add_row(r["mode"], r["metric"], f"{r['old']:.4f}", f"{r['new']:.4f}",
                          f"[{colour}]{delta}[/]" if colour else delta)
    out.print(table)


def bench_command(
    session: Session,
    sizes: str = typer.Option("1000,10000,100000", help="corpus sizes in chunks, comma-separated"),
    systems: str = typer.Option("amem,amem-ingest,agent-loop,lancedb,lancedb-ann,python,throughput,hnsw-curve,vector-split",
                                help="amem (product query + raw engine floor), amem-ingest (the stored-function ingest path), "
                                "agent-loop (one LoCoMo conversation replayed: remember a turn, recall a question; once, at the first size), "
                                "lancedb (FTS index, flat vector search: its default), lancedb-ann (the same with an IVF_HNSW_SQ vector index), python (bm25s/numpy/hnswlib), throughput (queries/s, 1/2/4 clients), "
                                "hnsw-curve (EF vs recall vs latency), vector-split (vectors out of the records, <= 10k)"),
    queries: int = typer.Option(20, help="timed queries per size and mode (after the warm-up)"),
    warmup: int = typer.Option(2, help="untimed warm-up queries per mode"),
    ingest_sizes: str = typer.Option("1000,10000", help="sizes at which amem-ingest runs (the product path stores ~120 chunks/s: 100k takes 15 min or more)"),
    throughput_sizes: str = typer.Option("1000,10000", help="sizes at which the throughput system runs (1, 2, 4 clients; embedded and dev server)"),
    recall_sizes: str = typer.Option("1000,10000", help="sizes at which the amem run also writes memory and times recall (100k adds ~30 min of writes)"),
    backend: str = typer.Option("surrealkv", help="engine storage for the amem runs: surrealkv (the product's default; the bulk load reopens the engine past its WAL limit, docs/ENGINE-ISSUES.md #8), mem, surrealkv+versioned, file"),
    batch: int = typer.Option(50, help="rows per INSERT statement in the amem bulk load"),
    data_root: Path | None = typer.Option(None, envvar="AMEM_DATASETS", show_default="../shared/datasets beside the repository",
                                          help="where the BEIR collections live (env AMEM_DATASETS)"),
    datasets: str = typer.Option("scifact,cranfield,cisi", help="collections the passages are cut from"),
    out_dir: Path = typer.Option(Path("results/bench"), "--out", help="report folder (bench.json, report.md, latency.png)"),
    timeout: float = typer.Option(7200, help="seconds before one system/size run is abandoned (amem at 100k on surrealkv took 40 min)"),
    keep_db: bool = typer.Option(False, "--keep-db", help="keep the benchmark databases (default: deleted after each run)"),
    loop_speaker: str | None = typer.Option(None, "--loop-speaker", show_default="as amem-db eval writes a turn",
                                            help="agent-loop only: how a turn is written, as eval's --speaker: prefix "
                                            "(with the speaker entity), prefix-text (without), entity, none"),
) -> None:
    """Ingest throughput, query latency p50/p95/p99 per mode, vector recall@10, size and peak RSS per corpus size.

    Side by side on the same data and embeddings: the raw engine floor (bare BM25 / KNN SELECTs), LanceDB, and bm25s / numpy / hnswlib.

    Passages come from the shared collections through the product's chunker, embedded with --embedder through the disk cache (after `amem-db eval` nothing is re-embedded). Sizes past the real passages repeat them with fresh ids. Each system and size runs in its own process. Numbers are machine-specific.

    Exits 1 if any system/size run failed. Example: amem-db bench --sizes 1000,10000 --queries 20 --out results/bench
    """
    from ..embedding import get_embedder
    from ..harness.bench.run import DEFAULT_SYSTEMS, run_bench

    try:
        size_list = [int(s) for s in sizes.split(",") if s.strip()]
        ingest_list = [int(s) for s in ingest_sizes.split(",") if s.strip()]
        recall_list = [int(s) for s in recall_sizes.split(",") if s.strip()]
        throughput_list = [int(s) for s in throughput_sizes.split(",") if s.strip()]
    except ValueError:
        raise typer.BadParameter("sizes are whole numbers, e.g. 1000,10000", param_hint="--sizes") from None
    system_list = [s.strip() for s in systems.split(",") if s.strip()]
    needs = {"lancedb": ["lancedb", "pyarrow"], "lancedb-ann": ["lancedb", "pyarrow"], "python": ["bm25s", "hnswlib"]}
    require_extra(["matplotlib", "numpy"] + [m for s in system_list for m in needs.get(s, [])], "bench")
    unknown = [s for s in system_list if s not in DEFAULT_SYSTEMS]
    if unknown:
        raise typer.BadParameter(f"unknown system {unknown[0]!r}; systems: {', '.join(DEFAULT_SYSTEMS)}", param_hint="--systems")
    if backend not in ("surrealkv", "surrealkv+versioned", "file", "mem"):
        raise typer.BadParameter("surrealkv, surrealkv+versioned, file or mem", param_hint="--backend")
    from ..harness.locomo import SPEAKER_MODES

    if loop_speaker is not None and loop_speaker not in SPEAKER_MODES:
        raise typer.BadParameter(f"one of {', '.join(SPEAKER_MODES)}", param_hint="--loop-speaker")
    spec = session.embedder_spec
    report = run_bench(sizes=size_list, systems=system_list, out_dir=out_dir, embedder=get_embedder(spec),
                       embedder_spec=spec, queries=queries, reps=warmup, backend=backend, batch=batch,
                       ingest_sizes=ingest_list, recall_sizes=recall_list,
                       throughput_sizes=throughput_list, data_root=data_root,
                       datasets=tuple(d.strip() for d in datasets.split(",") if d.strip()), timeout=timeout,
                       keep_db=keep_db, loop_speaker=loop_speaker, progress=lambda msg: err.print(msg, highlight=False))
    print((out_dir / "report.md").read_text())
    failed = [r for r in report["results"] if "error" in r]
    out.print(f"wrote {out_dir / 'report.md'}, bench.json, latency.png in {report['seconds']:.0f} s"
              + (f"; {len(failed)} run(s) failed" if failed else ""))
    if failed:
        raise typer.Exit(EXIT_ERROR)
