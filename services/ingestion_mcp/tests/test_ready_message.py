"""What the server says on stderr once it is ready: after every service answers ready, with how to connect
(the token named, never printed); a slow start says once what it waits for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp import serving
from ingestion_mcp.settings import McpSettings


class SlowBackend:
    def __init__(self, not_ready_polls: int) -> None:
        self.polls = not_ready_polls

    async def readiness(self) -> dict[str, str]:
        self.polls -= 1
        return {"docling": "ok", "vector gateway": "HTTP 503" if self.polls >= 0 else "ok"}


async def test_the_message_waits_for_every_service_and_a_slow_start_says_what_it_waits_for(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(serving, "STILL_STARTING_S", 0.05)
    backend: Any = SlowBackend(not_ready_polls=20)
    await serving.announce_when_ready(backend, lambda: True, lambda embeddings: f"READY{embeddings}", poll_s=0.01)
    assert backend.polls < 0
    assert capsys.readouterr().err.splitlines() == [
        "ingestion-mcp is still starting; waiting for: vector gateway (HTTP 503)",
        "READY",
    ]


def test_with_a_token_the_connect_lines_name_it_without_printing_it(tmp_path: Path) -> None:
    settings = McpSettings.model_validate({"AUTH_TOKEN": "s3cret-value", "data_dir": tmp_path, "port": 8123})
    text = serving.ready_message(settings)
    assert "s3cret-value" not in text
    assert (
        'claude mcp add --transport http ingestion http://127.0.0.1:8123/mcp --header "Authorization: Bearer '
        '$AUTH_TOKEN"' in text
    )
    assert '"headers": {"Authorization": "Bearer ${AUTH_TOKEN}"}' in text and "inspector" not in text
