"""Wire models of the docling service (document → Markdown)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .common import ErrorBody, WireModel
from .regions import Furniture, PageSize, Region, Unit

FileType = Literal[
    "pdf", "docx", "pptx", "xlsx", "html", "md", "txt", "image",
    "epub", "odt", "ods", "odp", "rtf", "email", "mhtml", "csv", "latex", "asciidoc",
]  # fmt: skip
SUPPORTED_FILE_TYPES: tuple[FileType, ...] = (
    "pdf", "docx", "pptx", "xlsx", "html", "md", "txt", "image",
    "epub", "odt", "ods", "odp", "rtf", "email", "mhtml", "csv", "latex", "asciidoc",
)  # fmt: skip
# Extensions accepted for each file type (lower case, with the dot). A name ending in ".gz" is accepted when the
# name without it is: the converter unpacks it first ("install.en.pdf.gz" is a PDF).
EXTENSIONS: dict[str, FileType] = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "md",
    ".markdown": "md",
    ".txt": "txt",
    ".text": "txt",
    # reStructuredText and Org are read as plain text: their markup stays as written.
    ".rst": "txt",
    ".rest": "txt",
    ".org": "txt",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
    ".epub": "epub",
    ".odt": "odt",
    ".ods": "ods",
    ".odp": "odp",
    ".rtf": "rtf",
    ".eml": "email",
    ".msg": "email",
    ".mhtml": "mhtml",
    ".mht": "mhtml",
    ".csv": "csv",
    ".tex": "latex",
    ".latex": "latex",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
}
GZIP_SUFFIX = ".gz"
Pipeline = Literal["standard", "native", "simple", "text", "ocr"]
BlockKind = Literal["title", "heading", "paragraph", "list_item", "table", "code", "caption", "other"]


class Block(WireModel):
    """One structural block of the converted document, located in the Markdown."""

    kind: BlockKind
    text: str
    page: int | None = Field(default=None, ge=1, description="1-based page; None when the format has no pages.")
    level: int | None = Field(default=None, ge=1, le=6, description="Heading level for headings.")
    start: int = Field(ge=0, description="Offset of the block's first character in `markdown`.")
    end: int = Field(ge=0, description="Offset one past the block's last character in `markdown`.")


class PageSpan(WireModel):
    """A character range of the Markdown that comes from one page."""

    page: int = Field(ge=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class ConvertPathRequest(WireModel):
    path: str = Field(min_length=1, max_length=4096, description="Server-side path under an allowed root.")


class ConvertResponse(WireModel):
    file_name: str
    file_type: FileType
    title: str
    page_count: int | None = Field(default=None, description="Pages (PDF, PPTX slides); None for page-less formats.")
    pipeline: Pipeline = Field(
        description="standard = docling layout models; native = model-free PDF text pipeline; "
        "simple = docling's declarative backends (DOCX, HTML, ...); text = plain text read as-is; "
        "ocr = an image read by the OCR engine."
    )
    markdown: str
    blocks: list[Block]
    page_spans: list[PageSpan] = Field(default_factory=list)
    content_hash: str = Field(description="sha256 of the uploaded bytes.")
    size_bytes: int
    conversion_ms: float
    ocr_pages: list[int] = Field(
        default_factory=list, description="Pages read by OCR (no text layer, or an image); empty when none were."
    )
    levels_known: bool = Field(
        default=True,
        description="Heading levels come from the document itself (its markup, a PDF's bookmarks); false where "
        "they were inferred from the layout (a PDF without bookmarks, a scan).",
    )
    warnings: list[str] = Field(default_factory=list)
    regions: list[Region] = Field(
        default_factory=list,
        description="Where the Markdown lies on its pages: one region per printed line or table row, in Markdown "
        "order (PDFs and images; empty for formats without pages).",
    )
    units: list[Unit] = Field(default_factory=list, description="Tables and figures as wholes (PDFs).")
    page_sizes: list[PageSize] = Field(default_factory=list, description="The size of every page a region names.")
    furniture: list[Furniture] = Field(
        default_factory=list,
        description="Running heads, running feet and page numbers (PDFs, native pipeline), in page order: not in "
        "`markdown`, so in no passage, section or page span.",
    )


class ConvertStreamEvent(WireModel):
    """One line of POST /v1/convert/stream (NDJSON): "progress" lines, then one "result" or "error" line."""

    event: Literal["progress", "result", "error"]
    pages_done: int | None = Field(default=None, ge=0, description="progress: PDF pages converted so far.")
    pages_total: int | None = Field(default=None, ge=0, description="progress: pages of the PDF.")
    result: ConvertResponse | None = Field(default=None, description="result: what POST /v1/convert answers.")
    error: ErrorBody | None = Field(default=None, description="error: what POST /v1/convert answers on failure.")
    status: int | None = Field(default=None, description="error: the HTTP status POST /v1/convert would answer.")


class FormatInfo(WireModel):
    file_type: FileType
    extensions: list[str] = Field(description="File name extensions accepted for this type (lower case, with the dot).")
    pipeline: Pipeline = Field(description="The pipeline that converts this type.")
    paged: bool = Field(description="Whether blocks carry page numbers (PDF pages, PPTX slides).")


class FormatsResponse(WireModel):
    formats: list[FormatInfo]
    max_upload_bytes: int = Field(description="Largest document accepted, in bytes (DOCLING_MAX_UPLOAD_MB).")
    pdf_pipeline: Literal["standard", "native"] = Field(
        description="standard = layout models from DOCLING_ARTIFACTS_PATH; native = model-free text extraction."
    )
    ocr: bool = Field(description="Whether pages without a text layer (scans) and images are read by OCR.")
    path_conversion: bool = Field(description="Whether /v1/convert/path is enabled (DOCLING_ALLOWED_ROOTS set).")
    warnings: list[str] = Field(default_factory=list, description="Configuration problems found at start-up.")
