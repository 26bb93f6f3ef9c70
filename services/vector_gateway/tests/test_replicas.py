"""Two gateway replicas on one Milvus never lose or half-write a document (docs/consistency.md).

A replica here is a GatewayService with its own locks, write orders and store object over the one Milvus
Lite client (Lite allows one client per database): two replicas minus the network. The interleavings that
lose documents are forced by pausing one replica's writer thread at a chosen point ("rows written",
"commit", or right after it found a collection missing). Races that need no pause run between real
gateway processes: test_replica_processes.py.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest
from fastapi import FastAPI
from ingestion_contracts.gateway import RelabelRequest, SearchRequest, UpsertDocumentRequest
from servicekit import ServiceError
from servicekit.write_order import LocalOrder
from vector_gateway.index import DocumentIndex
from vector_gateway.service import GatewayService
from vector_gateway.where import Eq

NAME = "replicas"
V0 = ["Original heron notes: herons stand still in shallow water.", "They strike fast at passing fish."]
V1 = ["Revised heron notes: grey herons nest in tall colonies.", "Colonies return every spring.", "Third part."]
V2 = ["Second revision: herons fly with their necks folded back."]
# Where a replica's writer thread is held: right after its chunk rows are written, or as it calls the commit.
POINTS = ["rows_written", "commit"]


class Pause:
    """Hold the first call of one store method of one replica until released (a slow replica)."""

    def __init__(self, store: DocumentIndex, point: str) -> None:
        self.reached, self.go = threading.Event(), threading.Event()
        method = "insert" if point == "rows_written" else "registry_upsert"
        real = getattr(store, method)

        def held(*args: Any) -> Any:
            if point == "commit":
                self._hold()
            result = real(*args)
            if point == "rows_written":
                self._hold()
            return result

        setattr(store, method, held)

    def _hold(self) -> None:
        if not self.reached.is_set():
            self.reached.set()
            assert self.go.wait(60), "the test never released this replica"

    async def wait(self) -> None:
        assert await anyio.to_thread.run_sync(self.reached.wait, 60), "the replica never reached the pause"

    def release(self) -> None:
        self.go.set()


def replica(app: FastAPI) -> GatewayService:
    """Another gateway process on the same Milvus: own locks, own store object, the one client."""
    base: GatewayService = app.state.gateway
    base.store.ping()  # connected, so the copy shares the client
    return GatewayService(copy.copy(base.store), base.embedders)


@pytest.fixture
async def app(open_gateway, tmp_path) -> AsyncIterator[FastAPI]:
    async with open_gateway(tmp_path / "replicas.db") as (_, opened):
        await opened.state.gateway.sweep_uncommitted()  # the start-up sweep: let it finish first
        yield opened


def request(make_doc: Callable[..., dict[str, Any]], texts: list[str], **fields: Any) -> UpsertDocumentRequest:
    return UpsertDocumentRequest.model_validate(make_doc("herons.md", texts, **fields))


async def write(service: GatewayService, body: UpsertDocumentRequest) -> Any:
    responses, _ = await service.upsert(NAME, [body])
    return responses[0]


def one_complete_version(store: DocumentIndex, doc_id: str) -> dict[str, Any]:
    """The registry names a version whose rows all exist, and no other version has rows left."""
    row = store.registry_get([f"{NAME}/{doc_id}"])[f"{NAME}/{doc_id}"]
    stored = store.query(NAME, Eq("doc_id", doc_id), ["version", "chunk_index"])
    live = sorted(r["chunk_index"] for r in stored if r["version"] == row["version"])
    assert live == list(range(int(row["chunk_count"]))), "the registry names a version whose rows are gone"
    assert {r["version"] for r in stored} == {row["version"]}, "rows of another version are left"
    return row


async def content(service: GatewayService, doc_id: str) -> str:
    return (await service.get_document(NAME, doc_id)).content


async def found(service: GatewayService, query: str) -> list[str]:
    result = await service.search(SearchRequest(query=query, collections=[NAME], mode="keyword", top_k=5))
    return [hit.text for hit in result.hits]


async def no_open_leases(store: DocumentIndex) -> None:
    assert store.leases_query(Eq("collection", "replicas")) == []


@pytest.mark.parametrize("point", POINTS)
async def test_a_sweep_on_another_replica_spares_a_write_in_flight(app, make_doc, point: str) -> None:
    a, b = replica(app), replica(app)
    doc_id = (await write(a, request(make_doc, V0))).doc_id
    pause = Pause(a.store, point)
    writing = asyncio.create_task(write(a, request(make_doc, V1)))
    await pause.wait()
    assert await b.sweep_uncommitted() == 0  # B starts up while A has written V1's rows, not committed them
    pause.release()
    assert (await writing).status == "replaced"

    row = one_complete_version(a.store, doc_id)
    assert int(row["chunk_count"]) == len(V1)
    assert await content(b, doc_id) == "\n\n".join(V1)
    assert V1[1] in await found(b, "colonies return spring")
    await no_open_leases(a.store)


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("first", ["older", "newer"])
async def test_two_replicas_writing_one_document_end_with_one_complete_version(
    app, make_doc, point: str, first: str
) -> None:
    a, b = replica(app), replica(app)
    doc_id = (await write(a, request(make_doc, V0))).doc_id
    pauses = {"older": Pause(a.store, point), "newer": Pause(b.store, point)}
    older = asyncio.create_task(write(a, request(make_doc, V1)))  # started first
    await pauses["older"].wait()
    newer = asyncio.create_task(write(b, request(make_doc, V2)))
    await pauses["newer"].wait()
    tasks = {"older": older, "newer": newer}
    second = "newer" if first == "older" else "older"
    pauses[first].release()
    answers = {first: await tasks[first]}
    pauses[second].release()
    answers[second] = await tasks[second]

    row = one_complete_version(a.store, doc_id)
    # Held at the commit call, both had checked the registry: the last commit wins. Held before that check,
    # the newer write wins whatever the order: the older one sees it committed and withdraws.
    winner = second if point == "commit" else "newer"
    expected = {"older": V1, "newer": V2}[winner]
    assert int(row["chunk_count"]) == len(expected)
    assert await content(a, doc_id) == await content(b, doc_id) == "\n\n".join(expected)
    if point == "rows_written" and first == "newer":
        assert answers["older"].status == "skipped" and "newer write" in answers["older"].warnings[0]
    await no_open_leases(a.store)


@pytest.mark.parametrize("point", POINTS)
async def test_a_retry_on_another_replica_after_a_timeout_leaves_one_copy(app, make_doc, point: str) -> None:
    a, b = replica(app), replica(app)
    doc_id = (await write(a, request(make_doc, V0))).doc_id
    pause = Pause(a.store, point)
    body = request(make_doc, V1)
    # The client gives up on A (the request keeps running there) and sends the same write to B.
    first_try = asyncio.create_task(write(a, body))
    await pause.wait()
    retry = await write(b, body)
    assert retry.status == "replaced"
    pause.release()
    await first_try

    one_complete_version(a.store, doc_id)
    assert await content(b, doc_id) == "\n\n".join(V1)
    assert (await found(b, "grey herons nest colonies")).count(V1[0]) == 1
    assert (await write(b, body)).status == "skipped"  # a third try changes nothing
    await no_open_leases(a.store)


@pytest.mark.parametrize("point", POINTS)
async def test_a_delete_on_another_replica_racing_a_write(app, make_doc, point: str) -> None:
    a, b = replica(app), replica(app)
    doc_id = (await write(a, request(make_doc, V0))).doc_id
    pause = Pause(a.store, point)
    writing = asyncio.create_task(write(a, request(make_doc, V1)))
    await pause.wait()
    deleted = await b.delete_document(NAME, doc_id)
    assert deleted.deleted_chunks == len(V0)  # the version in flight is not B's to delete
    pause.release()
    await writing

    # The write committed after the delete: the document is back, whole (the last commit wins).
    row = one_complete_version(a.store, doc_id)
    assert int(row["chunk_count"]) == len(V1)
    assert await content(b, doc_id) == "\n\n".join(V1)
    await no_open_leases(a.store)


def labels(make_doc: Callable[..., dict[str, Any]], texts: list[str], tags: list[str]) -> RelabelRequest:
    return RelabelRequest(content_hash=make_doc("herons.md", texts)["content_hash"], source="herons.md", tags=tags)


@pytest.mark.parametrize("point", POINTS)
async def test_a_relabel_held_while_another_replica_writes_new_content(app, make_doc, point: str) -> None:
    a, b = replica(app), replica(app)
    doc_id = (await write(a, request(make_doc, V0))).doc_id
    pause = Pause(b.store, point)
    relabelling = asyncio.create_task(b.relabel(NAME, doc_id, labels(make_doc, V0, ["birds"])))
    await pause.wait()
    assert (await write(a, request(make_doc, V1))).status == "replaced"
    pause.release()
    if point == "rows_written":  # it sees the new content before committing: it withdraws, and says so
        with pytest.raises(ServiceError) as refused:
            await relabelling
        assert refused.value.status_code == 409 and refused.value.code == "WRITE_CONFLICT"
        expected, tags = V1, []
    else:  # it had checked already: its commit is the last one, the relabelled old content wins, whole
        assert (await relabelling).status == "updated"
        expected, tags = V0, ["birds"]
    row = one_complete_version(a.store, doc_id)
    assert await content(a, doc_id) == "\n\n".join(expected) and list(row["tags"]) == tags
    await no_open_leases(a.store)


@pytest.mark.parametrize("point", POINTS)
async def test_new_content_held_while_another_replica_relabels(app, make_doc, point: str) -> None:
    a, b = replica(app), replica(app)
    doc_id = (await write(a, request(make_doc, V0))).doc_id
    pause = Pause(a.store, point)
    writing = asyncio.create_task(write(a, request(make_doc, V1, tags=["revised"])))
    await pause.wait()
    assert (await b.relabel(NAME, doc_id, labels(make_doc, V0, ["birds"]))).status == "updated"
    pause.release()
    # The relabel is newer, but its content is older than the write's: the new content wins either way.
    assert (await writing).status == "replaced"
    row = one_complete_version(a.store, doc_id)
    assert await content(b, doc_id) == "\n\n".join(V1) and list(row["tags"]) == ["revised"]
    await no_open_leases(a.store)


@dataclass
class HeldWrite:
    """Replica A has stored V0 and is held at one point of writing V1; both replicas read one clock the test moves."""

    a: GatewayService
    b: GatewayService
    doc_id: str
    pause: Pause
    writing: asyncio.Task[Any]
    now: list[float]

    def stall_past_lease(self) -> None:  # A is frozen longer than its lease (a stopped process, a partition)
        self.now[0] += self.a.leases.seconds + 1


async def hold_v1(app: FastAPI, make_doc: Callable[..., dict[str, Any]], point: str) -> HeldWrite:
    a, b = replica(app), replica(app)
    now = [a.leases.clock()]
    a.leases.clock = b.leases.clock = lambda: now[0]
    doc_id = (await write(a, request(make_doc, V0))).doc_id
    pause = Pause(a.store, point)
    writing = asyncio.create_task(write(a, request(make_doc, V1)))
    await pause.wait()
    return HeldWrite(a, b, doc_id, pause, writing, now)


async def test_a_write_outliving_its_lease_commits_nothing_and_a_sweep_clears_it(app, make_doc) -> None:
    held = await hold_v1(app, make_doc, "rows_written")
    assert await held.b.sweep_uncommitted() == 0  # the lease is live: A may still commit
    held.stall_past_lease()
    assert await held.b.sweep_uncommitted() == len(V1)
    held.pause.release()
    with pytest.raises(ServiceError) as refused:
        await held.writing
    assert refused.value.status_code == 503 and "lease" in str(refused.value)
    row = one_complete_version(held.a.store, held.doc_id)
    assert int(row["chunk_count"]) == len(V0) and await content(held.b, held.doc_id) == "\n\n".join(V0)
    await no_open_leases(held.a.store)


async def test_a_commit_landing_after_its_lease_and_a_sweep_still_leaves_the_document_whole(app, make_doc) -> None:
    """A stalls between its last registry read and its commit call for longer than its lease (a frozen process):
    B's sweep takes V1's rows as dead, then A's commit names V1. A notices and writes V1 again."""
    held = await hold_v1(app, make_doc, "commit")
    held.stall_past_lease()
    assert await held.b.sweep_uncommitted() == len(V1)  # B sees an expired lease: V1 can never commit, it thinks
    held.pause.release()
    assert (await held.writing).status == "replaced"

    row = one_complete_version(held.a.store, held.doc_id)
    assert int(row["chunk_count"]) == len(V1) and await content(held.b, held.doc_id) == "\n\n".join(V1)
    assert await found(held.b, "grey herons colonies") != []
    await no_open_leases(held.a.store)


async def test_a_late_commit_over_a_newer_write_on_another_replica_leaves_one_whole_version(app, make_doc) -> None:
    """A stalls past its lease just before committing V1; B writes V2 and retires V1's rows; A's commit then names
    V1. The document ends whole with the last committed content, not as a registry row over missing rows."""
    held = await hold_v1(app, make_doc, "commit")
    held.stall_past_lease()
    assert (await write(held.b, request(make_doc, V2))).status == "replaced"
    held.pause.release()
    await held.writing

    row = one_complete_version(held.a.store, held.doc_id)
    assert int(row["chunk_count"]) == len(V1) and await content(held.b, held.doc_id) == "\n\n".join(V1)
    await no_open_leases(held.a.store)


class HeldCreate:
    """Hold a replica right after it found a collection missing (a GC pause, a frozen process), until released."""

    def __init__(self, store: DocumentIndex) -> None:
        self.reached, self.go = threading.Event(), threading.Event()
        real = store.has_collection

        def held(name: str) -> bool:
            found = real(name)
            if not found and not self.reached.is_set():
                self.reached.set()
                assert self.go.wait(60), "the test never released this replica"
            return found

        store.has_collection = held  # type: ignore[method-assign]  # the injected pause

    async def wait(self) -> None:
        assert await anyio.to_thread.run_sync(self.reached.wait, 60), "the replica never checked the collection"


async def test_a_replica_stalled_while_creating_a_collection_spares_a_document_written_meanwhile(
    app, make_doc, unique
) -> None:
    """B finds the collection missing and stalls; A creates it and writes a document; B goes on creating it.
    Before, B then deleted every registry row of that collection name (to forget an earlier collection's) and
    so the row of A's acknowledged document: listed nowhere, found by no search."""
    a, b = replica(app), replica(app)
    name = unique("autocreate")
    held = HeldCreate(b.store)
    ours = asyncio.create_task(
        b.upsert(name, [UpsertDocumentRequest.model_validate(make_doc("b.md", ["Bitterns boom."]))])
    )
    await held.wait()
    theirs, _ = await a.upsert(name, [UpsertDocumentRequest.model_validate(make_doc("a.md", ["Avocets sweep mud."]))])
    held.go.set()
    await asyncio.wait([ours])  # B has created the collection (or failed to)
    for service in (a, b):
        listed = await service.list_documents(name, offset=0, limit=10, source=None, order="source")
        assert theirs[0].doc_id in [d.doc_id for d in listed.documents], "A's acknowledged document is gone"
    hits = await a.search(SearchRequest(query="avocets sweep", collections=[name], mode="keyword"))
    assert [h.doc_id for h in hits.hits] == [theirs[0].doc_id]
    mine, _ = ours.result()  # and B's write went through too
    assert (theirs[0].status, mine[0].status) == ("indexed", "indexed")
    listed = await b.list_documents(name, offset=0, limit=10, source=None, order="source")
    assert [d.doc_id for d in listed.documents] == [theirs[0].doc_id, mine[0].doc_id]


async def test_a_write_held_past_its_commit_deadline_commits_nothing(app, make_doc) -> None:
    """A queue worker's write (commit_within_ms = its remaining job lease) stalls after storing its rows until the
    deadline is past, as a worker whose lease lapsed would: it must not commit (another worker owns the job)."""
    service: GatewayService = app.state.gateway
    doc_id = (await write(service, request(make_doc, V0))).doc_id
    pause = Pause(service.store, "rows_written")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway") as http:
        body = {"documents": [make_doc("herons.md", V1)], "commit_within_ms": 1500}
        answer = asyncio.create_task(http.post(f"/v1/collections/{NAME}/documents/batch", json=body))
        await pause.wait()
        await asyncio.sleep(1.6)
        pause.release()
        response = await answer
    assert response.status_code == 409, response.text
    assert response.json()["code"] == "COMMIT_DEADLINE_PASSED" and "nothing was written" in response.json()["error"]
    row = one_complete_version(service.store, doc_id)  # V1's rows are deleted, as for a lapsed write lease
    assert int(row["chunk_count"]) == len(V0) and await content(service, doc_id) == "\n\n".join(V0)
    await no_open_leases(service.store)


async def test_a_larger_order_stored_while_a_smaller_one_commits_is_kept(app, make_doc) -> None:
    """Two submissions of one document, taken in order (smaller, larger), whose writes start the other way round:
    the larger one stores its rows first and is held; the smaller one commits meanwhile. The larger order is
    still committed, over it (before, the write that started first counted as older and withdrew)."""
    a, b = replica(app), replica(app)
    doc_id = (await write(a, request(make_doc, V0))).doc_id
    orders = LocalOrder()
    listed = await a.list_documents(NAME, offset=0, limit=1, source=None, order="source")
    orders.observe(listed.documents[0].content_order)  # a submitter that read the stored document first
    smaller, larger = orders.take(), orders.take()
    pause = Pause(a.store, "rows_written")
    writing = asyncio.create_task(write(a, request(make_doc, V2, order=larger)))
    await pause.wait()
    assert (await write(b, request(make_doc, V1, order=smaller))).status == "replaced"
    pause.release()
    assert (await writing).status == "replaced"
    row = one_complete_version(a.store, doc_id)
    assert int(row["chunk_count"]) == len(V2) and await content(b, doc_id) == "\n\n".join(V2)
    assert (await write(b, request(make_doc, V1, order=smaller))).status == "skipped"  # it stays outrun
    await no_open_leases(a.store)
