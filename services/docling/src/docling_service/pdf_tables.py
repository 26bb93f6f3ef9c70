"""Tables of born-digital PDF pages without models: ruled ones by pdfplumber, unruled ones by alignment.

The native pipeline reports one text line per table cell. Ruled tables (cell borders drawn) are found by
pdfplumber's line-intersection table finder, which also keeps multi-line cells whole. Unruled tables are
found here from the lines themselves: consecutive rows of cells printed side by side, whose cells fall
in the same columns. Two-column prose never matches: the native reading order gives a whole column first.
"""

from __future__ import annotations

import io
import itertools
import logging
import statistics
from dataclasses import dataclass
from typing import Any

import pdfplumber
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from docling.utils.locks import pypdfium2_lock

from .markdown import Segment
from .pdf_lines import Line, code_text
from .regions import Box, Located, UnitDraft, rounded, union

log = logging.getLogger("docling_service.pdf_tables")

_RULED = {"vertical_strategy": "lines", "horizontal_strategy": "lines"}
MIN_EDGE = 3.0  # points: pdfplumber's edge_min_length, the shortest rule its line strategy reads as a cell border
MIN_ROWS = 2
MIN_COLUMNS = 2
# Longer median cells than this are prose set side by side, not a table.
MAX_MEDIAN_CELL_CHARS = 40
# Rows further apart than this many line heights belong to different tables.
MAX_ROW_GAP = 2.0
# A numbered listing's numbers go up by at most this much a row (every line numbered; a blank one skipped).
MAX_LISTING_STEP = 2

Item = Line | Segment


@dataclass(frozen=True)
class RuledTable:
    page: int
    box: tuple[float, float, float, float]  # x0, top, x1, bottom in points, top-left origin
    rows: tuple[tuple[str, ...], ...]
    located: tuple[Located, ...] = ()  # each cell's lines where they are printed, in the Markdown's order

    def holds(self, line: Line) -> bool:
        x, y = (line.left + line.right) / 2, (line.top + line.bottom) / 2
        return line.page == self.page and self.box[0] <= x <= self.box[2] and self.box[1] <= y <= self.box[3]


def _same_row(a: Line, b: Line) -> bool:
    return b.page == a.page and b.left > a.right and abs((a.top + a.bottom) - (b.top + b.bottom)) / 2 < 0.5 * a.height


def _rows(lines: list[Line]) -> list[list[Line]]:
    """Consecutive lines printed side by side on one baseline, grouped into rows."""
    rows: list[list[Line]] = []
    for line in lines:
        if rows and _same_row(rows[-1][-1], line):
            rows[-1].append(line)
        else:
            rows.append([line])
    return rows


def candidate_pages(lines: list[Line]) -> set[int]:
    """Pages with at least one row of side-by-side cells: the only ones worth a table search."""
    return {row[0].page for row in _rows(lines) if len(row) >= MIN_COLUMNS}


def drawn_grid_pages(data: bytes, pages: set[int]) -> set[int]:
    """Those of ``pages`` (1-based) that draw something both wide and tall: a ruled table needs vertical and
    horizontal rules of at least pdfplumber's 3-point edge length, and a page that draws only horizontal rules
    (a running head's line, a TeX \\hrule) or nothing cannot hold one. A form XObject is looked into by pdfplumber
    only: such a page is kept. pypdfium2 reads the page objects in ~1 ms a page; pdfplumber's search parses the
    whole page (~0.2 s), so a manual's page of text no longer pays for it (nettle.pdf: 1 of its 106 pages kept)."""
    kept: set[int] = set()
    with pypdfium2_lock:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError:
            return set(pages)  # pdfplumber decides (and says why it cannot)
        try:
            for number in sorted(pages):
                if 1 <= number <= len(document) and _draws_a_grid(document[number - 1]):
                    kept.add(number)
        finally:
            document.close()
    return kept


def _draws_a_grid(page: pdfium.PdfPage) -> bool:
    tall = wide = False
    for item in page.get_objects(max_depth=1):
        if item.type == pdfium_c.FPDF_PAGEOBJ_FORM:
            return True
        if item.type != pdfium_c.FPDF_PAGEOBJ_PATH:
            continue
        left, bottom, right, top = item.get_bounds()
        tall |= top - bottom >= MIN_EDGE
        wide |= right - left >= MIN_EDGE
        if tall and wide:
            return True
    return False


def ruled_tables(data: bytes, pages: set[int]) -> list[RuledTable]:
    """Tables with drawn cell borders on the given pages (1-based)."""
    found: list[RuledTable] = []
    pages = drawn_grid_pages(data, pages) if pages else pages
    if not pages:
        return found
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            for number in sorted(pages):
                if number > len(pdf.pages):
                    continue
                words: list[dict[str, Any]] | None = None  # the page's, read once it has a table
                for table in pdf.pages[number - 1].find_tables(_RULED):
                    texts = table.extract()
                    if len(texts) < MIN_ROWS or max(len(row) for row in texts) < MIN_COLUMNS:
                        continue
                    words = words if words is not None else pdf.pages[number - 1].extract_words()
                    rows, lines = _read_rows(texts, _cell_lines(words, table))
                    located = tuple(Located(text, number, box) for text, box in lines)
                    found.append(RuledTable(page=number, box=table.bbox, rows=tuple(rows), located=located))
    except Exception as exc:  # a PDF pdfminer cannot parse still has its text: tables come out as text
        log.warning("ruled table search failed; tables stay text", exc_info=exc)
    return found


def _cell_lines(words: list[dict[str, Any]], table: Any) -> list[list[list[tuple[str, Box]]]]:
    """Each cell's text lines where they are printed, row by row (an empty list for a merged cell): pdfplumber's
    words inside the cell's borders, line by line (a docling line may run across two cells; the cell's own box
    would mark its empty part too)."""
    rows: list[list[list[tuple[str, Box]]]] = []
    for row in table.rows:
        cells: list[list[tuple[str, Box]]] = []
        for cell in row.cells:
            inside = [] if cell is None else [w for w in words if cell[0] <= (w["x0"] + w["x1"]) / 2 <= cell[2]
                                              and cell[1] <= (w["top"] + w["bottom"]) / 2 <= cell[3]]  # fmt: skip
            lines: list[list[dict[str, Any]]] = []
            for word in sorted(inside, key=lambda w: (round(w["top"]), w["x0"])):
                if lines and abs(lines[-1][0]["top"] - word["top"]) <= 2:
                    lines[-1].append(word)
                else:
                    lines.append([word])
            boxes = [rounded(union((w["x0"], w["top"], w["x1"], w["bottom"]) for w in line)) for line in lines]
            cells.append([(" ".join(w["text"] for w in line), box) for line, box in zip(lines, boxes, strict=True)])
        rows.append(cells)
    return rows


def _stacked(texts: list[str | None], lines: list[list[tuple[str, Box]]]) -> int:
    """How many printed rows a ruled row stacks in each of its cells (1 if it does not): a table that rules only
    its header off prints its body rows in one drawn row, a value a line in each cell (crc-doc's timing tables).
    Three cells or more with the same number of lines, side by side line for line, are read as that many rows;
    a cell of wrapped prose beside others rarely has their count of lines, let alone at three cells."""
    filled = [(text, cell) for text, cell in zip(texts, lines, strict=True) if cell]
    counts = {len(cell) for _, cell in filled} | {len((text or "").strip().split("\n")) for text, _ in filled}
    if len(filled) < 3 or len(counts) != 1 or (stack := counts.pop()) < 2:
        return 1
    for index in range(stack):
        tops = [cell[index][1][1] for _, cell in filled]
        if max(tops) - min(tops) > 2:
            return 1
    return stack


def _read_rows(
    texts: list[list[str | None]], lines: list[list[list[tuple[str, Box]]]]
) -> tuple[list[tuple[str, ...]], list[tuple[str, Box]]]:
    """The table's rows of Markdown cells and its cells' lines in the Markdown's order, a stacked row (above)
    split into the rows it prints."""
    rows: list[tuple[str, ...]] = []
    located: list[tuple[str, Box]] = []
    for row_texts, row_lines in zip(texts, lines, strict=True):
        stack = _stacked(row_texts, row_lines)
        if stack == 1:
            rows.append(tuple(" ".join((cell or "").split()) for cell in row_texts))
            located.extend(line for cell in row_lines for line in cell)
            continue
        split = [(cell or "").strip().split("\n") if cell_lines else [""] * stack
                 for cell, cell_lines in zip(row_texts, row_lines, strict=True)]  # fmt: skip
        for index in range(stack):
            rows.append(tuple(" ".join(cell[index].split()) for cell in split))
            located.extend(cell[index] for cell in row_lines if cell)
    return rows, located


def _column(cell: Line, columns: list[tuple[float, float]]) -> int:
    overlaps = [min(cell.right, right) - max(cell.left, left) for left, right in columns]
    best = max(range(len(columns)), key=overlaps.__getitem__)
    if overlaps[best] > 0:
        return best
    middle = (cell.left + cell.right) / 2
    return min(range(len(columns)), key=lambda i: abs((columns[i][0] + columns[i][1]) / 2 - middle))


def _fits(row: list[Line], previous: list[Line], columns: list[tuple[float, float]]) -> bool:
    if len(row) < MIN_COLUMNS or len(row) > len(columns) or row[0].page != previous[0].page:
        return False
    if row[0].top - previous[0].bottom > MAX_ROW_GAP * previous[0].height:
        return False
    return len({_column(cell, columns) for cell in row}) == len(row)


def _listing(rows: list[list[Line]], columns: list[tuple[float, float]]) -> Segment | None:
    """A numbered code listing (LaTeX's listings with numbers=left: crc-doc.1.0.pdf's C functions) is printed as
    two columns side by side, a line number and a line of code; it is code, not a table. Read as one: a code
    block, each line its number and its code indented as printed, and no table unit (a table's first row would
    be repeated in each piece of a long one as its header: a line of code out of place). Its rows' numbers go
    up, and its code is indented somewhere or set in a monospaced font: a numbered two-column table ("1 | Asia")
    is neither."""
    if len(columns) != 2 or any(len(row) != 2 for row in rows):
        return None
    numbers = [row[0].text.strip() for row in rows]
    if not all(number.isdigit() for number in numbers):
        return None
    if any(not 0 < int(b) - int(a) <= MAX_LISTING_STEP for a, b in itertools.pairwise(numbers)):
        return None
    code = [row[1] for row in rows]
    if max(line.left for line in code) - min(line.left for line in code) < 1 and not any(line.mono for line in code):
        return None
    width = max(len(number) for number in numbers)
    text = "\n".join(
        f"{number.rjust(width)}  {line}" for number, line in zip(numbers, code_text(code).split("\n"), strict=True)
    )
    cells = tuple(cell for row in rows for cell in _cells_located(row, columns))
    return Segment(kind="code", text=text, page=rows[0][0].page, located=cells)


def _table_segment(rows: list[list[Line]]) -> Segment | None:
    columns = [(cell.left, cell.right) for cell in rows[0]]
    listing = _listing(rows, columns)
    if listing is not None:
        return listing
    grid = []
    for row in rows:
        cells = [""] * len(columns)
        for cell in row:
            cells[_column(cell, columns)] = cell.text.strip()
        grid.append(tuple(cells))
    lengths = [len(cell.text.strip()) for row in rows for cell in row]
    if len(grid) < MIN_ROWS or statistics.median(lengths) > MAX_MEDIAN_CELL_CHARS:
        return None
    page = rows[0][0].page
    boxes = [rounded(union((c.left, c.top, c.right, c.bottom) for c in row)) for row in rows]
    located = tuple(located for row in rows for located in _cells_located(row, columns))
    return Segment(kind="table", text="", page=page, rows=tuple(grid), located=located,
                   units=(UnitDraft("table", page, union(boxes)),))  # fmt: skip


def _cells_located(row: list[Line], columns: list[tuple[float, float]]) -> list[Located]:
    """A row's cells where they are printed, in the Markdown's order: one box a cell, so that the white space
    between two cells (a listing's line number and its indented code, or its lone "}") is not marked."""
    return [Located(cell.text.strip(), cell.page, rounded((cell.left, cell.top, cell.right, cell.bottom)))
            for cell in sorted(row, key=lambda cell: _column(cell, columns))]  # fmt: skip


def _unruled(lines: list[Line]) -> list[Item]:
    items: list[Item] = []
    rows = _rows(lines)
    index = 0
    while index < len(rows):
        run = [rows[index]]
        if len(run[0]) >= MIN_COLUMNS:
            columns = [(cell.left, cell.right) for cell in run[0]]
            while index + len(run) < len(rows) and _fits(rows[index + len(run)], run[-1], columns):
                run.append(rows[index + len(run)])
        table = _table_segment(run) if len(run) >= MIN_ROWS else None
        if table is not None:
            items.append(table)
        else:
            run = run[:1]
            items.extend(run[0])
        index += len(run)
    return items


def _ruled_segment(table: RuledTable) -> Segment:
    return Segment(kind="table", text="", page=table.page, rows=table.rows, located=table.located,
                   units=(UnitDraft("table", table.page, rounded(table.box)),))  # fmt: skip


def with_tables(lines: list[Line], ruled: list[RuledTable]) -> list[Item]:
    """The lines in reading order, those of each table replaced by one table segment where it starts. A ruled
    region that holds a bookmarked title is not a table (a slide's diagram drawn around its own title: Debian's
    packaging-tutorial.fr.pdf lost two sections into such "tables"): its lines stay lines."""
    ruled = [table for table in ruled if not any(line.heading and table.holds(line) for line in lines)]
    items: list[Item] = []
    pending: list[Line] = []
    placed: set[int] = set()
    for line in lines:
        table = next((index for index, table in enumerate(ruled) if table.holds(line)), None)
        if table is None:
            pending.append(line)
            continue
        if table not in placed:
            items.extend(_unruled(pending))
            pending = []
            items.append(_ruled_segment(ruled[table]))
            placed.add(table)
    items.extend(_unruled(pending))
    return items
