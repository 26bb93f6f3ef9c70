"""Gateway replicas as real processes on one Milvus server: which write is kept, whatever the clocks and races.

Two `vector-gateway` processes (and, for the clock tests, a third under libfaketime) share one
`milvus-lite server` over gRPC (the gateway's server URI path, http://). Nothing is paused or mocked here:
the races are the real ones (tests/test_replicas.py holds a replica at a chosen point, in process).
Write orders (docs/consistency.md, "Write order") are taken by the test where a submitter would take them.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from gateway_processes import NO_FAKETIME, client, faketime_library, gateway, running, skewed
from servicekit.write_order import LocalOrder

from scripts.milvus_server import MilvusLiteServer
from scripts.service_stack import ServiceProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
Pair = tuple[ServiceProcess, ServiceProcess]
WORDS = ["albatross", "bittern", "cormorant", "dunlin"]
RACE_ROUNDS = 6
OFFSETS = ["-30s", "+30s"]


@pytest.fixture(scope="module")
def milvus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusLiteServer]:
    with MilvusLiteServer(tmp_path_factory.mktemp("milvus")) as server:
        yield server


@pytest.fixture(scope="module")
def replicas(milvus: MilvusLiteServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServiceProcess]]:
    """Two replicas with true clocks and, where libfaketime is installed, one per clock offset; started together
    (loading four models at once beats loading them one after the other on two busy cores)."""
    logs = tmp_path_factory.mktemp("replicas")
    started = {"a": gateway("gw-a", milvus, logs), "b": gateway("gw-b", milvus, logs)}
    if faketime_library() is not None:
        started |= {offset: gateway(f"gw-clock{offset}", milvus, logs, **skewed(offset)) for offset in OFFSETS}
    with running(*started.values()):
        yield started


@pytest.fixture(scope="module")
def pair(replicas: dict[str, ServiceProcess]) -> Pair:
    return replicas["a"], replicas["b"]


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def upsert(replica: ServiceProcess, collection: str, body: dict[str, Any], **batch: Any) -> httpx.Response:
    async with client(replica) as http:
        return await http.post(f"/v1/collections/{collection}/documents/batch", json={"documents": [body], **batch})


async def written(replica: ServiceProcess, collection: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await upsert(replica, collection, body)
    assert response.status_code == 200, response.text
    return response.json()["results"][0]


async def get(replica: ServiceProcess, path: str, **params: Any) -> Any:
    async with client(replica) as http:
        response = await http.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def keyword_hits(replica: ServiceProcess, collection: str, query: str) -> list[dict[str, Any]]:
    async with client(replica) as http:
        body = {"query": query, "collections": [collection], "mode": "keyword", "top_k": 20}
        response = await http.post("/v1/search", json=body)
    assert response.status_code == 200, response.text
    return response.json()["hits"]


def texts(revision: str, count: int = 2) -> list[str]:
    return [f"{revision}: herons wade the shallows, part {i}, and strike at passing fish." for i in range(count)]


async def test_replicas_creating_one_collection_at_once_keep_every_acknowledged_document(
    pair: Pair, make_doc: Callable[..., dict[str, Any]]
) -> None:
    """Each round, both replicas write the first documents of a new collection at the same moment, so both
    find it missing and create it. Every write is acknowledged, and every acknowledged one stays listed and
    searchable (before: one write failed with 'collection already exists', and a replica's clean-up of an
    earlier collection's registry rows could delete the row of a document the other had just written)."""
    for round_ in range(RACE_ROUNDS):
        collection = name("autocreate")
        bodies = [make_doc(f"race/{word}.md", [f"Round {round_}: the {word} nests by the estuary."]) for word in WORDS]
        answers = await asyncio.gather(*(upsert(pair[i % 2], collection, b) for i, b in enumerate(bodies)))
        assert [a.status_code for a in answers] == [200] * len(WORDS), [a.text for a in answers]
        acknowledged = {a.json()["results"][0]["doc_id"]: word for a, word in zip(answers, WORDS, strict=True)}
        for replica in pair:
            listed = await get(replica, f"/v1/collections/{collection}/documents", limit=100)
            assert {d["doc_id"] for d in listed["documents"]} == set(acknowledged), f"round {round_}"
        for doc_id, word in acknowledged.items():
            assert doc_id in {h["doc_id"] for h in await keyword_hits(pair[1], collection, word)}, f"round {round_}"


def server_clock_offset(response: httpx.Response) -> float:
    """How far the replica's wall clock is from ours, read from its Date header (whole seconds)."""
    stamp = email.utils.parsedate_to_datetime(response.headers["date"]).timestamp()
    return stamp - time.time()


@pytest.mark.parametrize("offset", OFFSETS)
async def test_writes_alternating_with_a_replica_whose_clock_is_off_keep_the_last_content(
    replicas: dict[str, ServiceProcess], make_doc: Callable[..., dict[str, Any]], offset: str
) -> None:
    """One key written again and again, each time with new content, alternately through a replica with a true
    clock and one whose clock is 30 s off. Each write starts after the previous one answered: it must win
    (before, versions were the writer's clock, and every write that followed one from a clock ahead was
    dropped as 'superseded' and answered skipped)."""
    if offset not in replicas:
        pytest.skip(NO_FAKETIME)
    off, true = replicas[offset], replicas["a"]
    async with client(off) as http:
        seen = server_clock_offset(await http.get("/healthz"))
    assert abs(seen - float(offset.removesuffix("s"))) < 5, f"the replica's clock is {seen:+.0f} s off"
    collection, writers = name("skew"), (true, off)
    for revision in range(6):
        body = make_doc("notes/heron.md", texts(f"Revision {revision}"))
        answer = await written(writers[revision % 2], collection, body)
        assert (answer["status"], answer["warnings"]) == ("replaced" if revision else "indexed", []), revision
        for reader in (replicas["b"], off):
            stored = await get(reader, f"/v1/collections/{collection}/documents/{answer['doc_id']}")
            assert stored["content"] == "\n\n".join(texts(f"Revision {revision}")), revision


async def test_of_two_writes_with_orders_the_larger_order_is_kept_whichever_arrives_first(
    pair: Pair, make_doc: Callable[..., dict[str, Any]]
) -> None:
    """Two submissions of one key: the first submitted (smaller order) reaches the store last. The later
    submission's content stays; the earlier one answers skipped and says why."""
    collection, orders = name("orders"), LocalOrder()
    earlier, later = orders.take(), orders.take()
    kept = await written(pair[1], collection, make_doc("plan.md", texts("Later submission"), order=later))
    late = await written(pair[0], collection, make_doc("plan.md", texts("Earlier submission"), order=earlier))
    assert kept["status"] == "indexed" and late["status"] == "skipped"
    assert any("newer write" in warning for warning in late["warnings"]), late
    stored = await get(pair[0], f"/v1/collections/{collection}/documents/{kept['doc_id']}")
    assert stored["content"] == "\n\n".join(texts("Later submission")) and stored["content_order"] == later


async def test_a_retry_with_the_same_order_answers_what_the_first_try_did_and_writes_nothing(
    pair: Pair, make_doc: Callable[..., dict[str, Any]]
) -> None:
    """A queue job retried after its first try had written (and the worker died before reporting): the retry
    carries the job's order, finds that order stored, and answers what the first try answered."""
    collection, orders = name("retry"), LocalOrder()
    for status, revision in (("indexed", "First"), ("replaced", "Second")):
        body = make_doc("log.md", texts(revision, 3), order=orders.take())
        first = await written(pair[0], collection, body)
        assert first["status"] == status
        path = f"/v1/collections/{collection}/documents/{first['doc_id']}"
        before = await get(pair[1], path)
        for replica, force in ((pair[1], False), (pair[0], True)):
            again = await written(replica, collection, body | {"force": force})
            assert (again["status"], again["chunk_count"], again["warnings"]) == (status, 3, []), again
            assert again["timings"]["embedding_ms"] == 0
        after = await get(pair[0], path)
        assert after == before  # nothing was written: the same registry row, the same content
        assert (after["content_order"], after["content_status"]) == (body["order"], status)
        info = await get(pair[1], f"/v1/collections/{collection}")
        assert (info["document_count"], info["chunk_count"]) == (1, 3)


def long_texts(label: str, count: int) -> list[str]:
    line = "The reed warbler sings from the reed bed at dawn while the marsh harrier quarters the fen. "
    return [f"{label} part {i} {uuid.uuid4().hex[:6]}. " + line * 6 for i in range(count)]


async def finished(replica: ServiceProcess, request_id: str, timeout_s: float = 240) -> None:
    """Until ``replica`` logged its answer to the request with this id (the client had stopped waiting)."""
    deadline = time.monotonic() + timeout_s
    while f'"request_id": "{request_id}", "service": "vector-gateway", "method"' not in replica.log_text():
        assert time.monotonic() < deadline, f"{replica.name} never finished request {request_id}"
        await asyncio.sleep(0.5)


async def test_a_retry_on_another_replica_after_a_client_timeout_leaves_one_copy_and_one_answer(
    pair: Pair, make_doc: Callable[..., dict[str, Any]]
) -> None:
    """The client gives up on replica A while it embeds (A keeps going) and sends the same job to B. Both
    tries store the same content under one order: the document ends with one complete copy, and any later
    try answers what the write did (before: 'skipped')."""
    collection, order = name("timeout"), LocalOrder().take()
    body = make_doc("fen.md", long_texts("Fen survey", 40), order=order)
    request_id = uuid.uuid4().hex
    async with httpx.AsyncClient(base_url=pair[0].url, timeout=httpx.Timeout(30, read=0.5)) as impatient:
        with pytest.raises(httpx.ReadTimeout):
            await impatient.post(
                f"/v1/collections/{collection}/documents", json=body, headers={"X-Request-ID": request_id}
            )
    retry = await written(pair[1], collection, body)
    await finished(pair[0], request_id)
    assert retry["status"] == "indexed" and retry["chunk_count"] == 40
    third = await written(pair[0], collection, body)
    assert (third["status"], third["timings"]["embedding_ms"]) == ("indexed", 0)
    info = await get(pair[1], f"/v1/collections/{collection}")
    assert (info["document_count"], info["chunk_count"]) == (1, 40)
    chunks = await get(pair[0], f"/v1/collections/{collection}/documents/{retry['doc_id']}/chunks")
    assert [c["text"] for c in chunks["chunks"]] == [c["text"] for c in body["chunks"]]


async def test_a_batch_past_its_commit_deadline_commits_nothing(
    pair: Pair, make_doc: Callable[..., dict[str, Any]]
) -> None:
    """A queue worker passes its remaining job lease as commit_within_ms: a write that cannot commit within it
    (here: embedding 60 chunks takes longer than 400 ms) leaves the document as it was and answers 409."""
    collection = name("deadline")
    async with client(pair[0]) as http:
        assert (await http.post("/v1/collections", json={"name": collection})).status_code == 201
    old = await written(pair[0], collection, make_doc("fen.md", texts("Old survey")))
    for within in (0, 400):
        response = await upsert(pair[1], collection, make_doc("fen.md", long_texts("New", 60)), commit_within_ms=within)
        assert response.status_code == 409, response.text
        error = response.json()
        assert error["code"] == "COMMIT_DEADLINE_PASSED" and "nothing was written" in error["error"], error
        stored = await get(pair[0], f"/v1/collections/{collection}/documents/{old['doc_id']}")
        assert stored["content"] == "\n\n".join(texts("Old survey"))
        info = await get(pair[0], f"/v1/collections/{collection}")
        assert (info["document_count"], info["chunk_count"]) == (1, 2)  # the new version's rows are gone
