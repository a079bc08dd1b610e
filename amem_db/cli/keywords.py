"""`amem-db keywords for-document|list|get|search|embed` (RAKE keyphrases, docs/RAKE.md)."""

from __future__ import annotations

import typer
from rich.table import Table

from .app import Session, as_json, json_option, lens_option, out, parse_lens, print_json


async def for_document(session: Session, id: str = typer.Argument(..., help="document id"),
                       json_output: bool = json_option()) -> None:
    """Keyphrases of one document with their RAKE scores. Example: amem-db keywords for-document document:01HX..."""
    mem = await session.memory()
    result = as_json(await mem.documents.keywords.for_document(id))
    if json_output:
        return print_json(result)
    table = Table("keyword", "score")
    for k in result["keywords"]:
        table.add_row(k["text"], f"{k['score']:.2f}")
    out.print(table)


async def list_keywords(
    session: Session,
    min_document_count: int = typer.Option(1, help="only keywords linked to at least this many documents"),
    sort: str = typer.Option("-document_count", help="-document_count | document_count | text | -text"),
    limit: int = typer.Option(50, help="page size (max 500)"),
    offset: int = typer.Option(0),
    lens: list[str] = lens_option(),
    json_output: bool = json_option(),
) -> None:
    """Keywords across the corpus. Example: amem-db keywords list --min-document-count 3 --sort=-document_count"""
    mem = await session.memory()
    page = as_json(await mem.documents.keywords.list(min_document_count=min_document_count, sort=sort, limit=limit,
                                                     offset=offset, lens=parse_lens(lens)))
    if json_output:
        return print_json(page)
    table = Table("keyword", "documents")
    for k in page["keywords"]:
        table.add_row(k["text"], str(k["document_count"]))
    out.print(table)
    out.print(f"{len(page['keywords'])} of {page['total']}")


async def get_keyword(session: Session, text: str = typer.Argument(..., help='keyword, any case: "RETURN POLICY"'),
                      json_output: bool = json_option()) -> None:
    """A keyword by its normalised form, with its documents. Example: amem-db keywords get "RETURN POLICY\""""
    mem = await session.memory()
    detail = as_json(await mem.documents.keywords.get(text))
    if json_output:
        return print_json(detail)
    out.print(f"[bold]{detail['text']}[/]  in {detail['document_count']} documents")
    table = Table("document", "title", "score")
    for d in detail["documents"]:
        table.add_row(d["id"], d.get("title") or "", f"{d['score']:.2f}")
    out.print(table)


async def search(session: Session, query: str = typer.Argument(..., help="text to match by meaning"),
                 k: int = typer.Option(10, help="how many (max 50)"), json_output: bool = json_option()) -> None:
    """Keywords nearest in meaning to a query, among those with a vector (`amem-db keywords embed`). Example: amem-db keywords search "refund policies\""""
    mem = await session.memory()
    found = as_json(await mem.documents.keywords.search(query, k))
    if json_output:
        return print_json(found)
    table = Table("keyword", "similarity")
    for r in found["results"]:
        table.add_row(r["text"], f"{r['score']:.3f}")
    out.print(table)


async def embed(session: Session, json_output: bool = json_option()) -> None:
    """Embed the keywords stored without a vector (ingest stores none by default; semantic
    search needs them), then rebuild the keyword index if due. Root or an admin principal.
    Example: amem-db keywords embed"""
    from ..keyword_vectors import embed_keywords

    mem = await session.memory()
    if mem.embedder is None:
        raise typer.BadParameter("keywords embed needs an embedder (--embedder)")
    report = await embed_keywords(mem.conn, mem.embedder)
    result = {"embedded": report.embedded, "seconds": round(report.seconds, 2), "embed_seconds": round(report.embed_seconds, 2)}
    if json_output:
        return print_json(result)
    out.print(f"{report.embedded} keywords embedded in {report.seconds:.1f}s")
