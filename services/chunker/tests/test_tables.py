"""Markdown tables: no chunk starts inside a row, and a chunk that continues a table carries its header."""

from __future__ import annotations

from chunker_service.tables import find_tables

HEADER = "| Region | Quarter one | Quarter two | Quarter three |\n|---|---|---|---|\n"
ROWS = [f"| Region {n} of the northern district | {100 + n} | {200 + n} | {300 + n} |" for n in range(60)]
TABLE = HEADER + "\n".join(ROWS)
TEXT = "# Revenue\n\nRevenue by region, in thousands of euros.\n\n" + TABLE + "\n\nFigures are unaudited.\n"


def test_pipe_tables_are_found_with_their_rows() -> None:
    (table,) = find_tables(TEXT)
    assert TEXT[table.start : table.body] == HEADER and len(table.row_starts) == len(ROWS)
    assert TEXT[table.row_starts[1] :].startswith(ROWS[1]) and TEXT[table.end - 1] == "|"
    assert find_tables("| a | b |\nno delimiter\n| c | d |\n") == []


def test_every_table_chunk_has_the_header_and_whole_rows(chunker, check) -> None:
    result = chunker.chunk(TEXT, window=128, overlap=24)
    check(TEXT, result, 128, 24)
    in_table = [chunk for chunk in result.chunks if "| Region " in TEXT[chunk.start : chunk.end]]
    assert len(in_table) > 3  # the table is several windows long
    for chunk in in_table:
        full = chunk.prefix + TEXT[chunk.start : chunk.end]
        assert full.startswith(("# Revenue", "Revenue by", HEADER)), full[:80]
        for line in full.splitlines():
            if line.startswith("| Region "):
                assert line in ROWS or line == HEADER.splitlines()[0], f"a row was cut: {line!r}"
    continued = [chunk for chunk in in_table if chunk.prefix]
    assert continued and all(chunk.prefix == HEADER for chunk in continued)
    assert all(TEXT[chunk.start - 1] == "\n" for chunk in continued)  # starts at a row


def test_the_api_returns_the_header_in_the_chunk_text(chunker) -> None:
    plain = chunker.chunk(TEXT, window=128, overlap=24, markdown=False)
    assert all(chunk.prefix == "" for chunk in plain.chunks)  # plain text: no tables, no change
