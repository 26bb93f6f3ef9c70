"""`initialize` answered before the MCP SDK loads (handshake.py, issue 49): the early answer is the SDK's own, for
every profile and protocol version; on a real stdio wire the client hears it at once and once, and the SDK, when it
takes the wire over, answers what follows."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import mcp.types as types
import pytest
from ingestion_mcp.handshake import EarlyStdio, answer
from ingestion_mcp.http.jsonrpc_errors import run_stdio
from ingestion_mcp.profiles import NAMES
from ingestion_mcp.server import build_server
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState
from mcp.shared.message import SessionMessage

PROFILE_SETS = [[name] for name in NAMES] + [["ingestion", "vector_store"], ["chatgpt", "obsidian", "docs_server"]]
VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2099-01-01"]


def initialize(request_id: int | str = 1, version: str = "2025-11-25") -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


def server_for(profiles: list[str], tmp_path: Any) -> Any:
    settings = McpSettings(profiles=profiles, data_dir=tmp_path)
    return build_server(AppState.create(settings, backend=None))  # type: ignore[arg-type]  # the tool set alone


async def sdk_answer(server: Any, request: dict[str, Any]) -> dict[str, Any]:
    """What the SDK writes on the wire for this request (its stdio transport dumps messages so)."""
    lowlevel = server._lowlevel_server
    send_in, receive_in = anyio.create_memory_object_stream[SessionMessage | Exception](4)
    send_out, receive_out = anyio.create_memory_object_stream[SessionMessage](4)
    async with anyio.create_task_group() as group:
        group.start_soon(lowlevel.run, receive_in, send_out, lowlevel.create_initialization_options())
        await send_in.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(request)))
        reply = await receive_out.receive()
        group.cancel_scope.cancel()
    return json.loads(reply.message.model_dump_json(by_alias=True, exclude_unset=True))


@pytest.mark.parametrize("profiles", PROFILE_SETS, ids="+".join)
async def test_the_early_answer_is_the_sdks_for_every_profile_and_version(profiles: list[str], tmp_path: Any) -> None:
    server = server_for(profiles, tmp_path)
    for version in VERSIONS:
        request = initialize(version=version)
        assert answer(request, profiles) == await sdk_answer(server, request), version


def test_what_the_sdk_may_refuse_is_left_to_it() -> None:
    broken = [
        {**initialize(), "params": {"capabilities": {}}},  # no protocolVersion
        {**initialize(), "id": None},
        {
            **initialize(),
            "params": {**initialize()["params"], "_meta": {"io.modelcontextprotocol/protocolVersion": "x"}},
        },
        {**initialize(), "method": "tools/list"},
    ]
    assert [answer(request, ["ingestion"]) for request in broken] == [None] * 4


async def test_on_the_wire_initialize_is_answered_before_the_sdk_runs_and_once(tmp_path: Any) -> None:
    """A real pipe pair stands for the client: the answer comes with no SDK running; then the SDK takes the wire
    over (the lines read so far first), answers tools/list, and its own answer to that initialize is dropped."""
    server_in, client_out = os.pipe()
    client_in, server_out = os.pipe()
    early = EarlyStdio(["ingestion"], wire_in=os.fdopen(server_in, "rb", 0), wire_out=os.fdopen(server_out, "wb", 0))
    to_server, from_server = os.fdopen(client_out, "wb", 0), os.fdopen(client_in, "rb")

    def send(message: dict[str, Any]) -> None:
        to_server.write(json.dumps(message).encode() + b"\n")

    send(initialize(request_id=7))
    with anyio.fail_after(30):
        first = json.loads(await anyio.to_thread.run_sync(from_server.readline, abandon_on_cancel=True))
    assert first == answer(initialize(request_id=7), ["ingestion"])
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
    async with anyio.create_task_group() as group:
        group.start_soon(run_stdio, server_for(["ingestion"], tmp_path), early)
        with anyio.fail_after(60):
            second = json.loads(await anyio.to_thread.run_sync(from_server.readline, abandon_on_cancel=True))
        to_server.close()  # the client leaves: the SDK's read ends, and so does the server
    assert second["id"] == 8 and "search" in {tool["name"] for tool in second["result"]["tools"]}
    early.wire_out.close()  # the process would exit here
    assert from_server.read() == b""  # nothing more: no second answer to initialize
