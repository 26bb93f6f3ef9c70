"""fetch_url against a real loopback server: types, redirects, limits, status codes, TLS."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest
from ingestion_mcp.sources import SourceError, SourcePolicy, fetch_url, netguard

from .conftest import MARKDOWN, TEXT, LiveServer, Pki


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/files/doc.pdf", "pdf"),
        ("/files/pdf-as-text", "pdf"),  # wrong header: the bytes decide
        ("/files/doc.docx", "docx"),
        ("/files/docx-as-octets", "docx"),
        ("/files/article.html", "html"),
        ("/files/page-as-octets", "html"),
        ("/files/notes.md", "md"),
        ("/files/notes.txt", "txt"),
        ("/files/fake.pdf", "txt"),  # a .pdf name and a PDF header do not make text a PDF
    ],
)
async def test_detects_the_real_kind(http_server: LiveServer, policy: SourcePolicy, path: str, kind: str) -> None:
    fetched = await fetch_url(http_server.url(path), policy=policy)
    assert (fetched.kind, fetched.status) == (kind, 200)
    assert fetched.filename.endswith(
        {"pdf": ".pdf", "docx": ".docx", "html": ".html", "md": ".md", "txt": ".txt"}[kind]
    )


async def test_text_body_and_file_name(http_server: LiveServer, policy: SourcePolicy) -> None:
    fetched = await fetch_url(http_server.url("/files/notes.txt"), policy=policy)
    assert fetched.text() == TEXT
    assert fetched.filename == "notes.txt"
    named = await fetch_url(http_server.url("/named"), policy=policy)
    assert (named.filename, named.kind) == ("Q3 report.pdf", "pdf")
    markdown = await fetch_url(http_server.url("/files/notes.md"), policy=policy)
    assert markdown.text() == MARKDOWN


async def test_images_are_fetched_for_ocr(http_server: LiveServer, policy: SourcePolicy) -> None:
    image = await fetch_url(http_server.url("/files/image.png"), policy=policy)
    assert image.kind == "image"


@pytest.mark.parametrize("path", ["/files/archive.zip"])
async def test_unsupported_content_is_refused(http_server: LiveServer, policy: SourcePolicy, path: str) -> None:
    with pytest.raises(SourceError) as caught:
        await fetch_url(http_server.url(path), policy=policy)
    assert caught.value.code == "UNSUPPORTED_FORMAT"
    assert "Supported types" in caught.value.message


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (404, "URL fetch failed: 404 Not Found."),
        (403, "URL fetch failed: 403 Forbidden."),
        (500, "500 Internal Server Error"),
    ],
)
async def test_http_errors_name_the_status(
    http_server: LiveServer, policy: SourcePolicy, code: int, message: str
) -> None:
    with pytest.raises(SourceError) as caught:
        await fetch_url(http_server.url(f"/status/{code}"), policy=policy)
    error = caught.value
    assert (error.code, error.status) == ("DOWNLOAD_FAILED", code)
    assert message in error.message
    if code == 404:
        assert error.suggestion == "Verify the URL is correct and publicly accessible."


async def test_redirect_chain_is_followed(http_server: LiveServer, policy: SourcePolicy) -> None:
    fetched = await fetch_url(http_server.url("/chain/3"), policy=policy)
    assert fetched.final_url == http_server.url("/files/notes.txt")
    assert len(fetched.redirects) == 4


async def test_too_many_redirects(http_server: LiveServer, policy: SourcePolicy) -> None:
    with pytest.raises(SourceError) as caught:
        await fetch_url(http_server.url("/chain/9"), policy=policy)
    assert caught.value.code == "DOWNLOAD_FAILED"
    assert "more than 5 redirects" in caught.value.message


async def test_redirect_loop(http_server: LiveServer, policy: SourcePolicy) -> None:
    with pytest.raises(SourceError, match="redirect loop"):
        await fetch_url(http_server.url("/loop/a"), policy=policy)


@pytest.mark.parametrize(
    "target",
    ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://localhost:{port}/files/notes.txt"],
)
async def test_redirect_to_a_private_address_is_blocked(
    http_server: LiveServer, policy: SourcePolicy, target: str
) -> None:
    url = http_server.url("/redirect?url=" + target.format(port=http_server.port))
    with pytest.raises(SourceError) as caught:
        await fetch_url(url, policy=policy)
    assert caught.value.code == "URL_BLOCKED"


async def test_slow_server_times_out(http_server: LiveServer, policy: SourcePolicy) -> None:
    started = time.monotonic()
    with pytest.raises(SourceError) as caught:
        await fetch_url(http_server.url("/slow"), policy=policy)
    assert caught.value.code == "TIMEOUT"
    assert time.monotonic() - started < 3


async def test_trickling_server_hits_the_total_timeout(http_server: LiveServer, policy: SourcePolicy) -> None:
    """Each byte arrives within the read timeout; only the overall deadline can stop it."""
    with pytest.raises(SourceError) as caught:
        await fetch_url(http_server.url("/trickle"), policy=policy)
    assert caught.value.code == "TIMEOUT"
    assert "longer than 3 s" in caught.value.message


async def test_declared_oversize_is_refused_before_reading(http_server: LiveServer, policy: SourcePolicy) -> None:
    with pytest.raises(SourceError) as caught:
        await fetch_url(http_server.url("/big"), policy=policy)
    assert caught.value.code == "FILE_TOO_LARGE"
    assert "announces 5.0 MiB" in caught.value.message


def endless_chunked_server() -> tuple[int, dict[str, int], threading.Thread]:
    """A raw socket server that sends chunked data until the client hangs up; counts what the kernel took."""
    listener = socket.create_server(("127.0.0.1", 0))
    sent = {"bytes": 0}

    def run() -> None:
        connection, _ = listener.accept()
        with connection, listener:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"10000\r\n" + b"a" * 65536 + b"\r\n"
            try:
                while sent["bytes"] < 100 * 1024 * 1024:
                    connection.sendall(chunk)
                    sent["bytes"] += 65536
            except OSError:
                pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return listener.getsockname()[1], sent, thread


async def test_chunked_oversize_stops_the_download() -> None:
    port, sent, thread = endless_chunked_server()
    policy = SourcePolicy.build(allowed_hosts=[f"127.0.0.1:{port}"], total_timeout_s=10)
    with pytest.raises(SourceError) as caught:
        await fetch_url(f"http://127.0.0.1:{port}/", policy=policy, max_bytes=256 * 1024)
    assert caught.value.code == "FILE_TOO_LARGE"
    await asyncio.to_thread(thread.join, 10)
    # The server meant to send 100 MiB; the client hung up at the limit (socket buffers hold a few MiB at most).
    assert sent["bytes"] < 16 * 1024 * 1024


async def test_compression_bomb_is_stopped(http_server: LiveServer, policy: SourcePolicy) -> None:
    with pytest.raises(SourceError) as caught:
        await fetch_url(http_server.url("/bomb"), policy=policy)
    assert caught.value.code == "FILE_TOO_LARGE"


async def test_gzip_body_is_decoded(http_server: LiveServer, policy: SourcePolicy) -> None:
    fetched = await fetch_url(http_server.url("/gzipped"), policy=policy)
    assert fetched.text() == TEXT


async def test_untrusted_certificate_is_a_tls_error(tls_server: LiveServer) -> None:
    policy = SourcePolicy.build(allowed_hosts=[f"127.0.0.1:{tls_server.port}"], total_timeout_s=5)
    with pytest.raises(SourceError) as caught:
        await fetch_url(tls_server.url("/files/notes.txt"), policy=policy)
    assert caught.value.code == "TLS_ERROR"
    assert "SSL certificate verification failed" in caught.value.message


async def test_connection_goes_to_the_vetted_address_with_the_name_kept(
    tls_server: LiveServer, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No public DNS offline: the resolver answer is injected. The first answer (loopback, opened by CIDR)
    is vetted; later answers point elsewhere (rebinding). The request must reach the vetted address while
    TLS verifies the certificate for the name and the Host header keeps it."""
    answers = [["127.0.0.1"], ["10.255.255.1"]]

    async def rebinding_resolver(host: str, port: int) -> list[str]:
        assert host == "docs.example.test"
        return answers.pop(0) if len(answers) > 1 else answers[0]

    monkeypatch.setattr(netguard, "resolve_host", rebinding_resolver)
    policy = SourcePolicy.build(allowed_hosts=["127.0.0.0/8"], ca_bundle=pki.ca_file, total_timeout_s=5)
    fetched = await fetch_url(tls_server.url("/echo-host", host="docs.example.test"), policy=policy)
    assert fetched.text() == f"host=docs.example.test:{tls_server.port}"
