"""A PDF's title when its metadata gives none: the largest text of its first page that has text.

A manual without a Title entry (Texinfo's R-intro) would otherwise be named by its first heading or bookmark
("Preface"); its cover prints the name in its largest type ("An Introduction to R").
"""

from __future__ import annotations

from itertools import pairwise

from .pdf_lines import Line

MAX_TITLE_LINES = 3
MAX_TITLE_CHARS = 300
SAME_SIZE = 0.9  # a line of at least this share of the largest type's height is of the title's size


def page_title(lines: list[Line]) -> str | None:
    """The first page's largest printed line, with the lines of the same size right below it (a title set on two
    lines); None when that page prints no letters."""
    printed = [line for line in lines if line.printed and any(c.isalpha() for c in line.text)]
    if not printed:
        return None
    first = min(line.page for line in printed)
    page = sorted((line for line in printed if line.page == first), key=lambda line: (line.top, line.left))
    largest = max(line.type_height for line in page)
    start = next(i for i, line in enumerate(page) if line.type_height >= SAME_SIZE * largest)
    title = [page[start].text]
    for prev, line in pairwise(page[start : start + MAX_TITLE_LINES]):
        # the next line of the title: as large, and below it by about one line of that type (not the next block)
        if line.type_height < SAME_SIZE * largest or line.top - prev.bottom > prev.height:
            break
        title.append(line.text)
    text = " ".join(" ".join(title).split())
    return text[:MAX_TITLE_CHARS] or None
