"""The harness itself: a real Chromium reaches the real server on both apps."""

from __future__ import annotations

from typing import Any

import httpx

from .conftest import Console


def test_chromium_shows_the_servers_health(browser: Any, console: Console) -> None:
    browser.get(f"{console.url}/healthz")
    assert "ok" in browser.find_element("tag name", "body").text.lower()


def test_the_token_app_refuses_mcp_without_the_token(console: Console) -> None:
    answer = httpx.post(f"{console.token_url}/mcp", json={}, timeout=10)
    assert answer.status_code == 401
