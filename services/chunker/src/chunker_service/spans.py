"""The spans a text is cut into: what the chunker, the heading and the table steps pass between them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    start: int
    end: int
    token_count: int
    heading_path: tuple[str, ...]
    prefix: str = ""  # text put before text[start:end]: the header of a table the chunk continues (tables.py)
    heading_levels: tuple[int, ...] = ()  # parallel to heading_path (markdown.Section)


@dataclass(slots=True)
class BaseSpan:
    """A span of at most ``window - overlap`` tokens, before overlap is added."""

    start: int
    end: int
    section: int
    tokens: int
    token_starts: list[int]
