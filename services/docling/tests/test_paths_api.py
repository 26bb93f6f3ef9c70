"""POST /v1/convert/path: only files that really lie under DOCLING_ALLOWED_ROOTS are read."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest


def assert_error(response: httpx.Response, status: int, code: str, *needles: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code and body["suggestion"], body
    for needle in needles:
        assert needle in body["error"] + body["suggestion"], body
    return body


async def convert_path(client: httpx.AsyncClient, path: str | Path) -> httpx.Response:
    return await client.post("/v1/convert/path", json={"path": str(path)})


async def test_converts_a_file_under_the_root(client, sandbox: Path, check) -> None:
    response = await convert_path(client, sandbox / "root" / "sub" / "sample.pdf")
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["file_name"], body["file_type"], body["page_count"]) == ("sample.pdf", "pdf", 3)
    assert "Xochimilco" in body["markdown"]


async def test_a_symlink_that_stays_inside_the_root_is_followed(client, sandbox: Path) -> None:
    response = await convert_path(client, sandbox / "root" / "inner_link.txt")
    assert response.status_code == 200 and response.json()["file_name"] == "notes.txt"


@pytest.mark.parametrize(
    "relative",
    [
        "root/../outside/secret.txt",
        "root/sub/../../outside/secret.txt",
        "root/escape.txt",
        "root/escape_dir/secret.txt",
    ],
)
async def test_escapes_are_refused(client, sandbox: Path, relative: str) -> None:
    response = await convert_path(client, f"{sandbox}/{relative}")
    body = assert_error(response, 403, "PATH_NOT_ALLOWED", "outside the directories")
    assert "outside the root" not in response.text  # nothing of the file leaks
    assert str(sandbox / "root") in body["suggestion"]


async def test_missing_outside_the_root_is_403_not_404(client) -> None:
    # Existence of files outside the roots is not disclosed.
    assert_error(await convert_path(client, "/no/such/dir/report.pdf"), 403, "PATH_NOT_ALLOWED")
    assert_error(await convert_path(client, "/etc/passwd"), 403, "PATH_NOT_ALLOWED")


async def test_missing_file_under_the_root(client, sandbox: Path) -> None:
    response = await convert_path(client, sandbox / "root" / "missing.pdf")
    assert_error(response, 404, "FILE_NOT_FOUND", "File not found", "Verify the file exists")


async def test_directory_relative_and_nul_paths(client, sandbox: Path) -> None:
    assert_error(await convert_path(client, sandbox / "root" / "sub"), 422, "NOT_A_FILE", "not a regular file")
    assert_error(await convert_path(client, "sub/sample.pdf"), 422, "INVALID_PATH", "relative")
    assert_error(await convert_path(client, f"{sandbox}/root/a\x00.pdf"), 422, "INVALID_PATH", "NUL")
    empty = await client.post("/v1/convert/path", json={"path": ""})
    assert empty.status_code == 422 and empty.json()["code"] == "INVALID_REQUEST"


async def test_unreadable_file_is_403(client, sandbox: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    locked = sandbox / "root" / "locked.txt"
    locked.write_text("secret", encoding="utf-8")
    locked.chmod(0)
    assert_error(await convert_path(client, locked), 403, "FILE_NOT_READABLE", "permission denied")


async def test_disabled_without_allowed_roots(make_client, sandbox: Path) -> None:
    async for http in make_client():
        response = await convert_path(http, sandbox / "root" / "notes.txt")
        assert_error(response, 403, "PATH_NOT_ALLOWED", "DOCLING_ALLOWED_ROOTS", "POST /v1/convert")
        assert (await http.get("/v1/formats")).json()["path_conversion"] is False


async def test_size_limit_applies_to_paths(make_client, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"word " * (300 * 1024))  # 1.5 MiB
    async for http in make_client(max_upload_mb=1, allowed_roots=[tmp_path]):
        assert_error(await convert_path(http, big), 413, "FILE_TOO_LARGE", "1 MiB limit")


async def test_same_content_errors_as_uploads(client, sandbox: Path, fixtures: Path) -> None:
    target = sandbox / "root" / "encrypted.pdf"
    target.write_bytes((fixtures / "encrypted.pdf").read_bytes())
    assert_error(await convert_path(client, target), 422, "ENCRYPTED_FILE", "password-protected")
