"""A loopback round-robin HTTP balancer: each request goes to the next upstream, no stickiness.

What an OpenShift Service or a cloud load balancer does to MCP replicas, small enough to run in a test:
requests are forwarded one by one in turn (not per connection, so a client's keep-alive connection
still spreads its calls), an upstream that refuses connections is skipped (a Service drops an endpoint
that is gone), responses stream back as they come (SSE progress included), and a client
that closes its response closes the upstream one too, which is how the 2026-07-28 wire cancels.

    python scripts/rr_proxy.py --port 9000 http://127.0.0.1:8001 http://127.0.0.1:8002

``GET /_proxy/stats`` answers how many requests each upstream received; ``GET /_proxy/log`` the
requests in turn order: upstream, HTTP method, path and JSON-RPC method (so a test can tell where a cancel
went). ``POST /_proxy/steer`` with ``{"rpc": "notifications/cancelled", "avoid": URL}`` sends the next request
of that JSON-RPC method to another upstream than URL, whatever the turn (a test's way to make sure a cancel
lands on the replica that does not hold the call, which round robin alone only makes likely: any request
the client sends in between, such as a reconnecting GET stream, takes a turn).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from typing import Any

import httpx

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
     "transfer-encoding", "upgrade", "host", "content-length"}
)  # fmt: skip


class RoundRobinProxy:
    """An ASGI app forwarding each HTTP request to the next upstream in turn."""

    def __init__(self, upstreams: list[str]) -> None:
        if not upstreams:
            raise ValueError("give at least one upstream URL")
        self.upstreams = [url.rstrip("/") for url in upstreams]
        self.served: Counter[str] = Counter()
        self.log: list[dict[str, Any]] = []
        self._turn = 0
        self._steer: dict[str, str] = {}  # JSON-RPC method -> the upstream its next request must avoid
        self._client: httpx.AsyncClient | None = None

    def _next(self, rpc: str | None) -> str:
        upstream = self.upstreams[self._turn % len(self.upstreams)]
        self._turn += 1
        avoid = self._steer.pop(rpc, None) if rpc is not None else None
        if avoid is not None and upstream == avoid:
            upstream = next((url for url in self.upstreams if url != avoid), upstream)
        return upstream

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._forward(scope, receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._client = httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=None))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _forward(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["path"] in ("/_proxy/stats", "/_proxy/log"):
            answers = {"/_proxy/stats": dict(self.served), "/_proxy/log": self.log}
            await _reply(send, 200, json.dumps(answers[scope["path"]]).encode())
            return
        body = await _read_body(receive)
        if scope["path"] == "/_proxy/steer":
            order = json.loads(body)
            self._steer[str(order["rpc"])] = str(order["avoid"]).rstrip("/")
            await _reply(send, 200, b"{}")
            return
        rpc = _rpc_method(body)
        headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k.decode().lower() not in HOP_BY_HOP]
        assert self._client is not None, "the proxy's lifespan did not run"
        # An upstream that refuses connections is skipped, as a Service drops an endpoint that is gone.
        for _ in self.upstreams:
            upstream = self._next(rpc)
            entry = {"upstream": upstream, "method": scope["method"], "path": scope["path"], "rpc": rpc}
            self.log.append(entry)  # in the order of the turns, before any answer
            url = upstream + scope["path"] + (f"?{scope['query_string'].decode()}" if scope["query_string"] else "")
            request = self._client.build_request(scope["method"], url, headers=headers, content=body)
            try:
                response = await self._client.send(request, stream=True)
            except httpx.ConnectError:
                entry["refused"] = True
                continue
            except httpx.TransportError as exc:
                await _reply(send, 502, f"upstream {upstream} failed: {type(exc).__name__}".encode())
                return
            break
        else:
            await _reply(send, 502, b"no upstream accepted the connection")
            return
        self.served[upstream] += 1
        # The client hanging up must reach the upstream: stop relaying and close its response.
        relay = asyncio.ensure_future(self._relay(response, send))
        watch = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({relay, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (relay, watch):
                task.cancel()
            await asyncio.gather(relay, watch, return_exceptions=True)
            await response.aclose()

    @staticmethod
    async def _relay(response: httpx.Response, send: Any) -> None:
        headers = [(k.encode(), v.encode()) for k, v in response.headers.multi_items() if k.lower() not in HOP_BY_HOP]
        await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
        async for chunk in response.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _read_body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _rpc_method(body: bytes) -> str | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _reply(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("upstreams", nargs="+", help="base URLs, e.g. http://127.0.0.1:8001")
    args = parser.parse_args()
    uvicorn.run(RoundRobinProxy(args.upstreams), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
