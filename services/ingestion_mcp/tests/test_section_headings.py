"""Finding a section by the title an agent types: a manual prints "Part II Plotting styles" where its bookmark
and the agent say "Plotting styles" (issue 38: gnuplot.pdf's chapter was not found by its name)."""

from __future__ import annotations

import pytest
from ingestion_contracts.gateway import DocumentStructure, OutlineSection
from ingestion_mcp.errors import ToolFailure
from ingestion_mcp.profiles.ingestion.navigation import find_section

PATHS = [
    ["Part I Gnuplot"],
    ["Part I Gnuplot", "Introduction"],
    ["Part II Plotting styles"],
    ["Part II Plotting styles", "3.2.1 Boxes"],
    ["Part II Plotting styles", "Styles"],
    ["Chapter 4 Terminals"],
    ["Chapter 4 Terminals", "Styles"],
]


def _manual() -> DocumentStructure:
    sections = [
        OutlineSection(position=i, heading_path=path, start=i, end=i + 1, chunk_start=i, chunk_end=i)
        for i, path in enumerate(PATHS)
    ]
    return DocumentStructure.model_construct(key="/docs/manual.pdf", source="/docs/manual.pdf", sections=sections)


@pytest.mark.parametrize(
    ("heading", "position"),
    [
        (["Plotting styles"], 2),  # the printed numbering left out
        (["Part II Plotting styles"], 2),  # as printed
        (["plotting   STYLES"], 2),  # case and spacing
        (["Boxes"], 3),
        (["Plotting styles", "Boxes"], 3),
        (["II Plotting styles"], 2),  # as the bookmark reads
        (["Terminals", "Styles"], 6),
    ],
)
def test_a_heading_is_found_with_or_without_its_printed_numbering(heading: list[str], position: int) -> None:
    assert find_section(_manual(), heading, None).position == position


def test_the_numbering_is_left_out_only_where_no_title_matches_as_printed() -> None:
    with pytest.raises(ToolFailure, match="positions 4, 6"):
        find_section(_manual(), ["Styles"], None)
    with pytest.raises(ToolFailure, match="has the heading 'Plotting'"):
        find_section(_manual(), ["Plotting"], None)


def test_a_whole_outline_path_reads_its_section_where_a_deeper_one_ends_the_same() -> None:
    """Every outline path is readable (issue 51, point 2): ["Introduction"] is the top section, though a chapter
    has an "Introduction" too, read by its own path."""
    paths = [["Introduction"], ["Usage"], ["Usage", "Introduction"]]
    sections = [OutlineSection(position=i, heading_path=path, start=i, end=i + 1, chunk_start=i, chunk_end=i)
                for i, path in enumerate(paths)]  # fmt: skip
    doc = DocumentStructure.model_construct(key="/docs/m.pdf", source="/docs/m.pdf", sections=sections)
    assert [find_section(doc, path, None).position for path in paths] == [0, 1, 2]
