"""Markdown built block by block, so every block's offsets in it are exact (no docling, no I/O here)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ingestion_contracts.docling import Block, BlockKind, PageSpan
from ingestion_contracts.regions import Region, Unit

from .regions import Located, UnitDraft, place, unit

_SPACES = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n\s*\n+")
_TRAILING = re.compile(r"[ \t]+\n")
_BACKTICKS = re.compile(r"`+")
# A line of prose that would read as an ATX heading or a code fence in Markdown ("# not a heading", "```").
_MARKUP_START = re.compile(r"^( {0,3})(#{1,6}(?=[ \t]|$)|`{3,}|~{3,})", re.MULTILINE)


@dataclass(frozen=True)
class Segment:
    """One block before it is placed: what it is, its text, where it comes from."""

    kind: BlockKind
    text: str
    page: int | None = None
    level: int | None = None
    rows: tuple[tuple[str, ...], ...] | None = None  # table cells, first row = header
    located: tuple[Located, ...] = ()  # the printed lines (a table's rows) it was made from: regions.py
    units: tuple[UnitDraft, ...] = ()  # the table it is, the figure it captions


@dataclass(frozen=True)
class Rendered:
    markdown: str
    blocks: list[Block]
    page_spans: list[PageSpan]
    regions: list[Region] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)


def one_line(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def paragraph_text(text: str) -> str:
    """Keep single line breaks, drop blank lines inside (they would split the paragraph), trim."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _BLANK_LINES.sub("\n", _TRAILING.sub("\n", text)).strip()


def _cell(text: str) -> str:
    return one_line(text).replace("\\", "\\\\").replace("|", "\\|")


def table_markdown(rows: tuple[tuple[str, ...], ...]) -> str:
    """A GitHub-style pipe table; the first row is the header."""
    width = max(len(row) for row in rows)
    lines = []
    for index, row in enumerate(rows):
        cells = [_cell(cell) for cell in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append("|" + "|".join(["---"] * width) + "|")
    return "\n".join(lines)


def _fence(text: str) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def _parts(segment: Segment) -> tuple[str, str, str] | None:
    """(prefix, body, suffix) of a segment in Markdown; the body is the block's text. None: nothing to show."""
    if segment.kind == "table":
        if not segment.rows or not any(any(cell.strip() for cell in row) for row in segment.rows):
            return None
        return "", table_markdown(segment.rows), ""
    if segment.kind == "code":
        body = segment.text.replace("\r\n", "\n").strip("\n")
        fence = _fence(body)
        return (f"{fence}\n", body, f"\n{fence}") if body.strip() else None
    single_line = segment.kind in ("title", "heading", "list_item")
    body = one_line(segment.text) if single_line else paragraph_text(segment.text)
    if not body:
        return None
    if segment.kind in ("title", "heading"):
        return "#" * min(6, max(1, segment.level or 1)) + " ", body, ""
    if segment.kind == "list_item":
        return "- ", body, ""
    return "", _MARKUP_START.sub(r"\1\\\2", body), ""


def _heading_key(segment: Segment) -> str | None:
    if segment.kind not in ("title", "heading"):
        return None
    return "".join(c for c in segment.text.casefold() if c.isalnum()) or None


def without_twins(segments: list[Segment]) -> list[Segment]:
    """The segments without a heading that repeats the one right before it (a chapter's bookmark and its printed
    capitals "COMPILATION, INSTALLATION", a page's title and its h1, an e-book's contents naming its first
    chapter): the twin would be an empty section of the outline whose path reads two sections."""
    kept: list[Segment] = []
    for segment in segments:
        key = _heading_key(segment)
        if key is not None and kept and _heading_key(kept[-1]) == key:
            continue
        kept.append(segment)
    return kept


def render(segments: list[Segment]) -> Rendered:
    """Join the segments into Markdown: blank line between blocks, one line break between list items."""
    pieces: list[str] = []
    blocks: list[Block] = []
    line_starts: list[int] = []  # where each block's Markdown starts, its syntax ("# ", "- ", fence) included
    regions: list[Region] = []
    units: list[Unit] = []
    position = 0
    previous_kind: str | None = None
    for segment in without_twins(segments):
        parts = _parts(segment)
        if parts is None:
            continue
        prefix, body, suffix = parts
        if previous_kind is not None:
            separator = "\n" if previous_kind == segment.kind == "list_item" else "\n\n"
            pieces.append(separator)
            position += len(separator)
        line_starts.append(position)
        start = position + len(prefix)
        end = start + len(body)
        pieces.append(prefix + body + suffix)
        position = end + len(suffix)
        level = min(6, max(1, segment.level or 1)) if segment.kind in ("title", "heading") else None
        blocks.append(Block(kind=segment.kind, text=body, page=segment.page, level=level, start=start, end=end))
        regions.extend(place(body, start, segment.located))
        units.extend(unit(draft, start, end) for draft in segment.units)
        previous_kind = segment.kind
    markdown = "".join(pieces) + ("\n" if pieces else "")
    spans = page_spans(blocks, line_starts, len(markdown))
    return Rendered(markdown=markdown, blocks=blocks, page_spans=spans, regions=regions, units=units)


def page_spans(blocks: list[Block], line_starts: list[int], length: int) -> list[PageSpan]:
    """One span per run of blocks on the same page, from the run's first block to the next run (or the end).

    Spans are contiguous and cover the Markdown from the first paged block on, so every character between
    two blocks (separators, Markdown syntax) belongs to a page; blocks without a page join the run before.
    """
    runs: list[tuple[int, int]] = []  # (page, offset where the run starts)
    for block, line_start in zip(blocks, line_starts, strict=True):
        if block.page is not None and (not runs or runs[-1][0] != block.page):
            runs.append((block.page, line_start))
    spans = []
    for index, (page, start) in enumerate(runs):
        end = runs[index + 1][1] if index + 1 < len(runs) else length
        spans.append(PageSpan(page=page, start=start, end=end))
    return spans
