"""Pages without a text layer (scans) and images, read by OCR into page lines."""

from __future__ import annotations

import io
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pypdfium2 as pdfium
from docling.utils.locks import pypdfium2_lock
from PIL import Image, ImageSequence
from servicekit import Unprocessable

from .ocr import OcrEngine
from .pdf_lines import Line

# Fewer characters than this on a page: a scan (maybe with a stamped page number), read by OCR.
MIN_TEXT_CHARS = 16
# Larger images are scaled down first: OCR works on ~2000 px anyway, and memory stays bounded.
MAX_IMAGE_SIDE = 4000
MAX_IMAGE_PIXELS = 120_000_000
MAX_IMAGE_FRAMES = 500
# Smaller images are enlarged to this long side first: RapidOCR reads ~2000 px pages best (a 150 dpi
# scan of a memo: character accuracy 0.86 as is, 0.96 enlarged; bench.pdf_fidelity).
OCR_SIDE = 2000
MAX_UPSCALE = 2.0


def scanned_pages(data: bytes) -> list[int]:
    """1-based numbers of the PDF pages that have (almost) no text layer."""
    with pypdfium2_lock:
        document = pdfium.PdfDocument(data)
        try:
            found = []
            for index in range(len(document)):
                page = document[index]
                textpage = page.get_textpage()
                if textpage.count_chars() < MIN_TEXT_CHARS:
                    found.append(index + 1)
                textpage.close()
                page.close()
            return found
        finally:
            document.close()


def pdf_page_sizes(data: bytes, pages: set[int]) -> dict[int, tuple[float, float]]:
    """Width and height in points of the given pages (read from the page tree: no page is loaded)."""
    with pypdfium2_lock:
        document = pdfium.PdfDocument(data)
        try:
            return {page: document.get_page_size(page - 1) for page in sorted(pages) if 1 <= page <= len(document)}
        finally:
            document.close()


def image_sizes(data: bytes) -> dict[int, tuple[float, float]]:
    """Width and height in pixels of each frame of an image (its OCR lines are in these pixels)."""
    with Image.open(io.BytesIO(data)) as image:
        return {number: (float(frame.width), float(frame.height))
                for number, frame in enumerate(ImageSequence.Iterator(image), start=1)}  # fmt: skip


def _render(data: bytes, pages: list[int], dpi: int) -> list[tuple[int, Image.Image]]:
    with pypdfium2_lock:
        document = pdfium.PdfDocument(data)
        try:
            rendered = []
            for number in pages:
                page = document[number - 1]
                rendered.append((number, page.render(scale=dpi / 72, grayscale=True).to_pil()))
                page.close()
            return rendered
        finally:
            document.close()


def ocr_pdf_pages(
    data: bytes, pages: list[int], engine: OcrEngine, on_page: Callable[[int], None] | None = None
) -> list[Line]:
    """OCR lines (in points, top-left origin) of the given PDF pages, in page order.

    Pages are read ``page_threads`` at a time (ONNX Runtime releases the GIL), and rendered only a batch
    ahead, so a 500-page scan never holds more than a few page images in memory. ``on_page`` hears each
    page number once its lines are in (progress), in page order.
    """
    dpi = engine.options.render_dpi
    threads = engine.options.page_threads
    lines: list[Line] = []
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ocr-page") as pool:
        for start in range(0, len(pages), threads):
            rendered = _render(data, pages[start : start + threads], dpi)
            readings = pool.map(lambda page: engine.page_lines(page[1], page[0], scale=dpi / 72), rendered)
            for (number, _), page_lines in zip(rendered, readings, strict=True):
                lines.extend(page_lines)
                if on_page is not None:
                    on_page(number)
    return lines


def _bad_image(name: str) -> Unprocessable:
    return Unprocessable(
        f"{name!r} is not a readable image: the file is damaged, truncated or too large.",
        code="CORRUPT_FILE",
        suggestion="Re-save it as PNG, JPEG or TIFF (at most 120 megapixels) and send it again.",
    )


def _sized(page: Image.Image) -> Image.Image:
    longest = max(page.size)
    if longest < OCR_SIDE:
        factor = min(OCR_SIDE / longest, MAX_UPSCALE)
        return page.resize((round(page.width * factor), round(page.height * factor)), Image.Resampling.LANCZOS)
    page.thumbnail((MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))
    return page


def ocr_image(name: str, data: bytes, engine: OcrEngine) -> tuple[list[Line], int]:
    """OCR lines of a PNG/JPEG/TIFF (one page per TIFF frame) and the number of pages."""
    Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS  # beyond: DecompressionBombError, refused below
    try:
        with Image.open(io.BytesIO(data)) as image:
            lines: list[Line] = []
            count = 0
            for count, frame in enumerate(ImageSequence.Iterator(image), start=1):
                if count > MAX_IMAGE_FRAMES:
                    raise _bad_image(name)
                page = _sized(frame.convert("L"))
                # Lines in the image's own pixels (it was scaled for OCR): what a page image is drawn from.
                lines.extend(engine.page_lines(page, count, scale=page.width / max(frame.width, 1)))
            return lines, count
    except (OSError, ValueError, Image.DecompressionBombError, SyntaxError) as exc:
        raise _bad_image(name) from exc
