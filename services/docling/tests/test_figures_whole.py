"""Figures whole (issue 47, point 4): a vector drawing is one figure unit covering it, with or without a caption.

Graphviz's dot guide draws each graph as a Form XObject; read without the form's matrix, its paths sat in the page's
corner, so "Figure 13" (a listing) and "Figure 14" (the drawing under it) got the same tiny crop around one node.
The boxes below were drawn by hand on the rendered pages (as those of bench/figures.json): a unit is its figure when
their intersection over union is at least 0.8.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from docling_service.converter import Converter
from ingestion_contracts.regions import Unit

DOT = ("graphviz-doc", "graphviz/pdf/dotguide.pdf.gz")
INSTALL = ("installation-guide-amd64", "installation-guide-amd64/en/install.en.pdf.gz")
Box = tuple[float, float, float, float]


def iou(a: Box, b: Box) -> float:
    width, height = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    inter = width * height
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def figures(units: list[Unit]) -> dict[str, Box]:
    return {unit.caption.split(":")[0]: unit.box for unit in units if unit.kind == "figure"}


@pytest.mark.slow
def test_a_listing_and_the_drawing_under_it_are_two_figures_each_whole(
    converter: Converter, debian_pdf: Callable[..., bytes]
) -> None:
    result = converter.convert(debian_pdf(*DOT, 20), "dot_p20.pdf")
    found = figures(result.units)
    assert iou(found["Figure 13"], (143, 96, 361, 318)) >= 0.8, found  # the listing "digraph g { ... }"
    assert iou(found["Figure 14"], (152, 395, 459, 567)) >= 0.8, found  # the binary search tree, G to A and C


@pytest.mark.slow
def test_a_drawing_without_caption_is_a_figure_and_a_ruled_table_or_a_warning_box_is_none(
    converter: Converter, debian_pdf: Callable[..., bytes]
) -> None:
    result = converter.convert(debian_pdf(*DOT, 1, 31), "dot_p1_p31.pdf")
    drawn = [unit for unit in result.units if unit.kind == "figure"]
    # The title page's call graph, uncaptioned; the ruled table of node attributes (page 31) is a table, no figure.
    assert [(unit.page, unit.caption) for unit in drawn] == [(1, "")], drawn
    assert iou(drawn[0].box, (162, 339, 448, 569)) >= 0.8, drawn
    assert any(unit.kind == "table" and unit.page == 2 for unit in result.units)
    # A warning's frame with its sign drawn beside the words is a box around text, no figure.
    warned = converter.convert(debian_pdf(*INSTALL, 28), "install_p28.pdf")
    assert [unit for unit in warned.units if unit.kind == "figure"] == []
