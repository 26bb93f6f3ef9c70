"""A passage shown on its page, in a real browser (issue 42): the console's page view, and the MCP Apps viewer the
search tool names (ui://ingestion-mcp/page-viewer) inside a minimal host page that speaks the MCP Apps messages
(SEP-1865, 2026-01-26: ui/initialize, ui/notifications/initialized, tool-input, tool-result, tools/call through the
host, size-changed) and reaches the real MCP server over streamable HTTP with the real client.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from scripts.service_stack import free_port
from scripts.system_files import CVS_PAPER, needs

from .conftest import Console
from .pages import find, on_page, visit, wait

PAPER = CVS_PAPER
COLLECTION = "evidence-views"
QUERY = "conflicts that occur when the same object has been modified by someone else are quite rare"
VIEWER = "ui://ingestion-mcp/page-viewer"
pytestmark = needs(PAPER)

HOST_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>MCP Apps test host</title></head>
<body data-args='__ARGS__'>
<p id="host-state">starting</p>
<script>
"use strict";
// The host side of MCP Apps: render the ui:// resource in a sandboxed iframe, answer ui/initialize, hand it the
// tool's input and result, carry its tools/call requests to the MCP server (through /rpc: the test's real client).
window.calls = [];
const args = JSON.parse(document.body.dataset.args);
async function rpc(method, params) {
  const answer = await fetch("/rpc", {method: "POST", headers: {"content-type": "application/json"},
                                      body: JSON.stringify({method, params})});
  return answer.json();
}
(async () => {
  const read = await rpc("resources/read", {uri: "__VIEWER__"});
  const content = read.contents[0];
  document.getElementById("host-state").textContent = content.mimeType;
  const frame = document.createElement("iframe");
  frame.id = "view";
  frame.setAttribute("sandbox", "allow-scripts");
  frame.style.width = "900px";
  frame.style.height = "600px";
  const post = (message) => frame.contentWindow.postMessage({jsonrpc: "2.0", ...message}, "*");
  window.addEventListener("message", async (event) => {
    if (event.source !== frame.contentWindow) return;
    const message = event.data;
    if (message.method === "ui/initialize") {
      post({id: message.id, result: {protocolVersion: "2026-01-26", hostInfo: {name: "test-host", version: "1"},
            hostCapabilities: {serverTools: {}}, hostContext: {theme: "light", displayMode: "inline"}}});
    } else if (message.method === "ui/notifications/initialized") {
      post({method: "ui/notifications/tool-input", params: {arguments: args}});
      const result = await rpc("tools/call", {name: "search", arguments: args});
      post({method: "ui/notifications/tool-result", params: result});
    } else if (message.method === "tools/call") {
      window.calls.push(message.params);
      post({id: message.id, result: await rpc("tools/call", message.params)});
    } else if (message.method === "ui/notifications/size-changed") {
      frame.style.height = `${message.params.height + 16}px`;
      window.sized = message.params;
    }
  });
  frame.srcdoc = content.text;
  document.body.append(frame);
})();
</script></body></html>"""


@pytest.fixture(scope="module")
def paper(served: Console) -> str:
    path = served.docs_dir / "cvs-paper.pdf"
    shutil.copyfile(PAPER, path)

    async def ingest() -> str:
        return (await served.state.ingestor.ingest_file(str(path), collection=COLLECTION)).doc_id

    return served.run(ingest)


def test_the_console_shows_a_passage_on_its_page(served: Console, browser: Any, paper: str, shoot: Any) -> None:
    visit(browser, f"{served.url}/search?q={QUERY}&collection={COLLECTION}&mode=keyword", "search")
    find(browser, "#results-keyword [data-test=hit-show]").click()
    on_page(browser, "page")
    assert "is marked on this page" in find(browser, "#page-passage").text
    assert find(browser, "#page-info").text.startswith("CVS II")  # the document's title, then the page
    image = find(browser, "#page-image")
    wait(browser).until(lambda b: b.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image))
    width, height = browser.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", image)
    assert max(width, height) <= 1568 and max(width, height) >= 1500
    shoot("page-view")
    number = int(find(browser, "#page-title").text.split()[1])
    find(browser, "#page-prev").click()  # the page before the passage's first
    on_page(browser, "page")
    assert find(browser, "#page-title").text.startswith(f"Page {number - 1} of")
    assert f"lies on page {number}" in find(browser, "#page-passage").text
    visit(browser, f"{served.url}/collections/{COLLECTION}/documents/{paper}", "document")
    find(browser, "[data-test=chunk-show]").click()
    on_page(browser, "page")
    assert find(browser, "#page-image").get_attribute("src").endswith("/image?chunk=0")


@pytest.fixture(scope="module")
def host(served: Console, paper: str) -> Iterator[str]:
    """The test host: its page, and /rpc, which carries the view's calls to the MCP server over streamable HTTP."""
    arguments = {"query": QUERY, "collection": COLLECTION, "mode": "keyword", "top_k": 3}

    async def page(_: Request) -> HTMLResponse:
        return HTMLResponse(HOST_PAGE.replace("__ARGS__", json.dumps(arguments)).replace("__VIEWER__", VIEWER))

    async def rpc(request: Request) -> JSONResponse:
        asked = await request.json()
        async with Client(f"{served.url}/mcp") as client:
            if asked["method"] == "resources/read":
                answer = await client.read_resource(asked["params"]["uri"])
            else:
                answer = await client.call_tool(asked["params"]["name"], asked["params"]["arguments"])
        return JSONResponse(answer.model_dump(mode="json", by_alias=True, exclude_none=True))

    app = Starlette(routes=[Route("/", page), Route("/rpc", rpc, methods=["POST"])])
    with served.portal.wrap_async_context_manager(hosting(app)) as url:
        yield url


@asynccontextmanager
async def hosting(app: Starlette) -> AsyncIterator[str]:
    """``app`` under uvicorn on a free loopback port until the block ends."""
    import uvicorn

    port = free_port()
    http = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(http.serve)
        with anyio.fail_after(30):
            while not http.started:
                await anyio.sleep(0.05)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            http.should_exit = True


def test_the_mcp_apps_viewer_shows_the_cited_page_and_pages_on(browser: Any, host: str, shoot: Any) -> None:
    browser.get(host)
    wait(browser).until(lambda b: b.find_element("id", "host-state").text == "text/html;profile=mcp-app")
    frame = find(browser, "#view")
    browser.switch_to.frame(frame)
    try:
        image = find(browser, "#page")
        wait(browser, 60).until(lambda b: b.execute_script("return arguments[0].naturalWidth", image) > 0)
        assert find(browser, "#status").text.startswith("passage marked")
        where = find(browser, "#where").text
        assert where.startswith("page ") and " of 12" in where
        page = int(where.split()[1])
        width = browser.execute_script("return arguments[0].naturalWidth", image)
        assert 1000 <= width <= 1568
        shoot("page-viewer")
        find(browser, "#prev").click()  # the page before the passage's first
        wait(browser, 60).until(lambda b: b.find_element("id", "where").text.startswith(f"page {page - 1} "))
        assert find(browser, "#status").text.startswith(f"the passage is on page {page}")
        find(browser, "#next").click()
        wait(browser, 60).until(lambda b: b.find_element("id", "status").text.startswith("passage marked"))
    finally:
        browser.switch_to.default_content()
    calls = browser.execute_script("return window.calls")
    assert [c["arguments"]["first_page"] for c in calls] == [page, page - 1, page]
    assert all(c["name"] == "get_document_pages" and c["arguments"]["image"] == "page" for c in calls)
    assert browser.execute_script("return window.sized && window.sized.height") > 300
