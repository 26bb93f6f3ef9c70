"""How deeply an HTML page nests its elements, measured before docling's HTML reader sees it.

docling's HTML backend (BeautifulSoup, ``html.parser``) walks the tree recursively and, at every
element, searches that element's whole subtree: its time grows with elements x depth, and past
~480 levels it fails with RecursionError after minutes of work (docs/pdf.md, "No file stalls the
service"). This pass uses the same tokenizer (stdlib ``html.parser``) with a stack, so it is linear
in the file and counts the nesting docling would see.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from html.parser import HTMLParser

from bs4.builder import HTMLTreeBuilder
from servicekit import Unprocessable

# Elements without content: BeautifulSoup closes them at once, so they hold nothing.
_VOID = frozenset(HTMLTreeBuilder.DEFAULT_EMPTY_ELEMENT_TAGS or ())
# Start tags that close an open element of the same family, as docling does after parsing
# (its _close_implied_end_tags and _fix_invalid_paragraph_structure): (closes, unless one of stops is nearer).
_BLOCKS = frozenset({"div", "section", "article", "blockquote", "ul", "ol", "li", "dl", "dd", "table", "td", "th"})
_IMPLIED: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "li": (frozenset({"li"}), frozenset({"ul", "ol", "menu"})),
    "dt": (frozenset({"dt", "dd"}), frozenset({"dl"})),
    "dd": (frozenset({"dt", "dd"}), frozenset({"dl"})),
    "td": (frozenset({"td", "th"}), frozenset({"tr", "table"})),
    "th": (frozenset({"td", "th"}), frozenset({"tr", "table"})),
    "tr": (frozenset({"tr", "td", "th"}), frozenset({"table", "thead", "tbody", "tfoot"})),
    "p": (frozenset({"p"}), _BLOCKS),
}


@dataclass(frozen=True)
class HtmlLimits:
    max_depth: int = 400
    max_depth_total: int = 2_000_000


@dataclass(frozen=True)
class Nesting:
    max_depth: int
    elements: int
    depth_total: int  # the sum of every element's depth: what docling's HTML reader spends time on


class _NestingParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.open_at: defaultdict[str, list[int]] = defaultdict(list)  # tag -> its positions in the stack
        self.max_depth = self.elements = self.depth_total = 0

    def _nearest(self, names: frozenset[str]) -> int:
        return max((self.open_at[name][-1] for name in names if self.open_at[name]), default=-1)

    def _pop_to(self, position: int) -> None:
        while len(self.stack) > position:
            self.open_at[self.stack.pop()].pop()

    def _count(self, depth: int) -> None:
        self.elements += 1
        self.depth_total += depth
        self.max_depth = max(self.max_depth, depth)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _IMPLIED:
            closes, stops = _IMPLIED[tag]
            # Out of every open element it closes (a <tr> leaves the open <td>, then the open <tr>).
            while (open_position := self._nearest(closes)) > self._nearest(stops):
                self._pop_to(open_position)
        self._count(len(self.stack) + 1)
        if tag not in _VOID:
            self.open_at[tag].append(len(self.stack))
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._count(len(self.stack) + 1)

    def handle_endtag(self, tag: str) -> None:
        # Like BeautifulSoup: close the nearest open element of that name; a stray end tag is ignored.
        if self.open_at[tag]:
            self._pop_to(self.open_at[tag][-1])


def measure_nesting(data: bytes) -> Nesting:
    """Deepest nesting, element count and summed depth of the elements of an HTML (or Markdown) text."""
    parser = _NestingParser()
    # Tags are ASCII in every encoding a page may declare here but UTF-16 (which sniffing calls binary).
    parser.feed(data.decode("utf-8", errors="replace"))
    parser.close()
    return Nesting(parser.max_depth, parser.elements, parser.depth_total)


def check_html_nesting(name: str, data: bytes, limits: HtmlLimits) -> Nesting:
    """Refuse (422 HTML_TOO_DEEP) a page nested beyond what docling's HTML reader converts in seconds."""
    nesting = measure_nesting(data)
    if nesting.max_depth > limits.max_depth:
        raise Unprocessable(
            f"{name!r} nests its HTML elements {nesting.max_depth} levels deep; the limit is {limits.max_depth} "
            "(DOCLING_MAX_HTML_DEPTH). Deeper pages take minutes to read and then fail.",
            code="HTML_TOO_DEEP",
            suggestion="Remove the redundant wrapper elements (or save the page as PDF or plain text) and send it "
            "again; the operator can raise DOCLING_MAX_HTML_DEPTH up to 450.",
            details={"depth": nesting.max_depth, "limit": limits.max_depth, "setting": "DOCLING_MAX_HTML_DEPTH"},
        )
    if nesting.depth_total > limits.max_depth_total:
        average = nesting.depth_total / nesting.elements
        raise Unprocessable(
            f"{name!r} has {nesting.elements} HTML elements nested {average:.0f} levels deep on average: "
            f"{nesting.depth_total} element-levels, the limit is {limits.max_depth_total} "
            "(DOCLING_MAX_HTML_DEPTH_TOTAL). The HTML reader's time grows with elements x depth.",
            code="HTML_TOO_DEEP",
            suggestion="Split the page into smaller pages or remove redundant wrapper elements (or save it as PDF or "
            "plain text) and send it again; the operator can raise DOCLING_MAX_HTML_DEPTH_TOTAL.",
            details={
                "depth_total": nesting.depth_total,
                "limit": limits.max_depth_total,
                "setting": "DOCLING_MAX_HTML_DEPTH_TOTAL",
            },
        )
    return nesting
