"""Where text lies on its page: regions (a printed line, a table row), units (a table or a figure as a whole), page
sizes, and the page furniture (running heads and feet, page numbers) kept beside the text. Boxes are in points (1/72
inch; an image's pixels for an image file), from the page's top-left corner: (x0, top, x1, bottom). They travel from
the converter (offsets in its Markdown) through the chunker (offsets in a chunk's text) to the gateway, which keeps
them with each chunk (docs/evidence.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .common import WireModel

Coordinate = Annotated[float, Field(ge=-100_000, le=100_000)]
Box = tuple[Coordinate, Coordinate, Coordinate, Coordinate]
UnitKind = Literal["table", "figure"]
MAX_CAPTION_CHARS = 500
MAX_FURNITURE_CHARS = 1_000


def _ordered(box: Box, what: str) -> None:
    if box[2] < box[0] or box[3] < box[1]:
        raise ValueError(f"{what} box {list(box)} must be (x0, top, x1, bottom) with x0 <= x1 and top <= bottom.")


class Region(WireModel):
    """Characters start..end of a text lie in ``box`` on ``page``: offsets in the Markdown of a convert response,
    in the chunk's text on a chunk, in the document's content on a document's structure."""

    page: int = Field(ge=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    box: Box = Field(description="x0, top, x1, bottom in points from the page's top-left corner.")

    @model_validator(mode="after")
    def _sane(self) -> Region:
        if self.end < self.start:
            raise ValueError(f"A region ends ({self.end}) before it starts ({self.start}).")
        _ordered(self.box, "A region's")
        return self


class Unit(WireModel):
    """A table or a figure as a whole: where it is (page, box) and where its text lies in the document's Markdown
    (a table's rows; a figure's caption, or the paragraph beside a figure without one)."""

    kind: UnitKind
    page: int = Field(ge=1)
    start: int = Field(ge=0, description="Offset of its first character in the document's Markdown.")
    end: int = Field(ge=0, description="Offset one past its last character.")
    box: Box = Field(description="x0, top, x1, bottom in points from the page's top-left corner.")
    caption: str = Field(default="", max_length=MAX_CAPTION_CHARS)

    @model_validator(mode="after")
    def _sane(self) -> Unit:
        if self.end < self.start:
            raise ValueError(f"A {self.kind} ends ({self.end}) before it starts ({self.start}).")
        _ordered(self.box, f"A {self.kind}'s")
        return self


class PageSize(WireModel):
    page: int = Field(ge=1)
    width: float = Field(gt=0, le=100_000, description="Points (an image's pixels).")
    height: float = Field(gt=0, le=100_000)


class Furniture(WireModel):
    """A running head, running foot or page number: printed in the same place on most pages, kept out of the
    document's Markdown (so out of its passages, sections and page citations) and shown with its page's text."""

    page: int = Field(ge=1)
    text: str = Field(max_length=MAX_FURNITURE_CHARS)
    box: Box = Field(description="x0, top, x1, bottom in points from the page's top-left corner.")
    place: Literal["header", "footer"]

    @model_validator(mode="after")
    def _sane(self) -> Furniture:
        _ordered(self.box, "A furniture line's")
        return self
