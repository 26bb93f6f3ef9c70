"""Markdown tables in chunks: a chunk starts at a row, and one that continues a table carries its header.

The splitter cuts at line breaks before anything finer, so a row (one line) stays whole unless it alone is
longer than the window. What can still cut a row is the overlap: it starts at a word boundary, maybe in
the middle of the row before. A chunk that starts inside a table is moved to the next row start, and when
it does not hold the table's header row, the header and delimiter lines are put in front of its text
(``ChunkSpan.prefix``) so that "Asia | 310 | 298 | 356" is embedded and shown with "Region | Q1 | Q2 | Q3".
Its offsets still point at the rows in the request text.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .spans import ChunkSpan
    from .tokens import TokenCounter

_ROW = re.compile(r"^[ \t]{0,3}\|.*\|[ \t]*$")
_DELIMITER = re.compile(r"^[ \t]{0,3}\|(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*$")


@dataclass(frozen=True, slots=True)
class Table:
    start: int  # the header row's first character
    body: int  # the first data row's first character
    end: int  # one past the last row's last character
    row_starts: tuple[int, ...]  # first character of every data row

    def header(self, text: str) -> str:
        return text[self.start : self.body]


def _lines(text: str) -> list[tuple[int, int]]:
    spans, offset = [], 0
    for line in text.splitlines(keepends=True):
        spans.append((offset, offset + len(line.rstrip("\r\n"))))
        offset += len(line)
    return spans


def find_tables(text: str) -> list[Table]:
    """GitHub-style pipe tables: a header row, a delimiter row, then rows; each row one line."""
    if "|" not in text:  # most texts: no line-by-line scan
        return []
    lines = _lines(text)
    tables, index = [], 0
    while index + 1 < len(lines):
        (head_start, head_end), (_, delimiter_end) = lines[index], lines[index + 1]
        if not (_ROW.match(text[head_start:head_end]) and _DELIMITER.match(text[lines[index + 1][0] : delimiter_end])):
            index += 1
            continue
        rows = []
        cursor = index + 2
        while cursor < len(lines) and _ROW.match(text[lines[cursor][0] : lines[cursor][1]]):
            rows.append(lines[cursor])
            cursor += 1
        if rows:
            body = rows[0][0]
            tables.append(Table(head_start, body, rows[-1][1], tuple(start for start, _ in rows)))
        index = cursor
    return tables


def _containing(tables: list[Table], offset: int) -> Table | None:
    return next((table for table in tables if table.start <= offset < table.end), None)


def _candidates(table: Table, start: int, base: int) -> list[int]:
    """Row starts a chunk may begin at: from its own start up to the row its new text begins at (``base``).

    Moving further would drop rows no other chunk holds; the text before ``base`` is only overlap.
    """
    last = next((row for row in table.row_starts if row >= base), None)
    return [row for row in table.row_starts if start <= row and (last is None or row <= last)]


def _place(text: str, chunk: ChunkSpan, table: Table, base: int, counter: TokenCounter, window: int) -> ChunkSpan:
    starts = _candidates(table, chunk.start, base)
    starts = [start for start in starts if start < chunk.end]
    if not starts:
        return chunk
    header = table.header(text)
    counts = counter.count_many([header + text[start : chunk.end] for start in starts])
    for start, count in zip(starts, counts, strict=True):
        if count <= window:
            return dataclasses.replace(chunk, start=start, token_count=count, prefix=header)
    # A header too wide for the window leaves no room: the chunk starts at its own rows, without it.
    start = starts[-1]
    return dataclasses.replace(chunk, start=start, token_count=counter.count(text[start : chunk.end]))


def with_table_headers(text: str, chunks: list[ChunkSpan], counter: TokenCounter, window: int) -> list[ChunkSpan]:
    """Chunks that start inside a table begin at a row and carry the table's header when they lack it."""
    tables = find_tables(text)
    if not tables:
        return chunks
    out = []
    for index, chunk in enumerate(chunks):
        table = _containing(tables, chunk.start)
        if table is None or chunk.start == table.start:  # outside tables, or holding the header itself
            out.append(chunk)
            continue
        base = chunks[index - 1].end if index else chunk.start  # chunks tile: the overlap ends there
        out.append(_place(text, chunk, table, base, counter, window))
    return out


def header_reserve(text: str, counter: TokenCounter, window: int) -> int:
    """Tokens to keep free in every window for the widest table header (at most half the window)."""
    headers = [table.header(text) for table in find_tables(text)]
    return min(max(counter.count_many(headers), default=0), window // 2)
