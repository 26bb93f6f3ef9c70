"""Tables of born-digital PDF pages without models: drawn ones by pdfplumber, unruled ones by alignment.

Tables the PDF draws rules for (a grid of cell borders, or booktabs rules above, below and under the header) are read
by drawn_tables.py from pdfplumber's characters. Unruled tables are found here from the native lines themselves:
consecutive rows of cells printed side by side, whose cells fall in the same columns. Two-column prose never
matches: the native reading order gives a whole column first.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import replace

from .drawn_tables import RuledTable, drawn_pages, ruled_tables
from .markdown import Segment
from .pdf_lines import Line, code_text
from .regions import Located, UnitDraft, caption_kind, rounded, union
from .table_cells import join_lines

__all__ = ["RuledTable", "candidate_pages", "drawn_grid_pages", "drawn_tables", "ruled_tables", "with_tables"]

MIN_ROWS = 2
MIN_COLUMNS = 2
# Longer median cells than this are prose set side by side, not a table.
MAX_MEDIAN_CELL_CHARS = 40
# Rows further apart than this many line heights belong to different tables.
MAX_ROW_GAP = 2.0
# A wrapped cell's next line lies at most this many of its heights below the row before.
PARAGRAPH_LEAD = 0.8
# A "Figure N" caption this close below a drawn grid (points) makes the grid the figure's drawing.
CAPTION_GAP = 30.0
# A numbered listing's numbers go up by at most this much a row (every line numbered; a blank one skipped).
MAX_LISTING_STEP = 2

Item = Line | Segment


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


def candidate_rows(lines: list[Line]) -> dict[int, list[tuple[float, float]]]:
    """The vertical spans of each page's rows of side-by-side cells: the only pages worth a table search."""
    found: dict[int, list[tuple[float, float]]] = {}
    for row in _rows(lines):
        if len(row) >= MIN_COLUMNS:
            found.setdefault(row[0].page, []).append((min(c.top for c in row), max(c.bottom for c in row)))
    return found


def candidate_pages(lines: list[Line]) -> set[int]:
    """Pages with at least one row of side-by-side cells."""
    return set(candidate_rows(lines))


def drawn_grid_pages(data: bytes, pages: set[int]) -> set[int]:
    """Those of ``pages`` that draw a grid (drawn_tables.drawn_pages, without rows to look between rules for)."""
    return drawn_pages(data, {page: [] for page in pages})


def drawn_tables(data: bytes, lines: list[Line]) -> list[RuledTable]:
    """The tables the PDF draws rules for, searched on the pages where the lines show side-by-side cells."""
    rows = candidate_rows(lines)
    return ruled_tables(data, drawn_pages(data, rows)) if rows else []


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


def _listing(rows: list[list[Line]]) -> Segment | None:
    """A numbered code listing (LaTeX's listings with numbers=left: crc-doc.1.0.pdf's C functions) is printed as
    two columns side by side, a line number and a line of code; it is code, not a table. Read as one: a code
    block, each line its number and its code indented as printed, and no table unit (a table's first row would
    be repeated in each piece of a long one as its header: a line of code out of place). Its rows' numbers go
    up, and its code is indented somewhere or set in a monospaced font: a numbered two-column table ("1 | Asia")
    is neither."""
    if any(len(row) != 2 for row in rows):
        return None
    columns = [(min(row[0].left for row in rows), max(row[0].right for row in rows)),
               (min(row[1].left for row in rows), max(row[1].right for row in rows))]  # fmt: skip
    numbers = [row[0].text.strip() for row in rows]
    values = [number.removesuffix(":").removesuffix(".") for number in numbers]  # "12", "12:" (dot's guide)
    if not all(value.isdigit() for value in values):
        return None
    if any(not 0 < int(b) - int(a) <= MAX_LISTING_STEP for a, b in itertools.pairwise(values)):
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
    if all(cell.mono for row in rows for cell in row):
        return None  # code whose comments line up ("set output 'a.png'   # the file"), not a table
    columns = [(cell.left, cell.right) for cell in rows[0]]
    grid: list[list[str]] = []
    for row in rows:
        if len(row) == 1 and grid and _column(row[0], columns) > 0:  # a wrapped cell's next line
            at = _column(row[0], columns)
            grid[-1][at] = join_lines([grid[-1][at], row[0].text])
            continue
        cells = [""] * len(columns)
        for cell in row:
            cells[_column(cell, columns)] = cell.text.strip()
        grid.append(cells)
    lengths = [len(cell.text.strip()) for row in rows for cell in row]
    if len(grid) < MIN_ROWS or statistics.median(lengths) > MAX_MEDIAN_CELL_CHARS:
        return None
    page = rows[0][0].page
    boxes = [rounded(union((c.left, c.top, c.right, c.bottom) for c in row)) for row in rows]
    located = tuple(located for row in rows for located in _cells_located(row, columns))
    return Segment(kind="table", text="", page=page, rows=tuple(map(tuple, grid)), located=located,
                   units=(UnitDraft("table", page, union(boxes)),))  # fmt: skip


def _cells_located(row: list[Line], columns: list[tuple[float, float]]) -> list[Located]:
    """A row's cells where they are printed, in the Markdown's order: one box a cell, so that the white space
    between two cells (a listing's line number and its indented code, or its lone "}") is not marked."""
    return [Located(cell.text.strip(), cell.page, rounded((cell.left, cell.top, cell.right, cell.bottom)))
            for cell in sorted(row, key=lambda cell: _column(cell, columns))]  # fmt: skip


def _cut(line: Line) -> list[Line]:
    """A line cut at its column gaps (segments.py gives the pieces), or the line itself."""
    if not line.pieces:
        return [line]
    return [replace(line, text=text, left=box[0], top=box[1], right=box[2], bottom=box[3], words=(), pieces=())
            for text, box in line.pieces]  # fmt: skip


def _continuation(row: list[Line], previous: list[Line], columns: list[tuple[float, float]]) -> bool:
    """A lone line right under a table row, in a column other than the first: a wrapped cell's next line."""
    if len(row) != 1 or row[0].page != previous[0].page or (at := _column(row[0], columns)) == 0:
        return False
    if row[0].left < columns[at][0] - 1:
        return False  # it starts before its column: a line of its own (a listing's next numbered line)
    return 0 <= row[0].top - max(cell.bottom for cell in previous) <= PARAGRAPH_LEAD * row[0].height


def _run(rows: list[list[Line]], index: int) -> list[list[Line]]:
    """The rows from ``index`` on that line up with its cells (wrapped cells' lines among them)."""
    run = [rows[index]]
    if len(run[0]) < MIN_COLUMNS:
        return run
    columns = [(cell.left, cell.right) for cell in run[0]]
    while index + len(run) < len(rows):
        following = rows[index + len(run)]
        if not (_fits(following, run[-1], columns) or _continuation(following, run[-1], columns)):
            break
        run.append(following)
    while len(run) > 1 and len(run[-1]) < MIN_COLUMNS:
        run.pop()  # a table ends on a row of its own, not on a wrapped cell's last line
    return run


def _numbered_run(rows: list[list[Line]], index: int) -> list[list[Line]]:
    """The rows from ``index`` on whose first cell is a line number going up by one or two (a numbered listing:
    its code lines may be cut at wide gaps into several cells)."""
    run: list[list[Line]] = []
    previous: int | None = None
    for row in rows[index:]:
        value = row[0].text.strip().removesuffix(":").removesuffix(".")
        if len(row) < MIN_COLUMNS or not value.isdigit() or row[0].page != rows[index][0].page:
            break
        if previous is not None and not 0 < int(value) - previous <= MAX_LISTING_STEP:
            break
        run.append(row)
        previous = int(value)
    return run


def _unruled(lines: list[Line]) -> list[Item]:
    """Tables of aligned lines (no rules), each line cut at its column gaps (table cells the parser joined into one
    line); a numbered listing is code; lines of no table stay as they were."""
    pieces = [(index, piece) for index, line in enumerate(lines) for piece in _cut(line)]
    rows = _rows([piece for _, piece in pieces])
    starts = itertools.accumulate([0, *map(len, rows)])
    owners = [[owner for owner, _ in pieces[start : start + len(row)]]
              for start, row in zip(starts, rows, strict=False)]  # fmt: skip
    items: list[Item] = []
    emitted: set[int] = set()
    index = 0
    while index < len(rows):
        numbered = _numbered_run(rows, index)
        found = _listing([_rejoined(row) for row in numbered]) if len(numbered) >= MIN_ROWS else None
        run = numbered if found is not None else _run(rows, index)
        found = found or (_table_segment(run) if len(run) >= MIN_ROWS else None)
        if found is None:
            run = run[:1]
        else:
            items.append(found)
        for owner in (owner for row in owners[index : index + len(run)] for owner in row):
            if owner not in emitted and found is None:
                items.append(lines[owner])
            emitted.add(owner)
        index += len(run)
    return items


def _rejoined(row: list[Line]) -> list[Line]:
    """A listing's row: its number, and its code's pieces one line again."""
    if len(row) <= MIN_COLUMNS:
        return row
    code = row[1:]
    width = (code[0].right - code[0].left) / max(len(code[0].text), 1)
    text = code[0].text
    for before, piece in itertools.pairwise(code):
        text += " " * max(1, round((piece.left - before.right) / width) if width > 0 else 1) + piece.text
    return [row[0], replace(code[0], text=text, right=code[-1].right, top=min(c.top for c in code),
                            bottom=max(c.bottom for c in code))]  # fmt: skip


def _ruled_segment(table: RuledTable) -> Segment:
    return Segment(kind="table", text="", page=table.page, rows=table.rows, located=table.located,
                   units=(UnitDraft("table", table.page, rounded(table.box)),))  # fmt: skip


def _drawing(table: RuledTable, lines: list[Line]) -> bool:
    """Whether a drawn grid is a figure's drawing, not a table: a "Figure N" caption right below it (the Graphviz
    guides draw record-shaped nodes, boxes in boxes, that a line finder reads as cells)."""
    below = [line for line in lines if line.page == table.page and line.top >= table.box[3] - 1
             and line.left < table.box[2] and line.right > table.box[0]]  # fmt: skip
    first = min(below, key=lambda line: line.top, default=None)
    return first is not None and first.top - table.box[3] <= CAPTION_GAP and caption_kind(first.text) == "figure"


def with_tables(lines: list[Line], ruled: list[RuledTable]) -> list[Item]:
    """The lines in reading order, those of each table replaced by one table segment where it starts. A ruled
    region that holds a bookmarked title is not a table (a slide's diagram drawn around its own title: Debian's
    packaging-tutorial.fr.pdf lost two sections into such "tables"): its lines stay lines, as do a figure's drawing's
    (``_drawing``)."""
    drawings = [t for t in ruled if _drawing(t, lines)]
    ruled = [t for t in ruled if not any(line.heading and t.holds(line) for line in lines) and t not in drawings]
    items: list[Item] = []
    pending: list[Line] = []
    placed: set[int] = set()
    for line in lines:
        table = next((index for index, table in enumerate(ruled) if table.holds(line)), None)
        if table is None and any(drawing.holds(line) for drawing in drawings):
            items.extend([*_unruled(pending), line])  # a drawing's labels are no table either
            pending = []
            continue
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
