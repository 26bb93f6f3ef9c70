"""Retry policy of the service clients. httpx.MockTransport injects faults a live service cannot be
made to produce on cue (a 503 then a 200, a dropped connection)."""

import httpx
import pytest
from ingestion_mcp.backend.clients import ServiceClient
from ingestion_mcp.errors import UpstreamError


def client_with(handler) -> ServiceClient:
    http = httpx.AsyncClient(base_url="http://svc", transport=httpx.MockTransport(handler))
    return ServiceClient("chunker", http, attempts=4, retry_budget_s=5)


async def test_retries_503_honouring_retry_after_then_succeeds() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) < 3:
            return httpx.Response(503, headers={"Retry-After": "0"}, json={"error": "loading"})
        return httpx.Response(200, json={"ok": True})

    response = await client_with(handler).call("GET", "/x")
    assert response.json() == {"ok": True} and len(calls) == 3


async def test_never_retries_a_4xx_and_keeps_the_service_message() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(422, json={"error": "overlap too big", "code": "INVALID_REQUEST", "suggestion": "fix"})

    with pytest.raises(UpstreamError) as info:
        await client_with(handler).call("POST", "/x")
    assert len(calls) == 1
    assert (info.value.status, info.value.code, info.value.message) == (422, "INVALID_REQUEST", "overlap too big")


async def test_connection_errors_are_retried_then_reported_as_unavailable() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(UpstreamError, match="unreachable") as info:
        await client_with(handler).call("GET", "/x")
    assert len(calls) == 4 and info.value.status == 503


async def test_gives_up_after_the_attempts_on_persistent_502() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(502, text="bad gateway")

    with pytest.raises(UpstreamError) as info:
        await client_with(handler).call("GET", "/x")
    assert len(calls) == 4 and info.value.status == 502 and "502" in info.value.message
