"""Files in, documents out: walk paths, parse (Python: I/O only), then per
batch one round trip to ``prepare`` (the stored functions chunk and extract
keywords), one embedding pass over every new text, and one round trip to
``ingest::batch`` (groups of documents, a transaction each). The storing of one
batch overlaps the prepare and the embedding of the next one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .db import call_each
from .errors import from_engine_text
from .geometry import polygon_value
from .ingest_batch import ingest_batch
from .maintain import maintain as maintain_indexes
from .models import Document, IngestResult, MaintainReport
from .parsing import ParsedDocument, ParseError, parse_file
from .wire import vectors as packed

Progress = Callable[[str, dict[str, Any]], None]
# per document of a batch: (item, its texts to embed by part or None, its failure or None)
Plan = list[tuple["Item", dict[str, list[str]] | None, IngestResult | None]]
Call = tuple[dict[str, Any], dict[str, Any] | None]  # the arguments of one fn::amem::documents::ingest


@dataclass
class Item:
    """One document ready for the stored functions."""

    name: str  # how the user knows it: a path, or path#id for a corpus line
    doc: dict[str, Any]
    keywords: list[dict[str, Any]] = field(default_factory=list)  # what prepare returned (amem_db/ingest_batch.py)
    sealed: dict[str, Any] | None = None  # prepare's chunks and seal: the batch takes them instead of chunking again


@dataclass
class IngestReport:
    results: list[IngestResult] = field(default_factory=list)
    chunks: int = 0
    keywords: int = 0
    embedded_texts: int = 0
    embed_seconds: float = 0.0
    engine_seconds: float = 0.0  # wall time with a prepare or ingest call in flight (overlaps embedding)
    seconds: float = 0.0
    maintenance: MaintainReport | None = None  # the index rebuilds run after the ingest

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def failed(self) -> list[IngestResult]:
        return [r for r in self.results if r.status == "failed"]


def collect_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files named, and every file under folders named (hidden ones skipped), in a stable order.
    A symbolic link whose target is gone is yielded too, so that it is reported (issue 15
    finding 13: it was skipped without a word)."""
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                dangling = f.is_symlink() and not f.exists()
                if (f.is_file() or dangling) and not any(part.startswith(".") for part in f.relative_to(p).parts):
                    yield f
        else:
            yield p


def doc_object(
    parsed: ParsedDocument,
    *,
    source: str | None,
    title: str | None = None,
    scopes: Sequence[str] | None = None,
    location: str | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A parser result as the document object ``fn::amem::documents::*`` take.
    ``location`` is a default: the file's own (JSONL field, front matter) wins."""
    if isinstance(scopes, str | bytes):
        raise TypeError(f"scopes must be a list of scope paths, not a str: scopes=[{scopes!r}]")
    return {
        "text": parsed.text,
        "title": title or parsed.title,
        "source": source,
        "source_id": parsed.source_id,
        "mime_type": parsed.mime_type,
        "sections": [
            {"heading": s.heading, "level": s.level, "heading_path": list(s.heading_path),
             "char_start": s.char_start, "char_end": s.char_end}
            for s in parsed.sections
        ],
        "segments": [
            {"start_s": float(s.start_s), "end_s": float(s.end_s), "char_start": s.char_start, "char_end": s.char_end}
            for s in parsed.segments
        ],
        "links": [{"href": link.href, "text": link.text} for link in parsed.links],
        "scopes": list(scopes or []),
    } | ({"location": polygon_value(where)} if (where := parsed.location if parsed.location is not None else location) is not None else {})


def items_from_file(
    path: Path,
    *,
    title: str | None = None,
    source: str | None = None,
    scopes: Sequence[str] | None = None,
    mime_type: str | None = None,
    location: str | dict[str, Any] | None = None,
) -> list[Item]:
    parsed = parse_file(path, mime_type=mime_type)
    base = source or str(path)
    if len(parsed) == 1 and parsed[0].source_id is None:
        return [Item(base, doc_object(parsed[0], source=base, title=title, scopes=scopes, location=location))]
    # a corpus file: one document per line, each its own source
    return [
        Item(f"{base}#{p.source_id or i}", doc_object(p, source=f"{base}#{p.source_id or i}", scopes=scopes, location=location))
        for i, p in enumerate(parsed)
    ]


def embedding_text(text: str, title: str | None, heading: str | None) -> str:
    """What a passage is embedded as when embedding context is on: the document's
    title and the passage's section heading, then a blank line, then the passage
    (docs/EVALUATION.md "Retrieval quality levers"). Only the vector sees them: the
    stored passage text and its offsets stay exactly the source's."""
    head = "\n".join(x for x in (title, heading) if x and x.strip())
    return f"{head}\n\n{text}" if head else text


def texts_to_embed(prepared: dict[str, Any], doc: dict[str, Any] | None = None, *,
                   context: bool | None = None, keyword_vectors: bool = False) -> dict[str, list[str]]:
    """What ``fn::amem::documents::prepare`` says will be stored, per kind: the texts to
    embed. With embedding context (``constants.EMBED_CONTEXT`` unless ``context`` says),
    chunks of ``doc`` are embedded with its title and their section heading before them.
    Keywords only with ``keyword_vectors``: by default keyword nodes are stored without
    vectors and embedded on request (amem_db/keyword_vectors.py, docs/RAKE.md)."""
    from .constants import EMBED_CONTEXT

    use = EMBED_CONTEXT if context is None else context
    title = (doc or {}).get("title")
    sections = (doc or {}).get("sections") or []

    def heading(c: dict[str, Any]) -> str | None:
        i = c.get("section")
        return sections[i].get("heading") if isinstance(i, int) and 0 <= i < len(sections) else None

    return {
        "chunks": [embedding_text(c["text"], title, heading(c)) if use and doc is not None else c["text"]
                   for c in prepared["chunks"]],
        "audio": [a["text"] for a in prepared["audio"]],
        "keywords": [k["text"] for k in prepared["keywords"]] if keyword_vectors else [],
        "sections": list(prepared["sections"]),
    }


def _failed(name: str, message: str) -> IngestResult:
    typed = from_engine_text(message)
    if typed is None:
        return IngestResult(status="failed", name=name, error=message, error_code="engine_error")
    return IngestResult(status="failed", name=name, error=typed.message, error_code=typed.code)


async def ingest_items(
    conn: Any,
    embedder: Any | None,
    items: list[Item],
    *,
    batch_size: int = 16,
    report: IngestReport | None = None,
    progress: Progress | None = None,
    after_batch: Callable[[], Awaitable[Any]] | None = None,
    keyword_vectors: bool = False,
) -> IngestReport:
    """``after_batch`` may hand back a new connection (see Memory.reopen_if_wal_full).
    ``keyword_vectors``: embed each document's keywords and store them with its keyword
    nodes, as before issue 25 (default: nodes without vectors, embedded on request by
    amem_db/keyword_vectors.py).

    Pipelined, two ways: while the engine stores batch N it also prepares batch N+1
    (chunking and RAKE: a read, on the engine's other thread), and the embedder (a
    thread: ONNX releases the GIL) works on batch N+1 as soon as that is prepared, so
    on 2 cores the three costs overlap instead of adding up. A reopen (``after_batch``)
    waits until no call is in flight."""
    report = report or IngestReport()
    started = time.perf_counter()
    pending: tuple[Plan, list[Call]] | None = None  # (plan, calls) of the batch waiting to be stored
    for i in range(0, len(items), batch_size):
        batch = items[i : i + batch_size]
        busy = _Busy()
        storing = asyncio.ensure_future(busy.timed(_store_rows(conn, *pending))) if pending is not None else None
        if storing is not None and pending is not None and _sources(batch) & _sources(it for it, _, _ in pending[0]):
            # a source of this batch is being stored now: prepare must see that write (its
            # "unchanged" decides what is embedded), so it waits for the store
            await _settle(storing)
        try:
            prepared = await busy.timed(call_each(conn, "fn::amem::documents::prepare", [(it.doc,) for it in batch]))
        except BaseException:
            await _settle(storing)
            raise
        plan, texts = _plan_batch(batch, prepared, embedder, keyword_vectors)
        embedding = asyncio.create_task(_embed(embedder, texts, report, progress))
        try:
            if storing is not None and pending is not None:
                _record(pending[0], await storing, report, progress)
            report.engine_seconds += busy.seconds()
            if storing is not None and after_batch is not None:
                conn = await after_batch()
        except BaseException:
            embedding.cancel()
            raise
        vectors = await embedding
        pending = (plan, _ingest_calls(plan, vectors, embedder))
    if pending is not None:
        busy = _Busy()
        _record(pending[0], await busy.timed(_store_rows(conn, *pending)), report, progress)
        report.engine_seconds += busy.seconds()
        if after_batch is not None:
            await after_batch()
    report.seconds += time.perf_counter() - started
    return report


class _Busy:
    """The wall time during which at least one engine call of a step was in flight
    (overlapping calls count once): what the engine took, by the client's clock."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []

    async def timed(self, call: Awaitable[Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return await call
        finally:
            self.spans.append((t0, time.perf_counter()))

    def seconds(self) -> float:
        return max(b for _, b in self.spans) - min(a for a, _ in self.spans) if self.spans else 0.0


def _sources(items: Iterable[Item]) -> set[str]:
    return {it.doc["source"] for it in items if isinstance(it.doc.get("source"), str)}


async def _settle(task: asyncio.Future[Any] | None) -> None:
    """Wait for a call in flight (a write cannot be taken back half way) without raising
    its error: whoever awaits the task again reads its outcome."""
    if task is not None:
        await asyncio.gather(task, return_exceptions=True)


def _plan_batch(batch: list[Item], prepared: list[tuple[bool, Any]], embedder: Any | None,
                keyword_vectors: bool = False) -> tuple[Plan, list[str]]:
    """Per item: (item, texts to embed by part or None, failure or None), and
    every text of the batch in one list (one embedding pass)."""
    plan: Plan = []
    texts: list[str] = []
    for it, (ok, p) in zip(batch, prepared):
        if not ok:
            plan.append((it, None, _failed(it.name, p)))
            continue
        it.keywords = p["keywords"]
        it.sealed = {"chunks": p["chunks"], "seal": p["seal"]} if p.get("seal") else None
        if p["unchanged"] or embedder is None:
            plan.append((it, None, None))
        else:
            parts = texts_to_embed(p, it.doc, keyword_vectors=keyword_vectors)
            plan.append((it, parts, None))
            texts += [t for part in parts.values() for t in part]
    return plan, texts


async def _embed(embedder: Any, texts: list[str], report: IngestReport, progress: Progress | None) -> list[list[float]]:
    if not texts:
        return []
    t0 = time.perf_counter()
    vectors: list[list[float]] = await asyncio.to_thread(embedder.embed_documents, texts)
    report.embed_seconds += time.perf_counter() - t0
    report.embedded_texts += len(texts)
    if progress:
        progress("embedded", {"texts": len(texts), "seconds": report.embed_seconds, "total": report.embedded_texts})
    return vectors


def _ingest_calls(plan: Plan, vectors: list[list[float]], embedder: Any) -> list[Call]:
    calls: list[Call] = []
    pos = 0
    for it, parts, error in plan:
        if error is not None:
            continue
        v = None
        if parts is not None:
            v = {"model": embedder.name}
            for key, part in parts.items():
                # packed: the SDK's encoder writes a plain list a float at a time (amem_db/wire.py)
                v[key], pos = packed(vectors[pos : pos + len(part)]), pos + len(part)
        calls.append((it.doc, v))
    return calls


async def _store_rows(conn: Any, plan: Plan, calls: list[Call]) -> list[tuple[bool, Any]]:
    stored = [it for it, _parts, error in plan if error is None]  # one per call, in order
    return await ingest_batch(conn, [(doc, it.keywords, v, it.sealed) for (doc, v), it in zip(calls, stored)])


def _record(plan: Plan, outcomes_list: list[tuple[bool, Any]], report: IngestReport, progress: Progress | None) -> None:
    outcomes = iter(outcomes_list)
    for it, _parts, error in plan:
        if error is not None:
            result = error
        else:
            ok, out = next(outcomes)
            if ok:
                doc = Document(**out["document"])
                result = IngestResult(status=out["status"], name=it.name, document=doc)
                if out["status"] != "unchanged":
                    report.chunks += doc.chunk_count
                    report.keywords += len(doc.keywords)
            else:
                result = _failed(it.name, out)
        report.results.append(result)
        if progress:
            progress("document", {"result": result, "chunks": report.chunks})


async def ingest_paths(
    conn: Any,
    embedder: Any | None,
    paths: Iterable[str | Path],
    *,
    title: str | None = None,
    source: str | None = None,
    scopes: Sequence[str] | None = None,
    mime_type: str | None = None,
    batch_size: int = 16,
    progress: Progress | None = None,
    after_batch: Callable[[], Awaitable[Any]] | None = None,
    location: str | dict[str, Any] | None = None,
    maintain: bool = True,
    keyword_vectors: bool = False,
) -> IngestReport:
    """Ingest files and folders; a file that cannot be parsed is reported, the rest go on.
    ``location``: where the documents apply, unless a file gives its own. ``maintain``:
    afterwards, rebuild the HNSW indexes whose unbuilt share passed the threshold.
    ``keyword_vectors``: see ``ingest_items``."""
    report = IngestReport()
    files = list(collect_files(paths))
    if progress:
        progress("files", {"total": len(files)})
    for path in files:
        try:
            items = items_from_file(path, title=title, source=source if len(files) == 1 else None,
                                    scopes=scopes, mime_type=mime_type, location=location)
        except ParseError as exc:
            report.results.append(IngestResult(status="failed", name=str(path), error=str(exc), error_code="unreadable_file"))
            if progress:
                progress("file", {"path": path, "documents": 0})
            continue
        if progress:
            progress("documents", {"total": len(items)})
        await ingest_items(conn, embedder, items, batch_size=batch_size, report=report, progress=progress,
                           after_batch=after_batch, keyword_vectors=keyword_vectors)
        if after_batch is not None:
            conn = await after_batch()
        if progress:
            progress("file", {"path": path, "documents": len(items)})
    if maintain and (report.count("added") or report.count("replaced")):
        # once, at the end: rebuilding the HNSW graphs past the threshold after every batch
        # would cost a multiple of the final build (docs/ENGINE-ISSUES.md #19, amem_db/maintain.py).
        # An ingest that stored nothing maintains nothing: a failed command changes no row.
        report.maintenance = await maintain_indexes(conn, auto=True, progress=progress)
    return report
