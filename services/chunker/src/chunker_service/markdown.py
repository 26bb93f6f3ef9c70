"""Split Markdown into sections at ATX headings (``#`` .. ``######``), skipping fenced code."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Candidate lines only: an ATX heading or a code fence, indented by at most three spaces
# (four spaces make an indented code block in CommonMark).
_CANDIDATE = re.compile(r"^ {0,3}(?:(?P<hashes>#{1,6})(?=[ \t\r\n]|$)|(?P<fence>`{3,}|~{3,}))", re.MULTILINE)
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
# A heading line can be as long as the text; each chunk repeats its path, so keep titles short.
MAX_TITLE_CHARS = 200


@dataclass(frozen=True, slots=True)
class Section:
    start: int
    end: int
    heading_path: tuple[str, ...]
    heading_levels: tuple[int, ...] = ()  # the level (1-6: count of #) of each heading in heading_path


@dataclass(slots=True)
class _Fence:
    char: str
    length: int


def _line_at(text: str, start: int) -> str:
    end = text.find("\n", start)
    return text[start : len(text) if end < 0 else end].rstrip("\r")


def _title(line_rest: str) -> str:
    title = _CLOSING_HASHES.sub("", line_rest.strip()).strip()
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"


def _next_fence(fence: _Fence | None, marker: str, rest: str) -> _Fence | None:
    """The open fence after a line that starts with ``marker`` (None: outside code)."""
    if fence is None:
        if marker[0] == "`" and "`" in rest:
            return None  # inline code such as ```x```, not a fence
        return _Fence(marker[0], len(marker))
    if marker[0] == fence.char and len(marker) >= fence.length and not rest.strip():
        return None
    return fence


def heading_starts(text: str) -> list[tuple[int, int, str]]:
    """(offset of the heading line, level, title) of every ATX heading outside fenced code."""
    headings: list[tuple[int, int, str]] = []
    fence: _Fence | None = None
    for match in _CANDIDATE.finditer(text):
        line = _line_at(text, match.start())
        rest = line[match.end() - match.start() :]
        if match.group("fence"):
            fence = _next_fence(fence, match.group("fence"), rest)
        elif fence is None:
            headings.append((match.start(), len(match.group("hashes")), _title(rest)))
    return headings


def split_sections(text: str, *, markdown: bool = True) -> list[Section]:
    """Sections that tile ``text``; each heading line opens a section and stays in it."""
    if not markdown:
        return [Section(0, len(text), ())]
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    start, path, levels = 0, tuple[str, ...](), tuple[int, ...]()
    for offset, level, title in heading_starts(text):
        if offset > start:
            sections.append(Section(start, offset, path, levels))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        titled = [(lvl, t) for lvl, t in stack if t]
        start, path, levels = offset, tuple(t for _, t in titled), tuple(lvl for lvl, _ in titled)
    sections.append(Section(start, len(text), path, levels))
    return sections
