"""`amem-db ingest`, `amem-db documents ...` and `amem-db keywords ...`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .cli import app, err, memory, out, print_json, run

documents_app = typer.Typer(help="Read, page, delete and reprocess stored documents.", no_args_is_help=True)
keywords_app = typer.Typer(help="RAKE keywords: per document, across the corpus, by name, by meaning.", no_args_is_help=True)
app.add_typer(documents_app, name="documents")
app.add_typer(keywords_app, name="keywords")


@app.command()
def ingest(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., help="files or folders (recursive); a JSONL corpus {_id,title,text} gives one document per line"),
    title: str | None = typer.Option(None, help="title (single file only; default: from the document)"),
    source: str | None = typer.Option(None, help="source label (single file only; default: the path)"),
    scope: list[str] = typer.Option([], "--scope", help="scope path of the documents, e.g. org/acme/support (repeatable)"),
    mime_type: str | None = typer.Option(None, help="skip detection, e.g. text/markdown"),
    batch_size: int = typer.Option(16, help="documents per round trip and embedding batch"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
) -> None:
    """Ingest files and folders: parse, chunk, extract keywords, embed, store (one transaction per document).

    Example: amem-db ingest examples/sample-corpus --scope org/acme
    """
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise typer.BadParameter(f"no such file or folder: {', '.join(missing)}")

    async def go() -> None:
        async with memory(ctx) as mem:
            columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"), TimeElapsedColumn())
            with Progress(*columns, console=err, transient=False, disable=as_json) as bar:
                files = bar.add_task("files", total=None, info="")
                docs = bar.add_task("documents", total=0, info="")

                def progress(kind: str, info: dict) -> None:
                    if kind == "files":
                        bar.update(files, total=info["total"])
                    elif kind == "file":
                        bar.advance(files)
                    elif kind == "documents":
                        bar.update(docs, total=(bar.tasks[docs].total or 0) + info["total"])
                    elif kind == "document":
                        bar.advance(docs)
                        bar.update(docs, info=f"{info['chunks']} chunks")
                    elif kind == "embedded":
                        rate = info["total"] / info["seconds"] if info["seconds"] else 0
                        bar.update(files, info=f"embedding {rate:.1f} texts/s")

                report = await mem.documents.ingest_paths(
                    paths, title=title, source=source, scopes=scope or None, mime_type=mime_type,
                    batch_size=batch_size, progress=progress)
        if as_json:
            print_json({"results": [r.model_dump(mode="json") for r in report.results],
                        "chunks": report.chunks, "keywords": report.keywords, "seconds": report.seconds})
        else:
            summary = Table("added", "replaced", "unchanged", "failed", "chunks", "keywords", "embedded texts", "time")
            summary.add_row(*(str(report.count(s)) for s in ("added", "replaced", "unchanged", "failed")),
                            str(report.chunks), str(report.keywords), str(report.embedded_texts), f"{report.seconds:.1f}s")
            out.print(summary)
            for r in report.failed:
                err.print(f"[red]failed[/] {r.name}: {r.error}", highlight=False)
        if report.failed:
            raise typer.Exit(1 if len(report.failed) == len(report.results) else 0)

    run(go())


# --- documents ------------------------------------------------------------------------
@documents_app.command("list")
def documents_list(
    ctx: typer.Context,
    status: str | None = typer.Option(None, help="processing | ready | failed"),
    mime_type: list[str] = typer.Option([], "--mime-type", help="e.g. application/pdf (repeatable)"),
    lens: list[str] = typer.Option([], "--lens", help="scope lens clause; comma joins paths (AND), repeat for OR"),
    limit: int = typer.Option(20, help="page size (max 200)"),
    offset: int = typer.Option(0, help="skip this many"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List documents, newest first. Example: amem-db documents list --mime-type text/markdown"""

    async def go() -> None:
        async with memory(ctx) as mem:
            page = await mem.documents.list(status=status, mime_type=mime_type or None, lens=parse_lens(lens),
                                            limit=limit, offset=offset)
        if as_json:
            return print_json(page)
        table = Table("id", "title", "type", "chunks", "source")
        for d in page.documents:
            table.add_row(d["id"], d.get("title") or "", d["mime_type"], str(d["chunk_count"]), d.get("source") or "")
        out.print(table)
        out.print(f"{page.offset + 1}-{page.offset + len(page.documents)} of {page.total}")

    run(go())


@documents_app.command("get")
def documents_get(ctx: typer.Context, id: str = typer.Argument(..., help="document id"), as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one document and its keywords. Example: amem-db documents get document:01HX..."""

    async def go() -> None:
        async with memory(ctx) as mem:
            doc = await mem.documents.get(id)
        if doc is None:
            err.print(f"no document {id}")
            raise typer.Exit(1)
        if as_json:
            return print_json(doc)
        out.print(f"[bold]{doc.title or '(untitled)'}[/]  {doc.id}\n{doc.mime_type}  {doc.chunk_count} chunks  source {doc.source}")
        out.print("keywords: " + ", ".join(f"{k.text} ({k.score:.2f})" for k in doc.keywords))

    run(go())


@documents_app.command("chunks")
def documents_chunks(ctx: typer.Context, id: str = typer.Argument(..., help="document id"),
                     limit: int = typer.Option(50, help="page size (max 500)"), offset: int = typer.Option(0),
                     as_json: bool = typer.Option(False, "--json")) -> None:
    """A document's chunks in order. Example: amem-db documents chunks document:01HX... --limit 5"""

    async def go() -> None:
        async with memory(ctx) as mem:
            page = await mem.documents.chunks(id, limit=limit, offset=offset)
        if as_json:
            return print_json(page)
        for c in page.chunks:
            where = f"{c.startS:.1f}-{c.endS:.1f}s" if c.startS is not None else f"{c.charStart}-{c.charEnd}"
            out.print(f"[bold]#{c.position}[/] {c.section or ''} [{where}]\n{c.text}\n")

    run(go())


@documents_app.command("delete")
def documents_delete(ctx: typer.Context, id: str = typer.Argument(..., help="document id")) -> None:
    """Delete a document with its chunks, sections, keyword edges and links. Example: amem-db documents delete document:01HX..."""

    async def go() -> None:
        async with memory(ctx) as mem:
            done = await mem.documents.delete(id)
        out.print(f"deleted {done['deleted']} ({done['chunks']} chunks)")

    run(go())


@documents_app.command("reprocess")
def documents_reprocess(ctx: typer.Context, id: str = typer.Argument(..., help="document id")) -> None:
    """Re-chunk, re-extract keywords and re-embed a document from its stored text. Example: amem-db documents reprocess document:01HX..."""

    async def go() -> None:
        async with memory(ctx) as mem:
            result = await mem.documents.reprocess(id)
        out.print(f"{result.status} {result.name}" + (f": {result.error}" if result.error else ""))

    run(go())


@documents_app.command("recompute-links")
def documents_recompute_links(ctx: typer.Context) -> None:
    """Rebuild document_link edges from the links stored with each document. Example: amem-db documents recompute-links"""

    async def go() -> None:
        async with memory(ctx) as mem:
            done = await mem.documents.recompute_links()
        out.print(f"{done['links']} links across {done['documents']} documents")

    run(go())


# --- keywords ------------------------------------------------------------------------
@keywords_app.command("for-document")
def keywords_for_document(ctx: typer.Context, id: str = typer.Argument(..., help="document id"),
                          as_json: bool = typer.Option(False, "--json")) -> None:
    """Keyphrases of one document with their RAKE scores. Example: amem-db keywords for-document document:01HX..."""

    async def go() -> None:
        async with memory(ctx) as mem:
            result = await mem.documents.keywords.for_document(id)
        if as_json:
            return print_json(result)
        table = Table("keyword", "score")
        for k in result.keywords:
            table.add_row(k.text, f"{k.score:.2f}")
        out.print(table)

    run(go())


@keywords_app.command("list")
def keywords_list(
    ctx: typer.Context,
    min_document_count: int = typer.Option(1, help="only keywords linked to at least this many documents"),
    sort: str = typer.Option("-document_count", help="-document_count | document_count | text | -text"),
    limit: int = typer.Option(50, help="page size (max 500)"),
    offset: int = typer.Option(0),
    lens: list[str] = typer.Option([], "--lens", help="scope lens clause (repeat for OR; comma = AND)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Keywords across the corpus. Example: amem-db keywords list --min-document-count 3 --sort=-document_count"""

    async def go() -> None:
        async with memory(ctx) as mem:
            page = await mem.documents.keywords.list(min_document_count=min_document_count, sort=sort, limit=limit,
                                                     offset=offset, lens=parse_lens(lens))
        if as_json:
            return print_json(page)
        table = Table("keyword", "documents")
        for k in page.keywords:
            table.add_row(k.text, str(k.document_count))
        out.print(table)
        out.print(f"{len(page.keywords)} of {page.total}")

    run(go())


@keywords_app.command("get")
def keywords_get(ctx: typer.Context, text: str = typer.Argument(..., help='keyword, any case: "RETURN POLICY"'),
                 as_json: bool = typer.Option(False, "--json")) -> None:
    """A keyword by its normalised form, with its documents. Example: amem-db keywords get "RETURN POLICY\""""

    async def go() -> None:
        async with memory(ctx) as mem:
            detail = await mem.documents.keywords.get(text)
        if as_json:
            return print_json(detail)
        out.print(f"[bold]{detail.text}[/]  in {detail.document_count} documents")
        table = Table("document", "title", "score")
        for d in detail.documents:
            table.add_row(d.id, d.title or "", f"{d.score:.2f}")
        out.print(table)

    run(go())


@keywords_app.command("search")
def keywords_search(ctx: typer.Context, query: str = typer.Argument(..., help="text to match by meaning"),
                    k: int = typer.Option(10, help="how many (max 50)"), as_json: bool = typer.Option(False, "--json")) -> None:
    """Keywords nearest in meaning to a query (keyword embeddings). Example: amem-db keywords search "refund policies\""""

    async def go() -> None:
        async with memory(ctx) as mem:
            found = await mem.documents.keywords.search(query, k)
        if as_json:
            return print_json(found)
        table = Table("keyword", "similarity")
        for r in found.results:
            table.add_row(r.text, f"{r.score:.3f}")
        out.print(table)

    run(go())


def parse_lens(values: list[str]) -> list[list[str]] | None:
    """--lens org/a,clearance/secret --lens org/b  ->  [["org/a", "clearance/secret"], ["org/b"]]"""
    if not values:
        return None
    return [[p.strip() for p in v.split(",") if p.strip()] for v in values]
