"""jsonrpc_errors in-process: what a malformed message is answered with, on HTTP (the ASGI layer) and stdio (the
read stream). The real transports are driven in tests/e2e (test_http_transport, test_stdio_pipeline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import mcp.types as types
import pytest
from ingestion_mcp.backend import Backend
from ingestion_mcp.http.jsonrpc_errors import INVALID_REQUEST, PARSE_ERROR, AnsweringReader, ParseGuard, refusal
from ingestion_mcp.server import build_server
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_PARAMS

SURROGATE = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"\\ud800"}}}'
VALID = (
    b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search","arguments":{"query":"\\ud83d\\ude00"}}}'
)


@pytest.mark.parametrize(
    ("body", "code", "request_id"),
    [
        (SURROGATE, INVALID_REQUEST, 7),
        (b'{"jsonrpc":"2.0","id":"\\udc00","method":"ping"}', INVALID_REQUEST, None),  # the id itself is broken
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/li', PARSE_ERROR, None),
        (b"\xff\xfe not utf-8", PARSE_ERROR, None),
        (b'{"id":9,"method":"ping"}', INVALID_REQUEST, 9),  # JSON, but no JSON-RPC: the SDK said -32602, id null
        (b'{"jsonrpc":"2.0","id":"a"}', INVALID_REQUEST, "a"),  # no method, result or error
        (b'{"jsonrpc":"1.0","id":3,"method":"ping"}', INVALID_REQUEST, 3),
    ],
)
def test_a_message_the_sdk_cannot_parse_gets_an_error_with_the_id_it_can_read(
    body: bytes, code: int, request_id: int | str | None
) -> None:
    error = refusal(body)
    assert error is not None and error["error"]["code"] == code and error["id"] == request_id
    if b'"2.0"' not in body and code == INVALID_REQUEST:
        assert "no JSON-RPC 2.0 message" in error["error"]["message"]
    types.JSONRPCError.model_validate(error)  # a well-formed JSON-RPC error


def test_well_formed_json_is_left_to_the_sdk_even_with_surrogate_pairs() -> None:
    assert refusal(VALID) is None and refusal(b"[]") is None
    assert refusal(b'{"jsonrpc":"2.0","id":1,"result":{}}') is None  # a response (to the server's own request)


async def test_the_http_layer_answers_400_and_passes_a_good_body_on_unchanged() -> None:
    seen: list[bytes] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        message = await receive()
        seen.append(message["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    transport = httpx.ASGITransport(app=ParseGuard(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        refused = await client.post("/mcp", content=SURROGATE)
        assert refused.status_code == 400 and refused.json()["id"] == 7
        assert (await client.post("/mcp", content=VALID)).status_code == 200
    assert seen == [VALID]


async def test_stdio_answers_a_refused_line_and_hands_on_the_next_message() -> None:
    incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](4)
    outgoing, answers = anyio.create_memory_object_stream[SessionMessage](4)
    for line in (SURROGATE, b"not json", VALID.replace(b"tools/call", b"ping")):
        try:
            await incoming_send.send(SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False)))
        except ValueError as exc:  # what the SDK's stdio transport puts on the stream
            await incoming_send.send(exc)
    reader = AnsweringReader(incoming, outgoing)
    passed = await reader.receive()
    assert isinstance(passed, SessionMessage) and passed.message.id == 8
    written = [json.loads(answers.receive_nowait().message.model_dump_json(by_alias=True)) for _ in range(2)]
    assert [(w["id"], w["error"]["code"]) for w in written] == [(7, INVALID_REQUEST), (None, PARSE_ERROR)]


async def test_an_unknown_prompt_is_the_callers_mistake(tmp_path: Path) -> None:
    """prompts/get of a name the server does not have: -32602 naming it (the SDK answered code 0, or -32603 with a
    traceback logged, for a server that advertises prompts and has none)."""
    state = AppState.create(McpSettings(allowed_roots=[tmp_path], data_dir=tmp_path), cast(Backend, None))
    async with Client(build_server(state)) as client:
        assert (await client.list_prompts()).prompts == []
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("summarize")
    assert refused.value.code == INVALID_PARAMS and "'summarize'" in refused.value.message, refused.value
