"""Native PDF lines merged into paragraphs and headings by geometry (unit tests, no I/O)."""

from __future__ import annotations

from docling_service.pdf_lines import Line, join_fragments, merge_lines


def line(text: str, top: float, *, page: int = 1, height: float = 10, left: float = 50, right: float = 500) -> Line:
    return Line(text=text, page=page, left=left, top=top, right=right, bottom=top + height)


def test_close_lines_form_one_paragraph_and_a_gap_starts_the_next() -> None:
    segments = merge_lines(
        [
            line("The first paragraph starts here and", 100),
            line("goes on to a second line.", 114, right=300),
            line("A second paragraph after a gap.", 140, right=320),
        ]
    )
    assert [(s.kind, s.text) for s in segments] == [
        ("paragraph", "The first paragraph starts here and goes on to a second line."),
        ("paragraph", "A second paragraph after a gap."),
    ]


def test_a_short_line_ending_a_sentence_ends_the_paragraph_even_without_a_gap() -> None:
    segments = merge_lines(
        [line("A full width line of text that keeps", 100), line("going. Short.", 113, right=200), line("Next", 126)]
    )
    assert [s.text for s in segments] == ["A full width line of text that keeps going. Short.", "Next"]


def test_larger_single_lines_become_headings_by_size() -> None:
    body = [line(f"Body text line number {i} with enough words to be body.", 200 + 13 * i) for i in range(6)]
    segments = merge_lines(
        [line("Big Title", 40, height=24, right=200), line("Section", 80, height=15, right=150), *body]
    )
    assert [(s.kind, s.level, s.text) for s in segments[:2]] == [("heading", 1, "Big Title"), ("heading", 2, "Section")]
    assert segments[2].kind == "paragraph" and len(segments) == 3


def test_a_large_line_ending_with_a_period_is_not_a_heading() -> None:
    body = [line("Plain body text that is long enough to count for the body size.", 100 + 13 * i) for i in range(4)]
    segments = merge_lines([line("This is a pull quote.", 40, height=20), *body])
    assert segments[0].kind == "paragraph"


def test_page_breaks_and_font_changes_split_and_hyphens_join() -> None:
    segments = merge_lines(
        [
            line("A word is hyphen-", 100),
            line("ated across lines", 113),
            line("Next page text", 100, page=2),
            line("Small footnote text", 113, page=2, height=6),
        ]
    )
    assert [(s.text, s.page) for s in segments] == [
        ("A word is hyphenated across lines", 1),
        ("Next page text", 2),
        ("Small footnote text", 2),
    ]


def test_a_line_beside_the_previous_one_is_another_column() -> None:
    segments = merge_lines([line("Left column", 100, right=250), line("Right column", 100, left=300)])
    assert [s.text for s in segments] == ["Left column", "Right column"]


def test_blank_lines_are_ignored() -> None:
    assert merge_lines([line("   ", 100)]) == []


def test_numbered_headings_take_their_level_from_the_numbering_and_a_formula_is_no_heading() -> None:
    body = [line(f"Body text line {i} that fills the column as prose does.", 200 + 14 * i) for i in range(6)]
    heads = [
        line("2 Installing", 100, height=14),
        line("2.1 Requirements", 130, height=13),
        line("2.1.1 Disk space", 160, height=13),
        line("(x-t)2+y2 dt", 185, height=14),
    ]
    segments = merge_lines([*heads, *body])
    assert [(s.text, s.level) for s in segments if s.kind == "heading"] == [
        ("2 Installing", 1),
        ("2.1 Requirements", 2),
        ("2.1.1 Disk space", 3),
    ]


def test_pieces_of_a_printed_line_are_joined_and_code_keeps_its_lines() -> None:
    name = [line("Hans-Bernhard Br\u00a8", 100, right=190), line("oker, John Campbell", 100, left=186)]
    code = [
        Line("plot 1 2 4", 1, 50, 130, 100, 140, font="CMTT10", mono=True),
        Line("# horizontal line at y=1", 1, 160, 130, 280, 140, font="CMTT10", mono=True),
        Line("update", 1, 50, 142, 80, 152, font="CMTT10", mono=True),
    ]
    segments = merge_lines(list(join_fragments([*name, *code])))
    assert [(s.kind, s.text) for s in segments] == [
        ("paragraph", "Hans-Bernhard Bröker, John Campbell"),
        ("code", "plot 1 2 4" + " " * 12 + "# horizontal line at y=1\nupdate"),  # 60 pt at 5 pt a character
    ]
