"""Evidence an agent can check: where a passage lies on its pages, the tables and figures it holds, its page drawn.

The shapes are said once, in the server's instructions (not in every schema: tools/list is in every conversation):
``regions`` is a list of pages, each ``{page, size: [width, height], boxes: [[start, end, x0, top, x1, bottom]]}``:
characters start..end of the text the answer gives lie in that box, in points from the page's top-left corner.
``units`` are tables and figures: ``{kind, page, box, caption}``, a table's Markdown with it when asked for.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

from ingestion_contracts.gateway import DocumentStructure, SearchHit
from ingestion_contracts.regions import PageSize, Region, Unit
from mcp.types import ImageContent
from pydantic import BaseModel

from ...library import PageImage

PAGED_FILE_TYPES = ("pdf", "image")
NOT_LOCATED = (
    "{count} of them are from documents indexed before boxes were kept (no regions): ingest those again with "
    "force=true to locate their passages."
)


class PageRegions(BaseModel):
    page: int
    size: list[float] | None = None  # [width, height] in points
    boxes: list[list[float]]  # [start, end, x0, top, x1, bottom]


class UnitItem(BaseModel):
    kind: str
    page: int
    box: list[float]
    caption: str | None = None
    markdown: str | None = None  # a table's, when asked for


class ShownImage(BaseModel):
    page: int
    kind: str  # page or figure
    marked: int | None = None  # the passage's boxes drawn on it
    cited: int | None = None  # ... of them, the cited sentences' lines (the rest lighter)
    cited_box: list[float] | None = None  # around those lines, as shares (0-1) of the page: a viewer scrolls there
    passage_pages: list[int] | None = None  # the pages the passage has boxes on


def _number(value: float) -> float:
    return round(float(value), 1)


def grouped(regions: Sequence[Region], sizes: Sequence[PageSize] | None, *, shift: int = 0,
            limit: int | None = None) -> list[PageRegions]:  # fmt: skip
    """Regions by page, offsets moved by ``shift`` (into the text an answer gives), those past ``limit`` left out."""
    size_of = {size.page: [_number(size.width), _number(size.height)] for size in sizes or []}
    pages: dict[int, PageRegions] = {}
    for region in regions:
        start, end = region.start - shift, region.end - shift
        if end <= 0 or (limit is not None and start >= limit):
            continue
        start, end = max(start, 0), end if limit is None else min(end, limit)
        entry = pages.setdefault(region.page, PageRegions(page=region.page, size=size_of.get(region.page), boxes=[]))
        entry.boxes.append([start, end, *(_number(v) for v in region.box)])
    return list(pages.values())


def unit_item(unit: Unit, markdown: str | None = None) -> UnitItem:
    return UnitItem(kind=unit.kind, page=unit.page, box=[_number(v) for v in unit.box], caption=unit.caption or None,
                    markdown=markdown)  # fmt: skip


def hit_regions(hit: SearchHit) -> list[PageRegions] | None:
    return None if hit.boxes is None else grouped(hit.boxes, hit.page_sizes)


def hit_units(hit: SearchHit) -> list[UnitItem] | None:
    return [unit_item(u) for u in hit.units] if hit.units else None


def not_located(hit: SearchHit) -> bool:
    """A passage of a PDF or an image stored before boxes were kept."""
    return hit.file_type in PAGED_FILE_TYPES and hit.boxes is None


def whole_units(doc: DocumentStructure, hit: SearchHit) -> list[UnitItem]:
    """The tables and figures a passage holds, whole: a table with its Markdown (cut from the document's text)."""
    by_place = {(u.kind, u.page, tuple(u.box)): u for u in doc.units or []}
    found = []
    for unit in hit.units or []:
        placed = by_place.get((unit.kind, unit.page, tuple(unit.box)))
        markdown = doc.content[placed.start : placed.end] if placed is not None and unit.kind == "table" else None
        found.append(unit_item(unit, markdown))
    return found


def image_content(image: PageImage) -> ImageContent:
    return ImageContent(type="image", data=base64.b64encode(image.data).decode("ascii"), mime_type=image.media_type)


def page_share(image: PageImage) -> list[float] | None:
    """The box around the cited lines (points) as shares of the page's width and height."""
    if not image.cited_box or not image.page_size or len(image.cited_box) != 4:
        return None
    width, height = image.page_size
    x0, top, x1, bottom = image.cited_box
    return [round(x0 / width, 4), round(top / height, 4), round(x1 / width, 4), round(bottom / height, 4)]


def crop_of(unit: Unit | UnitItem) -> str:
    return ",".join(f"{v:g}" for v in unit.box)
