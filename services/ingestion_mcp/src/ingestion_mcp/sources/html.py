"""HTML -> (title, Markdown of the main content). Parsing only: nothing on the page is ever executed."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree
from lxml import html as lxml_html

from .errors import UNSUPPORTED_FORMAT, SourceError

# Never content: code, styling, widgets and site chrome. header/footer only when outside the article.
_DROP_ALWAYS = (
    "script",
    "style",
    "noscript",
    "template",
    "form",
    "iframe",
    "frame",
    "object",
    "embed",
    "svg",
    "canvas",
    "button",
    "input",
    "select",
    "textarea",
    "nav",
    "aside",
    "dialog",
    "menu",
)
_CHROME = ("header", "footer")
_BLOCKS = {"p", "div", "section", "article", "main", "blockquote", "td", "th", "dd", "dt", "figcaption", "li", "pre"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_MIN_MAIN_CHARS = 80
_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class HtmlDocument:
    title: str
    markdown: str


def html_to_markdown(html: str | bytes, *, url: str | None = None) -> HtmlDocument:
    """The page's title and its main content as Markdown (boilerplate, scripts, forms removed)."""
    tree = _parse(html)
    title = _title(tree)
    _strip_boilerplate(tree)
    markdown = _extract_main(tree, url) or _fallback_markdown(tree)
    if not markdown.strip():
        raise SourceError(
            UNSUPPORTED_FORMAT,
            "The HTML page has no readable text (it may be built by JavaScript in the browser).",
            "Find a static version of the page (e.g. a printable view or the raw document URL) or use ingest_text.",
        )
    return HtmlDocument(title=title, markdown=markdown.strip() + "\n")


def _parse(html: str | bytes) -> lxml_html.HtmlElement:
    if isinstance(html, bytes):
        html = html.decode("utf-8", errors="replace")
    html = html.lstrip("\ufeff")
    try:
        # Parsing a str avoids the XML encoding-declaration error; no network, no entity resolution.
        parser = lxml_html.HTMLParser(no_network=True, remove_comments=True, remove_pis=True)
        return lxml_html.document_fromstring(html or "<html></html>", parser=parser)
    except (etree.ParserError, ValueError) as exc:
        raise SourceError(
            UNSUPPORTED_FORMAT, f"The HTML page could not be parsed ({exc}).", "Use ingest_text with the page text."
        ) from exc


def _title(tree: lxml_html.HtmlElement) -> str:
    for xpath in ("//head/title", "//meta[@property='og:title']/@content", "//h1"):
        found = tree.xpath(xpath)
        if found:
            node = found[0]
            text = node if isinstance(node, str) else node.text_content()
            text = _WS.sub(" ", str(text)).strip()
            if text:
                return text[:300]
    return ""


def _strip_boilerplate(tree: lxml_html.HtmlElement) -> None:
    for element in tree.xpath("|".join(f"//{tag}" for tag in _DROP_ALWAYS)):
        element.drop_tree()
    for element in tree.xpath("|".join(f"//{tag}" for tag in _CHROME)):
        if not any(a.tag in ("article", "main") for a in element.iterancestors()):
            element.drop_tree()
    for element in tree.xpath("//*[@hidden or @aria-hidden='true' or @role='navigation']"):
        element.drop_tree()


def _extract_main(tree: lxml_html.HtmlElement, url: str | None) -> str:
    """trafilatura, precise mode first (it keeps structure on minified pages), then its recall mode."""
    source = lxml_html.tostring(tree, encoding="unicode")
    for favor_precision in (True, False):
        import trafilatura  # on first use: it costs ~0.4 s to import, and most callers never need it

        text = trafilatura.extract(
            source,
            url=url,
            output_format="markdown",
            include_formatting=True,
            include_tables=True,
            include_comments=False,
            include_links=False,
            include_images=False,
            favor_precision=favor_precision,
        )
        if text and len(text.strip()) >= _MIN_MAIN_CHARS:
            return text
    return ""


def _fallback_markdown(tree: lxml_html.HtmlElement) -> str:
    """Short or unusual pages trafilatura rejects: headings, lists, code and paragraphs of the body."""
    body = tree.find("body")
    root = body if body is not None else tree
    lines: list[str] = []
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        tag = element.tag.lower()
        if tag in _HEADINGS:
            lines.append(f"{'#' * int(tag[1])} {_text(element)}")
        elif tag == "pre":
            lines.append(f"```\n{element.text_content().strip(chr(10))}\n```")
        elif tag == "li":
            lines.append(f"- {_text(element)}")
        elif tag in _BLOCKS and not _has_block_child(element) and not _inside(element, ("pre", "li")):
            lines.append(_text(element))
    if not lines:
        lines.append(_text(root))
    return "\n\n".join(line for line in lines if line.strip(" #-`\n"))


def _text(element: lxml_html.HtmlElement) -> str:
    return _WS.sub(" ", element.text_content()).strip()


def _has_block_child(element: lxml_html.HtmlElement) -> bool:
    return any(isinstance(c.tag, str) and (c.tag in _BLOCKS or c.tag in _HEADINGS) for c in element.iterdescendants())


def _inside(element: lxml_html.HtmlElement, tags: tuple[str, ...]) -> bool:
    return any(a.tag in tags for a in element.iterancestors())
