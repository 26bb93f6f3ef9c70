"""Write order: which of two writes of one document is the later one, without trusting anybody's clock.

Every document write carries an *order*, a 64-bit integer; the larger order wins (docs/consistency.md,
"Write order"). Orders come from one of two sources:

- a counter in Redis (`ORDER_KEY`), taken with one atomic script: the MCP replicas take it when a job is
  submitted (so the last *submitted* write wins, whatever order the writes reach the store in), and
  gateways configured with the broker take it for writes that arrive without one. One counter for the
  whole deployment: no clock is involved.
- a process-local counter (`LocalOrder`), for a gateway without a broker (the embedded default): the
  single process that owns the data folder. It also follows every order it sees (a Lamport clock), so a
  write that started after another one was committed and read always gets a larger order.

Both start from ``clock_floor()`` (milliseconds << 16, the layout of the version ids written before
orders existed), so every new order sorts after every version already stored, and a counter that was
lost (a Redis restarted without its data) starts again above the orders it had handed out.
"""

from __future__ import annotations

import threading
import time
from typing import Any

ORDER_KEY = "ingestion-mcp:write-order"
MAX_ORDER = 2**63 - 1
# KEYS[1]: the counter. ARGV[1]: the clock floor (used only when the counter is missing). ARGV[2]: an order
# the caller has already seen; the answer is above it. Atomic in Redis, so two callers never share an order.
TAKE_SCRIPT = """
if redis.call('exists', KEYS[1]) == 0 then redis.call('set', KEYS[1], ARGV[1]) end
local order = redis.call('incr', KEYS[1])
local seen = tonumber(ARGV[2])
if order <= seen then
  order = seen + 1
  redis.call('set', KEYS[1], order)
end
return order
"""


def clock_floor(now: float | None = None) -> int:
    """The lowest order a fresh counter hands out: this clock's milliseconds shifted left 16 bits."""
    return int((time.time() if now is None else now) * 1000) << 16


class LocalOrder:
    """Orders from this process alone: strictly increasing, above every order seen, never below the clock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def take(self, seen: int = 0) -> int:
        with self._lock:
            self._last = max(self._last + 1, clock_floor(), seen + 1)
            return self._last

    def observe(self, order: int) -> None:
        """An order written elsewhere: the next one taken here is larger."""
        with self._lock:
            self._last = max(self._last, order)


def take_sync(client: Any, seen: int = 0) -> int:
    """The next order from Redis (a redis-py client)."""
    return int(client.eval(TAKE_SCRIPT, 1, ORDER_KEY, clock_floor(), seen))


async def take_async(client: Any, seen: int = 0) -> int:
    """The next order from Redis (a redis.asyncio client)."""
    return int(await client.eval(TAKE_SCRIPT, 1, ORDER_KEY, clock_floor(), seen))
