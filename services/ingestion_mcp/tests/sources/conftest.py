"""Real loopback servers (plain and TLS) and real documents for the source fetcher tests."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import io
import ipaddress
import socket
import threading
import zipfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from ingestion_mcp.sources import SourcePolicy
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fixtures.make_fixtures import make_docx, make_pdf

ARTICLE_HTML = """<!DOCTYPE html>
<html><head><title>Vector Search Guide</title>
<script>document.write("SCRIPT-PAYLOAD")</script><style>.x{color:red} /* STYLE-PAYLOAD */</style></head>
<body><nav><a href="/">NAV-HOME</a> <a href="/about">NAV-ABOUT</a></nav>
<header>SITE-HEADER banner</header>
<main><article><h1>Hybrid retrieval explained</h1>
<p>Hybrid retrieval combines dense embeddings with sparse BM25 scores, which helps when queries contain
rare identifiers that embeddings blur together. This paragraph is the real content of the page.</p>
<h2>Reciprocal rank fusion</h2>
<p>Reciprocal rank fusion merges ranked lists without calibrating scores, using one over k plus rank.</p>
<ul><li>dense recall</li><li>sparse precision</li></ul>
<form action="/subscribe"><input name="email" value="FORM-PAYLOAD"><button>FORM-BUTTON</button></form>
</article></main>
<aside>ASIDE-ADS buy now</aside><footer>FOOTER-COPYRIGHT 2024</footer></body></html>"""

MARKDOWN = "# Notes\n\nSome *markdown* text.\n\n- item one\n- item [link](https://example.com)\n"
TEXT = "Plain text file.\nSecond line.\n"


def make_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("data/readme.txt", "not an office document")
    return buffer.getvalue()


@dataclass
class ServerState:
    hosts_seen: list[str] = field(default_factory=list)


async def static(request: Request) -> Response:
    name = request.path_params["name"]
    body, media = {
        "article.html": (ARTICLE_HTML, "text/html; charset=utf-8"),
        "doc.pdf": (request.app.state.pdf, "application/pdf"),
        "pdf-as-text": (request.app.state.pdf, "text/plain"),
        "doc.docx": (request.app.state.docx, "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
        "docx-as-octets": (request.app.state.docx, "application/octet-stream"),
        "notes.md": (MARKDOWN, "text/plain"),
        "notes.txt": (TEXT, "text/plain; charset=utf-8"),
        "fake.pdf": (TEXT, "application/pdf"),
        "page-as-octets": (ARTICLE_HTML, "application/octet-stream"),
        "image.png": (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "image/png"),
        "archive.zip": (make_zip(), "application/zip"),
    }[name]
    return Response(body, media_type=media)


async def named(request: Request) -> Response:
    headers = {"Content-Disposition": "attachment; filename*=UTF-8''Q3%20report.pdf"}
    return Response(request.app.state.pdf, media_type="application/octet-stream", headers=headers)


async def status(request: Request) -> Response:
    return PlainTextResponse("error page", status_code=int(request.path_params["code"]))


async def chain(request: Request) -> Response:
    left = int(request.path_params["n"])
    return RedirectResponse("/files/notes.txt" if left == 0 else f"/chain/{left - 1}", status_code=302)


async def loop(request: Request) -> Response:
    return RedirectResponse("/loop/b" if request.path_params["side"] == "a" else "/loop/a", status_code=301)


async def redirect_to(request: Request) -> Response:
    return RedirectResponse(request.query_params["url"], status_code=307)


async def slow(request: Request) -> Response:
    await asyncio.sleep(5)
    return PlainTextResponse("too late")


async def trickle(request: Request) -> Response:
    async def body() -> AsyncIterator[bytes]:
        for _ in range(100):
            yield b"x"
            await asyncio.sleep(0.1)

    return StreamingResponse(body(), media_type="text/plain")


async def big(request: Request) -> Response:
    size = 5 * 1024 * 1024
    return Response(b"a" * size, media_type="text/plain")


async def bomb(request: Request) -> Response:
    payload = gzip.compress(b"\x20" * (20 * 1024 * 1024))
    return Response(payload, media_type="text/plain", headers={"Content-Encoding": "gzip"})


async def gzipped(request: Request) -> Response:
    return Response(gzip.compress(TEXT.encode()), media_type="text/plain", headers={"Content-Encoding": "gzip"})


async def echo_host(request: Request) -> Response:
    request.app.state.server.hosts_seen.append(request.headers.get("host", ""))
    return PlainTextResponse(f"host={request.headers.get('host')}")


def build_app(state: ServerState, pdf: bytes, docx_bytes: bytes) -> Starlette:
    app = Starlette(
        routes=[
            Route("/files/{name}", static),
            Route("/named", named),
            Route("/status/{code:int}", status),
            Route("/chain/{n:int}", chain),
            Route("/loop/{side}", loop),
            Route("/redirect", redirect_to),
            Route("/slow", slow),
            Route("/trickle", trickle),
            Route("/big", big),
            Route("/bomb", bomb),
            Route("/gzipped", gzipped),
            Route("/echo-host", echo_host),
        ]
    )

    app.state.server = state
    app.state.pdf = pdf
    app.state.docx = docx_bytes
    return app


@dataclass
class LiveServer:
    port: int
    state: ServerState
    scheme: str = "http"

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"


def serve(app: Starlette, **ssl: str) -> Iterator[int]:
    """Run uvicorn in a thread on a free loopback port; yields the port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="off", **ssl)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        threading.Event().wait(0.025)
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="session")
def documents() -> dict[str, bytes]:
    return {
        "pdf": make_pdf(pages=[(None, ["Quarterly report: revenue grew."])]),
        "docx": make_docx(title="Design notes", sections=[(None, ["The gateway embeds and stores chunks."])]),
    }


@pytest.fixture(scope="session")
def http_server(documents: dict[str, bytes]) -> Iterator[LiveServer]:
    state = ServerState()
    for port in serve(build_app(state, documents["pdf"], documents["docx"])):
        yield LiveServer(port, state)


@dataclass(frozen=True)
class Pki:
    ca_file: Path
    cert_file: Path
    key_file: Path


def make_pki(folder: Path, names: list[str]) -> Pki:
    """A private CA and a server certificate for `names` (and 127.0.0.1)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    alt = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    pki.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    pki.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pki.key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), ["docs.example.test", "localhost"])


@pytest.fixture(scope="session")
def tls_server(documents: dict[str, bytes], pki: Pki) -> Iterator[LiveServer]:
    state = ServerState()
    app = build_app(state, documents["pdf"], documents["docx"])
    for port in serve(app, ssl_certfile=str(pki.cert_file), ssl_keyfile=str(pki.key_file)):
        yield LiveServer(port, state, scheme="https")


@pytest.fixture
def policy(http_server: LiveServer) -> SourcePolicy:
    """Opens exactly the loopback test server (host and port), nothing else; short timeouts."""
    return SourcePolicy.build(
        allowed_hosts=[f"127.0.0.1:{http_server.port}"],
        connect_timeout_s=2,
        read_timeout_s=1,
        total_timeout_s=3,
        max_download_bytes=1024 * 1024,
    )
