"""Document titles from metadata, for documents whose text has no title or heading."""

from __future__ import annotations

import html
import io
import re
import zipfile
from xml.etree import ElementTree

_HTML_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.I | re.S)
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_MAX_CORE_XML = 1 << 20
_MAX_TITLE = 300


def _clean(value: str | None) -> str | None:
    text = " ".join((value or "").split())
    return text[:_MAX_TITLE] or None


def _office_title(data: bytes) -> str | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            info = archive.getinfo("docProps/core.xml")
            if info.file_size > _MAX_CORE_XML:
                return None
            # The core properties never carry a DTD; ElementTree does not expand external entities.
            root = ElementTree.fromstring(archive.read(info))
    except (KeyError, zipfile.BadZipFile, ElementTree.ParseError, OSError, ValueError):
        return None
    element = root.find(_DC_TITLE)
    return element.text if element is not None else None


def _html_title(data: bytes) -> str | None:
    match = _HTML_TITLE.search(data[: 1 << 16])
    return html.unescape(match.group(1).decode("utf-8", errors="replace")) if match else None


def metadata_title(data: bytes, file_type: str) -> str | None:
    """The title an Office or HTML document's metadata declares, or None (PDF: see containers.inspect_pdf)."""
    if file_type in ("docx", "pptx", "xlsx"):
        return _clean(_office_title(data))
    if file_type == "html":
        return _clean(_html_title(data))
    return None
