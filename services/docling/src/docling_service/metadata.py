"""Document titles from metadata, for documents whose text has no title or heading."""

from __future__ import annotations

import email
import email.policy
import html
import io
import re
import zipfile
from xml.etree import ElementTree

_HTML_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.I | re.S)
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_OPF_PATH = re.compile(rb'full-path="([^"]+)"')
_MAX_CORE_XML = 1 << 20
_MAX_TITLE = 300


def _clean(value: str | None) -> str | None:
    text = " ".join((value or "").split())
    return text[:_MAX_TITLE] or None


def _zip_dc_title(data: bytes, member: str | None) -> str | None:
    """The Dublin Core title of a zip's metadata member (an Office file's core.xml, an ODF's meta.xml, an EPUB's
    package document: ``None`` finds it through META-INF/container.xml)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            if member is None:
                found = _OPF_PATH.search(archive.read("META-INF/container.xml")[:_MAX_CORE_XML])
                member = found.group(1).decode("utf-8", "replace") if found else ""
            info = archive.getinfo(member)
            if info.file_size > _MAX_CORE_XML:
                return None
            # Metadata members carry no DTD; ElementTree does not expand external entities.
            root = ElementTree.fromstring(archive.read(info))
    except (KeyError, zipfile.BadZipFile, ElementTree.ParseError, OSError, ValueError):
        return None
    element = root.find(f".//{_DC_TITLE}")
    return element.text if element is not None else None


def _mhtml_title(data: bytes) -> str | None:
    message = email.message_from_bytes(data[: 4 << 20], policy=email.policy.compat32)
    for part in message.walk():
        if part.get_content_type() == "text/html":
            payload = part.get_payload(decode=True)
            return _html_title(payload) if isinstance(payload, bytes) else None
    return None


def _html_title(data: bytes) -> str | None:
    match = _HTML_TITLE.search(data[: 1 << 16])
    return html.unescape(match.group(1).decode("utf-8", errors="replace")) if match else None


def metadata_title(data: bytes, file_type: str) -> str | None:
    """The title a document's metadata declares (Office, OpenDocument, EPUB, HTML, MHTML), or None (PDF: see
    containers.inspect_pdf)."""
    if file_type in ("docx", "pptx", "xlsx"):
        return _clean(_zip_dc_title(data, "docProps/core.xml"))
    if file_type in ("odt", "ods", "odp"):
        return _clean(_zip_dc_title(data, "meta.xml"))
    if file_type == "epub":
        return _clean(_zip_dc_title(data, None))
    if file_type == "html":
        return _clean(_html_title(data))
    if file_type == "mhtml":
        return _clean(_mhtml_title(data))
    return None
