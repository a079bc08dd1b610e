"""BEIR-layout collections: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Dataset:
    name: str
    path: Path
    split: str
    corpus_path: Path
    queries: dict[str, str]  # judged queries only, in qrels order
    qrels: dict[str, dict[str, int]]
    corpus_docs: int
    titles: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)

    def relevant(self, qid: str) -> list[str]:
        return [d for d, s in self.qrels.get(qid, {}).items() if s > 0]

def available_splits(path: Path) -> list[str]:
    return sorted(p.name.removesuffix(".tsv") for p in (path / "qrels").glob("*.tsv"))

def load_dataset(path: str | Path, split: str | None = None, *, limit_queries: int | None = None) -> Dataset:
    """Read a BEIR-layout directory. ``split`` defaults to the only qrels file present."""
    path = Path(path)
    corpus = path / "corpus.jsonl"
    queries_file = path / "queries.jsonl"
    for f in (corpus, queries_file, path / "qrels"):
        if not f.exists():
            raise FileNotFoundError(f"{path} is not a BEIR-layout dataset: {f.name} is missing "
                                    "(expected corpus.jsonl, queries.jsonl, qrels/<split>.tsv)")
    splits = available_splits(path)
    if split is None:
        if len(splits) != 1:
            raise ValueError(f"{path}/qrels has {len(splits)} splits ({', '.join(splits) or 'none'}): choose one with --split")
        split = splits[0]
    elif split not in splits:
        raise ValueError(f"no qrels/{split}.tsv in {path} (present: {', '.join(splits) or 'none'})")

    qrels: dict[str, dict[str, int]] = {}
    with open(path / "qrels" / f"{split}.tsv", newline="") as fh:
        rows = csv.reader(fh, delimiter="\t")
        header = next(rows, None)
        if header is None or [h.strip() for h in header[:3]] != ["query-id", "corpus-id", "score"]:
            raise ValueError(f"qrels/{split}.tsv must start with the header 'query-id<TAB>corpus-id<TAB>score'")
        for row in rows:
            if len(row) < 3:
                continue
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = int(float(row[2]))

    all_queries: dict[str, str] = {}
    with open(queries_file) as fh:
        for line in fh:
            if line.strip():
                obj = json.loads(line)
                all_queries[str(obj["_id"])] = obj["text"]
    missing = [q for q in qrels if q not in all_queries]
    if missing:
        raise ValueError(f"{len(missing)} judged queries have no text in queries.jsonl (e.g. {missing[0]})")
    order = sorted(qrels, key=_natural_key)
    if limit_queries is not None:
        order = order[:limit_queries]
        qrels = {q: qrels[q] for q in order}
    titles: dict[str, str] = {}
    texts: dict[str, str] = {}
    with open(corpus) as fh:
        for line in fh:
            if line.strip():
                obj = json.loads(line)
                titles[str(obj["_id"])] = obj.get("title") or ""
                texts[str(obj["_id"])] = obj.get("text") or ""
    return Dataset(name=path.resolve().name, path=path, split=split, corpus_path=corpus,
                   queries={q: all_queries[q] for q in order}, qrels=qrels, corpus_docs=len(texts),
                   titles=titles, texts=texts)

def _natural_key(s: str) -> tuple[int, int, str]:
    return (0, int(s), "") if s.isdigit() else (1, 0, s)
