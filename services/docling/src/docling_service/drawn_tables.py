"""Tables a PDF draws rules for, read with pdfplumber: grids (cell borders) and booktabs (rules above, below and
under the header only).

Which pages are searched: those where the native lines show a row of side-by-side cells and PDFium's page objects
(~1 ms a page) show a grid (something both wide and tall) or two rules of one width with such a row between them;
pdfplumber's parse (~0.2 s a page) is paid on those only. On a searched page:

- a grid is pdfplumber's line-intersection table; its cells give the columns and the ruled rows, the words inside each
  cell its text (table_cells.py: a ruled row that stacks several printed rows is read as those rows);
- a booktabs table is a run of rules of one width (``rule_bands``) whose bands hold aligned lines and nothing that
  runs past the rules (prose between two tables does, a framed code box has side rules): its columns are the gaps
  its lines leave (table_cells.columns_by_gaps), its rows the printed lines.
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

from .regions import Box, Located, caption_kind, rounded
from .table_cells import (
    WORD_GAP,
    Band,
    Word,
    cell_lines,
    column_of,
    columns_by_gaps,
    inside,
    join_lines,
    phrases,
    printed_lines,
    printed_rows,
    stacked,
    words_of,
)

log = logging.getLogger("docling_service.drawn_tables")

_RULED = {"vertical_strategy": "lines", "horizontal_strategy": "lines"}
MIN_EDGE = 3.0  # points: pdfplumber's edge_min_length, the shortest rule its line strategy reads as a cell border
MIN_RULE = 30.0  # points: a booktabs rule is at least this wide (a column's width)
RULE_THICKNESS = 2.0  # points: thicker is a filled box, not a rule
SAME_EDGE = 2.0  # points: rules whose ends are this close are of one width
MIN_ROWS = 2
MIN_COLUMNS = 2
MAX_MEDIAN_CELL_CHARS = 40
# A grid of more ruled rows than this rules its rows one by one: a ruled row of it is one row, however its cells wrap.
MAX_STACKING_ROWS = 3  # longer median cells are prose set side by side, not a table


@dataclass(frozen=True)
class RuledTable:
    page: int
    box: tuple[float, float, float, float]  # x0, top, x1, bottom in points, top-left origin
    rows: tuple[tuple[str, ...], ...]
    located: tuple[Located, ...] = ()  # each cell's lines where they are printed, in the Markdown's order

    def holds(self, line: Any) -> bool:
        """Whether a printed line lies in the table (a bookmark's title its page does not print lies nowhere)."""
        if not getattr(line, "printed", True):
            return False
        x, y = (line.left + line.right) / 2, (line.top + line.bottom) / 2
        return line.page == self.page and self.box[0] <= x <= self.box[2] and self.box[1] <= y <= self.box[3]


def drawn_pages(data: bytes, pages: dict[int, list[tuple[float, float]]]) -> set[int]:
    """Those of ``pages`` (1-based; each with the vertical spans of its rows of side-by-side cells) that draw a grid,
    or two rules of one width with one of those rows between them. A form XObject is looked into by pdfplumber only:
    such a page is kept. A page that draws nothing, or only rules with prose between (a running head's), is not."""
    kept: set[int] = set()
    with pypdfium2_lock:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError:
            return set(pages)  # pdfplumber decides (and says why it cannot)
        try:
            for number in sorted(pages):
                if 1 <= number <= len(document) and _draws_a_table(document[number - 1], pages[number]):
                    kept.add(number)
        finally:
            document.close()
    return kept


def _draws_a_table(page: pdfium.PdfPage, rows: list[tuple[float, float]]) -> bool:
    height = page.get_height()
    tall = wide = False
    rules: list[Box] = []
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
        if right - left >= MIN_RULE and top - bottom <= RULE_THICKNESS:
            rules.append((left, height - top, right, height - bottom))
    return any(_between_rules(rules, row) for row in rows)


def _between_rules(rules: list[Box], row: tuple[float, float]) -> bool:
    above = [r for r in rules if r[3] <= row[0] + 1]
    below = [r for r in rules if r[1] >= row[1] - 1]
    return any(abs(a[0] - b[0]) <= SAME_EDGE and abs(a[2] - b[2]) <= SAME_EDGE for a in above for b in below)


def ruled_tables(data: bytes, pages: set[int]) -> list[RuledTable]:
    """Grid and booktabs tables on the given pages (1-based), whose words come from pdfplumber's characters."""
    found: list[RuledTable] = []
    if not pages:
        return found
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            for number in sorted(pages):
                if number <= len(pdf.pages):
                    found.extend(_page_tables(pdf.pages[number - 1], number))
    except Exception as exc:  # a PDF pdfminer cannot parse still has its text: tables come out as text
        log.warning("ruled table search failed; tables stay text", exc_info=exc)
    return found


def _page_tables(page: Any, number: int) -> list[RuledTable]:
    found = [t for t in page.find_tables(_RULED) if len(t.rows) >= MIN_ROWS]
    grids = [t for t in found if len(t.rows[0].cells) >= MIN_COLUMNS]
    rules = _rules(page)
    if not found and not rules:
        return []
    words = words_of(page.extract_words(x_tolerance_ratio=WORD_GAP, extra_attrs=["size", "fontname"]))
    tables = [table for table in (_grid(table, words, number) for table in grids) if table is not None]
    taken = [rounded(table.bbox) for table in found]
    # A frame ruled into rows but not into columns (gnuplot's format tables): its columns are the gaps of its lines;
    # a framed code box (every word monospaced) is none.
    frames = [rounded(t.bbox) for t in found if len(t.rows[0].cells) < MIN_COLUMNS]
    for box in [*frames, *rule_bands(page, words, taken)]:
        booktabs = _booktabs(box, words, number, rules)
        if booktabs is not None and _short_cells(booktabs):
            tables.append(booktabs)
    return tables


def _short_cells(table: RuledTable) -> bool:
    """Cells of a table are short: a median over ``MAX_MEDIAN_CELL_CHARS`` is prose set side by side."""
    lengths = [len(cell) for row in table.rows for cell in row if cell]
    return bool(lengths) and statistics.median(lengths) <= MAX_MEDIAN_CELL_CHARS


def _grid(table: Any, words: list[Word], number: int) -> RuledTable | None:
    """A grid's rows: each ruled row's cells filled with the words inside their borders (each word once: a cell
    merged over rows takes its words in its first row), a row that stacks printed rows split into them."""
    columns = _columns(table)
    free = list(words)
    rows: list[tuple[str, ...]] = []
    located: list[Located] = []
    for row in table.rows:
        if len(row.cells) != len(columns) or not any(row.cells):
            continue
        boxes = _cell_boxes(row.cells, columns)
        real = [box for box in boxes if box is not None and box[1] < box[3]]
        if not real:
            continue
        top, bottom = max(box[1] for box in real), min(box[3] for box in real)
        held = [i for i, box in enumerate(boxes) if box is not None and box[3] - box[1] > bottom - top + 1]
        band: Band = [[] for _ in columns]
        for index, box in enumerate(boxes):
            if box is None:
                continue
            box = box if box[1] < box[3] else (box[0], top, box[2], bottom)
            taken = inside(free, rounded(box))
            free = [word for word in free if word not in taken]
            span = index + 1
            while span < len(boxes) and boxes[span] is None:
                span += 1
            _fill(band, index, columns[index:span], taken)
        printed = printed_rows(band, held)
        for cells in printed if stacked(printed, len(table.rows)) else [band]:
            _emit(cells, number, rows, located)
    if len(rows) < MIN_ROWS or max(len(row) for row in rows) < MIN_COLUMNS:
        return None
    return RuledTable(page=number, box=rounded(table.bbox), rows=tuple(rows), located=tuple(located))


def _fill(band: Band, first: int, spanned: list[tuple[float, float]], words: list[Word]) -> None:
    """A cell's lines into the band; a cell merged over columns whose column rule is not drawn (gnuplot's editing
    commands) puts each phrase of a line in the column it lies in, a lone phrase (a heading) in its first column."""
    if len(spanned) == 1:
        band[first].extend(cell_lines(words))
        return
    for line in printed_lines(words):
        found = phrases(line)
        for phrase in found:
            band[first + (column_of(phrase, spanned) if len(found) > 1 else 0)].extend(cell_lines(phrase))


def _columns(table: Any) -> list[tuple[float, float]]:
    """A grid's columns: between each two neighbouring cell edges of any row."""
    edges = sorted(
        {round(x, 1) for row in table.rows for cell in row.cells if cell is not None for x in (cell[0], cell[2])}
    )
    merged: list[float] = []
    for x in edges:
        if not merged or x - merged[-1] > 1:
            merged.append(x)
    return list(itertools.pairwise(merged))


def _cell_boxes(cells: list[Any], columns: list[tuple[float, float]]) -> list[Box | None]:
    """Each column's cell in a row: pdfplumber's, else (its borders broken: the column rules of dot's appendix
    tables stop short) the column, its top and bottom left to the row's (given as an empty box); None where a cell
    to its left runs over it (pdfplumber may also give a cell inside that one)."""
    out: list[Box | None] = []
    spanned = -1.0
    for cell, (left, right) in zip(cells, columns, strict=True):
        if spanned >= right - 1:
            out.append(None)
        elif cell is not None:
            out.append(cell)
            spanned = cell[2]
        else:
            out.append((left, 0.0, right, 0.0))
    return out


def _emit(band: Band, number: int, rows: list[tuple[str, ...]], located: list[Located]) -> None:
    rows.append(tuple(join_lines([text for text, _ in cell]) for cell in band))
    located.extend(Located(text, number, box) for cell in band for text, box in cell)


def _rules(page: Any) -> list[Box]:
    """The page's horizontal rules (a thin filled box's two edges are one rule), top to bottom."""
    found: list[Box] = []
    for edge in page.edges:
        if edge["orientation"] != "h" or edge["x1"] - edge["x0"] < MIN_RULE:
            continue
        box = rounded((edge["x0"], edge["top"], edge["x1"], edge["bottom"]))
        same = next(
            (i for i, r in enumerate(found) if _one_width(r, box) and abs(r[1] - box[1]) <= RULE_THICKNESS), None
        )
        if same is None:
            found.append(box)
    return sorted(found, key=lambda r: r[1])


def _one_width(a: Box, b: Box) -> bool:
    return abs(a[0] - b[0]) <= SAME_EDGE and abs(a[2] - b[2]) <= SAME_EDGE


def rule_bands(page: Any, words: list[Word], taken: list[Box]) -> list[Box]:
    """Regions between rules of one width whose every band holds table lines: a booktabs table's top rule to its
    bottom rule. Rules inside a grid already found are left out."""
    rules = [r for r in _rules(page) if not any(t[1] - 1 <= r[1] <= t[3] + 1 and t[0] - 1 <= r[0] for t in taken)]
    sides = [e for e in page.edges if e["orientation"] == "v"]
    regions: list[Box] = []
    used: set[int] = set()
    for index, top in enumerate(rules):
        if index in used:
            continue
        bottom = top
        for following, rule in enumerate(rules[index + 1 :], start=index + 1):
            if not _one_width(top, rule):
                continue
            if not _tabular_band((top[0], bottom[3], top[2], rule[1]), words, sides):
                break
            bottom = rule
            used.add(following)
        if bottom is not top:
            regions.append(rounded((top[0], top[1], top[2], bottom[3])))
    return regions


def _tabular_band(band: Box, words: list[Word], sides: list[dict[str, Any]]) -> bool:
    """Whether a band between two rules holds table lines: some text, none running past the rules' ends, no side
    rules framing it (a framed code box), and not a paragraph (mostly lines of one phrase as wide as the rules)."""
    held = [w for w in words if band[1] < w.middle < band[3] and w.box[2] > band[0] and w.box[0] < band[2]]
    if not held or any(w.box[0] < band[0] - SAME_EDGE or w.box[2] > band[2] + SAME_EDGE for w in held):
        return False
    framed = [s for s in sides if s["top"] <= band[1] + 1 and s["bottom"] >= band[3] - 1]
    if any(abs(s["x0"] - band[0]) <= SAME_EDGE for s in framed) and any(
        abs(s["x0"] - band[2]) <= SAME_EDGE for s in framed
    ):
        return False
    lines = printed_lines(held)
    if any(caption_kind(" ".join(w.text for w in line)) for line in lines):
        return False  # a table's caption is outside its rules: this band runs from one table to the next
    width = band[2] - band[0]
    prose = [line for line in lines if len(phrases(line)) == 1 and line[-1].box[2] - line[0].box[0] >= 0.7 * width]
    return len(prose) < 2 and len(prose) * 2 <= len(lines)


def _spanned(phrase: list[Word], partial: list[Box]) -> list[Word]:
    """A heading phrase as wide as the rule right under it (booktabs' \\cmidrule: "Item" over Animal and Description;
    a table's title over the rule under it), so that it is written in the first column the rule spans; else the
    phrase itself."""
    left, right = phrase[0].box[0], phrase[-1].box[2]
    bottom, height = max(w.box[3] for w in phrase), max(w.height for w in phrase)
    for rule in partial:
        if 0 <= rule[1] - bottom <= height and rule[0] - 1 <= (left + right) / 2 <= rule[2] + 1:
            return [Word("", (rule[0] + 1, rule[1], rule[2] - 1, rule[3]), phrase[0].size)]
    return phrase


def _booktabs(box: Box, words: list[Word], number: int, rules: list[Box]) -> RuledTable | None:
    held = inside(words, box)
    if not held or all(w.mono for w in held):
        return None  # code in a box, its aligned "=" signs no columns
    lines = printed_lines(held)
    inner = [r for r in rules if box[1] + 1 < r[1] < box[3] - 1 and box[0] - 1 <= r[0] and r[2] <= box[2] + 1]
    head = max((r[3] for r in inner), default=box[1])  # the header's lowest rule: the body's columns decide
    body = [line for line in lines if min(w.box[1] for w in line) > head]
    columns = columns_by_gaps(body if len(body) >= MIN_ROWS else lines)
    if len(columns) < MIN_COLUMNS:
        return None
    partial = [r for r in inner if r[0] > box[0] + SAME_EDGE or r[2] < box[2] - SAME_EDGE]
    band: Band = [[] for _ in columns]
    for line in lines:
        found = phrases(line)
        spans = partial if len(found) > 1 else inner  # a lone heading over a full rule spans the whole table
        for phrase in found:
            band[column_of(_spanned(phrase, spans), columns)].extend(cell_lines(phrase))
    rows: list[tuple[str, ...]] = []
    located: list[Located] = []
    for cells in printed_rows(band):
        _emit(cells, number, rows, located)
    if len(rows) < MIN_ROWS:
        return None
    return RuledTable(page=number, box=box, rows=tuple(rows), located=tuple(located))
