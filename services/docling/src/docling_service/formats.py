"""Which format a document is: its extension checked against its first bytes (no I/O here)."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import PurePosixPath, PureWindowsPath
from typing import Literal

from ingestion_contracts.docling import EXTENSIONS, SUPPORTED_FILE_TYPES, FileType
from servicekit import Unprocessable, UnsupportedMediaType

SNIFF_BYTES = 8192
# The PDF header may follow some junk, but must sit in the first 1024 bytes (PDF 1.7, 7.5.2).
_PDF_HEADER_WINDOW = 1024
OfficeKind = Literal["docx", "pptx", "xlsx"]
# What sniff() can tell from the bytes alone.
Sniffed = Literal["pdf", "docx", "pptx", "xlsx", "zip", "image", "html", "text", "binary"]
_OOXML_MAIN_PART: dict[OfficeKind, str] = {"docx": "word/", "pptx": "ppt/", "xlsx": "xl/"}
_HTML_RE = re.compile(rb"<\s*(!doctype\s+html|html[\s>]|head[\s>]|body[\s>]|meta\s|title>|div[\s>]|p>)", re.I)
_LABELS = {"pdf": "PDF", "docx": "Word (DOCX)", "pptx": "PowerPoint (PPTX)", "xlsx": "Excel (XLSX)"}
_LABELS |= {"html": "HTML", "md": "Markdown", "txt": "plain text", "image": "PNG/JPEG/TIFF image"}
# Raster images read by OCR: PNG, JPEG, TIFF (little- and big-endian).
_IMAGES = {b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG", b"II*\x00": "TIFF", b"MM\x00*": "TIFF"}
_IMAGE_MAGIC = tuple(_IMAGES)
# Content that is recognisable but not supported, with what to do instead.
_KNOWN_BINARIES: tuple[tuple[bytes, str, str], ...] = (
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Office file (.doc/.xls/.ppt)", "Save it as .docx, .xlsx or .pptx."),
    (b"GIF8", "a GIF image", "Save it as PNG (read by OCR), or send the text instead."),
    (b"{\\rtf", "an RTF document", "Save it as .docx or export it as PDF."),
    (b"\x1f\x8b", "a gzip archive", "Unpack it and send the document inside."),
)


def supported_summary() -> str:
    extensions = ", ".join(sorted(EXTENSIONS))
    return f"Supported types: {', '.join(t.upper() for t in SUPPORTED_FILE_TYPES)} ({extensions})."


def safe_file_name(raw: str | None, fallback: str = "upload") -> str:
    """The base name of a client-given name: no directories, no control characters, at most 255 chars."""
    if not raw:
        return fallback
    name = PureWindowsPath(PurePosixPath(raw).name).name
    name = "".join(ch for ch in name if ch.isprintable()).strip().strip(".") or ""
    return name[-255:] if name else fallback


def _is_pdf(head: bytes) -> bool:
    return b"%PDF-" in head[:_PDF_HEADER_WINDOW]


def _zip_kind(data: bytes) -> OfficeKind | Literal["zip"] | None:
    """docx/pptx/xlsx from the members of an Office zip, "zip" for another zip, None when unreadable."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    for kind, prefix in _OOXML_MAIN_PART.items():
        if any(name.startswith(prefix) for name in names):
            return kind
    return "zip"


def _decodes_as_utf8(head: bytes, complete: bool) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The sniff window may cut a multi-byte character in two: only its last 3 bytes may fail.
        return not complete and exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


def sniff(data: bytes) -> Sniffed:
    """What the bytes look like: pdf, docx, pptx, xlsx, zip, image, html, text, or binary."""
    head = data[:SNIFF_BYTES]
    if _is_pdf(head):
        return "pdf"
    if head.startswith(_IMAGE_MAGIC):
        return "image"
    if head.startswith(b"PK\x03\x04"):
        return _zip_kind(data) or "binary"
    if b"\x00" in head:
        return "binary"
    text_like = _decodes_as_utf8(head, complete=len(data) <= SNIFF_BYTES)
    if _HTML_RE.search(head[:2048]):
        return "html"
    return "text" if text_like else "binary"


def _describe_binary(data: bytes) -> tuple[str, str]:
    for magic, what, suggestion in _KNOWN_BINARIES:
        if data.startswith(magic):
            return what, suggestion
    return "binary data", "Check that the file is not damaged and that its extension matches its content."


def _unsupported(name: str, found: str) -> UnsupportedMediaType:
    return UnsupportedMediaType(
        f"Unsupported file type: {name!r} ({found}). {supported_summary()}",
        suggestion="Convert the file to a supported format, or send its text as a .txt or .md file.",
        details={"supported": list(SUPPORTED_FILE_TYPES)},
    )


def _from_content(name: str, kind: Sniffed, data: bytes) -> FileType:
    """The type of a file whose name gives none (no extension), from its content alone."""
    if kind in ("pdf", "docx", "pptx", "xlsx", "html", "image"):
        return kind
    if kind == "text":
        return "txt"
    raise _unsupported(name, _describe_binary(data)[0] if kind == "binary" else "a zip archive")


def _mismatch(name: str, claimed: FileType, kind: Sniffed, data: bytes) -> Unprocessable:
    if kind == "binary":
        what, suggestion = _describe_binary(data)
    elif kind == "image":
        label = next(label for magic, label in _IMAGES.items() if data.startswith(magic))
        what, suggestion = f"a {label} image", f"Rename it with the extension of a {label} image; it is read by OCR."
    elif kind in _LABELS:
        what, suggestion = f"a {_LABELS[kind]} file", f"Rename it with the extension of a {_LABELS[kind]} file."
    else:
        what, suggestion = "a zip archive that is not an Office document", "Send the document inside the archive."
    return Unprocessable(
        f"{name!r} is not a valid {_LABELS[claimed]} file: its content is {what}.",
        code="CORRUPT_FILE",
        suggestion=suggestion,
    )


def detect_file_type(name: str, data: bytes) -> FileType:
    """The file type, from the extension checked against the content; raises 415/422 errors a caller can act on."""
    if not data:
        raise Unprocessable(
            f"{name!r} is empty (0 bytes).", code="EMPTY_FILE", suggestion="Send a document with content."
        )
    suffix = PurePosixPath(name.lower()).suffix
    kind = sniff(data)
    if not suffix:
        return _from_content(name, kind, data)
    claimed = EXTENSIONS.get(suffix)
    if claimed is None:
        raise _unsupported(name, f"extension {suffix}")
    if claimed in ("pdf", "docx", "pptx", "xlsx", "image"):
        if kind != claimed:
            raise _mismatch(name, claimed, kind, data)
        return claimed
    looks_binary = kind == "binary" and (b"\x00" in data[:SNIFF_BYTES] or _describe_binary(data)[0] != "binary data")
    if kind not in ("text", "html", "binary") or looks_binary:
        raise _mismatch(name, claimed, kind, data)
    if claimed in ("md", "txt") and not _decodes_as_utf8(data, complete=True):
        raise Unprocessable(
            f"{name!r} is not UTF-8 text.",
            code="NOT_UTF8",
            suggestion="Re-save the file as UTF-8 (or convert it to PDF/DOCX) and send it again.",
        )
    if claimed == "html" and kind == "binary":
        raise _mismatch(name, claimed, kind, data)
    return claimed
