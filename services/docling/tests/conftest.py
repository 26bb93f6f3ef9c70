"""Shared fixtures: the real fixture documents, a started converter, and apps with their lifespan."""

from __future__ import annotations

import gzip
import io
import itertools
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
from asgi_lifespan import LifespanManager
from docling_service.converter import Converter, ConverterOptions
from docling_service.main import create_app
from docling_service.settings import DoclingSettings
from fastapi import FastAPI
from ingestion_contracts.docling import ConvertResponse
from pypdf import PdfReader, PdfWriter

os.environ.setdefault("HF_HUB_OFFLINE", "1")

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def read_fixture() -> Callable[[str], bytes]:
    return lambda name: (FIXTURES / name).read_bytes()


@pytest.fixture(scope="session")
def converter() -> Converter:
    converter = Converter(ConverterOptions())
    converter.start()
    return converter


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tmp/root (the allowed root) with documents, and tmp/outside with a secret a symlink points to."""
    base = tmp_path_factory.mktemp("paths")
    root, outside = base / "root", base / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "sample.pdf").write_bytes((FIXTURES / "sample.pdf").read_bytes())
    (root / "notes.txt").write_bytes((FIXTURES / "sample.txt").read_bytes())
    (outside / "secret.txt").write_text("outside the root\n", encoding="utf-8")
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    (root / "escape_dir").symlink_to(outside, target_is_directory=True)
    (root / "inner_link.txt").symlink_to(root / "notes.txt")
    return base


@pytest.fixture(scope="session")
def settings(sandbox: Path) -> DoclingSettings:
    return DoclingSettings(_env_file=None, allowed_roots=[sandbox / "root"])


def check_offsets(result: ConvertResponse) -> None:
    """The promises of a conversion: exact block offsets, ordered blocks, contiguous page spans."""
    previous_end = 0
    for block in result.blocks:
        assert result.markdown[block.start : block.end] == block.text
        assert block.start >= previous_end and block.text.strip()
        previous_end = block.end
    for left, right in itertools.pairwise(result.page_spans):
        assert left.end == right.start and left.start < left.end
    if result.page_spans:
        assert result.page_spans[-1].end == len(result.markdown)


@pytest.fixture(scope="session")
def check() -> Callable[[ConvertResponse], None]:
    return check_offsets


async def _client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    # Start-up waits for a worker process to load docling: seconds, more on a busy machine.
    async with LifespanManager(app, startup_timeout=180, shutdown_timeout=30):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://docling.test") as http:
            yield http


@pytest.fixture(scope="session")
async def client(settings: DoclingSettings) -> AsyncIterator[httpx.AsyncClient]:
    async for http in _client(create_app(settings)):
        yield http


@pytest.fixture(scope="session")
def make_client() -> Callable[..., AsyncIterator[httpx.AsyncClient]]:
    """A client for an app built with other settings: ``async for http in make_client(max_upload_mb=1)``."""

    def build(**overrides: object) -> AsyncIterator[httpx.AsyncClient]:
        return _client(create_app(DoclingSettings(_env_file=None, **overrides)))

    return build


@pytest.fixture(scope="session")
def debian_pdf() -> Callable[..., bytes]:
    """``debian_pdf(package, file, *pages)``: those pages (1-based; all when none) of a PDF a Debian package installs
    under /usr/share/doc (gzipped or not), as a PDF of their own; skips, naming the package, where it is missing."""

    def pages(package: str, file: str, *numbers: int) -> bytes:
        path = Path("/usr/share/doc") / file
        if not path.exists():
            pytest.skip(f"needs Debian's {package} (apt-get install {package}; .ci/run installs it)")
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        if not numbers:
            return data
        reader, writer = PdfReader(io.BytesIO(data)), PdfWriter()
        for number in numbers:
            writer.add_page(reader.pages[number - 1])
        out = io.BytesIO()
        writer.write(out)
        return out.getvalue()

    return pages
