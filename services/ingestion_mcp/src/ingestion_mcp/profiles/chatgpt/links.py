"""What ChatGPT cites: a result's id (fetch resolves it, part by part) and its url (a real link where there is one)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from ingestion_contracts import check_collection_name
from ingestion_contracts.common import DOC_ID_PATTERN

from ...errors import ToolFailure
from ...settings import McpSettings

SEPARATOR = ":"  # neither a collection name nor a doc_id holds it
DOC_ID = re.compile(DOC_ID_PATTERN)


@dataclass(frozen=True)
class DocumentRef:
    """A document and the part of its text an id names: part 1 is the document's id itself."""

    collection: str
    doc_id: str
    part: int = 1

    def id(self) -> str:
        base = f"{self.collection}{SEPARATOR}{self.doc_id}"
        return base if self.part == 1 else f"{base}{SEPARATOR}{self.part}"

    def next(self) -> DocumentRef:
        return DocumentRef(self.collection, self.doc_id, self.part + 1)


def parse_id(value: str) -> DocumentRef:
    """The document an id from search (or a fetch's next_id) names; anything else is refused, saying what an id is."""
    parts = value.strip().split(SEPARATOR)
    try:
        if len(parts) not in (2, 3) or not DOC_ID.match(parts[1]):
            raise ValueError(value)
        check_collection_name(parts[0])
        part = int(parts[2]) if len(parts) == 3 else 1
        if part < 1:
            raise ValueError(value)
    except ValueError:
        raise ToolFailure(
            f"{value[:80]!r} is not a document id.",
            "Pass an id exactly as search returned it (collection:doc_id), or a fetch answer's metadata.next_id.",
            code="INVALID_INPUT",
        ) from None
    return DocumentRef(parts[0], parts[1], part)


def base_url(settings: McpSettings) -> str:
    """Where clients reach this server: INGESTION_MCP_PUBLIC_URL, else the OAuth audience's origin, else host:port."""
    if settings.public_url:
        return settings.public_url.rstrip("/")
    if settings.oauth_audience:
        parts = urlsplit(settings.oauth_audience)
        return f"{parts.scheme}://{parts.netloc}"
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    return f"http://{host}:{settings.port}"


def document_url(settings: McpSettings, collection: str, doc_id: str, key: str) -> str:
    """A web document's own URL; over HTTP any other document's page in the console (a file path there means nothing
    to a remote client); over stdio a file's file:// URL. "" for a text ingested by name over stdio: it has no link."""
    if key.startswith(("http://", "https://")):
        return key
    if settings.transport == "streamable-http":
        return f"{base_url(settings)}/collections/{quote(collection, safe='')}/documents/{quote(doc_id, safe='')}"
    if key.startswith("/"):
        return Path(key).as_uri()
    return ""
