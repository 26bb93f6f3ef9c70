"""Which format a document is: its extension checked against its first bytes (no I/O here)."""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from pathlib import PurePosixPath, PureWindowsPath
from typing import Literal

from ingestion_contracts.docling import EXTENSIONS, GZIP_SUFFIX, SUPPORTED_FILE_TYPES, FileType
from servicekit import PayloadTooLarge, Unprocessable, UnsupportedMediaType

SNIFF_BYTES = 8192
GZIP_MAGIC = b"\x1f\x8b"
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# The PDF header may follow some junk, but must sit in the first 1024 bytes (PDF 1.7, 7.5.2).
_PDF_HEADER_WINDOW = 1024
OfficeKind = Literal["docx", "pptx", "xlsx"]
ZipKind = Literal["docx", "pptx", "xlsx", "epub", "odt", "ods", "odp"]
# What sniff() can tell from the bytes alone ("ole": an OLE2 container, a legacy Office file or an Outlook .msg).
Sniffed = Literal[
    "pdf", "docx", "pptx", "xlsx", "epub", "odt", "ods", "odp", "rtf", "ole", "zip", "image", "html", "text", "binary"
]
# Types told by their bytes: the extension must agree with them.
_BY_CONTENT = frozenset({"pdf", "docx", "pptx", "xlsx", "image", "epub", "odt", "ods", "odp", "rtf"})
_OOXML_MAIN_PART: dict[OfficeKind, str] = {"docx": "word/", "pptx": "ppt/", "xlsx": "xl/"}
# The "mimetype" member of an EPUB or OpenDocument zip. Templates (.ott, .ots, .otp) are not documents to
# docling's OpenDocument backend, which refuses them: they are refused here, by their own name.
_ZIP_MIMETYPES: dict[str, ZipKind] = {
    "application/epub+zip": "epub",
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
}
_HTML_RE = re.compile(rb"<\s*(!doctype\s+html|html[\s>]|head[\s>]|body[\s>]|meta\s|title>|div[\s>]|p>)", re.I)
_LABELS = {"pdf": "PDF", "docx": "Word (DOCX)", "pptx": "PowerPoint (PPTX)", "xlsx": "Excel (XLSX)"}
_LABELS |= {"html": "HTML", "md": "Markdown", "txt": "plain text", "image": "PNG/JPEG/TIFF image"}
_LABELS |= {"epub": "EPUB", "odt": "OpenDocument text (ODT)", "ods": "OpenDocument spreadsheet (ODS)"}
_LABELS |= {"odp": "OpenDocument presentation (ODP)", "rtf": "RTF", "email": "e-mail (EML/MSG)"}
_LABELS |= {"mhtml": "MHTML web archive", "csv": "CSV", "latex": "LaTeX", "asciidoc": "AsciiDoc"}
# Raster images read by OCR: PNG, JPEG, TIFF (little- and big-endian).
_IMAGES = {b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG", b"II*\x00": "TIFF", b"MM\x00*": "TIFF"}
_IMAGE_MAGIC = tuple(_IMAGES)
# Content that is recognisable but not supported, with what to do instead.
_KNOWN_BINARIES: tuple[tuple[bytes, str, str], ...] = (
    (OLE_MAGIC, "a legacy Office file (.doc/.xls/.ppt) or an Outlook message",
     "Save it as .docx, .xlsx or .pptx; an Outlook message is read when its name ends in .msg."),
    (b"GIF8", "a GIF image", "Save it as PNG (read by OCR), or send the text instead."),
    (GZIP_MAGIC, "a gzip archive",
     "Name it after the document inside plus .gz (manual.pdf.gz) to have it unpacked, or unpack it yourself."),
)  # fmt: skip
# The most one .gz may unpack to, against its packed size: more is a decompression bomb, not a document.
MAX_GZIP_RATIO = 200


def supported_summary() -> str:
    extensions = ", ".join(sorted(EXTENSIONS))
    types = ", ".join(t.upper() for t in SUPPORTED_FILE_TYPES)
    return f"Supported types: {types} ({extensions}; any of them gzipped, e.g. .pdf.gz)."


def safe_file_name(raw: str | None, fallback: str = "upload") -> str:
    """The base name of a client-given name: no directories, no control characters, at most 255 chars."""
    if not raw:
        return fallback
    name = PureWindowsPath(PurePosixPath(raw).name).name
    name = "".join(ch for ch in name if ch.isprintable()).strip().strip(".") or ""
    return name[-255:] if name else fallback


def _is_pdf(head: bytes) -> bool:
    return b"%PDF-" in head[:_PDF_HEADER_WINDOW]


def _zip_mimetype(archive: zipfile.ZipFile) -> str:
    """The "mimetype" member an EPUB or OpenDocument zip starts with ("" when absent or oversized)."""
    try:
        info = archive.getinfo("mimetype")
    except KeyError:
        return ""
    return archive.read(info).decode("ascii", "replace").strip() if info.file_size <= 100 else ""


def _zip_kind(data: bytes) -> ZipKind | Literal["zip"] | None:
    """The document a zip is (OOXML by its main part; EPUB and OpenDocument by their "mimetype" member, an EPUB
    also by its container, which some real ones do not put first); "zip" for another zip; None when unreadable."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            mimetype = _zip_mimetype(archive)
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    for kind, prefix in _OOXML_MAIN_PART.items():
        if any(name.startswith(prefix) for name in names):
            return kind
    if mimetype in _ZIP_MIMETYPES:
        return _ZIP_MIMETYPES[mimetype]
    return "epub" if "META-INF/container.xml" in names and any(n.endswith(".opf") for n in names) else "zip"


def _decodes_as_utf8(head: bytes, complete: bool) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The sniff window may cut a multi-byte character in two: only its last 3 bytes may fail.
        return not complete and exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


def sniff(data: bytes) -> Sniffed:
    """What the bytes look like: a document type told by its bytes, zip, ole, image, html, text, or binary."""
    head = data[:SNIFF_BYTES]
    if _is_pdf(head):
        return "pdf"
    if head.startswith(_IMAGE_MAGIC):
        return "image"
    if head.startswith(b"PK\x03\x04"):
        return _zip_kind(data) or "binary"
    if head.startswith(OLE_MAGIC):
        return "ole"
    if head.startswith(b"{\\rtf"):
        return "rtf"
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
    if kind in _BY_CONTENT or kind == "html":
        return kind  # type: ignore[return-value]  # every such kind is a FileType
    if kind == "text":
        return "txt"
    if kind == "zip":
        raise _unsupported(name, "a zip archive")
    raise _unsupported(name, _describe_binary(data)[0])


def _mismatch(name: str, claimed: FileType, kind: Sniffed, data: bytes) -> Unprocessable:
    if kind in ("binary", "ole"):
        what, suggestion = _describe_binary(data)
    elif kind == "image":
        label = next(label for magic, label in _IMAGES.items() if data.startswith(magic))
        what, suggestion = f"a {label} image", f"Rename it with the extension of a {label} image; it is read by OCR."
    elif kind in _LABELS:
        what, suggestion = f"a {_LABELS[kind]} file", f"Rename it with the extension of a {_LABELS[kind]} file."
    else:
        what, suggestion = "a zip archive that is not a document", "Send the document inside the archive."
    return Unprocessable(
        f"{name!r} is not a valid {_LABELS[claimed]} file: its content is {what}.",
        code="CORRUPT_FILE",
        suggestion=suggestion,
    )


def _check_text(name: str, claimed: FileType, kind: Sniffed, data: bytes) -> FileType:
    """A type read as text (HTML, Markdown, text, e-mail, MHTML, CSV, LaTeX, AsciiDoc) whose bytes are not binary."""
    looks_binary = kind == "binary" and (b"\x00" in data[:SNIFF_BYTES] or _describe_binary(data)[0] != "binary data")
    if kind not in ("text", "html", "binary") or looks_binary or (claimed == "html" and kind == "binary"):
        raise _mismatch(name, claimed, kind, data)
    if claimed in ("md", "txt") and not _decodes_as_utf8(data, complete=True):
        raise Unprocessable(
            f"{name!r} is not UTF-8 text.",
            code="NOT_UTF8",
            suggestion="Re-save the file as UTF-8 (or convert it to PDF/DOCX) and send it again.",
        )
    return claimed


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
    if claimed in _BY_CONTENT:
        if kind != claimed:
            raise _mismatch(name, claimed, kind, data)
        return claimed
    if suffix == ".msg":  # an Outlook message is an OLE2 container, not text
        if kind != "ole":
            raise _mismatch(name, claimed, kind, data)
        return claimed
    return _check_text(name, claimed, kind, data)


def unwrap_gzip(name: str, data: bytes, max_bytes: int) -> tuple[str, bytes]:
    """A ".gz" file's inner name and bytes ("install.en.pdf.gz" -> "install.en.pdf"); any other file as it is.

    The inner document may be at most ``max_bytes`` (the upload limit) and ``MAX_GZIP_RATIO`` times the packed
    size: a decompression bomb stops at the limit, unpacked no further."""
    if not name.lower().endswith(GZIP_SUFFIX):
        return name, data
    inner = name[: -len(GZIP_SUFFIX)]
    if not data.startswith(GZIP_MAGIC):
        raise Unprocessable(
            f"{name!r} is not a valid gzip file: its content is {_LABELS.get(sniff(data), 'not gzip')}.",
            code="CORRUPT_FILE",
            suggestion=f"Rename it {inner!r} (without .gz) if it is not compressed.",
        )
    if inner.lower().endswith(GZIP_SUFFIX) or PurePosixPath(inner.lower()).suffix not in EXTENSIONS:
        raise _unsupported(name, f"a gzipped {PurePosixPath(inner).suffix or 'file without extension'}")
    limit = min(max_bytes, max(len(data) * MAX_GZIP_RATIO, 1 << 20))
    unpacker = zlib.decompressobj(wbits=31)  # gzip framing
    try:
        unpacked = unpacker.decompress(data, limit + 1)
        if not unpacker.eof and len(unpacked) <= limit:
            raise zlib.error("it ends before its end of stream")
    except zlib.error as exc:
        raise Unprocessable(
            f"{name!r} is a damaged gzip file ({exc}).",
            code="CORRUPT_FILE",
            suggestion="Check that the download completed; unpack it yourself and send the document inside.",
        ) from None
    if len(unpacked) > limit:
        raise PayloadTooLarge(
            f"{name!r} unpacks to more than {limit // 1048576} MB.",
            suggestion="Unpack it and send the document inside, split if it is over the upload limit.",
        )
    return inner, unpacked
