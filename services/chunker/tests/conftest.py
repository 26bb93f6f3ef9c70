"""Shared fixtures: the real bundled tokenizer, the chunker, and the app with its lifespan."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from asgi_lifespan import LifespanManager
from chunker_service.chunker import ChunkedText, TextChunker
from chunker_service.main import create_app
from chunker_service.settings import ChunkerSettings
from chunker_service.tokens import MAX_CHARS_PER_TOKEN, TokenCounter

os.environ.setdefault("HF_HUB_OFFLINE", "1")

Checker = Callable[[str, ChunkedText, int, int], None]


@pytest.fixture(scope="session")
def settings() -> ChunkerSettings:
    return ChunkerSettings(_env_file=None)


@pytest.fixture(scope="session")
def counter(settings: ChunkerSettings) -> TokenCounter:
    assert settings.tokenizer_path is not None and settings.tokenizer_name
    return TokenCounter.from_path(settings.tokenizer_path, settings.tokenizer_name)


@pytest.fixture(scope="session")
def chunker(counter: TokenCounter) -> TextChunker:
    return TextChunker(counter)


def _check(counter: TokenCounter, text: str, result: ChunkedText, window: int, overlap: int) -> None:
    """Every promise the chunker makes, checked against an independent count of each chunk."""
    covered = bytearray(len(text))
    previous = None
    for chunk in result.chunks:
        body = text[chunk.start : chunk.end]
        assert 0 <= chunk.start < chunk.end <= len(text)
        assert body.strip(), f"whitespace-only chunk at {chunk.start}"
        assert not body[0].isspace() and not body[-1].isspace(), "chunks are trimmed"
        assert counter.count(chunk.prefix + body) == chunk.token_count <= window  # prefix: a table's header
        assert len(body) <= window * MAX_CHARS_PER_TOKEN
        if previous is not None:
            assert chunk.start >= previous.start, "chunks in order of start"
            assert chunk.end > previous.end, "each chunk brings new text"
            if chunk.start < previous.end:
                assert counter.count(text[chunk.start : previous.end]) <= overlap
        covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
        previous = chunk
    lost = [i for i, c in enumerate(text) if not covered[i] and not c.isspace()]
    assert not lost, f"text lost at offsets {lost[:5]}: {text[lost[0] : lost[0] + 20]!r}"


@pytest.fixture(scope="session")
def check(counter: TokenCounter) -> Checker:
    return lambda text, result, window, overlap: _check(counter, text, result, window, overlap)


@pytest.fixture
async def app(settings: ChunkerSettings):
    application = create_app(settings)
    async with LifespanManager(application):
        yield application


@pytest.fixture
async def client(app) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://chunker.test") as http:
        yield http
