"""A PDF page too large to render (a poster-sized or malicious page size) is refused before any work, naming the
page, its size, the limit and the setting that raises it (issue 21, point 5)."""

from __future__ import annotations

import io

import pypdfium2 as pdfium
import pytest
from docling_service.containers import inspect_pdf
from servicekit import Unprocessable

from .test_pdf_windows import _app, serving

A0 = (2384.0, 3370.0)  # points: 62 megapixels at 200 dpi


def pdf_of(*sizes: tuple[float, float]) -> bytes:
    document = pdfium.PdfDocument.new()
    for width, height in sizes:
        document.new_page(width, height)
    out = io.BytesIO()
    document.save(out)
    document.close()
    return out.getvalue()


def test_pages_up_to_the_limit_pass_and_the_first_larger_one_is_named() -> None:
    assert inspect_pdf("a0.pdf", pdf_of((612, 792), A0), max_page_megapixels=100, dpi=200).page_count == 2
    with pytest.raises(Unprocessable) as refused:
        inspect_pdf("poster.pdf", pdf_of((612, 792), (612, 792), (4000, 4000)), max_page_megapixels=100, dpi=200)
    error, details = refused.value, refused.value.details or {}
    assert error.code == "PAGE_TOO_LARGE" and details["page"] == 3
    assert details["megapixels"] == pytest.approx(4000 * 4000 * (200 / 72) ** 2 / 1e6, abs=0.1)
    assert "Page 3 of 'poster.pdf' is 56 x 56 in" in error.message
    assert "DOCLING_MAX_PDF_PAGE_MEGAPIXELS" in error.message
    # The resolution pages are read at decides: the same page at 72 dpi is 16 megapixels.
    assert inspect_pdf("poster.pdf", pdf_of((4000, 4000)), max_page_megapixels=100, dpi=72).page_count == 1


async def test_the_service_refuses_a_huge_page_with_the_setting_that_raises_the_limit() -> None:
    app = _app(workers=1, max_pdf_page_megapixels=50)
    async with serving(app) as http:
        refused = await http.post("/v1/convert", files={"file": ("plan.pdf", pdf_of((612, 792), A0))})
        accepted_size = await http.post("/v1/convert", files={"file": ("letter.pdf", pdf_of((612, 792)))})
    body = refused.json()
    assert refused.status_code == 422 and body["code"] == "PAGE_TOO_LARGE", body
    assert "Page 2 of 'plan.pdf'" in body["error"] and "limit of 50 megapixels" in body["error"]
    assert "DOCLING_MAX_PDF_PAGE_MEGAPIXELS" in body["suggestion"]
    # A letter page passes the size check (it is blank: refused later for having no text, not for its size).
    assert accepted_size.json().get("code") != "PAGE_TOO_LARGE"
