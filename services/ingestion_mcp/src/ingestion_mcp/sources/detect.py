"""What a downloaded body really is: magic bytes and content first, headers and names only as hints."""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from email.message import Message
from typing import Literal
from urllib.parse import unquote

from .errors import UNSUPPORTED_FORMAT, SourceError

Kind = Literal["pdf", "docx", "pptx", "xlsx", "html", "md", "txt", "image"]

KIND_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "pdf": (".pdf",),
    "docx": (".docx",),
    "pptx": (".pptx",),
    "xlsx": (".xlsx",),
    "html": (".html", ".htm"),
    "md": (".md", ".markdown"),
    "txt": (".txt",),
    "image": (".png", ".jpg", ".jpeg", ".tif", ".tiff"),
}
SUPPORTED = "PDF, DOCX, PPTX, XLSX, HTML, Markdown, plain text, PNG/JPEG/TIFF images"
# Images docling reads with OCR, by magic bytes, and the extension that tells docling what they are.
IMAGE_MAGIC = {b"\x89PNG": ".png", b"\xff\xd8\xff": ".jpg", b"II*\x00": ".tiff", b"MM\x00*": ".tiff"}
_OOXML_MEMBERS: tuple[tuple[str, Kind], ...] = (("word/", "docx"), ("ppt/", "pptx"), ("xl/", "xlsx"))
_BINARY_MAGIC = {
    b"GIF8": "a GIF image",
    b"\x1f\x8b": "a gzip archive",
    b"\x7fELF": "an executable",
    b"MZ": "a Windows executable",
    b"\xd0\xcf\x11\xe0": "a legacy Office (OLE) file such as .doc/.xls/.ppt",
    b"Rar!": "a RAR archive",
    b"7z\xbc\xaf": "a 7-Zip archive",
}
_HTML_MARKERS = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body|meta|title)[\s>/]", re.I | re.S)
_MD_MARKERS = re.compile(r"^(#{1,6} \S|```|\s*[-*] \[[ x]\] |\|.*\|\s*$)|\[[^\]]+\]\([^)]+\)", re.M)
_SNIFF_BYTES = 4096


def image_extension(data: bytes) -> str | None:
    """'.png', '.jpg' or '.tiff' for the images docling reads, by their magic bytes; else None."""
    return next((ext for magic, ext in IMAGE_MAGIC.items() if data.startswith(magic)), None)


def detect_kind(data: bytes, content_type: str | None = None, filename: str | None = None) -> Kind:
    """The document kind of `data`; headers and the name only pick between text kinds."""
    head = data[:_SNIFF_BYTES]
    if b"%PDF-" in head[:1024]:
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return _ooxml_kind(data)
    if image_extension(head):
        return "image"
    for magic, label in _BINARY_MAGIC.items():
        if head.startswith(magic):
            raise _unsupported(f"The content is {label}")
    if decode_text(data, content_type) is None:
        raise _unsupported("The content is binary data of an unknown type")
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    ext = posixpath.splitext((filename or "").lower())[1]
    if mime in ("text/html", "application/xhtml+xml") or _HTML_MARKERS.match(head.lstrip(b"\xef\xbb\xbf")):
        return "html"
    if mime in ("text/markdown", "text/x-markdown") or ext in KIND_EXTENSIONS["md"]:
        return "md"
    sample = head.decode("utf-8", errors="ignore")
    return "md" if len(_MD_MARKERS.findall(sample)) >= 2 else "txt"


def _ooxml_kind(data: bytes) -> Kind:
    try:
        names = zipfile.ZipFile(io.BytesIO(data)).namelist()  # reads the directory only, never inflates
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise _unsupported("The content is a damaged or truncated ZIP archive") from exc
    for prefix, kind in _OOXML_MEMBERS:
        if any(name.startswith(prefix) for name in names) and "[Content_Types].xml" in names:
            return kind
    raise _unsupported("The content is a ZIP archive, not a Word, PowerPoint or Excel document")


def decode_text(data: bytes, content_type: str | None = None) -> str | None:
    """The body as text when it is text (a BOM, the declared charset or UTF-8); None for binary."""
    if b"\x00" in data[:_SNIFF_BYTES] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(codec)
            except UnicodeDecodeError:
                return None
    charset = _charset(content_type)
    for codec in (charset, "utf-8") if charset else ("utf-8",):
        try:
            text = data.decode(codec)
        except (UnicodeDecodeError, LookupError):
            continue
        return text if _mostly_printable(text) else None
    return None


def _charset(content_type: str | None) -> str | None:
    match = re.search(r"charset=\"?([\w.:-]+)", content_type or "", re.I)
    return match.group(1).lower() if match else None


def _mostly_printable(text: str) -> bool:
    sample = text[:_SNIFF_BYTES]
    controls = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\t\n\r\f\v")
    return controls <= len(sample) // 100


def guess_filename(url_path: str, content_disposition: str | None, kind: Kind) -> str:
    """A file name from Content-Disposition or the URL path, with an extension matching the content."""
    name = ""
    if content_disposition:
        message = Message()
        message["content-disposition"] = content_disposition
        name = message.get_filename() or ""
    if not name:
        name = unquote(url_path.rstrip("/").rsplit("/", 1)[-1])
    name = name.replace("\\", "/").rsplit("/", 1)[-1].strip() or "download"
    if not name.lower().endswith(KIND_EXTENSIONS[kind]):
        name = f"{name}{KIND_EXTENSIONS[kind][0]}"
    return name


def _unsupported(cause: str) -> SourceError:
    return SourceError(
        UNSUPPORTED_FORMAT,
        f"Unsupported content: {cause}. Supported types: {SUPPORTED}.",
        "Point to a supported document, or convert it and use ingest_text with the extracted content.",
    )
