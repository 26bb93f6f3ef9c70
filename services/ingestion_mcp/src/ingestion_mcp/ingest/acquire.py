"""Source adapters: each way in acquires a document (bytes or text, a name, its key) and nothing more.

What happens next (dedup, conversion, chunking, embedding, storing) is the one pipeline's job
(ingest/pipeline.py), whatever the document came from: a file, a text, a URL, a download, a repository.

A document's identity in its collection is its key: the resolved absolute path of a file, the normalised
URL of a web resource, the name of a text (its content hash when it has none). Labels such as `source`
and tags never identify a document.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit, urlunsplit

import anyio
from ingestion_contracts.docling import EXTENSIONS, GZIP_SUFFIX, SUPPORTED_FILE_TYPES

from ..errors import ToolFailure
from ..settings import McpSettings
from ..sources import FetchedResource, SourcePolicy, fetch_url, html_to_markdown
from ..sources.detect import KIND_EXTENSIONS, image_extension
from ..sources.file_names import escaped
from ..sources.paths import resolve_allowed

# Types read as text here: docling's Markdown -> Markdown round trip adds nothing to them.
TEXT_TYPES = ("md", "txt")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_UNPACKED_BYTES = 512 << 20  # what one .gz may unpack to when no file limit is given


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Acquired:
    """A document as its source adapter found it, before any conversion."""

    key: str
    name: str  # file name (docling reads its extension) or the text's name
    file_type: str
    last_modified: str
    data: bytes | None = field(default=None, repr=False)  # to convert with docling...
    markdown: str | None = field(default=None, repr=False)  # ...or already text
    title: str | None = None
    default_source: str = ""  # the `source` label when the caller gives none
    is_text_input: bool = False  # text handed over by the caller (the plan's length rules apply)
    content_hash: str = ""

    def __post_init__(self) -> None:
        if not self.content_hash:
            body = self.data if self.data is not None else (self.markdown or "").encode("utf-8")
            self.content_hash = sha256(body)
        self.default_source = self.default_source or self.key


def supported_types_text() -> str:
    return ", ".join(t.upper() for t in SUPPORTED_FILE_TYPES) + " (and any of them gzipped: .pdf.gz, .md.gz)"


def file_type_of(path: Path | PurePosixPath | str) -> str:
    """The type a file name says ("manual.pdf.gz" is a PDF, unpacked before it is read)."""
    name = PurePosixPath(str(path)).name.lower()
    name = name.removesuffix(GZIP_SUFFIX)
    suffix = PurePosixPath(name).suffix
    file_type = EXTENSIONS.get(suffix)
    if file_type is None:
        shown = (suffix or "(no extension)") + (GZIP_SUFFIX if str(path).lower().endswith(GZIP_SUFFIX) else "")
        raise ToolFailure(
            f"Unsupported file type: {shown}. Supported types: {supported_types_text()}.",
            "Convert the file to a supported format or use ingest_text with pre-extracted content.",
            code="UNSUPPORTED_FORMAT",
        )
    return file_type


def gunzip(name: str, data: bytes, max_bytes: int) -> tuple[str, bytes]:
    """A ".gz" file's inner name and bytes (at most ``max_bytes``); any other file as it is."""
    if not name.lower().endswith(GZIP_SUFFIX):
        return name, data
    unpacker = zlib.decompressobj(wbits=31)  # gzip framing
    try:
        inner = unpacker.decompress(data, max_bytes + 1)
        complete = unpacker.eof
    except zlib.error:
        complete, inner = False, b""
    if len(inner) > max_bytes:
        raise ToolFailure(
            f"File too large: {name} unpacks to more than {max_bytes >> 20} MB.",
            "Unpack it and split the document, or raise INGESTION_MCP_MAX_FILE_MB if the services allow it.",
            code="FILE_TOO_LARGE",
        )
    if not complete:
        raise ToolFailure(
            f"{name} is not a complete gzip file.",
            f"Check that it was written completely; if it is not compressed, rename it without {GZIP_SUFFIX}.",
            code="UNSUPPORTED_FORMAT",
        )
    return name[: -len(GZIP_SUFFIX)], inner


def markdown_title(markdown: str) -> str | None:
    for line in markdown.splitlines()[:200]:
        match = _HEADING.match(line)
        if match:
            return match.group(1)[:1024]
    return None


def looks_markdown(text: str) -> bool:
    return any(line.lstrip().startswith(("#", "- ", "* ", "|", "```")) for line in text.splitlines()[:200])


def decode_text(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ToolFailure(
            f"{name} is not UTF-8 text.",
            "Save it as UTF-8, or convert it to a supported document format.",
            code="UNSUPPORTED_FORMAT",
        ) from None


def from_bytes(
    data: bytes,
    name: str,
    *,
    key: str,
    last_modified: str,
    default_source: str = "",
    as_text: bool = False,
    max_bytes: int = MAX_UNPACKED_BYTES,
) -> Acquired:
    """Bytes with a file name: Markdown and text are read here, everything else goes to docling. `as_text`: a
    text-like type docling does not know (a folder sync's .rst, .tex, README), read as plain text. A gzipped
    file ("install.en.pdf.gz") is unpacked first (at most ``max_bytes``) and read as the file inside."""
    name, data = gunzip(name, data, max_bytes)
    file_type = "txt" if as_text else file_type_of(name)
    doc = Acquired(key=key, name=name, file_type=file_type, last_modified=last_modified, data=data,
                   default_source=default_source)  # fmt: skip
    if file_type in TEXT_TYPES:
        doc.markdown = decode_text(data, name)
        plain = PurePosixPath(name).name if as_text else PurePosixPath(name).stem  # "README.Debian", "conf.py"
        doc.title = (markdown_title(doc.markdown) if file_type == "md" else None) or plain
    return doc


def read_limited(path: Path, max_file_mb: int) -> bytes:
    limit = max_file_mb * 1024 * 1024
    size = path.stat().st_size
    if size > limit:
        raise ToolFailure(
            f"File too large: {escaped(path.name)} is {size / 1048576:.1f} MB; the limit is {max_file_mb} MB.",
            "Split the document, or raise INGESTION_MCP_MAX_FILE_MB if the services allow it.",
            code="FILE_TOO_LARGE",
        )
    if size == 0:
        shown = escaped(path.name)
        raise ToolFailure(f"File is empty: {shown}.", "Check the file was written completely.", code="EMPTY")
    with path.open("rb") as handle:
        return handle.read(limit + 1)


async def from_file(
    file_path: str, settings: McpSettings, *, key: str | None = None, as_text: bool = False, walked: bool = False
) -> Acquired:
    """A file under the allowed folders; its key is its resolved absolute path unless the profile says otherwise.
    `walked`: found by a folder sync, whose names may hold any byte (sources/paths.py); the name and key are
    escaped (sources/file_names.py)."""
    path = resolve_allowed(file_path, settings.allowed_roots, walked=walked)
    if not as_text:
        file_type_of(path)
    data = await anyio.to_thread.run_sync(read_limited, path, settings.max_file_mb)
    modified = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")
    name = escaped(path.name)
    return from_bytes(data, name, key=key or escaped(str(path)), last_modified=modified, as_text=as_text,
                      max_bytes=settings.max_file_mb << 20)  # fmt: skip


def from_text(text: str, *, name: str | None = None, file_type: str | None = None, key: str | None = None) -> Acquired:
    """Text handed over by the caller: its key is its name, or its content hash when it has none."""
    content_hash = sha256(text.encode("utf-8"))
    key = key or name or f"text-{content_hash[:12]}"
    return Acquired(
        key=key, name=name or key, file_type=file_type or ("md" if looks_markdown(text) else "txt"),
        last_modified=now_iso(), markdown=text, title=name or markdown_title(text) or key,
        is_text_input=True, content_hash=content_hash,
    )  # fmt: skip


def normalize_url(url: str) -> str:
    """The URL as a key: scheme and host lower-cased, default port and fragment dropped, '/' for no path."""
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    port = parts.port
    netloc = host if port in (None, DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def url_domain(url: str) -> str:
    return (urlsplit(url).hostname or url).lower()


def from_fetched(fetched: FetchedResource, *, default_source: str = "") -> Acquired:
    """What a URL gave: documents go to docling, HTML is reduced to its main content, text is read as is."""
    key = normalize_url(fetched.final_url)
    modified = now_iso()
    if fetched.kind == "html":
        page = html_to_markdown(fetched.data, url=fetched.final_url)
        return Acquired(
            key=key, name=page.title or key, file_type="html", last_modified=modified, markdown=page.markdown,
            title=page.title or fetched.final_url, default_source=default_source, content_hash=sha256(fetched.data),
        )  # fmt: skip
    if fetched.kind in TEXT_TYPES:
        text = fetched.text()
        name = fetched.filename or key
        return Acquired(
            key=key, name=name, file_type=fetched.kind, last_modified=modified, markdown=text,
            title=(markdown_title(text) if fetched.kind == "md" else None) or name,
            default_source=default_source, content_hash=sha256(fetched.data),
        )  # fmt: skip
    extension = image_extension(fetched.data) if fetched.kind == "image" else f".{fetched.kind}"
    name = fetched.filename or f"download{extension}"
    if not name.lower().endswith(KIND_EXTENSIONS[fetched.kind]):
        name = f"{name}{extension}"
    return Acquired(key=key, name=name, file_type=fetched.kind, last_modified=modified, data=fetched.data,
                    default_source=default_source)  # fmt: skip


async def from_url(url: str, policy: SourcePolicy, *, default_source: str = "") -> Acquired:
    return from_fetched(await fetch_url(url, policy=policy), default_source=default_source)
