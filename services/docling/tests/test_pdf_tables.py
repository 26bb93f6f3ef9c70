"""Tables from native PDF lines (geometry only): rows of side-by-side cells in the same columns."""

from __future__ import annotations

import gzip
import io

from docling_service.converter import Converter
from docling_service.markdown import Segment
from docling_service.pdf_lines import Line, merge_lines
from docling_service.pdf_tables import RuledTable, candidate_pages, drawn_grid_pages, ruled_tables, with_tables
from ingestion_contracts.regions import Region
from pypdf import PdfReader, PdfWriter

from scripts.system_files import CRC_DOC, GNUPLOT, needs


def cell(text: str, left: float, top: float, page: int = 1, width: float = 40) -> Line:
    return Line(text=text, page=page, left=left, top=top, right=left + width, bottom=top + 10)


def grid(rows: list[list[str]], top: float = 100, page: int = 1) -> list[Line]:
    return [
        cell(text, 30 + 100 * col, top + 18 * row, page)
        for row, cells in enumerate(rows)
        for col, text in enumerate(cells)
    ]


REVENUE = [["Region", "Q1", "Q2"], ["Asia", "310", "298"], ["Europe", "120", "135"]]


def test_aligned_rows_become_one_table_with_the_first_row_as_header() -> None:
    before = cell("The figures below are in thousands of euros.", 30, 60, width=300)
    after = cell("Figures for the fourth quarter follow.", 30, 170, width=300)
    items = with_tables([before, *grid(REVENUE), after], [])
    assert [type(item).__name__ for item in items] == ["Line", "Segment", "Line"]
    table = items[1]
    assert isinstance(table, Segment) and table.rows == tuple(map(tuple, REVENUE)) and table.page == 1
    assert [s.kind for s in merge_lines(items)] == ["paragraph", "table", "paragraph"]


def test_a_missing_cell_keeps_its_column() -> None:
    lines = [*grid(REVENUE[:2]), cell("Europe", 30, 136), cell("135", 230, 136)]
    (table,) = with_tables(lines, [])
    assert isinstance(table, Segment) and table.rows[2] == ("Europe", "", "135")


def test_prose_columns_and_single_rows_stay_text() -> None:
    left = [
        cell(f"Left column line {n} of running prose, long enough to be prose.", 30, 60 + 15 * n, width=250)
        for n in range(4)
    ]
    right = [
        cell(f"Right column line {n} of running prose, as long as the left.", 310, 60 + 15 * n, width=250)
        for n in range(4)
    ]
    assert all(isinstance(item, Line) for item in with_tables(left + right, []))
    one_row = grid(REVENUE[:1])
    assert all(isinstance(item, Line) for item in with_tables(one_row, []))
    long_cells = grid([["a sentence that runs on and on as prose does " * 2] * 2] * 3)
    assert all(isinstance(item, Line) for item in with_tables(long_cells, []))


def test_rows_on_different_pages_are_different_tables_and_pages_are_candidates() -> None:
    lines = grid(REVENUE) + grid(REVENUE, top=40, page=2)
    tables = [item for item in with_tables(lines, []) if isinstance(item, Segment)]
    assert [t.page for t in tables] == [1, 2]
    assert candidate_pages([*lines, cell("prose", 30, 500, page=3)]) == {1, 2}


def test_a_ruled_table_replaces_the_lines_inside_its_box() -> None:
    ruled = RuledTable(page=1, box=(20, 95, 400, 160), rows=(("Region", "Q1"), ("Asia", "310 (revised)")))
    items = with_tables([cell("Intro", 30, 60), *grid(REVENUE), cell("Outro", 30, 200)], [ruled])
    assert [item.text if isinstance(item, Line) else item.rows for item in items] == ["Intro", ruled.rows, "Outro"]


@needs(GNUPLOT)
def test_only_pages_that_draw_a_grid_are_searched_for_ruled_tables_and_no_table_is_lost() -> None:
    """pdfplumber's ruled-table search parsed every candidate page of a manual (nettle.pdf: 106 of 111 pages,
    6.4 s of its 10 s conversion) though a page that draws nothing both wide and tall cannot hold one. gnuplot.pdf's
    pages 30-45 hold its table on page 32 and pages that draw only rules or nothing."""
    data = GNUPLOT.read_bytes()
    pages = set(range(30, 46))
    kept = drawn_grid_pages(data, pages)
    assert 32 in kept and len(kept) <= len(pages) // 2, kept  # 7 of 16
    assert {t.page for t in ruled_tables(data, pages)} == {t.page for t in ruled_tables(data, kept)}


@needs(CRC_DOC)
def crc_page(number: int) -> bytes:
    reader, writer = PdfReader(io.BytesIO(gzip.decompress(CRC_DOC.read_bytes()))), PdfWriter()
    writer.add_page(reader.pages[number - 1])
    page = io.BytesIO()
    writer.write(page)
    return page.getvalue()


def marked(markdown: str, regions: list[Region], offset: int) -> tuple[str, tuple[float, ...]]:
    region = next(r for r in regions if r.start <= offset < r.end)
    return markdown[region.start : region.end], tuple(region.box)


def test_a_numbered_listing_is_code_with_its_numbers_and_each_part_marked_apart(converter: Converter) -> None:
    """Page 21 of crc-doc.1.0.pdf (zlib) prints numbered C listings: a line number, then the code, side by side.
    They were read as two-column tables (a line of code as the header, repeated in each piece of a long one), and
    a row marked with one box from the number across the indentation; now a code block, each line its number
    and its code indented as printed (one block: its lines cut at column gaps no longer end it), the number, the code
    and a lone "}" each marked on its own."""
    result = converter.convert(crc_page(21), "crc_p21.pdf")
    markdown = result.markdown
    assert "| 31 |" not in markdown and "| 26 | } |" not in markdown
    assert "\n31       i f (D > s i z e o f (Word) \u2217 8) {\n32         crc [ 0 ] >>= D" in markdown
    assert [block.kind for block in result.blocks].count("code") == 1
    row = markdown.index("\n31       i f (D") + 1
    number, number_box = marked(markdown, result.regions, row)
    code, code_box = marked(markdown, result.regions, row + len("31       "))
    assert number == "31" and number_box[2] - number_box[0] < 15
    assert code.startswith("i f (D >") and code_box[0] > number_box[2] + 20
    row = markdown.index("\n26    }") + 1
    number, number_box = marked(markdown, result.regions, row)
    brace, brace_box = marked(markdown, result.regions, row + len("26    "))
    assert number == "26" and brace == "}" and brace_box[0] > number_box[2] + 20


def test_a_numbered_two_column_table_stays_a_table() -> None:
    """Numbers going up beside aligned text (no indentation, no code font) are a table, not a listing."""
    items = with_tables(grid([["1", "Asia"], ["2", "Europe"], ["3", "Africa"], ["4", "Oceania"]]), [])
    assert [item.kind for item in items if isinstance(item, Segment)] == ["table"]


def test_a_ruled_table_that_stacks_its_rows_in_one_drawn_row_reads_them_as_rows(converter: Converter) -> None:
    """crc-doc page 26's Table 4 rules off only its header: its four compilers and their timings are printed a
    line each inside one drawn row. They were one Markdown row ("GCC/C++ ICL CL GCC/ASM | 2.30 2.19 1.75 1.65");
    now four rows, each cell's line marked on its own."""
    result = converter.convert(crc_page(26), "crc_p26.pdf")
    assert "| ICL | 2.19 | 1.62 | 1.49 | 1.46 | 1.45 | 1.45 | 1.46 | 1.46 |" in result.markdown
    assert "GCC/C++ ICL" not in result.markdown
    row = result.markdown.index("| ICL | 2.19 |")
    icl = next(r for r in result.regions if r.start == row + 2)
    value = next(r for r in result.regions if r.start == row + len("| ICL | "))
    assert result.markdown[value.start : value.end] == "2.19"
    assert icl.box[1] == value.box[1] and icl.box[3] - icl.box[1] < 12  # one printed line, the same as its row's
