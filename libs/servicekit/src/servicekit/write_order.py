"""Write order: which of two writes of one document is the later one, without trusting anybody's clock.

Every document write carries an *order*, a 64-bit integer; the larger order wins (docs/consistency.md,
"Write order"). Orders come from one of two sources:

- a counter in Redis (`ORDER_KEY`), taken with one atomic script: the MCP replicas take it when a job is
  submitted (so the last *submitted* write wins, whatever order the writes reach the store in), and
  gateways configured with the broker take it for writes that arrive without one. One counter for the
  whole deployment: no clock decides between two writes.
- a process-local counter (`LocalOrder`), for a gateway without a broker (the embedded default): the
  single process that owns the data folder. It also follows every order it sees (a Lamport clock), so a
  write that started after another one was committed and read always gets a larger order.

Both follow the same rule: the next order is above the last one handed out, above the ``seen`` order the
caller passes, and never below ``clock_floor()`` (milliseconds << 16, the layout of the version ids written
before orders existed). So every new order sorts after every version already stored, also one an old
replica writes during a rolling upgrade, and a counter that was lost (a Redis restarted without its data)
starts again above the orders it had handed out. The clock only lifts the counter; it never lowers it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

ORDER_KEY = "ingestion-mcp:write-order"
MAX_ORDER = 2**63 - 1
# KEYS[1]: the counter. ARGV[1]: the caller's clock floor. ARGV[2]: an order the caller has already seen.
# The counter becomes max(counter, floor, seen) + 1, atomically: two callers never share an order.
# Redis' Lua holds numbers as doubles, exact only up to 2^53, and orders are about 2^57: so the script
# compares the decimal strings (no leading zeros: the longer is larger, else the text order), lets Redis do
# the arithmetic (INCR is exact on 64-bit integers), and answers the counter as a string.
TAKE_SCRIPT = """
local function below(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
local current = redis.call('get', KEYS[1]) or '0'
local highest = current
for _, candidate in ipairs({ARGV[1], ARGV[2]}) do
  if below(highest, candidate) then highest = candidate end
end
if highest ~= current then redis.call('set', KEYS[1], highest) end
redis.call('incr', KEYS[1])
return redis.call('get', KEYS[1])
"""


def clock_floor(now: float | None = None) -> int:
    """The lowest order a counter hands out now: this clock's milliseconds shifted left 16 bits."""
    return int((time.time() if now is None else now) * 1000) << 16


def _checked(order: int) -> int:
    if not 0 < order <= MAX_ORDER:
        raise OverflowError(f"write order {order} is outside 1..{MAX_ORDER}")
    return order


class LocalOrder:
    """Orders from this process alone: strictly increasing, above every order seen, never below the clock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def take(self, seen: int = 0) -> int:
        with self._lock:
            self._last = _checked(max(self._last + 1, clock_floor(), seen + 1))
            return self._last

    def observe(self, order: int) -> None:
        """An order written elsewhere: the next one taken here is larger."""
        with self._lock:
            self._last = max(self._last, order)

    @property
    def last(self) -> int:
        """The largest order taken or observed here (0: none yet)."""
        return self._last


def _arguments(seen: int) -> tuple[str, int, str, str, str]:
    return TAKE_SCRIPT, 1, ORDER_KEY, str(clock_floor()), str(max(seen, 0))


def take_sync(client: Any, seen: int = 0) -> int:
    """The next order from Redis (a redis-py client)."""
    return _checked(int(client.eval(*_arguments(seen))))


async def take_async(client: Any, seen: int = 0) -> int:
    """The next order from Redis (a redis.asyncio client)."""
    return _checked(int(await client.eval(*_arguments(seen))))
