"""Where the gateway takes write orders for writes that arrive without one (docs/consistency.md, "Write order").

- ``LocalOrders``: this process alone (no broker configured): the embedded default, one process owning the data.
- ``BrokerOrders``: the deployment's one counter in Redis (VECTOR_GATEWAY_BROKER_URL), shared with the MCP
  replicas that take orders when jobs are submitted.

Both observe every order the gateway sees (requests, stored registry rows) and take the next one above it,
a Lamport clock: a write that starts after another one was committed and read here always gets a larger
order, whatever the clocks say. Reads and writes that carry an order never call the broker.
Blocking: runs in worker threads.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol
from urllib.parse import urlsplit

from servicekit import DependencyUnavailable
from servicekit.write_order import LocalOrder, take_sync

log = logging.getLogger("vector_gateway.orders")


class OrderSource(Protocol):
    def take(self, seen: int = 0) -> int:
        """A new order, above ``seen`` and above every order taken or observed here."""
        ...

    def observe(self, order: int) -> None:
        """An order written elsewhere (a request's, a stored row's): orders taken later are larger."""
        ...

    def close(self) -> None: ...


class LocalOrders:
    """Orders of this process (servicekit.write_order.LocalOrder)."""

    def __init__(self) -> None:
        self._local = LocalOrder()

    def take(self, seen: int = 0) -> int:
        return self._local.take(seen)

    def observe(self, order: int) -> None:
        self._local.observe(order)

    def close(self) -> None:
        return None


def broker_address(url: str) -> str:
    """host:port (or the socket path) of a broker URL, for messages: never its password."""
    parts = urlsplit(url)
    return parts.path if parts.scheme == "unix" else f"{parts.hostname}:{parts.port or 6379}"


class BrokerOrders:
    """Orders from the Redis counter every replica and submitter shares (servicekit.write_order.take_sync)."""

    def __init__(self, url: str, *, timeout_s: float = 3.0, client: Any = None) -> None:
        if client is None:
            import redis

            client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        self._client = client
        self._where = broker_address(url)
        self._seen = LocalOrder()  # only observes: the largest order seen, passed to the broker as `seen`

    def take(self, seen: int = 0) -> int:
        import redis

        try:
            order = self._take(max(seen, self._seen.last))
        except redis.RedisError as exc:  # down, frozen, or answering but refusing (full, read-only)
            raise self._unavailable(exc) from exc
        self._seen.observe(order)
        return order

    def _take(self, seen: int) -> int:
        import redis

        try:
            return take_sync(self._client, seen)
        except (redis.ConnectionError, redis.TimeoutError) as exc:  # one retry: a dropped connection, a blip
            log.warning("write-order broker at %s failed (%s); retrying once", self._where, exc)
            return take_sync(self._client, seen)

    def _unavailable(self, exc: Exception) -> DependencyUnavailable:
        return DependencyUnavailable(
            f"The write-order broker (Redis at {self._where}) did not answer: {type(exc).__name__}: {exc}. "
            "A write without an order cannot be ordered against other writes; nothing was written.",
            suggestion="Retry in a few seconds. Reads, and writes that carry an order taken when they were "
            "submitted, still work; check the broker and VECTOR_GATEWAY_BROKER_URL.",
        )

    def observe(self, order: int) -> None:
        self._seen.observe(order)

    def close(self) -> None:
        self._client.close()
