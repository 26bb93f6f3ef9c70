"""Every message the MCP SDK cannot parse gets a JSON-RPC error, over stdio and over streamable HTTP.

Python's `json` accepts a string escape that is a lone UTF-16 surrogate (`"\\ud800"`); the SDK's own parser
(pydantic's) refuses it, as it refuses text that is not JSON. The SDK's stdio transport hands such a line to
the session as an exception, which drops it: no answer, and the client waits until its timeout. Over HTTP the
SDK answers a 2025-11-25 request with a parse error whose id is null, which no client can match to its request
(it waits too), and its 2026-07-28 path parses with `json`, so the surrogate reaches the tools.

Here a message that is not JSON is answered with a parse error (-32700, id null: none can be read); a JSON
text that the SDK cannot take (a lone surrogate, or an object that is no JSON-RPC 2.0 message: no
``"jsonrpc": "2.0"``, no method, result or error) with an invalid-request error (-32600) carrying the request's
id when it has one, so the client's call ends at once (the SDK answered `{"id":9,"method":"ping"}` with -32602
and id null). The server goes on.
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import IO, Any, Self, cast

import anyio
import pydantic_core
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError
from pydantic import ValidationError

from ..handshake import EarlyStdio
from .body import read_body, replaying

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
NOT_JSON = "Parse error: the message is not valid JSON (UTF-8 encoded, one JSON-RPC object)."
NOT_UNICODE = (
    "Invalid request: a string in the message holds a lone UTF-16 surrogate (such as \\ud800), which is not "
    "Unicode, or the message is not a JSON-RPC request; send JSON-RPC with surrogates only in pairs."
)
NOT_JSONRPC = (
    'Invalid request: the message is JSON but no JSON-RPC 2.0 message (it needs "jsonrpc": "2.0" and a method, '
    "or a result or error); send one JSON-RPC object."
)


def refusal(raw: str | bytes) -> dict[str, Any] | None:
    """The JSON-RPC error (a dict) that answers `raw`, or None when the SDK's parser can read it as JSON and it is
    shaped as a JSON-RPC message (a list, a batch, is left to the SDK)."""
    try:
        message = pydantic_core.from_json(raw)
    except ValueError:
        return answer_for(raw)
    return answer_for(message) if isinstance(message, dict) and not is_jsonrpc(message) else None


def is_jsonrpc(message: dict[str, Any]) -> bool:
    """Shaped as a JSON-RPC 2.0 message: the version, and a method (a request or notification) or a result or
    error (a response). Whether its params suit the method is the SDK's to say (-32602)."""
    return message.get("jsonrpc") == "2.0" and any(key in message for key in ("method", "result", "error"))


def answer_for(raw: Any) -> dict[str, Any]:
    """The error for a message the SDK refused: raw is its text (or what Python's json made of it)."""
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except ValueError:  # UnicodeDecodeError included: bytes that are not UTF-8
            return {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": NOT_JSON}}
    said = NOT_UNICODE if isinstance(raw, dict) and is_jsonrpc(raw) else NOT_JSONRPC
    return {"jsonrpc": "2.0", "id": request_id(raw), "error": {"code": INVALID_REQUEST, "message": said}}


def request_id(message: Any) -> str | int | None:
    """The id a client waits on, when it can be sent back as it came (a string without lone surrogates)."""
    found = message.get("id") if isinstance(message, dict) else None
    if isinstance(found, bool) or not isinstance(found, str | int):
        return None
    if isinstance(found, str):
        try:
            found.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return found


class ParseGuard:
    """ASGI middleware in front of the streamable HTTP app: a POST body the SDK cannot parse is answered here
    (HTTP 400 with the JSON-RPC error) instead of reaching the SDK."""

    def __init__(self, app: Any, *, path: str = "/mcp", max_body: int = 16 << 20) -> None:
        self.app, self.path, self.max_body = app, path, max_body

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        body, more = await read_body(receive, self.max_body)
        error = None if more else refusal(body)  # a body over the limit: the SDK refuses it with its own error
        if error is None:
            await self.app(scope, replaying(body, more, receive), send)
            return
        payload = json.dumps(error).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


class AnsweringReader:
    """The stdio transport's read stream, with each line the SDK could not parse (an exception on the stream)
    answered on the write stream instead of passed on to be dropped."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], out: WriteStream[SessionMessage]) -> None:
        self.inner, self.out = inner, out
        self.last_context = None

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self.inner.receive()
            self.last_context = getattr(self.inner, "last_context", None)
            if not isinstance(item, Exception):
                return item
            error = JSONRPCError.model_validate(answer_for(_refused_input(item)))
            await self.out.send(SessionMessage(error))

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


def _refused_input(exc: Exception) -> Any:
    """What the SDK's parser was given: the line when pydantic could not read it as JSON, else the message it
    read (it names the id) when an error shows it whole, else None (no id to send back)."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if errors and errors[0]["type"] == "json_invalid":
        return errors[0]["input"]
    return next((e["input"] for e in errors if isinstance(e["input"], dict) and "id" in e["input"]), None)


async def run_stdio(server: MCPServer, early: EarlyStdio | None = None) -> None:
    """`server.run_stdio_async()`, with malformed lines answered (see the module's text). ``early``: the
    handshake.EarlyStdio that holds the wire since the process started (what it read goes to the SDK first)."""
    lowlevel = server._lowlevel_server
    files: tuple[anyio.AsyncFile[str] | None, anyio.AsyncFile[str] | None] = (None, None)
    if early is not None:  # file-like objects of their own (text lines in, text out), read and written as files
        files = (anyio.wrap_file(cast("IO[str]", early.stdin())), anyio.wrap_file(cast("IO[str]", early.stdout())))
    async with stdio_server(*files) as (read_stream, write_stream):
        reader = AnsweringReader(read_stream, write_stream)
        await lowlevel.run(reader, write_stream, lowlevel.create_initialization_options())
