"""Every refusal of POST /v1/convert: status, stable code, and a message that says what to do."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import httpx
import pytest
from fpdf import FPDF

MIB = 1024 * 1024


def assert_error(response: httpx.Response, status: int, code: str, *needles: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code and body["suggestion"], body
    for needle in needles:
        assert needle in body["error"], body["error"]
    return body


async def upload(client: httpx.AsyncClient, name: str, data: bytes) -> httpx.Response:
    return await client.post("/v1/convert", files={"file": (name, data)})


@pytest.fixture(scope="module")
async def small_client(make_client) -> AsyncIterator[httpx.AsyncClient]:
    async for http in make_client(max_upload_mb=1):
        yield http


class Body:
    """A request body that counts how much of it the server pulled."""

    def __init__(self, size: int, chunk: int = 64 * 1024) -> None:
        boundary = "b0undary"
        self.content_type = f"multipart/form-data; boundary={boundary}"
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n\r\n'
        self.parts = [head.encode()] + [b"a" * chunk] * (size // chunk) + [f"\r\n--{boundary}--\r\n".encode()]
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            self.sent += 1
            yield part


async def test_413_from_content_length_before_reading_the_body(small_client) -> None:
    body = Body(3 * MIB)
    headers = {"content-type": body.content_type, "content-length": str(sum(map(len, body.parts)))}
    response = await small_client.post("/v1/convert", content=body, headers=headers)
    assert_error(response, 413, "FILE_TOO_LARGE", "1 MiB limit")
    assert body.sent == 0, "the body was read although Content-Length already said it is too large"


async def test_413_while_streaming_a_body_without_length(small_client) -> None:
    body = Body(8 * MIB)
    response = await small_client.post("/v1/convert", content=body, headers={"content-type": body.content_type})
    assert_error(response, 413, "FILE_TOO_LARGE")
    assert body.sent < len(body.parts) // 4, f"read {body.sent} of {len(body.parts)} chunks: not stopped at the limit"


async def test_413_for_a_file_just_over_the_limit(small_client) -> None:
    # Within the multipart allowance of the body, but the file itself is over 1 MiB.
    response = await upload(small_client, "notes.txt", b"a" * (MIB + 10))
    assert_error(response, 413, "FILE_TOO_LARGE")
    assert (await upload(small_client, "notes.txt", b"a" * (MIB - 10))).status_code == 200


async def test_415_unknown_extension_lists_supported_types(client) -> None:
    body = assert_error(await upload(client, "archive.xyz", b"hello"), 415, "UNSUPPORTED_FORMAT", ".xyz", "PDF, DOCX")
    assert "txt" in body["details"]["supported"]


async def test_415_legacy_office_and_gif_images_without_extension(client) -> None:
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512
    assert_error(await upload(client, "old.doc", ole), 415, "UNSUPPORTED_FORMAT", ".doc")
    gif = b"GIF89a" + b"\x00" * 64
    assert_error(await upload(client, "scan", gif), 415, "UNSUPPORTED_FORMAT", "GIF image")


async def test_422_truncated_png(client) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    body = assert_error(await upload(client, "scan", png), 422, "CORRUPT_FILE", "not a readable image")
    assert "PNG, JPEG or TIFF" in body["suggestion"]


async def test_422_encrypted_pdf(client, read_fixture) -> None:
    body = assert_error(
        await upload(client, "encrypted.pdf", read_fixture("encrypted.pdf")),
        422,
        "ENCRYPTED_FILE",
        "PDF is password-protected",
    )
    assert "Remove the password" in body["suggestion"]


@pytest.mark.parametrize(
    ("name", "needle"),
    [("corrupt.pdf", "damaged or truncated"), ("fake.pdf", "not a valid PDF"), ("bomb.docx", "zip bomb")],
)
async def test_422_broken_files(client, read_fixture, name: str, needle: str) -> None:
    assert_error(await upload(client, name, read_fixture(name)), 422, "CORRUPT_FILE", needle)


async def test_422_content_that_contradicts_the_extension(client, read_fixture) -> None:
    assert_error(await upload(client, "report.docx", read_fixture("sample.pdf")), 422, "CORRUPT_FILE", "PDF file")
    assert_error(await upload(client, "notes.txt", read_fixture("sample.pdf")), 422, "CORRUPT_FILE", "PDF file")
    assert_error(await upload(client, "deck.pptx", read_fixture("sample.docx")), 422, "CORRUPT_FILE", "Word")


async def test_422_empty_file(client) -> None:
    assert_error(await upload(client, "empty.pdf", b""), 422, "EMPTY_FILE", "empty")


async def test_422_text_that_is_not_utf8(client) -> None:
    latin1 = "Caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1")
    assert_error(await upload(client, "menu.txt", latin1), 422, "NOT_UTF8", "not UTF-8 text")


async def test_422_pdf_without_text(client) -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 100, 60, style="F")  # a drawing, no text layer: what a scan looks like to the parser
    response = await upload(client, "scan.pdf", bytes(pdf.output()))
    assert_error(response, 422, "NO_TEXT", "no extractable text")


async def test_422_malformed_requests(client) -> None:
    no_file = await client.post("/v1/convert", data={"filename": "x.pdf"}, files={"other": ("a.txt", b"x")})
    assert_error(no_file, 422, "INVALID_REQUEST", "'file'")
    not_multipart = await client.post("/v1/convert", content=b"%PDF-1.4", headers={"content-type": "application/pdf"})
    assert_error(not_multipart, 422, "INVALID_REQUEST", "multipart/form-data")
    two_files = await client.post("/v1/convert", files=[("file", ("a.txt", b"a")), ("file", ("b.txt", b"b"))])
    assert_error(two_files, 422, "INVALID_REQUEST", "Too many files")


async def test_504_when_the_conversion_takes_too_long(make_client, read_fixture) -> None:
    async for http in make_client(convert_timeout_s=1e-6):
        response = await upload(http, "sample.pdf", read_fixture("sample.pdf"))
        assert_error(response, 504, "CONVERSION_TIMEOUT", "took longer")


async def test_bearer_token_protects_conversion_not_health(make_client, monkeypatch) -> None:
    monkeypatch.setenv("AUTH_TOKEN", "s3cret")
    async for http in make_client():
        assert (await upload(http, "a.txt", b"hello")).status_code == 401
        authorized = await http.post(
            "/v1/convert", files={"file": ("a.txt", io.BytesIO(b"hello"))}, headers={"Authorization": "Bearer s3cret"}
        )
        assert authorized.status_code == 200
        assert (await http.get("/healthz")).status_code == 200
