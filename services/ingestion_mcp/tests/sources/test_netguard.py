"""SSRF attack cases: every one must be refused before a connection is made."""

from __future__ import annotations

import pytest
from ingestion_mcp.sources import SourceError, SourcePolicy, fetch_url, netguard, vet_url

from .conftest import LiveServer

ATTACKS = [
    "http://127.0.0.1/",
    "http://localhost/",
    "http://sub.localhost/",
    "http://[::1]/",
    "http://0.0.0.0/",
    "http://2130706433/",  # 127.0.0.1 as one decimal number
    "http://0x7f.0.0.1/",  # hex octet
    "http://017700000001/",  # octal
    "http://127.1/",
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped IPv6
    "http://[::ffff:a9fe:a9fe]/",  # mapped 169.254.169.254
    "http://[2002:7f00:1::]/",  # 6to4 wrapping loopback
    "http://[64:ff9b::a00:1]/",  # NAT64 wrapping 10.0.0.1
    "http://169.254.169.254/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://10.0.0.1/",
    "http://10.255.0.9:8080/",
    "http://172.16.5.4/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",  # carrier-grade NAT
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[fd12:3456::1]/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",  # reserved
    "http://255.255.255.255/",
    "file:///etc/passwd",
    "gopher://127.0.0.1:70/_GET",
    "ftp://example.com/file.pdf",
    "dict://127.0.0.1:11211/",
    "http://user:secret@example.com/doc.pdf",
]


@pytest.mark.parametrize("url", ATTACKS)
async def test_attack_urls_are_blocked(url: str) -> None:
    with pytest.raises(SourceError) as caught:
        await vet_url(url, SourcePolicy())
    assert caught.value.code == "URL_BLOCKED", caught.value
    assert caught.value.suggestion


@pytest.mark.parametrize("url", ["http://127.0.0.1:{port}/files/notes.txt", "http://localhost:{port}/files/notes.txt"])
async def test_a_live_loopback_server_is_not_reachable_by_default(http_server: LiveServer, url: str) -> None:
    with pytest.raises(SourceError) as caught:
        await fetch_url(url.format(port=http_server.port), policy=SourcePolicy())
    assert caught.value.code == "URL_BLOCKED"
    assert "loopback" in caught.value.message or "local" in caught.value.message


async def test_credentials_are_refused_even_for_an_allowed_host(http_server: LiveServer, policy: SourcePolicy) -> None:
    with pytest.raises(SourceError) as caught:
        await fetch_url(f"http://me:pw@127.0.0.1:{http_server.port}/files/notes.txt", policy=policy)
    assert caught.value.code == "URL_BLOCKED"
    assert "credentials" in caught.value.message


async def test_allow_list_is_per_port(http_server: LiveServer, policy: SourcePolicy) -> None:
    await vet_url(http_server.url("/"), policy)
    with pytest.raises(SourceError):
        await vet_url(f"http://127.0.0.1:{http_server.port + 1}/", policy)


async def test_ports_can_be_restricted() -> None:
    policy = SourcePolicy.build(allowed_ports=[443])
    with pytest.raises(SourceError) as caught:
        await vet_url("http://93.184.216.34:8080/", policy)
    assert "Port 8080 is not allowed" in caught.value.message
    assert (await vet_url("https://93.184.216.34/", policy)).address == "93.184.216.34"


@pytest.mark.parametrize(
    ("answer", "blocked"),
    [
        (["127.0.0.1"], True),
        (["93.184.216.34", "10.0.0.7"], True),  # any bad address blocks
        (["2606:2800:220:1::1", "::1"], True),
        (["93.184.216.34"], False),
    ],
)
async def test_names_are_judged_by_every_resolved_address(
    monkeypatch: pytest.MonkeyPatch, answer: list[str], blocked: bool
) -> None:
    """No public DNS name resolves offline, so the resolver's answer is injected (a fault we cannot make real)."""

    async def fake_resolver(host: str, port: int) -> list[str]:
        return answer

    monkeypatch.setattr(netguard, "resolve_host", fake_resolver)
    if blocked:
        with pytest.raises(SourceError) as caught:
            await vet_url("https://innocent.example.com/doc.pdf", SourcePolicy())
        assert caught.value.code == "URL_BLOCKED"
        assert "innocent.example.com resolves to" in caught.value.message
    else:
        target = await vet_url("https://innocent.example.com/doc.pdf", SourcePolicy())
        assert (target.host, target.address, target.port) == ("innocent.example.com", "93.184.216.34", 443)


async def test_unresolvable_host_is_a_download_error() -> None:
    with pytest.raises(SourceError) as caught:
        await vet_url("https://no-such-host.invalid/doc.pdf", SourcePolicy())
    assert caught.value.code == "DOWNLOAD_FAILED"
    assert "could not be resolved" in caught.value.message


@pytest.mark.parametrize("url", ["", "not a url", "http://", "https://exa mple.com/", "http://example.com/\r\nX: y"])
async def test_malformed_urls(url: str) -> None:
    with pytest.raises(SourceError) as caught:
        await vet_url(url, SourcePolicy())
    assert caught.value.code in {"INVALID_URL", "URL_BLOCKED"}
    assert caught.value.suggestion
