"""SSRF defence: vet a URL's host (every address it resolves to) and connect only to the vetted address.

The check and the connection use the same resolution: the transport below connects to the pinned IP
while the URL (Host header, TLS SNI and certificate check) keeps the name, so a DNS answer that
changes between check and connect (rebinding) cannot redirect the request.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from .errors import DOWNLOAD_FAILED, INVALID_URL, URL_BLOCKED, SourceError
from .policy import SourcePolicy

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

FETCH_SCHEMES = frozenset({"http", "https"})
METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.oraclecloud.com",
    }
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_MAX_URL_CHARS = 8192

BLOCKED_SUGGESTION = (
    "Only public internet addresses can be fetched. Use a publicly reachable URL; an operator who trusts an "
    "internal host can open it with the source allowed-hosts setting."
)


@dataclass(frozen=True)
class VettedTarget:
    """A URL whose host passed the checks, and the one address the connection must use."""

    url: httpx.URL
    host: str  # as httpx sends it (IDNA-encoded, no brackets)
    port: int
    address: str


async def resolve_host(host: str, port: int) -> list[str]:
    """All addresses of `host` (the system resolver; tests replace this to fake a DNS answer)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def address_problem(address: IPAddress) -> str | None:
    """Why an address must not be contacted (None when it is a public unicast address)."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        inner = address_problem(embedded)
        return f"{inner} (embedded in IPv6 {address})" if inner else None
    for label, flag in (
        ("an unspecified", address.is_unspecified),
        ("a loopback", address.is_loopback),
        ("a link-local (cloud metadata range)", address.is_link_local),
        ("a multicast", address.is_multicast),
        ("a private-network", address.is_private),
        ("a shared (carrier-grade NAT)", address.version == 4 and address in _CGNAT),
        ("a reserved", address.is_reserved),
    ):
        if flag:
            return f"{label} address"
    return None if address.is_global else "a non-public address"


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if address.version == 4:
        return None
    assert isinstance(address, ipaddress.IPv6Address)
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def parse_url(raw: str | httpx.URL) -> httpx.URL:
    """Parse with the same parser httpx connects with (no parser differential); refuse odd input."""
    text = str(raw)
    if not text.strip():
        raise SourceError(INVALID_URL, "The URL is empty.", "Pass a full http(s) URL, e.g. https://example.com/a.pdf.")
    if len(text) > _MAX_URL_CHARS or any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in text.strip()):
        raise SourceError(
            INVALID_URL,
            "The URL contains spaces or control characters, or is longer than 8192 characters.",
            "Percent-encode spaces and special characters (%20) and pass the URL as one line.",
        )
    try:
        url = httpx.URL(text.strip())
    except (httpx.InvalidURL, ValueError) as exc:
        raise SourceError(
            INVALID_URL, f"Invalid URL: {exc}.", "Pass a full URL such as https://example.com/doc.pdf."
        ) from exc
    return url


def check_url_shape(url: httpx.URL, policy: SourcePolicy, schemes: frozenset[str] = FETCH_SCHEMES) -> int:
    """Scheme, credentials, host and port checks that need no DNS; returns the effective port."""
    if url.scheme not in schemes:
        shown = url.scheme or "(none)"
        raise SourceError(
            URL_BLOCKED if url.scheme else INVALID_URL,
            f"URL scheme {shown!r} is not allowed; only {', '.join(sorted(schemes))} URLs can be fetched.",
            "Pass an http:// or https:// URL; for a local file use ingest_document with an allowed path.",
        )
    if url.userinfo:
        raise SourceError(
            URL_BLOCKED,
            "URLs with embedded credentials (user:password@host) are refused.",
            "Remove the credentials from the URL; only publicly accessible URLs can be fetched.",
        )
    if not url.host:
        raise SourceError(
            INVALID_URL, "The URL has no host name.", "Pass a full URL such as https://example.com/doc.pdf."
        )
    port = url.port or (443 if url.scheme == "https" else 80)
    if policy.allowed_ports is not None and port not in policy.allowed_ports:
        raise SourceError(
            URL_BLOCKED,
            f"Port {port} is not allowed; allowed ports: {', '.join(map(str, sorted(policy.allowed_ports)))}.",
            "Use a URL on an allowed port (usually the default 443 for https).",
        )
    return port


async def vet_url(raw: str | httpx.URL, policy: SourcePolicy, schemes: frozenset[str] = FETCH_SCHEMES) -> VettedTarget:
    """Refuse URLs that reach loopback, private, link-local, metadata or other non-public hosts."""
    url = parse_url(raw)
    port = check_url_shape(url, policy, schemes)
    host = url.raw_host.decode("ascii")
    name = host.rstrip(".").lower()
    named_ok = policy.allowed_hosts.allows_name(name, port)
    if not named_ok and (name in METADATA_HOSTS or name == "localhost" or name.endswith(".localhost")):
        raise SourceError(
            URL_BLOCKED, f"URL blocked: {name} is a local or cloud-metadata host name.", BLOCKED_SUGGESTION
        )
    addresses = await _resolve(host, port)
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        problem = address_problem(address)
        if problem and not named_ok and not policy.allowed_hosts.allows_address(address):
            raise SourceError(URL_BLOCKED, f"URL blocked: {name} resolves to {address}, {problem}.", BLOCKED_SUGGESTION)
    return VettedTarget(url=url, host=host, port=port, address=addresses[0])


async def _resolve(host: str, port: int) -> list[str]:
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        return [str(literal)]
    try:
        addresses = await resolve_host(host, port)
    except (OSError, UnicodeError) as exc:
        raise SourceError(
            DOWNLOAD_FAILED,
            f"URL fetch failed: the host name {host} could not be resolved ({exc}).",
            "Check the host name for typos and that the site is publicly reachable.",
        ) from exc
    if not addresses:
        raise SourceError(
            DOWNLOAD_FAILED,
            f"URL fetch failed: the host name {host} has no address.",
            "Check the host name for typos and that the site is publicly reachable.",
        )
    return addresses


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects only to addresses vetted for a host; anything else is a connection error."""

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._pins: dict[tuple[str, int], str] = {}

    def pin(self, target: VettedTarget) -> None:
        self._pins[(target.host, target.port)] = target.address

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        address = self._pins.get((host, port))
        if address is None:
            raise httpcore.ConnectError(f"refusing to connect to unvetted host {host}:{port}")
        return await self._inner.connect_tcp(address, port, timeout, local_address, socket_options)

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are never used for remote sources")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx transport whose pool dials the pinned addresses; no proxies, no environment settings."""

    def __init__(self, policy: SourcePolicy) -> None:
        super().__init__(trust_env=False)
        self.backend = PinnedBackend()
        # httpx offers no public hook for the network backend; swap the pool it built for one using ours.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=policy.ssl_context(),
            max_connections=4,
            http1=True,
            http2=False,
            retries=0,
            network_backend=self.backend,
        )
