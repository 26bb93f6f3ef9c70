"""Page furniture: running heads, running feet and page numbers, recognised per document (geometry only, no I/O).

A page's furniture is printed above or below its body, in the same place on most pages: the top-most or bottom-most
printed rows of a page (in its top or bottom ``MARGIN`` share, set apart from the body by at least ``APART`` of a
line's height) are furniture where lines stand at that height on at least ``FREQUENT`` of the pages (and at least
three) and most of them recur: their text, numbers aside, recurs there on another page ("dot User's Manual, January
5, 2015"; a chapter's running head) or is a page number ("31", "xii", "Page 4", "- 7 -"); a line there that does
not recur (the running head of a section of one page) is furniture too. A body's first or last line is neither
apart nor recurring, nor are most slides' titles (each its own, though "Outline" recurs).
Furniture is kept out of the Markdown (so out of passages, sections and page citations) and handed over beside it,
page by page (``FurnitureLine``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from .pdf_lines import Line
from .regions import Box, rounded

MARGIN = 0.2  # of the page's height: running heads and feet lie in its top or bottom share
APART = 0.8  # of a line's height: the least gap between furniture and the page's body
FREQUENT = 0.3  # of the pages: lines stand at a furniture's height on at least this share of them
MIN_PAGES = 3  # fewer pages than this cannot show what repeats
MAX_ROWS = 2  # a page's furniture is its first or last row or two
PLACE = 3.0  # points: lines whose tops are this close stand at one height
Place = Literal["header", "footer"]
_NUMBER = re.compile(r"\d+")
_ROMAN = re.compile(r"\b[ivxlcdm]+\b")
_PAGE_NUMBER = re.compile(
    r"^[\W_]*(?:page|seite|p\.|pág\.?|página|pagina)?\s*(?:\d+|[ivxlcdm]+)"
    r"(?:\s*(?:of|/|von|de|sur|di)\s*\d+)?[\W_]*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class FurnitureLine:
    page: int
    text: str
    box: Box
    place: Place


def _shape(text: str) -> str:
    """A line's text with its numbers left out, as it repeats from page to page."""
    return " ".join(_ROMAN.sub("#", _NUMBER.sub("#", text.lower())).split())


def _edges(page: list[Line], height: float) -> list[tuple[Line, Place]]:
    """The rows at a page's top and bottom that its body leaves apart (a running head of two lines is two rows), with
    where they are."""
    ordered = sorted((line for line in page if line.printed), key=lambda line: line.top)
    rows: list[list[Line]] = []
    for line in ordered:
        if rows and any(_beside(line, other) for other in rows[-1]):
            rows[-1].append(line)
        else:
            rows.append([line])
    found: list[tuple[Line, Place]] = []
    sides: tuple[tuple[Place, list[list[Line]]], ...] = (("header", rows), ("footer", rows[::-1]))
    for place, side in sides:
        for index, row in enumerate(side[:MAX_ROWS]):
            top, bottom = min(line.top for line in row), max(line.bottom for line in row)
            if not (bottom <= MARGIN * height if place == "header" else top >= (1 - MARGIN) * height):
                break
            if index + 1 >= len(side):
                break
            following = side[index + 1]
            gap = (
                min(line.top for line in following) - bottom
                if place == "header"
                else (top - max(line.bottom for line in following))
            )
            if gap >= APART * min(line.height for line in [*row, *following]):
                found.extend((line, place) for taken in side[: index + 1] for line in taken)
                break
    return found


def _beside(a: Line, b: Line) -> bool:
    return min(a.bottom, b.bottom) - max(a.top, b.top) > 0.5 * min(a.height, b.height)


def page_furniture(lines: list[Line], heights: dict[int, float]) -> tuple[list[Line], list[FurnitureLine]]:
    """``lines`` without the document's furniture, and the furniture in page order."""
    by_page: dict[int, list[Line]] = defaultdict(list)
    for line in lines:
        by_page[line.page].append(line)
    if len(by_page) < MIN_PAGES:
        return lines, []
    edges = {page: _edges(found, heights[page]) for page, found in by_page.items() if heights.get(page)}
    shapes: dict[tuple[Place, str], set[int]] = defaultdict(set)
    for page, found in edges.items():
        for line, place in found:
            shapes[(place, _shape(line.text))].add(page)

    def recurring(line: Line, place: Place) -> bool:
        return len(shapes[(place, _shape(line.text))]) >= 2 or bool(_PAGE_NUMBER.match(line.text.strip()))

    # Where furniture stands: a height lines stand at on enough pages, most of them recurring (the last lines of
    # full pages stand at one height too, but each is its own).
    standing: dict[tuple[Place, int], list[bool]] = defaultdict(list)
    for found in edges.values():
        for line, place in found:
            standing[(place, round(line.top / PLACE))].append(recurring(line, place))
    needed = max(MIN_PAGES, FREQUENT * len(by_page))
    furniture: list[FurnitureLine] = []
    taken: set[int] = set()
    for page, found in sorted(edges.items()):
        for line, place in found:
            near = [flag for shift in (-1, 0, 1) for flag in standing[(place, round(line.top / PLACE) + shift)]]
            if len(near) >= needed and sum(near) * 2 > len(near):  # a section's head on one page is furniture too
                box = rounded(line.box or (line.left, line.top, line.right, line.bottom))
                furniture.append(FurnitureLine(page, line.text.strip(), box, place))
                taken.add(id(line))
    return [line for line in lines if id(line) not in taken], furniture
