"""The HTTP front (http/loading_front.py, issue 49): while the server loads, the process is alive, says it is starting,
answers an `initialize` that no check of the guard could refuse, and holds everything else; once the server is
attached, every request goes to it unchanged."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
from ingestion_mcp.handshake import answer
from ingestion_mcp.http.loading_front import LoadingFront

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}  # fmt: skip
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def front(**options: Any) -> LoadingFront:
    settings = {"profiles": ["ingestion"], "token": None, "early": True, "loopback_hosts": ("127.0.0.1", "localhost")}
    return LoadingFront(**{**settings, "wait_s": 0.3, **options})


def client(app: LoadingFront) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8000")


async def server_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Stands for the guarded MCP app: names itself and the body it was given."""
    body = (await receive()).get("body", b"")
    payload = json.dumps({"served_by": "server", "body": body.decode()}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": payload})


def event_data(text: str) -> dict[str, Any]:
    (data,) = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    return json.loads(data)


async def test_while_the_server_loads_the_front_answers_initialize_and_says_it_is_starting() -> None:
    async with client(front()) as http:
        assert (await http.get("/healthz")).status_code == 200
        ready = await http.get("/readyz")
        assert ready.status_code == 503 and ready.json()["checks"] == {"server": "starting"}
        early = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert early.status_code == 200 and early.headers["content-type"] == "text/event-stream"
        assert event_data(early.text) == answer(INITIALIZE, ["ingestion"])
        held = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=MCP_HEADERS)
        assert held.status_code == 503 and held.headers["retry-after"] and "starting" in held.json()["error"]


async def test_only_an_initialize_the_guard_would_let_through_is_answered_early() -> None:
    """A browser's request (Origin), a missing or wrong token, a foreign Host, one media type, OAuth or a stateful
    server: all wait for the guarded server (here: none is attached, so they end in 503)."""
    refused = [
        (front(), {**MCP_HEADERS, "origin": "http://127.0.0.1:9999"}),
        (front(token="s3cret"), MCP_HEADERS),
        (front(token="s3cret"), {**MCP_HEADERS, "authorization": "Bearer wrong"}),
        (front(), {**MCP_HEADERS, "host": "attacker.example"}),
        (front(), {**MCP_HEADERS, "accept": "application/json"}),
        (front(early=False), MCP_HEADERS),
    ]
    for app, headers in refused:
        async with client(app) as http:
            assert (await http.post("/mcp", json=INITIALIZE, headers=headers)).status_code == 503, headers
    async with client(front(token="s3cret")) as http:
        allowed = await http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "authorization": "Bearer s3cret"})
        assert allowed.status_code == 200 and event_data(allowed.text)["result"]["serverInfo"]["name"]


async def test_a_held_request_goes_to_the_server_once_attached_with_its_body() -> None:
    app = front(wait_s=30)
    answers: list[httpx.Response] = []
    async with client(app) as http:

        async def ask() -> None:
            body = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
            answers.append(await http.post("/mcp", json=body, headers=MCP_HEADERS))

        async with anyio.create_task_group() as group:
            group.start_soon(ask)
            await anyio.sleep(0.3)
            assert answers == []  # held while the server loads
            app.attach(server_app)
        assert answers[0].json() == {"served_by": "server", "body": '{"jsonrpc":"2.0","id":3,"method":"tools/list"}'}
        later = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert later.json()["served_by"] == "server"  # attached: even initialize is the server's
