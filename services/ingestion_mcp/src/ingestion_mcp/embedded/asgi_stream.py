"""An in-process ASGI transport whose response body streams as the app sends it.

httpx's ASGITransport (0.28) runs the app to its end and hands back the whole body at once: the
docling service's NDJSON progress lines (/v1/convert/stream) would all arrive with the result, and a
caller that leaves could not stop the conversion. Here the app runs in a task of its own; each body
part reaches the reader when the app sends it, and closing the response early (the ingest job was
cancelled) cancels the app, which sees the disconnect as over a socket.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import anyio
import httpx

Message = MutableMapping[str, Any]
_END = b""  # queued after the last body part
# The app gets this long to end once the reader has gone (its cleanup: a worker process killed, ...).
CLOSE_WAIT_S = 10.0


class _Body(httpx.AsyncByteStream):
    def __init__(self, parts: asyncio.Queue[bytes], task: asyncio.Task[None], closed: asyncio.Event) -> None:
        self.parts, self.task, self.closed = parts, task, closed

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while part := await self.parts.get():
            yield part
        await asyncio.wait({self.task})
        if not self.task.cancelled() and self.task.exception() is not None:
            raise httpx.ReadError(f"the in-process app failed mid-response: {self.task.exception()!r}")

    async def aclose(self) -> None:
        self.closed.set()  # the app's receive() answers http.disconnect
        if not self.task.done():
            self.task.cancel()
        with anyio.CancelScope(shield=True):  # the reader may be cancelled itself: the app's cleanup still runs
            await asyncio.wait({self.task}, timeout=CLOSE_WAIT_S)
        if self.task.done() and not self.task.cancelled():
            self.task.exception()  # seen here (or raised to the reader above): not logged as never retrieved


class _Exchange:
    """One request: the app's receive and send, and the app run in its task."""

    def __init__(self, request: httpx.Request, client: tuple[str, int]) -> None:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        self.scope = _scope(request, client)
        self.body = request.stream.__aiter__()
        self.sent_all, self.closed = False, asyncio.Event()
        self.started: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self.parts: asyncio.Queue[bytes] = asyncio.Queue()

    async def receive(self) -> Message:
        if not self.sent_all:
            try:
                return {"type": "http.request", "body": await self.body.__anext__(), "more_body": True}
            except StopAsyncIteration:
                self.sent_all = True
                return {"type": "http.request", "body": b"", "more_body": False}
        await self.closed.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started.set_result(message)
        elif message["type"] == "http.response.body":
            if message.get("body"):
                self.parts.put_nowait(message["body"])
            if not message.get("more_body", False):
                self.parts.put_nowait(_END)

    async def run(self, app: Any) -> None:
        try:
            await app(self.scope, self.receive, self.send)
        except BaseException as exc:
            if not self.started.done():
                failure = exc if isinstance(exc, Exception) else RuntimeError("the app was stopped")
                self.started.set_exception(failure)
            raise
        finally:
            self.parts.put_nowait(_END)
            if not self.started.done():
                self.started.set_exception(RuntimeError("the in-process app ended without a response"))


class StreamingASGITransport(httpx.AsyncBaseTransport):
    def __init__(self, app: Any, client: tuple[str, int] = ("127.0.0.1", 123)) -> None:
        self.app, self.client = app, client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        exchange = _Exchange(request, self.client)
        task = asyncio.get_running_loop().create_task(exchange.run(self.app))
        body = _Body(exchange.parts, task, exchange.closed)
        try:
            start = await exchange.started
        except BaseException:
            await body.aclose()
            raise
        headers = [(bytes(name), bytes(value)) for name, value in start.get("headers", [])]
        return httpx.Response(start["status"], headers=headers, stream=body)


def _scope(request: httpx.Request, client: tuple[str, int]) -> dict[str, Any]:
    """The ASGI scope httpx's own ASGITransport builds."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "headers": [(name.lower(), value) for name, value in request.headers.raw],
        "scheme": request.url.scheme,
        "path": request.url.path,
        "raw_path": request.url.raw_path.split(b"?")[0],
        "query_string": request.url.query,
        "server": (request.url.host, request.url.port),
        "client": client,
        "root_path": "",
    }
