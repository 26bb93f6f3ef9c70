"""Checks on a document's container before docling reads it: zip bombs, encrypted or broken PDFs."""

from __future__ import annotations

import io
import zipfile
import zlib
from dataclasses import dataclass

import pypdfium2 as pdfium
from docling.utils.locks import pypdfium2_lock
from servicekit import Unprocessable

# A member may inflate this much (XML compresses ~10-20x); beyond, only tiny members are allowed.
MAX_COMPRESSION_RATIO = 100
RATIO_FREE_BYTES = 1 << 20
MAX_TOTAL_UNCOMPRESSED = 512 << 20
MAX_MEMBERS = 10_000
_READ_CHUNK = 1 << 16
# PDFium's FPDF_GetLastError codes.
_PDFIUM_PASSWORD = 4
_PDFIUM_SECURITY = 6
_REQUIRED_PART = {"docx": "word/document.xml", "pptx": "ppt/presentation.xml", "xlsx": "xl/workbook.xml"}
_REQUIRED_PART |= {"epub": "META-INF/container.xml", "odt": "content.xml", "ods": "content.xml", "odp": "content.xml"}


@dataclass(frozen=True)
class PdfInfo:
    page_count: int
    title: str | None


def _bomb(name: str, detail: str) -> Unprocessable:
    return Unprocessable(
        f"{name!r} was refused: {detail}. It looks like a zip bomb, not a normal document.",
        code="CORRUPT_FILE",
        suggestion="Open and re-save it in the application that made it, or export it as PDF, and send it again.",
    )


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, budget: int) -> int:
    """Decompress one member (its declared sizes may lie), stopping at the first limit it breaks."""
    seen = 0
    allowed = max(RATIO_FREE_BYTES, info.compress_size * MAX_COMPRESSION_RATIO)
    with archive.open(info) as member:
        while chunk := member.read(_READ_CHUNK):
            seen += len(chunk)
            if seen > allowed:
                raise _bomb(name, f"member {info.filename!r} inflates more than {MAX_COMPRESSION_RATIO}x")
            if seen > budget:
                raise _bomb(name, f"its content inflates to more than {MAX_TOTAL_UNCOMPRESSED >> 20} MiB")
    return seen


def check_office_zip(name: str, data: bytes, file_type: str) -> None:
    """Refuse a zipped document (DOCX/PPTX/XLSX, EPUB, ODT/ODS/ODP) that is not a readable zip, lacks its main part,
    or inflates out of proportion."""
    corrupt = Unprocessable(
        f"{name!r} is not a valid {file_type.upper()} file: the zip container is damaged.",
        code="CORRUPT_FILE",
        suggestion="Re-save the document in the application that made it and send it again.",
    )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            if len(members) > MAX_MEMBERS:
                raise _bomb(name, f"it holds {len(members)} zip members (limit {MAX_MEMBERS})")
            if _REQUIRED_PART[file_type] not in archive.namelist():
                raise Unprocessable(
                    f"{name!r} is not a valid {file_type.upper()} file: {_REQUIRED_PART[file_type]} is missing.",
                    code="CORRUPT_FILE",
                    suggestion="Re-save the document in the application that made it and send it again.",
                )
            declared = sum(info.file_size for info in members)
            if declared > MAX_TOTAL_UNCOMPRESSED:
                raise _bomb(name, f"its members declare {declared >> 20} MiB uncompressed")
            budget = MAX_TOTAL_UNCOMPRESSED
            for info in members:
                if not info.is_dir():
                    budget -= _inflate(archive, info, name, budget)
    # RuntimeError: an encrypted member; zlib.error: damaged data; NotImplementedError: unknown compression.
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, RuntimeError) as exc:
        raise corrupt from exc


def inspect_pdf(
    name: str, data: bytes, *, max_pages: int | None = None, max_page_megapixels: float | None = None, dpi: int = 200
) -> PdfInfo:
    """Open the PDF with PDFium: page count and title, or a clear error for encrypted/damaged/too long files and
    for a page whose image at ``dpi`` (what OCR and docling's layout models render) would pass the megapixels."""
    with pypdfium2_lock:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise _pdf_error(name, getattr(exc, "err_code", None)) from exc
        try:
            page_count = len(document)
            title = (document.get_metadata_dict(skip_empty=True).get("Title") or "").strip() or None
            if max_page_megapixels is not None and (max_pages is None or page_count <= max_pages):
                _check_page_sizes(name, document, max_page_megapixels, dpi)
        finally:
            document.close()
    if page_count == 0:
        raise Unprocessable(f"{name!r} has no pages.", code="CORRUPT_FILE", suggestion="Send a PDF with content.")
    if max_pages is not None and page_count > max_pages:
        raise Unprocessable(
            f"{name!r} has {page_count} pages; this service converts PDFs of at most {max_pages} pages "
            "(DOCLING_MAX_PDF_PAGES). Nothing was converted.",
            code="TOO_MANY_PAGES",
            suggestion=f"Split the PDF into parts of at most {max_pages} pages, or ask the operator to raise "
            "DOCLING_MAX_PDF_PAGES.",
            details={"page_count": page_count, "max_pages": max_pages},
        )
    return PdfInfo(page_count=page_count, title=title)


def _check_page_sizes(name: str, document: pdfium.PdfDocument, max_megapixels: float, dpi: int) -> None:
    """Refuse the first page whose image at ``dpi`` would pass ``max_megapixels`` (sizes are read from the page
    tree, no page is loaded): a poster-sized page rendered for OCR takes gigabytes."""
    scale = dpi / 72
    for index in range(len(document)):
        width, height = document.get_page_size(index)  # points
        megapixels = width * scale * height * scale / 1e6
        if megapixels > max_megapixels:
            raise Unprocessable(
                f"Page {index + 1} of {name!r} is {width / 72:.0f} x {height / 72:.0f} in: {megapixels:.0f} "
                f"megapixels at {dpi} dpi, past this service's limit of {max_megapixels:g} megapixels a page "
                "(DOCLING_MAX_PDF_PAGE_MEGAPIXELS). Nothing was converted.",
                code="PAGE_TOO_LARGE",
                suggestion="Scale the PDF's pages down (print it to a standard paper size), or ask the operator "
                "to raise DOCLING_MAX_PDF_PAGE_MEGAPIXELS (each megapixel costs about 1-3 MB while the page is read).",
                details={"page": index + 1, "megapixels": round(megapixels, 1), "max_megapixels": max_megapixels,
                         "dpi": dpi},
            )  # fmt: skip


def _pdf_error(name: str, err_code: int | None) -> Unprocessable:
    if err_code in (_PDFIUM_PASSWORD, _PDFIUM_SECURITY):
        return Unprocessable(
            f"Document parsing failed: PDF is password-protected ({name!r}).",
            code="ENCRYPTED_FILE",
            suggestion="Remove the password protection, or send the decrypted content as text.",
        )
    return Unprocessable(
        f"{name!r} is not a valid PDF: the file is damaged or truncated.",
        code="CORRUPT_FILE",
        suggestion="Check that the whole file was sent; re-export or repair the PDF and send it again.",
    )
