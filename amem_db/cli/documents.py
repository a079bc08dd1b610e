"""`amem-db ingest` and `amem-db documents list|get|chunks|delete|reprocess|recompute-links`.

Results are read in their JSON shape (``as_json``: the spec's wire keys), so
the commands do not depend on the client's model classes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..errors import NotFound
from .app import EXIT_ERROR, Session, as_json, err, json_option, lens_option, out, parse_lens, print_json


async def ingest(
    session: Session,
    paths: list[Path] = typer.Argument(..., help="files or folders (recursive); a JSONL corpus {_id,title,text} gives one document per line"),
    title: str | None = typer.Option(None, help="title (single file only; default: from the document)"),
    source: str | None = typer.Option(None, help="source label (single file only; default: the path)"),
    scope: list[str] = typer.Option([], "--scope", help="scope path of the documents, e.g. org/acme/support (repeatable)"),
    mime_type: str | None = typer.Option(None, help="skip detection, e.g. text/markdown"),
    batch_size: int = typer.Option(16, help="documents per round trip and embedding batch"),
    location: str | None = typer.Option(None, "--location", metavar="LAT,LNG",
                                        help="where the documents apply (a JSONL location field or front matter location: wins)"),
    keyword_vectors: bool = typer.Option(False, "--keyword-vectors",
                                         help="afterwards embed the keywords that have no vector (semantic `keywords search`; docs/RAKE.md)"),
    json_output: bool = json_option("print the report as JSON"),
) -> None:
    """Ingest files and folders: parse, chunk, extract keywords, embed, store (one transaction per document).

    A file that fails is reported and the rest go on; exits 1 when nothing could be ingested.

    Example: amem-db ingest examples/sample-corpus --scope org/acme
    """
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise typer.BadParameter(f"no such file or folder: {', '.join(missing)}")
    mem = await session.memory()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False, disable=json_output) as bar:
        files = bar.add_task("files", total=None, info="")
        docs = bar.add_task("documents", total=0, info="")

        def progress(kind: str, info: dict[str, Any]) -> None:
            if kind == "files":
                bar.update(files, total=info["total"])
            elif kind == "file":
                bar.advance(files)
            elif kind == "documents":
                bar.update(docs, total=(bar.tasks[docs].total or 0) + info["total"])
            elif kind == "document":
                bar.advance(docs)
                bar.update(docs, info=f"{info['chunks']} chunks")
            elif kind == "rebuild":  # amem_db/maintain.py, after the last batch
                bar.update(files, info=f"rebuilding {info['index']} ({info['unbuilt']} rows unbuilt)")
            elif kind == "embedded":
                rate = info["total"] / info["seconds"] if info["seconds"] else 0
                bar.update(files, info=f"embedding {rate:.1f} texts/s")

        report = await mem.documents.ingest_paths(
            paths, title=title, source=source, scopes=scope or None, mime_type=mime_type, location=location,
            batch_size=batch_size, progress=progress)
    kw_embedded = None
    if keyword_vectors and mem.embedder is not None:
        from ..keyword_vectors import embed_keywords

        kw_embedded = (await embed_keywords(mem.conn, mem.embedder)).embedded
    results = [as_json(r) for r in report.results]
    counts = {s: sum(1 for r in results if r["status"] == s) for s in ("added", "replaced", "unchanged", "failed")}
    if json_output:
        print_json({"results": results, "chunks": report.chunks, "keywords": report.keywords, "seconds": report.seconds}
                   | ({"keyword_vectors": kw_embedded} if kw_embedded is not None else {}))
    else:
        summary = Table("added", "replaced", "unchanged", "failed", "chunks", "keywords", "embedded texts", "time")
        summary.add_row(*(str(n) for n in counts.values()), str(report.chunks), str(report.keywords),
                        str(report.embedded_texts), f"{report.seconds:.1f}s")
        out.print(summary)
        if kw_embedded is not None:
            out.print(f"keyword vectors: {kw_embedded} keywords embedded")
        for r in results:
            if r["status"] == "failed":
                err.print(f"[red]failed[/] {r['name']}: {r.get('error')}", highlight=False)
    if results and counts["failed"] == len(results):
        # nothing was ingested: a failure (some failed among others: reported above, exit 0)
        raise typer.Exit(EXIT_ERROR)


async def list_documents(
    session: Session,
    status: str | None = typer.Option(None, help="processing | ready | failed"),
    mime_type: list[str] = typer.Option([], "--mime-type", help="e.g. application/pdf (repeatable)"),
    lens: list[str] = lens_option(),
    limit: int = typer.Option(20, help="page size (max 200)"),
    offset: int = typer.Option(0, help="skip this many"),
    json_output: bool = json_option(),
) -> None:
    """List documents, newest first. Example: amem-db documents list --mime-type text/markdown"""
    mem = await session.memory()
    page = as_json(await mem.documents.list(status=status, mime_type=mime_type or None, lens=parse_lens(lens),
                                            limit=limit, offset=offset))
    if json_output:
        return print_json(page)
    table = Table("id", "title", "type", "chunks", "source")
    for d in page["documents"]:
        table.add_row(d["id"], d.get("title") or "", d["mime_type"], str(d["chunk_count"]), d.get("source") or "")
    out.print(table)
    out.print(f"{page['offset'] + 1}-{page['offset'] + len(page['documents'])} of {page['total']}")


async def get_document(session: Session, id: str = typer.Argument(..., help="document id"),
                       json_output: bool = json_option()) -> None:
    """Show one document and its keywords; exits 1 if there is none. Example: amem-db documents get document:01HX..."""
    mem = await session.memory()
    found = await mem.documents.get(id)
    if found is None:
        raise NotFound(f"no document {id}")
    doc = as_json(found)
    if json_output:
        return print_json(doc)
    out.print(f"[bold]{doc.get('title') or '(untitled)'}[/]  {doc['id']}\n"
              f"{doc['mime_type']}  {doc['chunk_count']} chunks  source {doc.get('source')}")
    out.print("keywords: " + ", ".join(f"{k['text']} ({k['score']:.2f})" for k in doc.get("keywords") or []))


async def chunks(session: Session, id: str = typer.Argument(..., help="document id"),
                 limit: int = typer.Option(50, help="page size (max 500)"), offset: int = typer.Option(0),
                 json_output: bool = json_option()) -> None:
    """A document's chunks in order. Example: amem-db documents chunks document:01HX... --limit 5"""
    mem = await session.memory()
    page = as_json(await mem.documents.chunks(id, limit=limit, offset=offset))
    if json_output:
        return print_json(page)
    for c in page["chunks"]:
        where = f"{c['startS']:.1f}-{c['endS']:.1f}s" if c.get("startS") is not None else f"{c['charStart']}-{c['charEnd']}"
        out.print(f"[bold]#{c['position']}[/] {c.get('section') or ''} [{where}]\n{c['text']}\n")


async def versions(session: Session, id: str = typer.Argument(..., help="document id"), json_output: bool = json_option()) -> None:
    """A document's versions: the current one, then the replaced ones kept by document
    history (amem-db migrate --document-history), newest first.

    Example: amem-db documents versions document:01HX...
    """
    mem = await session.memory()
    rows = as_json(await mem.documents.versions(id))
    if json_output:
        return print_json(rows)
    for v in rows:
        until = "current" if v["current"] else f"replaced {str(v['replacedAt'])[:19]}"
        out.print(f"{str(v['recordedAt'])[:19]}  {until:28} {v['passages']:>4} passages  {escape(v.get('title') or '')}  {v['contentHash'][:12]}")


async def delete(session: Session, id: str = typer.Argument(..., help="document id")) -> None:
    """Delete a document with its chunks, sections, keyword edges and links. Example: amem-db documents delete document:01HX..."""
    mem = await session.memory()
    done = as_json(await mem.documents.delete(id))
    out.print(f"deleted {done['deleted']} ({done['chunks']} chunks)")


async def reprocess(session: Session, id: str | None = typer.Argument(None, help="document id (or --all)"),
                    all_documents: bool = typer.Option(False, "--all", help="every document, with progress (after an "
                                                       "ingest change such as embedding context: docs/EVALUATION.md)")) -> None:
    """Re-chunk, re-extract keywords and re-embed a document from its stored text. Example: amem-db documents reprocess document:01HX...

    With --all, every document in turn (one transaction each; a failure is reported and the rest go on; exits 1 if any failed)."""
    if (id is None) == (not all_documents):
        raise typer.BadParameter("give a document id or --all, not both")
    mem = await session.memory()
    if id is not None:
        result = as_json(await mem.documents.reprocess(id))
        out.print(f"{result['status']} {result['name']}" + (f": {result['error']}" if result.get("error") else ""))
        if result["status"] == "failed":
            raise typer.Exit(EXIT_ERROR)
        return
    ids: list[str] = []
    while True:
        page = as_json(await mem.documents.list(limit=100, offset=len(ids)))
        ids += [str(d["id"]) for d in page["documents"]]
        if not page["documents"] or len(ids) >= page["total"]:
            break
    failed = 0
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err) as bar:
        task = bar.add_task("reprocess", total=len(ids))
        for doc_id in ids:
            result = as_json(await mem.documents.reprocess(doc_id))
            if result["status"] == "failed":
                failed += 1
                err.print(f"failed {doc_id}: {result.get('error')}")
            bar.advance(task)
    out.print(f"reprocessed {len(ids) - failed} of {len(ids)} documents" + (f", {failed} failed" if failed else ""))
    if failed:
        raise typer.Exit(EXIT_ERROR)


async def recompute_links(session: Session) -> None:
    """Rebuild document_link edges from the links stored with each document. Example: amem-db documents recompute-links"""
    mem = await session.memory()
    done = as_json(await mem.documents.recompute_links())
    out.print(f"{done['links']} links across {done['documents']} documents")
