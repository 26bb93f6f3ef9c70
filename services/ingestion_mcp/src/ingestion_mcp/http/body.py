"""An ASGI request's body read once by a middleware, and handed on to the app as if it had not been read."""

from __future__ import annotations

from typing import Any


async def read_body(receive: Any, limit: int) -> tuple[bytes, bool]:
    """The request body, read up to the SDK's own size limit; ``more`` when it is larger (the SDK refuses it)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body"):
            return b"".join(chunks), False
        if size > limit:
            return b"".join(chunks), True


def replaying(body: bytes, more: bool, receive: Any) -> Any:
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return replay
