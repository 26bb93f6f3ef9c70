"""The MCP server over streamable HTTP as a real process: bearer token, Origin check, health, metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from scripts.service_stack import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
TOKEN = "e2e-secret-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server for the module's tests (each starts the embedded services: a model load); each test leaves
    what it checks to itself (its own collection, metrics read before and after)."""
    tmp_path = tmp_path_factory.mktemp("http-server")
    port = free_port()
    env = {**os.environ, "AUTH_TOKEN": TOKEN, "INGESTION_MCP_DATA_DIR": str(tmp_path / "data"),
           "INGESTION_MCP_ALLOWED_ROOTS": str(tmp_path), "HF_HUB_OFFLINE": "1"}  # fmt: skip
    for name in ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI"):
        env.pop(name, None)
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "ingestion_mcp.cli.server_command", "--transport", "streamable-http",
         "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            time.sleep(0.5)
        else:
            pytest.fail("server never became ready:\n" + (tmp_path / "server.log").read_text())
        # Whoever started it is told, once it is ready, where it serves and how to connect (never the token).
        announced = f"ingestion-mcp is ready: MCP over streamable HTTP at {base}/mcp"
        deadline = time.monotonic() + 10
        while announced not in (tmp_path / "server.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        lines = (tmp_path / "server.log").read_text().splitlines()
        ready = [event["msg"] for event in map(json.loads, lines) if event.get("event") == "ready"]  # JSON logs
        assert len(ready) == 1 and ready[0].startswith(announced), lines
        assert '--header "Authorization: Bearer $AUTH_TOKEN"' in ready[0], ready
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
        assert TOKEN not in (tmp_path / "server.log").read_text(), "the token leaked into the logs"


def test_probes_are_open_everything_else_needs_the_token(server: str) -> None:
    assert httpx.get(f"{server}/healthz").json()["status"] == "ok"
    ready = httpx.get(f"{server}/readyz").json()
    assert ready["checks"] == {"docling": "ok", "chunker": "ok", "vector gateway": "ok"}
    assert httpx.post(f"{server}/mcp", json={}).status_code == 401
    wrong = httpx.post(f"{server}/mcp", json={}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and TOKEN not in wrong.text
    assert httpx.get(f"{server}/metrics").status_code == 401
    evil = httpx.post(f"{server}/mcp", json={}, headers={"Authorization": f"Bearer {TOKEN}",
                                                          "Origin": "https://evil.example"})  # fmt: skip
    assert evil.status_code == 403


async def test_an_authenticated_client_ingests_and_searches(server: str) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0)) as http,
        Client(streamable_http_client(f"{server}/mcp", http_client=http)) as client,
    ):
        text = "The lighthouse keeper logs every passing ship in a leather-bound ledger at dusk and dawn."
        before = searches(server, headers)
        made = await client.call_tool("ingest_text", {"text": text, "name": "lighthouse", "collection": "lights"})
        assert made.structured_content["status"] == "indexed"
        found = await client.call_tool("search", {"query": "lighthouse ledger", "collection": "lights"})
        assert found.structured_content["results"][0]["title"] == "lighthouse"
    assert searches(server, headers) == before + 1


def searches(server: str, headers: dict[str, str]) -> float:
    """mcp_tool_calls_total of successful searches, from /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    families = text_string_to_metric_families(httpx.get(f"{server}/metrics", headers=headers).text)
    return sum(
        sample.value
        for family in families
        for sample in family.samples
        if sample.name == "mcp_tool_calls_total" and sample.labels == {"outcome": "ok", "tool": "search"}
    )


async def test_a_cancelled_call_over_http_stops_the_work(server: str) -> None:
    """The 2026 HTTP wire cancels by closing the request's stream: the ingest stops, nothing is stored."""
    import anyio
    from journeys import cancel_when_embedding, counts, long_text

    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http,
        Client(streamable_http_client(f"{server}/mcp", http_client=http)) as client,
    ):
        await cancel_when_embedding(client, {"text": long_text(660, "http"), "name": "big", "collection": "cancelled"})
        with anyio.fail_after(60):
            while (await client.call_tool("list_active_jobs", {})).structured_content["jobs"]:
                await anyio.sleep(0.5)
        await anyio.sleep(3)
        assert await counts(client, "cancelled") == (0, 0)


ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
LONE_SURROGATE = '{"query":"\\ud800"}'  # the JSON escape itself: valid JSON to Python, not Unicode


async def expect_errors(server: str, headers: dict[str, str], cases: list[tuple[bytes, int | None]]) -> None:
    async with httpx.AsyncClient(headers=headers, timeout=10) as http:
        for body, request_id in cases:
            answer = await http.post(f"{server}/mcp", content=body)
            assert answer.status_code == 400, (body, answer.status_code, answer.text)
            error = answer.json()
            assert error["jsonrpc"] == "2.0" and error["id"] == request_id, (body, error)
            assert error["error"]["code"] == (-32600 if request_id is not None else -32700), (body, error)


def malformed_bodies(version: str) -> list[tuple[bytes, int | None]]:
    """Bodies a client can send by mistake, each with the id its answer must carry (null when none can be read)."""
    meta = f',"_meta":{json.dumps(ENVELOPE)}' if version == "2026-07-28" else ""
    call = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":%s%s}}'
    return [
        ((call % (LONE_SURROGATE, meta)).encode(), 7),
        ((call % ('{"query":"x"}', meta)).encode()[:-5], None),  # cut short: not JSON
        (b"not json at all", None),
        (b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"se\xffarch"}}', None),  # not UTF-8
        (b'{"id":9,"method":"ping"}', 9),  # JSON, but no JSON-RPC message (the SDK said -32602 with id null)
    ]


async def test_a_malformed_body_gets_a_json_rpc_error_with_its_id_and_the_server_goes_on(server: str) -> None:
    """A client waits for the answer that carries its request's id: a malformed body must get one at once."""
    for version in ("2025-11-25", "2026-07-28"):
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version,
                   "Mcp-Method": "tools/call", "Mcp-Name": "search"}  # fmt: skip
        await expect_errors(server, headers, malformed_bodies(version))
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30.0) as http,
        Client(streamable_http_client(f"{server}/mcp", http_client=http)) as client,
    ):
        found = await client.call_tool("search", {"query": "anything"})
        assert found.structured_content["success"] is True
