"""Page furniture (issue 47): running heads, feet and page numbers kept out of the Markdown, handed over beside it."""

from __future__ import annotations

from collections.abc import Callable

from docling_service.converter import Converter
from docling_service.furniture import page_furniture
from docling_service.pdf_lines import Line

HEIGHT = 792.0


def page(number: int, head: str, body: list[str], foot: str | None = None) -> list[Line]:
    lines = [Line(text=head, page=number, left=72, top=40, right=400, bottom=50)]
    lines += [Line(text=text, page=number, left=72, top=90 + 14 * i, right=540, bottom=100 + 14 * i)
              for i, text in enumerate(body)]  # fmt: skip
    if foot is not None:
        lines.append(Line(text=foot, page=number, left=290, top=740, right=300, bottom=750))
    return lines


def test_a_running_head_and_page_numbers_are_furniture_and_the_body_is_not() -> None:
    body = [f"Owls of region {n} hunt at night." for n in range(3)]
    lines = [line for n in range(1, 6) for line in page(n, "A Guide to Owls", body, foot=str(n))]
    kept, furniture = page_furniture(lines, dict.fromkeys(range(1, 6), HEIGHT))
    assert [(f.page, f.text, f.place) for f in furniture[:2]] == [(1, "A Guide to Owls", "header"), (1, "1", "footer")]
    assert len(furniture) == 10 and all(line.top > 60 and line.bottom < 700 for line in kept)


def test_a_first_body_line_is_no_running_head_and_two_pages_show_nothing() -> None:
    """A body that starts at the same height on every page is not set apart from the lines under it."""
    lines = [Line(text=f"Line {i} of page {n}.", page=n, left=72, top=40 + 14 * i, right=540, bottom=50 + 14 * i)
             for n in range(1, 6) for i in range(20)]  # fmt: skip
    assert page_furniture(lines, dict.fromkeys(range(1, 6), HEIGHT)) == (lines, [])
    few = [line for n in (1, 2) for line in page(n, "A Guide to Owls", ["Owls hunt."], foot=str(n))]
    assert page_furniture(few, {1: HEIGHT, 2: HEIGHT})[1] == []


def test_the_dot_guides_running_heads_are_out_of_its_text(
    converter: Converter, debian_pdf: Callable[..., bytes]
) -> None:
    """Pages 29-33 of the dot guide head each page "dot User's Manual, January 5, 2015" and its number; the head was
    the first line of every page's text and began the passages of page 31's table."""
    result = converter.convert(debian_pdf("graphviz-doc", "graphviz/pdf/dotguide.pdf.gz", *range(29, 34)), "dot.pdf")
    assert "User's Manual" not in result.markdown
    heads = [(f.page, f.text) for f in result.furniture if f.place == "header"]
    assert heads[:2] == [(1, "dot User's Manual, January 5, 2015"), (1, "29")] and len(heads) == 10
    assert result.markdown.startswith("# ") or "|" in result.markdown.split("\n\n")[0] or result.markdown[0].isalpha()
