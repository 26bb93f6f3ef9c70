"""Build the chunker app from settings; ``run()`` is the console entry point."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import anyio
from fastapi import FastAPI
from servicekit import configure_logging, create_service_app, serve
from servicekit.settings import settings_or_exit

from . import __version__
from .api.routes import router
from .chunker import TextChunker
from .service import ChunkingService
from .settings import ChunkerSettings
from .tokens import TokenCounter

log = logging.getLogger("chunker_service")


def _load(settings: ChunkerSettings) -> ChunkingService:
    assert settings.tokenizer_path is not None and settings.tokenizer_name  # resolved by the settings
    counter = TokenCounter.from_path(settings.tokenizer_path, settings.tokenizer_name)
    return ChunkingService(
        TextChunker(counter),
        model_max_tokens=settings.max_tokens,
        max_text_chars=settings.max_text_chars,
        max_concurrency=settings.max_concurrency,
    )


def create_app(settings: ChunkerSettings) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.chunking = await anyio.to_thread.run_sync(_load, settings)
        log.info("tokenizer loaded", extra={"service": "chunker"})
        try:
            yield
        finally:
            app.state.chunking = None

    def readiness() -> dict[str, str]:
        loaded = getattr(app.state, "chunking", None) is not None
        return {"tokenizer": "ok" if loaded else "not loaded yet"}

    app = create_service_app(
        name="chunker",
        version=__version__,
        description="Splits text into windows of the embedding model's tokens, following Markdown headings and pages.",
        auth_token=settings.token_value(),
        readiness=readiness,
        lifespan=lifespan,
    )
    app.state.chunking = None
    app.include_router(router)
    return app


def run() -> None:
    settings = settings_or_exit(ChunkerSettings, "chunker-service")
    configure_logging(settings.log_level, json_logs=settings.json_logs)
    serve(create_app(settings), settings)


if __name__ == "__main__":
    run()
