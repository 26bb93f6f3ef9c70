"""Fetch one URL safely: vetted and pinned hosts, manual redirects, time and size limits, real type."""

from __future__ import annotations

import asyncio
import ssl
import zlib
from dataclasses import dataclass, field
from http import HTTPStatus

import httpx

from .detect import Kind, decode_text, detect_kind, guess_filename
from .errors import DOWNLOAD_FAILED, FILE_TOO_LARGE, TIMEOUT, TLS_ERROR, UNSUPPORTED_FORMAT, SourceError
from .netguard import PinnedTransport, vet_url
from .policy import MiB, SourcePolicy

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_PUBLIC_HINT = "Verify the URL is correct and publicly accessible."


@dataclass(frozen=True)
class FetchedResource:
    """A downloaded body and what it is."""

    url: str  # as asked
    final_url: str  # after redirects
    status: int
    content_type: str  # the server's header, may be wrong; `kind` is what the bytes are
    data: bytes = field(repr=False)
    filename: str
    kind: Kind
    redirects: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return len(self.data)

    def text(self) -> str:
        """The body as text (html, md, txt kinds)."""
        decoded = decode_text(self.data, self.content_type)
        if decoded is None:
            raise SourceError(UNSUPPORTED_FORMAT, f"{self.final_url} is {self.kind}, not text.", "Convert it first.")
        return decoded


async def fetch_url(url: str, *, policy: SourcePolicy, max_bytes: int | None = None) -> FetchedResource:
    """GET `url` under `policy`; raises SourceError with a cause and a next step on any failure."""
    limit = max_bytes or policy.max_download_bytes
    transport = PinnedTransport(policy)
    timeout = httpx.Timeout(
        connect=policy.connect_timeout_s, read=policy.read_timeout_s, write=policy.read_timeout_s, pool=5.0
    )
    headers = {"User-Agent": policy.user_agent, "Accept-Encoding": "gzip, deflate", "Accept": "*/*"}
    async with httpx.AsyncClient(transport=transport, timeout=timeout, headers=headers, trust_env=False) as client:
        try:
            async with asyncio.timeout(policy.total_timeout_s):
                return await _follow(client, transport, url, policy, limit)
        except TimeoutError as exc:
            raise _timeout(url, f"the download took longer than {policy.total_timeout_s:g} s") from exc
        except httpx.TimeoutException as exc:
            phase = "connecting" if isinstance(exc, httpx.ConnectTimeout) else "waiting for data"
            raise _timeout(url, f"no answer while {phase}") from exc
        except httpx.HTTPError as exc:
            raise _transport_error(url, exc) from exc


async def _follow(
    client: httpx.AsyncClient, transport: PinnedTransport, url: str, policy: SourcePolicy, limit: int
) -> FetchedResource:
    current: str | httpx.URL = url
    hops: list[str] = []
    seen: set[str] = set()
    for _ in range(policy.max_redirects + 1):
        target = await vet_url(current, policy)  # every hop is vetted and pinned again
        transport.backend.pin(target)
        seen.add(str(target.url))
        async with client.stream("GET", target.url) as response:
            location = response.headers.get("location")
            if response.status_code in _REDIRECTS and location:
                current = target.url.join(location)
                if str(current) in seen:
                    raise SourceError(
                        DOWNLOAD_FAILED,
                        f"URL fetch failed: redirect loop ({target.url} -> {current}).",
                        "The site redirects in a circle; open it in a browser to find the real document URL.",
                    )
                hops.append(str(current))
                continue
            _raise_for_status(response)
            data = await _read_limited(response, limit)
        content_type = response.headers.get("content-type", "")
        kind = detect_kind(data, content_type, target.url.path)
        name = guess_filename(target.url.path, response.headers.get("content-disposition"), kind)
        return FetchedResource(url, str(target.url), response.status_code, content_type, data, name, kind, tuple(hops))
    raise SourceError(
        DOWNLOAD_FAILED,
        f"URL fetch failed: more than {policy.max_redirects} redirects (last: {current}).",
        "Use the final document URL directly (open it in a browser and copy the address).",
    )


def _raise_for_status(response: httpx.Response) -> None:
    status = response.status_code
    if 200 <= status < 300:
        return
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = response.reason_phrase or "Error"
    message = f"URL fetch failed: {status} {phrase}"
    if status in (401, 403, 407):
        hint = (
            "The server refused access; only public URLs can be fetched (no login is sent). "
            "Download it yourself and use ingest_document."
        )
    elif status == 429:
        wait = response.headers.get("retry-after")
        hint = f"The server is rate limiting; retry {'after ' + wait + ' s' if wait else 'later'}."
    elif status >= 500:
        hint = "The remote server failed; retry later or use a different source."
    elif 300 <= status < 400:
        message += " (redirect without a Location header)"
        hint = "Use the final document URL directly."
    else:
        hint = _PUBLIC_HINT
    raise SourceError(DOWNLOAD_FAILED, message + ".", hint, status=status)


async def _read_limited(response: httpx.Response, limit: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(f"the server announces {int(declared) / MiB:.1f} MiB", limit)
    decoder = _BoundedDecoder(response.headers.get("content-encoding", ""), limit)
    async for chunk in response.aiter_raw():
        decoder.feed(chunk)  # raises as soon as the decoded body passes the limit; nothing more is read
    return decoder.finish()


class _BoundedDecoder:
    """gzip/deflate decoding that never inflates more than the limit (no decompression bombs)."""

    def __init__(self, encoding: str, limit: int) -> None:
        encoding = encoding.strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise SourceError(
                DOWNLOAD_FAILED,
                f"URL fetch failed: unsupported Content-Encoding {encoding!r}.",
                "The server sent a compression this fetcher does not accept; try another source.",
            )
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._zlib = None if encoding in ("", "identity") else zlib.decompressobj(47 if "gzip" in encoding else 15)

    def feed(self, chunk: bytes) -> None:
        if self._zlib is None:
            self._add(chunk)
            return
        data = chunk
        while data:
            try:
                out = self._zlib.decompress(data, self._limit - self._size + 1)
            except zlib.error as exc:
                raise SourceError(
                    DOWNLOAD_FAILED, f"URL fetch failed: corrupt compressed body ({exc}).", "Retry later."
                ) from exc
            self._add(out)
            data = self._zlib.unconsumed_tail

    def _add(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > self._limit:
            raise _too_large(f"the body passed {self._limit / MiB:.1f} MiB", self._limit)
        self._parts.append(data)

    def finish(self) -> bytes:
        if self._zlib is not None:
            self._add(self._zlib.flush())
        return b"".join(self._parts)


def _too_large(cause: str, limit: int) -> SourceError:
    return SourceError(
        FILE_TOO_LARGE,
        f"File too large: {cause}; the limit is {limit / MiB:.1f} MiB. The download was stopped.",
        "Use a smaller document or split it, or raise maxFileSizeMB if the operator allows it.",
    )


def _timeout(url: str, cause: str) -> SourceError:
    return SourceError(
        TIMEOUT,
        f"URL fetch failed: timed out, {cause} ({url}).",
        "The server is slow or unreachable; retry later or use a different source.",
    )


def _transport_error(url: str, exc: httpx.HTTPError) -> SourceError:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            detail = cause.verify_message or "certificate not trusted"
            return SourceError(
                TLS_ERROR,
                f"URL fetch failed: SSL certificate verification failed ({detail}).",
                "The server's SSL certificate is invalid. Contact the site administrator or use a different source.",
            )
        if isinstance(cause, ssl.SSLError):
            return SourceError(
                TLS_ERROR,
                f"URL fetch failed: TLS handshake failed ({cause.reason or cause}).",
                "The server's TLS setup is broken or not HTTPS; try http:// only if the site really serves plain HTTP.",
            )
        cause = cause.__cause__ or cause.__context__
    return SourceError(
        DOWNLOAD_FAILED,
        f"URL fetch failed: could not connect or the connection broke ({type(exc).__name__}: {exc}).",
        f"{_PUBLIC_HINT} If the site is up in a browser, retry later.",
    )
