"""Passage texts and the document rebuilt from its chunks (pure functions, no I/O)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from vector_gateway.passages import ChunkSpan, passage_text, rebuild_text, search_text, truncate_utf8

MARKDOWN = "# Title\n\nFirst paragraph about zebras.\n\nSecond paragraph, about quokkas and more.\n\n## End\n\nLast."


def _windows(text: str, size: int, overlap: int) -> list[ChunkSpan]:
    """Overlapping windows that cover ``text``, shuffled out of order the way a query returns them."""
    spans, start, index = [], 0, 0
    while True:
        end = min(len(text), start + size)
        spans.append(ChunkSpan(index, text[start:end], start, end))
        if end == len(text):
            break
        start, index = end - overlap, index + 1
    return spans[::-1]


def test_overlapping_chunks_rebuild_the_exact_text() -> None:
    assert rebuild_text(_windows(MARKDOWN, 20, 7)) == MARKDOWN


@given(st.text(min_size=1, max_size=400), st.integers(2, 60), st.data())
def test_rebuild_is_exact_for_any_covering_windows(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    assert rebuild_text(_windows(text, size, overlap)) == text


def test_trimmed_paragraph_breaks_come_back_as_newlines() -> None:
    first, second = "First paragraph.", "Second one."
    text = f"{first}\n\n{second}"
    spans = [ChunkSpan(0, first, 0, len(first)), ChunkSpan(1, second, len(first) + 2, len(text))]
    assert rebuild_text(spans) == text


def test_chunks_without_offsets_are_joined_by_blank_lines() -> None:
    spans = [ChunkSpan(1, "two", 0, 0), ChunkSpan(0, "one", 0, 0)]
    assert rebuild_text(spans) == "one\n\ntwo"


def test_inconsistent_offsets_fall_back_to_joining() -> None:
    spans = [ChunkSpan(0, "one", 0, 10), ChunkSpan(1, "two", 10, 13)]
    assert rebuild_text(spans) == "one\n\ntwo"


def test_passage_text_puts_title_and_headings_first() -> None:
    assert passage_text("Guide", ["Guide", "Install", "Linux"], "Run it.") == "Guide\nInstall > Linux\nRun it."
    assert passage_text("", [], "Only text.") == "Only text."


def test_search_text_fits_milvus_varchar() -> None:
    text = search_text("T", [], "é" * 40_000)
    assert len(text.encode()) <= 65_535
    assert text.startswith("T\né")


def test_truncate_never_splits_a_character() -> None:
    assert truncate_utf8("aé", 2) == "a"
    assert truncate_utf8("abc", 10) == "abc"


def test_table_chunks_that_repeat_their_header_rebuild_the_table_once() -> None:
    from vector_gateway.passages import ChunkSpan, rebuild_text

    source = "| Region | Q1 |\n| --- | --- |\n| Asia | 5 |\n| Europe | 4 |\n| Africa | 3 |"
    header = "| Region | Q1 |\n| --- | --- |\n"
    first_end = source.index("| Europe")
    chunks = [
        ChunkSpan(0, source[:first_end].rstrip("\n"), 0, first_end - 1),
        ChunkSpan(1, header + source[first_end:], first_end, len(source)),  # the header again, in front
    ]
    assert rebuild_text(chunks) == source
