"""HTTP clients of the three services: timeouts, retries done right, errors made readable."""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_after_delay

from ..errors import UpstreamError, upstream_error
from ..observability import EVENT_HOOKS

log = logging.getLogger("ingestion_mcp.clients")
Model = TypeVar("Model", bound=BaseModel)
Result = TypeVar("Result")
LineHandler = Callable[[str], Awaitable[None]]
RETRY_STATUSES = frozenset({502, 503, 504})
MAX_RETRY_AFTER_S = 30.0


class RetryableStatus(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response
        self.retry_after = _retry_after(response)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        return min(float(value), MAX_RETRY_AFTER_S)
    except ValueError:
        return None


def _retryable(exc: BaseException) -> bool:
    # Connection-level failures and 502/503/504 only; a 4xx is the caller's to fix, never retried.
    return isinstance(exc, RetryableStatus | httpx.TransportError)


def _wait(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, RetryableStatus) and exc.retry_after is not None:
        return exc.retry_after
    base = min(0.25 * 2 ** (state.attempt_number - 1), 8.0)
    return base / 2 + random.uniform(0, base / 2)


class ServiceClient:
    """One service: base URL (or in-process ASGI transport), bearer token, retry policy."""

    def __init__(
        self,
        name: str,
        client: httpx.AsyncClient,
        *,
        attempts: int = 6,
        retry_budget_s: float = 90.0,
    ) -> None:
        self.name = name
        self.http = client
        self.attempts = attempts
        self.retry_budget_s = retry_budget_s

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async def once() -> httpx.Response:
            response = await self.http.request(method, path, **kwargs)
            if response.status_code in RETRY_STATUSES:
                raise RetryableStatus(response)
            return response

        response = await self._retried(once)
        if response.status_code >= 400:
            raise self._error(response)
        return response

    async def stream_lines(self, method: str, path: str, on_line: LineHandler, **kwargs: Any) -> None:
        """Like ``call``, for an answer of lines (NDJSON): each one goes to ``on_line`` as it arrives."""

        async def once() -> None:
            async with self.http.stream(method, path, **kwargs) as response:
                if response.status_code >= 400:
                    await response.aread()
                    if response.status_code in RETRY_STATUSES:
                        raise RetryableStatus(response)
                    raise self._error(response)
                async for line in response.aiter_lines():
                    if line.strip():
                        await on_line(line)

        await self._retried(once)

    async def _retried(self, once: Callable[[], Awaitable[Result]]) -> Result:
        retrying = AsyncRetrying(
            retry=retry_if_exception(_retryable),
            stop=stop_after_attempt(self.attempts) | stop_after_delay(self.retry_budget_s),
            wait=_wait,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await once()
        except RetryableStatus as exc:
            raise self._error(exc.response) from None
        except httpx.TimeoutException as exc:
            raise UpstreamError(
                f"The {self.name} service did not answer in time ({type(exc).__name__}).",
                "Retry later; for large documents use a smaller file or ingest it as a job.",
                code="PROCESSING_FAILED",
                status=504,
            ) from None
        except httpx.TransportError as exc:
            raise UpstreamError(
                f"The {self.name} service is unreachable ({type(exc).__name__}).",
                f"Check that the {self.name} service is running and its URL is configured, then retry.",
                code="SERVICE_UNAVAILABLE",
                status=503,
            ) from None
        raise AssertionError("tenacity ends with a result or an exception")  # pragma: no cover

    async def json(self, method: str, path: str, model: type[Model], **kwargs: Any) -> Model:
        response = await self.call(method, path, **kwargs)
        return model.model_validate_json(response.content)

    def _error(self, response: httpx.Response) -> UpstreamError:
        try:
            body = response.json()
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        message = body.get("error") or f"The {self.name} service answered HTTP {response.status_code}."
        return upstream_error(
            str(message),
            body.get("suggestion"),
            code=str(body.get("code") or f"HTTP_{response.status_code}"),
            status=response.status_code,
            details=body.get("details") or {},
        )

    async def aclose(self) -> None:
        await self.http.aclose()


def make_http_client(
    base_url: str, *, token: str | None, timeout_s: float, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(
        base_url=base_url,
        headers=headers,
        timeout=httpx.Timeout(timeout_s, connect=5.0),
        transport=transport,
        event_hooks=EVENT_HOOKS,
    )
