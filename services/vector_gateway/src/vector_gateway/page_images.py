"""A page of a kept original as an image, with boxes marked: what an agent (MCP image content) and a person (the
console) look at to check a passage where it stands.

PDF pages are rendered by PDFium (pypdfium2, the renderer docling itself uses), images are read by Pillow. The
long side is at most ``max_side`` pixels (1,568 by default: the largest a vision model reads without scaling it
down) and the file at most MAX_IMAGE_BYTES: PNG first, as a 256-colour palette when the full-colour file is too
large (a text page loses nothing visible), else WebP, else smaller. Marks are a translucent fill with an outline,
so the words under them stay legible; where a passage's cited sentences are given, their lines are marked so and
the rest of the passage lighter. PDFium is not thread-safe: one page renders at a time per process.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from PIL import Image, ImageDraw, ImageSequence
from servicekit import Unprocessable

Box = tuple[float, float, float, float]  # x0, top, x1, bottom in points (an image's pixels), top-left origin
Color = tuple[int, int, int, int] | None
ImageFormat = Literal["png", "webp"]
MAX_SIDE = 1568
MAX_IMAGE_BYTES = 1_000_000
MAX_ZOOM = 4.0  # a small crop (a figure) is drawn at most at 288 dpi
MARK_FILL = (255, 200, 0, 80)
MARK_LINE = (220, 90, 0, 255)
# With cited sentences (cited.py), the passage's other lines are marked lighter: found at a glance, not read first.
REST_FILL = (255, 200, 0, 28)
REST_LINE = (240, 190, 120, 255)
FIGURE_LINE = (0, 110, 220, 255)
_PDFIUM = threading.Lock()


@dataclass(frozen=True)
class PageImage:
    data: bytes
    media_type: str
    width: int  # pixels
    height: int
    page_width: float  # points (an image's pixels)
    page_height: float
    render_ms: float


def _page_error(page: int, pages: int) -> Unprocessable:
    return Unprocessable(
        f"The document has {pages} pages; there is no page {page}.",
        code="PAGE_NOT_FOUND",
        suggestion=f"Ask for a page from 1 to {pages}.",
        details={"page_count": pages},
    )


def _pdf_page(path: Path, page: int, crop: Box | None, max_side: int) -> tuple[Image.Image, float, float, Box]:
    import pypdfium2 as pdfium  # only a gateway that shows pages loads PDFium

    with _PDFIUM:
        document = pdfium.PdfDocument(str(path))
        try:
            if not 1 <= page <= len(document):
                raise _page_error(page, len(document))
            handle = document[page - 1]
            width, height = handle.get_size()
            area = _clip(crop, width, height) if crop else (0.0, 0.0, width, height)
            scale = min(max_side / max(area[2] - area[0], area[3] - area[1], 1.0), MAX_ZOOM)
            bitmap = handle.render(
                scale=scale, crop=(area[0], height - area[3], width - area[2], area[1]), may_draw_forms=True
            )
            picture = bitmap.to_pil().convert("RGB")
            handle.close()
        finally:
            document.close()
    return picture, width, height, area


def _image_page(path: Path, page: int, crop: Box | None, max_side: int) -> tuple[Image.Image, float, float, Box]:
    with Image.open(path) as image:
        frames = getattr(image, "n_frames", 1)
        if not 1 <= page <= frames:
            raise _page_error(page, frames)
        frame = next(f for i, f in enumerate(ImageSequence.Iterator(image), start=1) if i == page)
        picture = frame.convert("RGB")
    width, height = float(picture.width), float(picture.height)
    area = _clip(crop, width, height) if crop else (0.0, 0.0, width, height)
    picture = picture.crop(tuple(round(v) for v in area))  # type: ignore[arg-type]  # four ints: a PIL box
    scale = min(max_side / max(picture.width, picture.height, 1), MAX_ZOOM)
    size = (max(round(picture.width * scale), 1), max(round(picture.height * scale), 1))
    return picture.resize(size, Image.Resampling.LANCZOS), width, height, area


def _clip(box: Box, width: float, height: float) -> Box:
    x0, top, x1, bottom = max(box[0], 0.0), max(box[1], 0.0), min(box[2], width), min(box[3], height)
    if x1 - x0 < 1 or bottom - top < 1:
        raise Unprocessable(
            f"The crop {list(box)} lies outside the page ({width:.0f} x {height:.0f}).",
            code="INVALID_REQUEST",
            suggestion="Give a box (x0, top, x1, bottom) inside the page, as a figure's box says.",
        )
    return (x0, top, x1, bottom)


def _styled(marks: Sequence[Box], cited: Sequence[Box]) -> list[tuple[Sequence[Box], Color, Color]]:
    """Boxes with their fill and outline: every mark in full; with cited lines, those in full and the rest lighter."""
    if not cited:
        return [(marks, MARK_FILL, MARK_LINE)]
    chosen = set(cited)
    return [([box for box in marks if box not in chosen], REST_FILL, REST_LINE), (cited, MARK_FILL, MARK_LINE)]


def _mark(
    picture: Image.Image, area: Box, marks: Sequence[Box], figures: Sequence[Box], cited: Sequence[Box] = ()
) -> Image.Image:
    if not marks and not figures:
        return picture
    sx = picture.width / max(area[2] - area[0], 1e-6)
    sy = picture.height / max(area[3] - area[1], 1e-6)
    layer = Image.new("RGBA", picture.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    pad = 1.5  # pixels around a line's box: the outline must not cross the glyphs
    for boxes, fill, line in [(figures, None, FIGURE_LINE), *_styled(marks, cited)]:
        for box in boxes:
            shape = ((box[0] - area[0]) * sx - pad, (box[1] - area[1]) * sy - pad,
                     (box[2] - area[0]) * sx + pad, (box[3] - area[1]) * sy + pad)  # fmt: skip
            draw.rectangle(shape, fill=fill, outline=line, width=2)
    return Image.alpha_composite(picture.convert("RGBA"), layer).convert("RGB")


def _encode(picture: Image.Image, fmt: ImageFormat) -> tuple[bytes, str, tuple[int, int]]:
    """The smallest good file under MAX_IMAGE_BYTES: PNG, a palette PNG, WebP; else the picture made smaller."""
    while True:
        attempts = [("png", None), ("png", "palette"), ("webp", None)] if fmt == "png" else [("webp", None)]
        for kind, mode in attempts:
            buffer = io.BytesIO()
            if kind == "png":
                image = picture.quantize(256, dither=Image.Dither.NONE) if mode else picture
                image.save(buffer, "PNG", optimize=False, compress_level=6)
            else:
                picture.save(buffer, "WEBP", quality=82, method=4)
            if buffer.tell() <= MAX_IMAGE_BYTES:
                return buffer.getvalue(), f"image/{kind}", picture.size
        picture = picture.resize((max(picture.width * 3 // 4, 1), max(picture.height * 3 // 4, 1)))


def render(
    path: Path,
    file_type: str,
    page: int,
    *,
    marks: Sequence[Box] = (),
    cited: Sequence[Box] = (),
    figures: Sequence[Box] = (),
    crop: Box | None = None,
    fmt: ImageFormat = "png",
    max_side: int = MAX_SIDE,
) -> PageImage:
    """Page ``page`` (1-based) of the original at ``path``, or the ``crop`` of it, with ``marks`` filled (those not
    ``cited`` lighter, when some are) and ``figures`` outlined (boxes in the page's points)."""
    started = time.perf_counter()
    read = _pdf_page if file_type == "pdf" else _image_page
    picture, width, height, area = read(path, page, crop, max_side)
    data, media_type, (pixels_wide, pixels_high) = _encode(_mark(picture, area, marks, figures, cited), fmt)
    return PageImage(data=data, media_type=media_type, width=pixels_wide, height=pixels_high, page_width=width,
                     page_height=height, render_ms=round((time.perf_counter() - started) * 1000, 1))  # fmt: skip
