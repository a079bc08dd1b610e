"""HTML with BeautifulSoup (stdlib ``html.parser``): readable text built block
by block (headings, paragraphs, list items, table rows ...), blocks separated
by a blank line (list items and table rows by one newline), whitespace
collapsed except inside ``<pre>``; scripts, navigation, asides and page
banners dropped. Title from ``<title>`` else the first H1."""

from __future__ import annotations

from typing import Any

from ..constants import MIME_HTML
from .base import CorruptFileError, Format, Link, ParsedDocument, UnsupportedFormatError, collapse, tile_sections

_HTML_DROP = frozenset(
    {
        "script", "style", "nav", "aside", "noscript", "template", "head", "title",
        "meta", "link", "iframe", "svg", "math", "canvas", "object", "embed", "button",
        "select", "textarea", "input", "audio", "video", "map",
    }
)  # fmt: skip
_HTML_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_HTML_SECTIONING = frozenset({"article", "main", "section"})
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HTML_BLOCKS = frozenset(
    {
        "address", "article", "blockquote", "body", "caption", "center", "dd", "details",
        "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
        "header", "hgroup", "hr", "html", "legend", "li", "main", "menu", "ol", "p",
        "section", "summary", "table", "tbody", "tfoot", "thead", "tr", "ul",
    }
)  # fmt: skip
_JOIN_TIGHT = frozenset({"li", "tr", "dl"})  # consecutive blocks of these kinds: one newline


class _HtmlText:
    """Builds the canonical HTML text one block at a time, tracking offsets."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.length = 0
        self.prev_kind: str | None = None
        self.inline: list[str] = []
        self.block_kind = "p"
        self.prefix = ""  # list marker waiting for the list item's first block
        self.list_counters: dict[int, int] = {}
        self.headings: list[tuple[int, int, str]] = []
        self.links: list[Link] = []

    def emit(self, block: str, kind: str) -> int:
        """Append a finished block; return its start offset."""
        if self.out:
            sep = "\n" if (kind in _JOIN_TIGHT and kind == self.prev_kind) else "\n\n"
            self.out.append(sep)
            self.length += len(sep)
        start = self.length
        self.out.append(block)
        self.length += len(block)
        self.prev_kind = kind
        return start

    def add_text(self, s: str) -> None:
        if not s:
            return
        core = collapse(s)
        lead = " " if s[0].isspace() else ""
        trail = " " if core and s[-1].isspace() else ""
        self.inline.append(lead + core + trail)

    def line_break(self) -> None:
        self.inline.append("\n")

    def flush(self) -> None:
        if self.inline:
            lines = [collapse(line) for line in "".join(self.inline).split("\n")]
            block = "\n".join(line for line in lines if line)
            if block:
                if self.prefix:
                    block, self.prefix = self.prefix + block, ""
                self.emit(block, self.block_kind)
        self.inline = []

    def text(self) -> str:
        self.flush()
        return "".join(self.out)


def _html_is_dropped(tag: Any) -> bool:
    name = tag.name
    if name in _HTML_DROP:
        return True
    attrs = tag.attrs or {}
    if "hidden" in attrs or str(attrs.get("aria-hidden", "")).lower() == "true":
        return True
    if str(attrs.get("role", "")).lower() in _HTML_DROP_ROLES:
        return True
    if name in ("header", "footer"):
        # the page banner/footer goes; an <article>'s own header (with its h1) stays
        return not any(p.name in _HTML_SECTIONING for p in tag.parents)
    return False


def _html_inline_text(tag: Any) -> str:
    from bs4.element import NavigableString, Tag

    parts: list[str] = []

    def walk(node: Any) -> None:
        for child in node.children:
            if isinstance(child, Tag):
                if _html_is_dropped(child):
                    continue
                if child.name == "br" or child.name in _HTML_BLOCKS:
                    parts.append(" ")
                    walk(child)
                    parts.append(" ")
                elif child.name == "img":
                    parts.append(str(child.get("alt") or ""))
                else:
                    walk(child)
            elif type(child) is NavigableString or child.__class__.__name__ == "CData":
                parts.append(str(child))

    walk(tag)
    return collapse("".join(parts))


def _html_list_marker(li: Any, b: _HtmlText) -> str:
    lst = li.find_parent(["ol", "ul", "menu"])
    if lst is None or lst.name != "ol":
        return "- "
    key = id(lst)
    if key not in b.list_counters:
        try:
            b.list_counters[key] = int(str(lst.get("start", "1"))) - 1
        except ValueError:
            b.list_counters[key] = 0
    b.list_counters[key] += 1
    return f"{b.list_counters[key]}. "


def _html_walk(node: Any, b: _HtmlText) -> None:
    from bs4.element import NavigableString, Tag

    for child in node.children:
        if not isinstance(child, Tag):
            # skip comments, doctypes, processing instructions (subclasses)
            if type(child) is NavigableString or child.__class__.__name__ == "CData":
                b.add_text(str(child))
            continue
        name = child.name
        if _html_is_dropped(child):
            continue
        if name in _HTML_HEADINGS:
            b.flush()
            heading = _html_inline_text(child)
            for a in child.find_all("a", href=True):
                b.links.append(Link(href=str(a["href"]), text=_html_inline_text(a)))
            if heading:
                start = b.emit(heading, "h")
                b.headings.append((start, _HTML_HEADINGS[name], heading))
        elif name == "pre":
            b.flush()
            block = child.get_text().strip("\n").rstrip()
            for a in child.find_all("a", href=True):
                b.links.append(Link(href=str(a["href"]), text=_html_inline_text(a)))
            if block.strip():
                b.emit(block, "pre")
        elif name == "br":
            b.line_break()
        elif name == "img":
            alt = str(child.get("alt") or "").strip()
            if alt:
                b.add_text(f" {alt} ")
        elif name in ("td", "th"):
            if b.inline and child.find_previous_sibling(["td", "th"]) is not None:
                b.add_text(" | ")
            _html_walk(child, b)
        elif name in _HTML_BLOCKS:
            b.flush()
            saved_kind = b.block_kind
            if name == "li":
                b.block_kind = "li"
                b.prefix = _html_list_marker(child, b)
            elif name == "tr":
                b.block_kind = "tr"
            elif name in ("dt", "dd"):
                b.block_kind = "dl"
            _html_walk(child, b)
            b.flush()
            b.block_kind = saved_kind
            if name == "li":
                b.prefix = ""  # an empty item leaves no marker behind
        elif name == "a":
            _html_walk(child, b)
            href = child.get("href")
            if href is not None:
                b.links.append(Link(href=str(href), text=_html_inline_text(child)))
        else:
            _html_walk(child, b)


def _parse_html(data: bytes, label: str | None) -> list[ParsedDocument]:
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:  # pragma: no cover - dependency missing
        raise UnsupportedFormatError(
            "reading HTML needs the beautifulsoup4 package", source=label,
            hint="install it with `pip install beautifulsoup4` and try again",
        ) from exc
    try:
        soup = BeautifulSoup(data, "html.parser")
    except Exception as exc:  # html.parser is lenient; this is a last resort
        raise CorruptFileError(
            f"the HTML could not be parsed ({type(exc).__name__}: {exc})", source=label,
            hint="open it in a browser and save it again, or export it as PDF, then ingest that",
        ) from exc

    title = None
    if soup.title is not None:
        title = collapse(soup.title.get_text()) or None

    b = _HtmlText()
    try:
        _html_walk(soup, b)
    except RecursionError:
        raise CorruptFileError(
            "the HTML is nested too deeply to read", source=label,
            hint="open it in a browser and save it again, or export it as PDF, then ingest that",
        ) from None
    text = b.text()
    if title is None:
        title = next((h for _, level, h in b.headings if level == 1), None)
    return [
        ParsedDocument(
            text=text,
            mime_type=MIME_HTML,
            title=title,
            sections=tile_sections(b.headings, len(text)),
            links=b.links,
        )
    ]


def looks_like_html(head: str) -> bool:
    s = head.lstrip()
    # skip an XML declaration and leading comments (common in XHTML and exports)
    for _ in range(8):
        if s.startswith("<?"):
            end = s.find("?>")
            s = s[end + 2 :].lstrip() if end >= 0 else ""
        elif s.startswith("<!--"):
            end = s.find("-->")
            s = s[end + 3 :].lstrip() if end >= 0 else ""
        else:
            break
    low = s[:64].lower()
    if low.startswith("<!doctype html"):
        return True
    return low.startswith("<html") and (len(low) == 5 or low[5] in " \t\r\n>")



FORMAT = Format(MIME_HTML, _parse_html, extensions=(".html", ".htm"), aliases=("application/xhtml+xml",),
                sniff=looks_like_html, sniff_first=True)
