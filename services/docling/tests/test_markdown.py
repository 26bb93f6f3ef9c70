"""Markdown built block by block: exact offsets, Markdown syntax, page spans (unit tests, no I/O)."""

from __future__ import annotations

import itertools

from docling_service.markdown import Segment, render, table_markdown
from hypothesis import given, settings
from hypothesis import strategies as st


def test_blocks_syntax_and_offsets() -> None:
    rendered = render(
        [
            Segment(kind="title", text="  Annual\nReport ", page=1, level=1),
            Segment(kind="paragraph", text="First line\r\nsecond line\n\n\nthird", page=1),
            Segment(kind="heading", text="Costs", page=2, level=2),
            Segment(kind="list_item", text="rent", page=2),
            Segment(kind="list_item", text="wages", page=2),
            Segment(kind="code", text="print('x')\n", page=2),
        ]
    )
    assert rendered.markdown == (
        "# Annual Report\n\nFirst line\nsecond line\nthird\n\n## Costs\n\n- rent\n- wages\n\n```\nprint('x')\n```\n"
    )
    for block in rendered.blocks:
        assert rendered.markdown[block.start : block.end] == block.text
    assert [(b.kind, b.level) for b in rendered.blocks][:3] == [("title", 1), ("paragraph", None), ("heading", 2)]
    spans = [(span.page, span.start, span.end) for span in rendered.page_spans]
    heading_line = rendered.markdown.index("## Costs")
    assert spans == [(1, 0, heading_line), (2, heading_line, len(rendered.markdown))]


def test_empty_blocks_are_dropped() -> None:
    rendered = render(
        [
            Segment(kind="paragraph", text=" \n "),
            Segment(kind="heading", text="", level=1),
            Segment(kind="table", text="", rows=(("", ""), ("", ""))),
            Segment(kind="paragraph", text="kept"),
        ]
    )
    assert rendered.markdown == "kept\n" and len(rendered.blocks) == 1
    assert render([]).markdown == "" and render([]).page_spans == []


def test_table_escapes_pipes_and_pads_short_rows() -> None:
    table = table_markdown((("Name", "Note"), ("a|b", "line\nbreak"), ("only",)))
    assert table.splitlines() == ["| Name | Note |", "|---|---|", "| a\\|b | line break |", "| only |  |"]


def test_code_fence_is_longer_than_any_backtick_run_inside() -> None:
    rendered = render([Segment(kind="code", text="use ```md``` fences")])
    assert rendered.markdown.startswith("````\n") and rendered.markdown.endswith("\n````\n")


def test_heading_levels_are_capped_at_six() -> None:
    rendered = render([Segment(kind="heading", text="Deep", level=9)])
    assert rendered.markdown == "###### Deep\n" and rendered.blocks[0].level == 6


def test_blocks_without_page_join_the_page_before() -> None:
    rendered = render(
        [
            Segment(kind="paragraph", text="intro"),
            Segment(kind="paragraph", text="one", page=1),
            Segment(kind="table", text="", rows=(("h",), ("v",))),
            Segment(kind="paragraph", text="two", page=2),
        ]
    )
    first = rendered.page_spans[0]
    assert first.page == 1 and first.start == rendered.markdown.index("one")
    assert rendered.markdown[first.start : first.end].endswith("| v |\n\n")


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_SEGMENT = st.builds(
    Segment,
    kind=st.sampled_from(["title", "heading", "paragraph", "list_item", "code", "caption", "other"]),
    text=_TEXT,
    page=st.none() | st.integers(1, 4),
    level=st.none() | st.integers(1, 8),
)
_TABLE = st.builds(
    Segment,
    kind=st.just("table"),
    text=st.just(""),
    page=st.none() | st.integers(1, 4),
    rows=st.lists(st.lists(_TEXT, min_size=1, max_size=3).map(tuple), min_size=1, max_size=3).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_SEGMENT | _TABLE, max_size=12))
def test_every_block_is_exactly_where_it_says(segments: list[Segment]) -> None:
    rendered = render(segments)
    previous_end = 0
    for block in rendered.blocks:
        assert rendered.markdown[block.start : block.end] == block.text
        assert block.text.strip() and block.start >= previous_end
        previous_end = block.end
    spans = rendered.page_spans
    for left, right in itertools.pairwise(spans):
        assert left.end == right.start and left.page != right.page
    if spans:
        assert spans[-1].end == len(rendered.markdown)
        paged = [block for block in rendered.blocks if block.page is not None]
        for block in paged:
            owner = next(span for span in spans if span.start <= block.start < span.end)
            assert owner.page == block.page


def test_a_heading_that_repeats_the_one_before_it_is_one_section() -> None:
    """why3's manual: the chapter's bookmark "Compilation, Installation", then its printed capitals, an empty
    twin an agent could not read by its path (issue 51, point 2). A heading repeated later, after text, stays."""
    rendered = render([
        Segment(kind="heading", text="Compilation, Installation", level=1),
        Segment(kind="heading", text="COMPILATION, INSTALLATION", level=2),
        Segment(kind="paragraph", text="Why3 can be installed from opam."),
        Segment(kind="heading", text="Compilation, Installation", level=1),
    ])  # fmt: skip
    assert [(b.kind, b.text) for b in rendered.blocks] == [
        ("heading", "Compilation, Installation"), ("paragraph", "Why3 can be installed from opam."),
        ("heading", "Compilation, Installation"),
    ]  # fmt: skip
