"""Wire models of the chunker service (text → token windows)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .common import WireModel
from .docling import PageSpan
from .regions import Region, Unit

PresetName = Literal["default", "dense", "sparse"]
# window / overlap in tokens of the embedding model's tokenizer (the plan's table).
PRESETS: dict[PresetName, tuple[int, int]] = {"default": (200, 40), "dense": (100, 30), "sparse": (400, 60)}
MAX_WINDOW_TOKENS = 8192
MAX_TEXT_CHARS = 20_000_000


class ChunkRequest(WireModel):
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    preset: PresetName | None = Field(default=None, description="Named preset; default when nothing is given.")
    window_tokens: int | None = Field(default=None, ge=16, le=MAX_WINDOW_TOKENS)
    overlap_tokens: int | None = Field(default=None, ge=0, le=MAX_WINDOW_TOKENS - 1)
    markdown: bool = Field(default=True, description="Follow Markdown headings (heading path per chunk).")
    page_spans: list[PageSpan] = Field(default_factory=list, description="Page of each character range.")
    regions: list[Region] = Field(
        default_factory=list,
        description="Where the text lies on its pages (the converter's regions), to locate chunks.",
    )
    units: list[Unit] = Field(default_factory=list, description="Tables and figures (the converter's units).")

    @model_validator(mode="after")
    def _window_or_preset(self) -> ChunkRequest:
        if self.preset is not None and (self.window_tokens is not None or self.overlap_tokens is not None):
            raise ValueError("Give either `preset` or `window_tokens`/`overlap_tokens`, not both.")
        if self.overlap_tokens is not None and self.window_tokens is None:
            raise ValueError("`overlap_tokens` needs `window_tokens`.")
        if self.window_tokens is not None and (self.overlap_tokens or 0) >= self.window_tokens:
            raise ValueError("`overlap_tokens` must be smaller than `window_tokens`.")
        return self

    def resolved_window(self) -> tuple[str, int, int]:
        """(preset label, window, overlap) this request asks for."""
        if self.window_tokens is not None:
            overlap = self.overlap_tokens if self.overlap_tokens is not None else self.window_tokens // 5
            return "custom", self.window_tokens, overlap
        name = self.preset or "default"
        window, overlap = PRESETS[name]
        return name, window, overlap


class PageStart(WireModel):
    """Where a page begins inside a chunk's text: characters from ``offset`` on lie on ``page``."""

    offset: int = Field(ge=0, description="Offset in the chunk's `text` (not in the document).")
    page: int = Field(ge=1)


class Chunk(WireModel):
    index: int = Field(ge=0)
    text: str
    start: int = Field(ge=0, description="Offset of the chunk's first character in the request text.")
    end: int = Field(ge=0, description="Offset one past the chunk's last character.")
    token_count: int = Field(ge=0)
    heading_path: list[str] = Field(default_factory=list)
    heading_levels: list[int] = Field(
        default_factory=list, description="Level (1-6) of each heading in heading_path (the count of its #)."
    )
    page: int | None = Field(default=None, ge=1, description="Page where the chunk starts.")
    page_end: int | None = Field(default=None, ge=1, description="Page where the chunk ends.")
    page_starts: list[PageStart] = Field(
        default_factory=list,
        description="Where each page begins in `text`, in order, when the chunk spans a page break (empty when it "
        "lies on one page). Characters before the first entry (a repeated table header) lie on no page.",
    )
    boxes: list[Region] | None = Field(
        default=None,
        description="Where the chunk's text lies on its pages: offsets in `text`, boxes in points from each page's "
        "top-left corner; null when the request had no regions (a format without pages).",
    )
    units: list[Unit] = Field(
        default_factory=list,
        description="The tables and figures the chunk holds (part of), offsets in the request text.",
    )


class ChunkResponse(WireModel):
    chunks: list[Chunk]
    preset: str
    window_tokens: int
    overlap_tokens: int
    tokenizer: str
    total_tokens: int
    model_max_tokens: int
    chunking_ms: float
    warnings: list[str] = Field(default_factory=list)


class ChunkBatchRequest(WireModel):
    items: list[ChunkRequest] = Field(min_length=1, max_length=1000)


class ChunkBatchResponse(WireModel):
    results: list[ChunkResponse]


class PresetInfo(WireModel):
    name: PresetName
    window_tokens: int
    overlap_tokens: int
    use_case: str


class PresetsResponse(WireModel):
    presets: list[PresetInfo]
    default_preset: PresetName = "default"
    tokenizer: str = Field(description="Tokenizer that counts the tokens (the embedding model's own).")
    model_max_tokens: int = Field(description="Tokens the embedding model reads; a longer window is cut there.")
    max_text_chars: int = Field(description="Longest text one request (or one whole batch) may carry.")
