"""Documents to Markdown with blocks and pages. Blocking calls; no HTTP here."""

from __future__ import annotations

import hashlib
import io
import logging
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from docling.datamodel.base_models import ConversionStatus, DocumentStream, InputFormat
from docling.datamodel.document import ConversionResult
from docling.datamodel.pipeline_options import NativePdfPipelineOptions, PdfPipelineOptions, RapidOcrOptions
from docling.datamodel.settings import settings as docling_settings
from docling.document_converter import DocumentConverter, NativePdfFormatOption, PdfFormatOption
from docling_core.types.doc import DoclingDocument
from ingestion_contracts.docling import EXTENSIONS, ConvertResponse, FileType, FormatInfo, Pipeline
from ingestion_contracts.regions import Furniture, PageSize
from servicekit import Unprocessable

from .backends import convert_as, docling_formats
from .containers import PdfInfo, check_office_zip, inspect_pdf
from .formats import detect_file_type, unwrap_gzip
from .html_clean import clean_document
from .html_nesting import check_html_nesting
from .markdown import Rendered, Segment, render
from .metadata import metadata_title
from .native_pdf import NativeText, PageProgress, windowed_native_segments
from .ocr import OcrEngine, engine_name
from .ocr_models import OcrModelMissing, model_params
from .options import ConverterOptions
from .pdf_lines import Line, merge_lines
from .regions import page_sizes
from .scans import image_sizes, ocr_image, pdf_page_sizes, scanned_pages
from .segments import document_lines, document_segments

log = logging.getLogger("docling_service.converter")
# What a deployment that meant to run the standard pipeline (the standard or mounted image) must do.
NO_MODELS_HINT = (
    "docling's layout and TableFormer models are not mounted there: headings come from the text's own structure and "
    "tables by rule. For the standard pipeline, mount the folder a standard build (or fetch_models.py) produced "
    "there, read-only (docs/deployment.md, 'Models: baked or mounted')."
)

_BLANK_LINE = re.compile(r"\n[ \t]*\n")
PAGED_TYPES = frozenset({"pdf", "pptx", "image"})
# Types whose metadata declares the title (<title>, the EPUB's dc:title): it comes before the first heading.
DECLARED_TITLES = frozenset({"html", "mhtml", "epub"})
NATIVE_FALLBACK_WARNING = (
    "PDF converted with the model-free native pipeline (no layout model: headings are guessed from font size, "
    "tables are found by rule). Mount docling's models and set DOCLING_ARTIFACTS_PATH for the standard pipeline."
)


def _no_progress(_: int, __: int) -> None:
    return None


@dataclass
class Converter:
    """One docling DocumentConverter, built once by ``start()`` and reused for every document."""

    options: ConverterOptions
    pdf_pipeline: Pipeline = "native"
    startup_warnings: list[str] = field(default_factory=list)
    _docling: DocumentConverter | None = None
    _ocr: OcrEngine | None = None

    @property
    def ready(self) -> bool:
        return self._docling is not None

    def start(self) -> None:
        """Build the converter and load every pipeline now, so the first request does not pay for it."""
        # docling's own global settings read DOCLING_ARTIFACTS_PATH too, and then every pipeline (even the
        # model-free ones) refuses to start when it is missing. Only the options below decide here.
        docling_settings.artifacts_path = None
        self._ocr = self._ocr_engine() if self.options.do_ocr else None
        artifacts = self.options.artifacts_path
        if artifacts is not None and artifacts.is_dir() and not any(artifacts.iterdir()):
            # The slim image's empty /models/docling: no models were baked in or mounted.
            self.startup_warnings.append(
                f"DOCLING_ARTIFACTS_PATH={artifacts} is empty; using the native PDF pipeline. {NO_MODELS_HINT}"
            )
        elif artifacts is not None and artifacts.is_dir():
            try:
                self._docling = self._build(self._standard_pdf_option(artifacts))
                self.pdf_pipeline = "standard"
                return
            except Exception as exc:  # any model loading failure: fall back, and say why
                log.warning("standard PDF pipeline unavailable, using the native one", exc_info=exc)
                reason = " ".join(str(exc).split())[:400]
                self.startup_warnings.append(
                    f"DOCLING_ARTIFACTS_PATH={artifacts} could not be loaded ({reason}); using the native PDF pipeline."
                )
        elif artifacts is not None:
            self.startup_warnings.append(
                f"DOCLING_ARTIFACTS_PATH={artifacts} does not exist; using the native PDF pipeline. {NO_MODELS_HINT}"
            )
        self._docling = self._build(self._native_pdf_option())
        self.pdf_pipeline = "native"

    def _ocr_engine(self) -> OcrEngine:
        """The OCR engine, its model files found now: a missing tiny model falls back to small, saying so."""
        options = self.options.ocr
        try:
            model_params(options.model)
        except OcrModelMissing as exc:
            log.warning("OCR model unavailable, using PP-OCRv6 small: %s", exc)
            self.startup_warnings.append(f"{exc} Using PP-OCRv6 small meanwhile (slower on scans).")
            options = replace(options, model="small")
        return OcrEngine(options)

    def _standard_pdf_option(self, artifacts: Path) -> PdfFormatOption:
        # RapidOCR, as on the native path; its models come from the artifacts folder (docs/deployment.md).
        options = PdfPipelineOptions(
            artifacts_path=artifacts,
            do_ocr=self.options.do_ocr,
            ocr_options=RapidOcrOptions(backend="onnxruntime"),
            do_table_structure=True,
            document_timeout=self.options.timeout_s,
        )
        return PdfFormatOption(pipeline_options=options)

    def _native_pdf_option(self) -> NativePdfFormatOption:
        options = NativePdfPipelineOptions(
            generate_page_images=False, generate_picture_images=False, document_timeout=self.options.timeout_s
        )
        return NativePdfFormatOption(pipeline_options=options)

    @staticmethod
    def _build(pdf_option: PdfFormatOption) -> DocumentConverter:
        formats = docling_formats()
        docling = DocumentConverter(allowed_formats=formats, format_options={InputFormat.PDF: pdf_option})
        for input_format in formats:
            docling.initialize_pipeline(input_format)
        return docling

    @property
    def ocr(self) -> bool:
        return self.options.do_ocr

    def formats(self) -> list[FormatInfo]:
        infos = []
        for file_type in dict.fromkeys(EXTENSIONS.values()):
            extensions = [ext for ext, kind in EXTENSIONS.items() if kind == file_type]
            infos.append(
                FormatInfo(
                    file_type=file_type,
                    extensions=extensions,
                    pipeline=self._pipeline_for(file_type),
                    paged=file_type in PAGED_TYPES,
                )
            )
        return infos

    def _pipeline_for(self, file_type: FileType) -> Pipeline:
        pipelines: dict[FileType, Pipeline] = {"pdf": self.pdf_pipeline, "txt": "text", "image": "ocr"}
        return pipelines.get(file_type, "simple")

    def convert(self, data: bytes, file_name: str, progress: PageProgress = _no_progress) -> ConvertResponse:
        """Convert one document; raises servicekit errors (415, 422) a caller can act on.

        ``progress(done, total)`` hears how many pages of a PDF are converted (native pipeline: after each
        window of pages and each page read by OCR)."""
        started = time.perf_counter()
        packed = data
        file_name, data = unwrap_gzip(file_name, data, self.options.max_document_bytes)
        file_type = detect_file_type(file_name, data)
        warnings: list[str] = []
        ocr_pages: list[int] = []
        pdf_info: PdfInfo | None = None
        page_title: str | None = None  # a PDF without a Title entry: its first page's largest text
        furniture: list[Furniture] = []
        # Heading levels come from the document (its outline, its markup) except for a PDF without bookmarks,
        # where they are guessed from the layout, and for an image's OCR.
        levels_known = file_type not in ("pdf", "image")
        if file_type == "pdf":
            pdf_info = inspect_pdf(file_name, data, max_pages=self.options.max_pdf_pages,
                                   max_page_megapixels=self.options.max_page_megapixels,
                                   dpi=self.options.ocr.render_dpi)  # fmt: skip
        elif file_type in ("docx", "pptx", "xlsx", "epub", "odt", "ods", "odp"):
            check_office_zip(file_name, data, file_type)
        elif file_type in ("html", "md"):  # Markdown's raw HTML blocks go to the same HTML reader
            check_html_nesting(file_name, data, self.options.html)
        if file_type == "txt":
            rendered, page_count = render(text_segments(file_name, data)), None
        elif file_type == "image":
            rendered, page_count = self._convert_image(file_name, data)
            ocr_pages = list(range(1, page_count + 1))
        elif pdf_info is not None and self.pdf_pipeline == "native":
            native = self._native_pdf(file_name, data, pdf_info.page_count, warnings, ocr_pages, progress)
            rendered, page_count = render(native.segments), pdf_info.page_count
            levels_known = native.bookmarks_found > 0
            page_title = None if pdf_info.title else native.page_title
            furniture = [Furniture(page=f.page, text=f.text[:1000], box=f.box, place=f.place) for f in native.furniture]
        else:
            rendered, page_count = self._convert_with_docling(file_name, file_type, data, warnings, ocr_pages)
        if pdf_info is not None:
            page_count = pdf_info.page_count
        if not rendered.blocks:
            raise _no_text(file_name, file_type, self._ocr is not None)
        pipeline = self._pipeline_for(file_type)
        if pipeline == "native":
            warnings[:0] = [NATIVE_FALLBACK_WARNING, *self.startup_warnings]
        if ocr_pages:
            warnings.append(_ocr_warning(ocr_pages, pipeline, self._ocr.options.model if self._ocr else "small"))
        sizes = _sizes(file_type, data, rendered)
        return ConvertResponse(
            file_name=file_name,
            file_type=file_type,
            title=_title(
                rendered,
                file_name,
                (pdf_info.title or page_title) if pdf_info else metadata_title(data, file_type),
                declared=(file_type == "pdf" and (levels_known or page_title is not None))
                or file_type in DECLARED_TITLES,
            ),
            page_count=page_count,
            pipeline=pipeline,
            markdown=rendered.markdown,
            blocks=rendered.blocks,
            page_spans=rendered.page_spans,
            content_hash=hashlib.sha256(packed).hexdigest(),
            size_bytes=len(packed),
            conversion_ms=round((time.perf_counter() - started) * 1000, 2),
            ocr_pages=ocr_pages,
            levels_known=levels_known,
            warnings=warnings,
            regions=rendered.regions if sizes else [],
            units=rendered.units if sizes else [],
            page_sizes=sizes,
            furniture=furniture,
        )

    def _convert_image(self, file_name: str, data: bytes) -> tuple[Rendered, int]:
        if self._ocr is None:
            raise Unprocessable(
                f"{file_name!r} is an image and OCR is off (DOCLING_DO_OCR=false).",
                code="NO_TEXT",
                suggestion="Ask the operator to enable OCR, or send the text of the image instead.",
            )
        lines, page_count = ocr_image(file_name, data, self._ocr)
        return render(merge_lines(list(lines))), page_count

    def _docling_document(
        self, file_name: str, file_type: FileType, data: bytes, warnings: list[str], **options: Any
    ) -> DoclingDocument:
        return self._docling_result(file_name, file_type, data, warnings, **options).document

    def _docling_result(
        self, file_name: str, file_type: FileType, data: bytes, warnings: list[str], **options: Any
    ) -> ConversionResult:
        """One docling conversion (``options``: e.g. ``page_range``); a failure becomes CORRUPT_FILE."""
        if self._docling is None:
            raise RuntimeError("Converter.start() was not called")
        if file_type == "pdf":
            stream = DocumentStream(name=f"{PurePosixPath(file_name).stem or 'document'}.pdf", stream=io.BytesIO(data))
            result = self._docling.convert(stream, raises_on_error=False, **options)
        else:
            result = convert_as(self._docling, file_name, file_type, data, self.options.timeout_s)
        if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
            reasons = "; ".join(error.error_message for error in result.errors[:3]) or str(result.status.value)
            log.info("docling failed on %s: %s", file_name, reasons)
            raise Unprocessable(
                f"{file_name!r} could not be converted: docling could not read it as {file_type.upper()}.",
                code="CORRUPT_FILE",
                suggestion="Check that the file opens in its application; re-save or export it and send it again.",
                details={"reasons": [error.error_message[:300] for error in result.errors[:3]]},
            )
        if result.status == ConversionStatus.PARTIAL_SUCCESS:
            warnings.extend(f"Partly converted: {error.error_message[:300]}" for error in result.errors[:5])
        return result

    def _native_pdf(
        self, file_name: str, data: bytes, pages: int, warnings: list[str], ocr_pages: list[int], progress: PageProgress
    ) -> NativeText:
        def read_pages(first: int, last: int) -> list[Line]:
            result = self._docling_result(file_name, "pdf", data, warnings, page_range=(first, last))
            parsed = {page.page_no: page.parsed_page for page in result.pages if page.parsed_page is not None}
            return document_lines(result.document, parsed)

        native = windowed_native_segments(
            read_pages, data, pages, self._ocr, window=self.options.page_window, tables=self.options.tables,
            progress=progress,
        )  # fmt: skip
        ocr_pages.extend(native.scanned)
        return native

    def _convert_with_docling(
        self, file_name: str, file_type: FileType, data: bytes, warnings: list[str], ocr_pages: list[int]
    ) -> tuple[Rendered, int | None]:
        document = self._docling_document(file_name, file_type, clean_document(file_type, data), warnings)
        paged = file_type in PAGED_TYPES
        segments = document_segments(document, paged=paged, located=file_type == "pdf")
        if file_type == "pdf" and self._ocr is not None:  # the standard pipeline OCRs what has no text layer
            ocr_pages.extend(scanned_pages(data))
        return render(segments), (len(document.pages) if paged else None)


def text_segments(file_name: str, data: bytes) -> list[Segment]:
    """Plain UTF-8 text: one paragraph per block of lines separated by a blank line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unprocessable(
            f"{file_name!r} is not UTF-8 text (invalid byte at offset {exc.start}).",
            code="NOT_UTF8",
            suggestion="Re-save the file as UTF-8 (or convert it to PDF/DOCX) and send it again.",
        ) from exc
    blocks = _BLANK_LINE.split(text.replace("\r\n", "\n").replace("\r", "\n"))
    return [Segment(kind="paragraph", text=block) for block in blocks if block.strip()]


def _sizes(file_type: FileType, data: bytes, rendered: Rendered) -> list[PageSize]:
    """The sizes of the pages regions name: a PDF's from its page tree, an image's frames in pixels. None for the
    other formats: their regions (slides) are in units no page image is drawn in, so none is kept."""
    pages = {r.page for r in rendered.regions} | {u.page for u in rendered.units}
    if not pages or file_type not in ("pdf", "image"):
        return []
    try:
        sizes = image_sizes(data) if file_type == "image" else pdf_page_sizes(data, pages)
    except Exception as exc:  # the text stands without its boxes
        log.warning("page sizes unreadable; the document is kept without boxes", exc_info=exc)
        return []
    return page_sizes(sizes, rendered.regions, rendered.units)


def _title(rendered: Rendered, file_name: str, metadata: str | None, *, declared: bool = False) -> str:
    """The first title or heading, else the metadata's title, else the file name without extension. A declared
    title comes first: a PDF whose headings are its bookmarks' has its first section there ("Part I Gnuplot"), a
    web page's first heading may be its site's name, an EPUB's its cover's."""
    if declared and metadata:
        return metadata
    for block in rendered.blocks:
        if block.kind in ("title", "heading"):
            return block.text[:300]
    return metadata or PurePosixPath(file_name).stem or file_name


def _ocr_warning(pages: list[int], pipeline: str, model: str) -> str:
    shown = ", ".join(map(str, pages[:20])) + (", ..." if len(pages) > 20 else "")
    engine = f"docling's OCR stage with {engine_name('small')}" if pipeline == "standard" else engine_name(model)
    return f"OCR used on page(s) {shown} (no text layer), with {engine}: check names and numbers."


def _no_text(file_name: str, file_type: str, ocr: bool) -> Unprocessable:
    if file_type in ("pdf", "image") and ocr:
        hint = "Not even OCR found text in it: check that the scan is legible, or send its text with ingest_text."
    elif file_type == "pdf":
        hint = "It is probably a scan without a text layer and OCR is off: send its text with ingest_text."
    else:
        hint = "Send a document with text in it."
    return Unprocessable(f"{file_name!r} contains no extractable text.", code="NO_TEXT", suggestion=hint)
