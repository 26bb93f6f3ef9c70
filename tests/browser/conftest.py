"""The operator console in a real browser: Debian's headless Chromium driven by selenium, against the real
server (serving.http_app under uvicorn on loopback ports) on the embedded default (the three services in-process,
Milvus Lite in a temp dir, the bundled model).

The server runs on its own event loop in a thread (anyio's blocking portal): selenium's calls block, and a
server on the test's loop would never answer them. Two apps share one backend: one open (no AUTH_TOKEN), one
in static-token mode.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from ingestion_mcp.embedded.services import embedded_backend
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState
from pydantic import SecretStr

from scripts.serve_app import serving

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
TOKEN = "console-browser-test-token"
T = TypeVar("T")


@dataclass
class Console:
    """The running console: its open URL, its static-token URL, and the state behind both."""

    url: str
    token_url: str
    token: str
    state: AppState
    docs_dir: Path
    portal: BlockingPortal

    def run(self, work: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run a coroutine function on the server's loop (to seed documents, to read jobs)."""
        return self.portal.call(work, *args)

    def ingest_text(self, text: str, *, collection: str, name: str) -> str:
        """Seed one document through the real pipeline (as the ingest_text tool does); its doc_id."""

        async def ingest() -> str:
            return (await self.state.ingestor.ingest_text(text, collection=collection, name=name)).doc_id

        return self.run(ingest)


@pytest.fixture(scope="session")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    for name in ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI"):
        os.environ.pop(name, None)
    docs_dir = tmp_path_factory.mktemp("console-docs")
    settings = McpSettings(
        allowed_roots=[docs_dir], data_dir=tmp_path_factory.mktemp("console-data"), transport="streamable-http"
    )
    locked = settings.model_copy(update={"auth_token": SecretStr(TOKEN)})
    with start_blocking_portal() as portal, ExitStack() as stack:
        backend = stack.enter_context(portal.wrap_async_context_manager(embedded_backend(settings)))
        state, token_state = AppState.create(settings, backend), AppState.create(locked, backend)
        stack.callback(portal.call, token_state.jobs.aclose)
        stack.callback(portal.call, state.jobs.aclose)
        url = stack.enter_context(portal.wrap_async_context_manager(serving(state)))
        token_url = stack.enter_context(portal.wrap_async_context_manager(serving(token_state)))
        yield Console(url, token_url, TOKEN, state, docs_dir, portal)


def chromium_paths() -> tuple[str, str] | None:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (binary, driver) if binary and driver else None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium at 1280x900; the tests skip, saying why, when Chromium or its driver is missing."""
    paths = chromium_paths()
    if paths is None:
        pytest.skip(
            "BROWSER TESTS SKIPPED: Debian's chromium and chromium-driver are not installed "
            "(apt-get install -y chromium chromium-driver; .ci/run installs them)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = paths[0]
    for argument in ("--headless=new", "--window-size=1280,900", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    if os.geteuid() == 0:  # Chromium refuses to start its sandbox as root
        options.add_argument("--no-sandbox")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=paths[1]))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def shoot(browser: Any) -> Callable[[str], None]:
    """shoot(name): docs/screenshots/<name>.png of the page now shown, only with REFRESH_SCREENSHOTS=1
    (`make screenshots`), so a plain test run rewrites no file."""

    def save(name: str) -> None:
        if os.environ.get("REFRESH_SCREENSHOTS") != "1":
            return
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(SCREENSHOTS / f"{name}.png")), name

    return save


@pytest.fixture(scope="session")
def served(console: Console) -> Console:
    """The console, or a loud skip while this branch does not serve it yet (GET / answers 404)."""
    answer = httpx.get(f"{console.url}/", timeout=30, follow_redirects=True)
    if answer.status_code == 404:
        pytest.skip("CONSOLE NOT SERVED YET: GET / answers 404 on this branch (docs/console.md describes the pages)")
    return console
