"""Write orders from the broker (servicekit.write_order on a real Redis) and the gateway's order sources."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from servicekit import DependencyUnavailable
from servicekit.write_order import ORDER_KEY, clock_floor, take_sync
from vector_gateway.orders import BrokerOrders, broker_address

from scripts.redis_server import SKIP_REASON, RedisServer, redis_binary


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    if redis_binary() is None:
        pytest.skip(SKIP_REASON)
    with RedisServer(tmp_path_factory.mktemp("orders")) as server:
        yield server


def test_every_take_is_a_new_larger_order_above_what_the_caller_saw(broker: RedisServer) -> None:
    """Orders are about 2^57, beyond what Redis' Lua numbers (doubles) hold exactly: every order must still differ."""
    client = redis.Redis.from_url(broker.url)
    client.delete(ORDER_KEY)
    taken: list[int] = []
    lock = threading.Lock()

    def take_many() -> None:
        for _ in range(50):
            order = take_sync(client)
            with lock:
                taken.append(order)

    threads = [threading.Thread(target=take_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(taken)) == 200 and min(taken) >= clock_floor() - (60_000 << 16)
    seen = max(taken) + (3_600_000 << 16)  # an order from a clock an hour ahead
    assert take_sync(client, seen) == seen + 1
    assert int(client.get(ORDER_KEY)) == seen + 1  # still an integer Redis can INCR
    assert take_sync(client) > seen + 1


def test_the_gateway_takes_orders_above_every_order_it_has_seen(broker: RedisServer) -> None:
    orders = BrokerOrders(broker.url, timeout_s=1)
    far = take_sync(redis.Redis.from_url(broker.url)) + (10**9 << 16)
    orders.observe(far)  # a stored row written with an order from elsewhere
    assert orders.take() == far + 1
    orders.close()


def test_an_unreachable_broker_is_a_503_that_says_what_to_do(tmp_path: Path) -> None:
    orders = BrokerOrders("redis://:secret@127.0.0.1:9/0", timeout_s=0.5)  # port 9: nothing listens
    with pytest.raises(DependencyUnavailable) as refused:
        orders.take()
    error = refused.value
    assert error.status_code == 503 and error.headers["Retry-After"]
    assert "127.0.0.1:9" in error.message and "nothing was written" in error.message
    assert "secret" not in error.message and "carry an order" in (error.suggestion or "")
    assert broker_address("unix:///run/redis.sock") == "/run/redis.sock"


@pytest.fixture
async def brokered(open_gateway, broker: RedisServer, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A gateway whose write orders come from the broker, each broker call given up after 0.5 s."""
    async with open_gateway(tmp_path / "milvus.db", broker_url=broker.url, broker_timeout_s=0.5) as (client, _):
        yield client


async def _write(client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    return await client.post("/v1/collections/orders/documents", json=body)


async def test_a_gateway_with_a_broker_takes_orders_from_the_shared_counter(
    brokered: httpx.AsyncClient, broker: RedisServer, make_doc
) -> None:
    counter = redis.Redis.from_url(broker.url)
    taken = (await brokered.post("/v1/write-order")).json()["order"]
    assert taken == int(counter.get(ORDER_KEY))  # what a submitter (an MCP replica) would have taken there
    written = await _write(brokered, make_doc("notes.md", ["Curlews probe the mud."]))
    assert written.status_code == 200 and written.json()["status"] == "indexed"
    stored = (await brokered.get("/v1/collections/orders/documents")).json()["documents"][0]
    assert stored["content_order"] == int(counter.get(ORDER_KEY)) > taken
    assert stored["content_status"] == "indexed"


async def test_a_frozen_broker_fails_only_the_writes_that_need_an_order(
    brokered: httpx.AsyncClient, broker: RedisServer, make_doc
) -> None:
    assert (await _write(brokered, make_doc("tide.md", ["Low tide at six."]))).status_code == 200
    submitted = take_sync(redis.Redis.from_url(broker.url))  # a job submitted before the broker froze
    broker.freeze()
    try:
        started = time.monotonic()
        refused = await _write(brokered, make_doc("tide.md", ["Low tide at seven."]))
        assert refused.status_code == 503 and refused.headers["Retry-After"], refused.text
        assert "write-order broker" in refused.json()["error"] and time.monotonic() - started < 10
        assert (await brokered.post("/v1/write-order")).status_code == 503
        carried = await _write(brokered, make_doc("tide.md", ["Low tide at eight."], order=submitted))
        assert carried.status_code == 200 and carried.json()["status"] == "replaced", carried.text
        listed = (await brokered.get("/v1/collections/orders/documents")).json()["documents"]
        assert [d["content_order"] for d in listed] == [submitted]
        search = {"query": "tide eight", "collections": ["orders"], "mode": "keyword"}
        assert (await brokered.post("/v1/search", json=search)).json()["hits"][0]["text"] == "Low tide at eight."
    finally:
        broker.thaw()
    again = await _write(brokered, make_doc("tide.md", ["Low tide at nine."]))
    assert again.status_code == 200 and again.json()["status"] == "replaced", again.text
