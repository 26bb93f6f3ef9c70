"""Bookmarks whose page does not print their title (pdf_outline._with_unprinted), on lines made here."""

from __future__ import annotations

from docling_service.pdf_lines import Line
from docling_service.pdf_outline import Bookmark, mark_bookmarks


def test_unprinted_bookmarks_at_one_place_keep_their_order_and_the_page_order() -> None:
    """Two bookmarks pointing at the same spot of a slide came out in reverse order (each was put before the
    heading placed just before it); one pointing at a page with no text goes between its neighbours' pages."""
    lines = [
        Line(text="Body of slide one", page=1, left=50, top=100, right=300, bottom=110),
        Line(text="Body of slide three", page=3, left=50, top=100, right=300, bottom=110),
    ]
    bookmarks = [Bookmark("First", 2, 1, 90.0), Bookmark("Second", 2, 1, 90.0), Bookmark("Blank slide", 1, 2, None)]
    out, found = mark_bookmarks(lines, bookmarks)
    assert [(line.text, line.page, line.heading) for line in out] == [
        ("First", 1, 2), ("Second", 1, 2), ("Body of slide one", 1, 0), ("Blank slide", 2, 1),
        ("Body of slide three", 3, 0),
    ]  # fmt: skip
    assert found == 3 and not any(line.printed for line in out if line.heading)
