"""PDF with ``pypdf``: the text of each page (``extract_text``), pages joined by
a blank line, one section per page ("Page N"); pages without text are skipped
but keep their number. Encrypted, damaged and image-only PDFs are reported
with what to do."""

from __future__ import annotations

import io

from ..constants import MIME_PDF
from .base import CorruptFileError, Format, ParsedDocument, UnsupportedFormatError, collapse, normalize_newlines, tile_sections


def _pdf_corrupt(label: str | None, problem: str) -> CorruptFileError:
    return CorruptFileError(
        problem,
        source=label,
        hint=(
            "the file looks damaged or truncated; re-download or re-export it "
            "(e.g. 'Print to PDF'), check it opens in a PDF viewer, and ingest it again"
        ),
    )


def _parse_pdf(data: bytes, label: str | None) -> list[ParsedDocument]:
    import logging

    from pypdf import PasswordType, PdfReader

    if data.lstrip()[:5] != b"%PDF-":
        raise _pdf_corrupt(label, "this is not a PDF file (it has no %PDF- header)")

    # pypdf logs every recoverable oddity of real-world PDFs as a warning; keep quiet
    pypdf_logger = logging.getLogger("pypdf")
    previous_level = pypdf_logger.level
    pypdf_logger.setLevel(logging.ERROR)
    try:
        try:
            reader = PdfReader(io.BytesIO(data), strict=False)
        except Exception as exc:
            raise _pdf_corrupt(label, f"the PDF could not be read ({type(exc).__name__}: {exc})") from exc

        if reader.is_encrypted:
            try:
                opened = reader.decrypt("") != PasswordType.NOT_DECRYPTED
            except Exception:
                opened = False
            if not opened:
                raise CorruptFileError(
                    "the PDF is encrypted (password-protected), so its text cannot be read",
                    source=label,
                    hint=(
                        "save an unprotected copy (e.g. `qpdf --decrypt --password=PASSWORD in.pdf out.pdf`) "
                        "and ingest that"
                    ),
                )

        try:
            n_pages = len(reader.pages)
        except Exception as exc:
            raise _pdf_corrupt(label, f"the PDF's page tree is broken ({type(exc).__name__}: {exc})") from exc

        title = None
        try:
            meta = reader.metadata
            if meta is not None and isinstance(meta.title, str):
                title = collapse(meta.title) or None
        except Exception:
            title = None

        parts: list[str] = []
        headings: list[tuple[int, int, str]] = []
        length = 0
        for number in range(1, n_pages + 1):
            try:
                page_text = reader.pages[number - 1].extract_text() or ""
            except Exception as exc:
                raise _pdf_corrupt(
                    label, f"page {number} could not be read ({type(exc).__name__}: {exc})"
                ) from exc
            page_text = normalize_newlines(page_text).strip()
            if not page_text:
                continue
            if parts:
                parts.append("\n\n")
                length += 2
            headings.append((length, 1, f"Page {number}"))
            parts.append(page_text)
            length += len(page_text)
    finally:
        pypdf_logger.setLevel(previous_level)

    text = "".join(parts)
    if not text:
        raise UnsupportedFormatError(
            f"the PDF has no extractable text in its {n_pages} page(s); it is probably scanned images",
            source=label,
            hint="run OCR on it first (e.g. `ocrmypdf in.pdf out.pdf`) and ingest the result",
        )
    return [
        ParsedDocument(
            text=text,
            mime_type=MIME_PDF,
            title=title,
            sections=tile_sections(headings, len(text)),
        )
    ]


FORMAT = Format(MIME_PDF, _parse_pdf, extensions=(".pdf",), aliases=("application/x-pdf",), magic=b"%PDF-", binary=True)
