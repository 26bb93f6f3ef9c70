"""Page of an offset from docling's page spans."""

from __future__ import annotations

import pytest
from chunker_service.pages import InvalidPageSpans, PageIndex
from ingestion_contracts.docling import PageSpan


def _index(*spans: tuple[int, int, int], length: int = 100) -> PageIndex:
    return PageIndex([PageSpan(page=p, start=s, end=e) for p, s, e in spans], length)


def test_offsets_map_to_their_page_and_gaps_to_none() -> None:
    pages = _index((1, 0, 10), (2, 12, 20))
    assert [pages.page_at(i) for i in (0, 9, 10, 11, 12, 19, 20)] == [1, 1, None, None, 2, 2, None]


def test_unsorted_spans_are_sorted() -> None:
    pages = _index((3, 20, 30), (1, 0, 10), (2, 10, 20))
    assert [pages.page_at(i) for i in (5, 15, 25)] == [1, 2, 3]


def test_overlapping_spans_the_first_one_wins() -> None:
    pages = _index((1, 0, 15), (2, 10, 20))
    assert [pages.page_at(i) for i in (9, 12, 15, 19)] == [1, 1, 2, 2]


def test_spans_past_the_end_are_clipped_and_empty_spans_ignored() -> None:
    pages = _index((1, 5, 5), (2, 90, 500), length=100)
    assert pages.page_at(5) is None
    assert pages.page_at(99) == 2
    assert pages.page_at(100) is None


def test_no_spans_is_falsy() -> None:
    assert not _index()
    assert not _index((1, 200, 300), length=100)


def test_a_span_that_ends_before_it_starts_is_refused() -> None:
    with pytest.raises(InvalidPageSpans, match="page 4 ends"):
        _index((4, 10, 5))


def test_starts_in_a_range_name_each_page_from_where_it_begins() -> None:
    pages = _index((1, 0, 10), (2, 10, 20), (3, 20, 30))
    assert pages.starts_in(5, 25) == [(5, 1), (10, 2), (20, 3)]
    assert pages.starts_in(12, 18) == [(12, 2)]
    assert pages.starts_in(10, 20) == [(10, 2)]
