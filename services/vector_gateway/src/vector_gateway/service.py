"""The gateway's domain: collections, document writes, searches. Knows nothing of HTTP.

Every Milvus or model call blocks, so each operation runs as one function in a worker thread.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from ingestion_contracts.gateway import (
    CollectionInfo,
    CollectionList,
    CollectionNames,
    DeleteCollectionResponse,
    DeleteDocumentResponse,
    DocumentChunks,
    DocumentContent,
    DocumentList,
    DocumentStamps,
    DocumentStructure,
    EmbedPassagesRequest,
    EmbedRequest,
    EmbedResponse,
    OffTopic,
    RelabelRequest,
    SearchHit,
    SearchRequest,
    SearchResponse,
    StageTimings,
    UpsertDocumentRequest,
    UpsertDocumentResponse,
    WriteOrder,
)
from servicekit import DependencyUnavailable

from . import errors, recovery
from .chunk_counts import ChunkCounts
from .documents import DocumentOrder, DocumentReader
from .embedder import Embedder, EmbedderHolder
from .engines import engine_label
from .filters import COLLECTION_KEY, FilterError, build_filter, in_collection
from .fusion import Fusion
from .growth import LiteGrowth
from .index import DocumentIndex
from .int8 import precision_of, vectors_of
from .locks import KeyedLocks
from .orders import LocalOrders, OrderSource
from .originals import Originals
from .page_images import Box, ImageFormat
from .pages import PageViews, ShownPage
from .passages import passage_text
from .records import REGISTRY
from .relevance import off_topic
from .search import Query, chunk_total, search
from .search import meanings as search_meanings
from .upsert import DocumentWriter, PlannedDocument, plan, registry_key
from .versions import DELETE_GROUP, CommitDeadline, LeasePolicy
from .where import And, Eq, Or, Where

log = logging.getLogger("vector_gateway")
T = TypeVar("T")
Observe = Callable[[str, float], None]


def _ignore(_stage: str, _seconds: float) -> None:
    return None


class GatewayService:
    def __init__(
        self,
        store: DocumentIndex,
        embedders: EmbedderHolder,
        *,
        fusion: Fusion | None = None,
        candidates: int = 20,
        observe: Observe | None = None,
        leases: LeasePolicy | None = None,
        orders: OrderSource | None = None,
        growth: LiteGrowth | None = None,
        originals: Originals | None = None,
    ) -> None:
        self.store = store
        # lance, milvus-lite or milvus (a server): what get_collections and the console show beside each count.
        self.engine = engine_label(store.engine, store.uri)
        self.growth = growth or LiteGrowth(False, "")
        self.embedders = embedders
        self.fusion = fusion or Fusion()
        self.candidates = candidates
        self.chunk_counts = ChunkCounts(store)
        self.observe = observe or _ignore
        # Write leases make writes safe across replicas (versions.py); the lock only saves a replica from
        # racing itself on one document.
        self.leases = leases or LeasePolicy()
        # Write orders decide which of two writes of a document is kept (docs/consistency.md, "Write order").
        self.orders = orders or LocalOrders()
        self.documents = DocumentReader(store, self.leases, self.orders)
        self.pages = PageViews(store, self.documents, originals or Originals(None, 0))
        self._locks = KeyedLocks()
        self._create_lock = threading.Lock()

    @staticmethod
    async def _run(fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args))

    # -- collections (blocking helpers) ------------------------------------------------------
    def _require(self, name: str) -> None:
        if not self.store.has_collection(name):
            raise errors.collection_not_found(name, self.store.list_collections())

    def _check_model(self, name: str, embedder: Embedder) -> None:
        if (mismatch := self._model_mismatch(name, embedder)) is not None:
            raise mismatch

    def _model_mismatch(self, name: str, embedder: Embedder) -> errors.Conflict | None:
        """Why the collection's vectors cannot be compared with ``embedder``'s, or None when they can."""
        stored = self.store.describe(name)
        if stored[0] != embedder.dimension:
            return errors.embedding_mismatch(name, stored, embedder.model_name, embedder.dimension)
        if vectors_of(stored[1]) != vectors_of(embedder.model_name):  # same model, other vectors (int8.py)
            return errors.precision_mismatch(name, stored[1], embedder.model_name)
        return None

    def _ensure(self, name: str, embedder: Embedder) -> None:
        with self._create_lock:
            if not self.store.has_collection(name):
                self._forget_dropped(name)
                # False: another replica created it meanwhile; it is there either way.
                self.store.create_collection(name, embedder.dimension, embedder.model_name)
        self._check_model(name, embedder)

    def _forget_dropped(self, name: str) -> None:
        """Delete the registry rows an earlier collection of this name left (they would make new writes
        "skipped"), and only those: never by a filter on the name, which would also take the row of a document
        another replica has just written into the collection it created meanwhile.

        A writer commits a row only after inserting its chunks into the collection, so after it was created:
        the rows read here, before a moment at which the collection is absent (the check that follows the read),
        were written into a collection dropped since. A row committed after the read has another version and
        stays (docs/consistency.md, "Creating a collection")."""
        rows = self.store.registry_query(in_collection(name), ["key", "version"])
        if not rows or self.store.has_collection(name):
            return
        pairs = sorted((row["key"], row["version"]) for row in rows)
        for start in range(0, len(pairs), DELETE_GROUP):
            group = pairs[start : start + DELETE_GROUP]
            self.store.registry_delete(Or(tuple(And((Eq("key", k), Eq("version", v))) for k, v in group)))

    def _info(self, name: str) -> CollectionInfo:
        dimension, model = self.store.describe(name)
        chunks = self.store.count(name)
        self.growth.seen(name, chunks)
        return CollectionInfo(
            name=name,
            document_count=self.store.registry_count(in_collection(name)),
            chunk_count=chunks,
            embedding_model=model,
            dimension=dimension,
            engine=self.engine,
            precision=precision_of(model),
        )

    def _create(self, name: str) -> CollectionInfo:
        embedder = self.embedders.get()
        with self._create_lock:
            if self.store.has_collection(name):
                raise errors.collection_exists(name)
            self._forget_dropped(name)
            if not self.store.create_collection(name, embedder.dimension, embedder.model_name):
                raise errors.collection_exists(name)  # another replica created it meanwhile
        return self._info(name)

    def _get(self, name: str) -> CollectionInfo:
        self._require(name)
        return self._info(name)

    def _drop(self, name: str) -> DeleteCollectionResponse:
        self._require(name)
        documents = self.store.registry_count(in_collection(name))
        chunks = self.store.count(name)
        # Registry first: once its rows are gone the documents are gone, whatever happens next.
        self.store.registry_delete(in_collection(name))
        self.store.flush(REGISTRY)
        self.store.drop_collection(name)
        self.pages.originals.drop_collection(name)
        return DeleteCollectionResponse(name=name, deleted_documents=documents, deleted_chunks=chunks)

    async def list_collections(self) -> CollectionList:
        def collect() -> CollectionList:
            return CollectionList(collections=[self._info(n) for n in self.store.list_collections()])

        return await self._run(collect)

    async def collection_names(self) -> CollectionNames:
        return CollectionNames(names=sorted(await self._run(self.store.list_collections)))

    async def create_collection(self, name: str) -> CollectionInfo:
        return await self._run(self._create, name)

    async def get_collection(self, name: str) -> CollectionInfo:
        return await self._run(self._get, name)

    async def delete_collection(self, name: str) -> DeleteCollectionResponse:
        return await self._run(self._drop, name)

    # -- documents ---------------------------------------------------------------------------
    async def upsert(
        self, collection: str, requests: list[UpsertDocumentRequest], *, commit_within_ms: int | None = None
    ) -> tuple[list[UpsertDocumentResponse], StageTimings]:
        """``commit_within_ms``: commit only within this long of now (a queue worker's remaining job lease)."""
        deadline = None if commit_within_ms is None else CommitDeadline.within_ms(commit_within_ms)
        docs = plan(collection, requests)

        def write() -> StageTimings:
            embedder = self.embedders.get()
            self._ensure(collection, embedder)
            writer = DocumentWriter(
                self.store, embedder, self.observe, self.leases, orders=self.orders, deadline=deadline
            )
            timings = writer.write(collection, docs)
            self.chunk_counts.forget(collection)  # the small-library BM25 scale counts the library as it is now
            self.growth.check(collection, lambda: self.store.count(collection))
            for doc in docs:  # a replaced document's old original goes when nothing else names it
                old = doc.existing["content_hash"] if doc.wrote and doc.existing else None
                if old and old != doc.request.content_hash:
                    self.pages.release(collection, old)
            return timings

        async with self._locks.hold(d.key for d in docs):
            timings = await self._run(write)
        return [d.response for d in docs if d.response is not None], timings

    async def relabel(self, collection: str, doc_id: str, labels: RelabelRequest) -> UpsertDocumentResponse:
        key = registry_key(collection, doc_id)

        def write() -> UpsertDocumentResponse:
            row = self.documents.registry_row(collection, doc_id)
            doc = PlannedDocument(request=None, doc_id=doc_id, key=key, existing=row)  # type: ignore[arg-type]  # a relabel has no request; upsert.py types it as always set
            writer = DocumentWriter(self.store, self.embedders.get(), self.observe, self.leases, orders=self.orders)
            status = writer.relabel(collection, doc, labels)
            return UpsertDocumentResponse(
                doc_id=doc_id, collection=collection, source=labels.source, status=status,
                chunk_count=int(row["chunk_count"]), warnings=doc.warnings,
            )  # fmt: skip

        async with self._locks.hold([key]):
            return await self._run(self._with_collection(collection, write))

    async def take_order(self) -> WriteOrder:
        """A write order for a write submitted now (the broker's counter, else this process's)."""
        return WriteOrder(order=await self._run(self.orders.take))

    async def list_documents(
        self,
        collection: str,
        *,
        offset: int,
        limit: int,
        source: str | None,
        order: DocumentOrder,
        key: str | None = None,
    ) -> DocumentList:
        def run() -> DocumentList:
            self._require(collection)
            return self.documents.list(collection, offset=offset, limit=limit, source=source, order=order, key=key)

        return await self._run(run)

    async def document_stamps(self, collection: str, prefix: str, meta: list[str]) -> DocumentStamps:
        def run() -> DocumentStamps:
            self._require(collection)
            return self.documents.stamps(collection, prefix, meta)

        return await self._run(run)

    async def find_documents(self, collection: str, keys: list[str]) -> DocumentList:
        def run() -> DocumentList:
            self._require(collection)
            found = self.documents.find(collection, keys)
            return DocumentList(documents=found, total=len(found), offset=0, limit=len(keys))

        return await self._run(run)

    async def get_document(self, collection: str, doc_id: str) -> DocumentContent:
        return await self._run(self._with_collection(collection, self.documents.content), collection, doc_id)

    async def get_document_structure(self, collection: str, doc_id: str) -> DocumentStructure:
        return await self._run(self._with_collection(collection, self.documents.structure), collection, doc_id)

    async def get_document_chunks(self, collection: str, doc_id: str, start: int, end: int | None) -> DocumentChunks:
        reader = self._with_collection(collection, self.documents.chunks)
        return await self._run(reader, collection, doc_id, start, end)

    async def delete_document(self, collection: str, doc_id: str) -> DeleteDocumentResponse:
        def delete() -> DeleteDocumentResponse:
            content_hash = self.documents.registry_row(collection, doc_id)["content_hash"]
            deleted = self.documents.delete(collection, doc_id)
            self.chunk_counts.forget(collection)
            self.pages.release(collection, content_hash)
            return deleted

        async with self._locks.hold([registry_key(collection, doc_id)]):
            return await self._run(self._with_collection(collection, delete))

    async def keep_original(self, collection: str, content_hash: str, data: bytes) -> bool:
        """Keep the original a document about to be written was converted from (its pages can then be shown)."""
        return await self._run(self.pages.keep, collection, content_hash, data)

    async def show_page(
        self,
        collection: str,
        doc_id: str,
        page: int,
        *,
        chunk: int | None,
        crop: Box | None,
        fmt: ImageFormat,
        query: str | None = None,
    ) -> ShownPage:
        show = functools.partial(self.pages.show, chunk=chunk, crop=crop, fmt=fmt, query=query)
        return await self._run(self._with_collection(collection, show), collection, doc_id, page)

    async def sweep_originals(self) -> int:
        """Originals no document names (older than a write lease: a write keeps its bytes before it commits)."""
        return await self._run(self.pages.sweep, self.leases.seconds)

    def _with_collection(self, collection: str, fn: Callable[..., T]) -> Callable[..., T]:
        def guarded(*args: Any) -> T:
            self._require(collection)
            return fn(*args)

        return guarded

    async def sweep_uncommitted(self) -> int:
        """Delete chunk rows of versions no writer can commit any more (left by a writer killed mid-write)."""
        started, removed = time.perf_counter(), 0
        for collection in await self._run(self.store.list_collections):
            swept = await self._sweep(collection)
            if swept:
                await self._run(self.store.flush, collection, REGISTRY)
            removed += swept
            await self._run(self.growth.check, collection, functools.partial(self.store.count, collection))
        log.info("uncommitted-version sweep done: %d chunk rows removed in %.0f ms", removed,
                 (time.perf_counter() - started) * 1000)  # fmt: skip
        return removed

    async def _sweep(self, collection: str, attempts: int = 5) -> int:
        for attempt in range(1, attempts + 1):
            try:
                return await self._run(recovery.sweep_collection, self.store, collection, self.leases.now_ms())
            except Exception:
                if attempt == attempts:
                    raise
                await anyio.sleep(attempt)
        return 0

    # -- search and embeddings -----------------------------------------------------------------
    def _targets(self, request: SearchRequest) -> list[str]:
        if request.collections and COLLECTION_KEY not in request.filters:
            # Named collections are not listed up front (one Milvus call less per search): a search of a
            # missing one fails, and _search then says which collections exist.
            return list(dict.fromkeys(request.collections))
        available = self.store.list_collections()
        names = list(dict.fromkeys(request.collections or available))
        wanted = request.filters.get(COLLECTION_KEY)
        if wanted is not None:
            if not isinstance(wanted, str):
                raise errors.invalid("Filter 'collection' takes a collection name.", "Give the name as a string.")
            if wanted not in available:
                raise errors.collection_not_found(wanted, available)
            names = [n for n in names if n == wanted]
        for name in names:
            if name not in available:
                raise errors.collection_not_found(name, available)
        return names

    def _search(self, request: SearchRequest, where: Where | None) -> SearchResponse:
        names = self._targets(request)
        try:
            return self._search_in(names, request, where)
        except Exception:
            missing = self._missing(names)
            if missing:
                raise errors.collection_not_found(missing[0], self.store.list_collections()) from None
            raise

    def _missing(self, names: list[str]) -> list[str]:
        try:
            return [name for name in names if not self.store.has_collection(name)]
        except Exception:  # noqa: BLE001 - Milvus itself is down: the original error says so
            return []

    def _search_in(self, names: list[str], request: SearchRequest, where: Where | None) -> SearchResponse:
        vector, embedding_ms = None, 0.0
        if request.mode != "keyword" and names:
            embedder = self.embedders.get()
            for name in names:
                self._check_model(name, embedder)
            started = time.perf_counter()
            vector = embedder.embed_query(request.query)
            embedding_ms = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        query = Query(
            request.mode, vector, request.query, request.top_k, where, request.min_score, request.exact_phrase,
            request.group_by_document, request.per_document,
        )  # fmt: skip
        # Every collection's candidates are fused once, on one scale (search.py).
        hits = search(self.store, names, query, fusion=self.fusion, candidates=self.candidates,
                      counts=self.chunk_counts)  # fmt: skip
        search_ms = (time.perf_counter() - started) * 1000
        self.observe("search", search_ms / 1000)
        spent: list[float] = []  # the seconds the judgment spent embedding and searching for meaning, if it did
        meaning = (
            functools.partial(self._meaning, request.query, vector, where, spent)
            if request.mode != "semantic"
            else None
        )
        why = off_topic(request.query, request.mode, hits, self.fusion, meaning, self.embedders.words) if hits else None
        if why == "under_floor" and request.mode == "semantic":
            started, embedded = time.perf_counter(), sum(spent)
            why = self._by_words_too(names, request, query, spent)
            search_ms += (time.perf_counter() - started - (sum(spent) - embedded)) * 1000  # its meaning: embedding_ms
        return SearchResponse(
            hits=hits,
            mode=request.mode,
            total_searched=chunk_total(self.store, names) if request.include_total or not hits else None,
            embedding_ms=round(embedding_ms + sum(spent) * 1000, 3),
            search_ms=round(search_ms, 3),
            on_topic=bool(hits) and why is None,
            off_topic=why,
        )

    def _by_words_too(
        self, names: list[str], request: SearchRequest, query: Query, spent: list[float]
    ) -> OffTopic | None:
        """A semantic answer under its floor, judged on the query's words and meaning together: on topic when the
        hybrid answer to the same query is (relevance.off_topic), else under its floor still. Meaning alone misses
        some true answers that hold the query's rare words (bench.tune_floor: 1.8% of SciFact test's relevant
        documents of a top 10 held back in semantic mode, 0.4% with this)."""
        worded = search(self.store, names, dataclasses.replace(query, mode="hybrid", min_score=None),
                        fusion=self.fusion, candidates=self.candidates, counts=self.chunk_counts)  # fmt: skip
        meaning = functools.partial(self._meaning, request.query, query.vector, query.where, spent)
        words = self.embedders.words
        judged = off_topic(request.query, "hybrid", worded, self.fusion, meaning, words) if worded else "under_floor"
        return None if judged is None else "under_floor"

    def _meaning(
        self,
        query: str,
        vector: list[float] | None,
        where: Where | None,
        spent: list[float],
        hits: list[SearchHit],
        text: str,
    ) -> list[float] | None:
        """How close in meaning each of an answer's ``hits`` is to ``text`` (search.meanings): the query (embedded now
        unless it was: keyword mode) or one of its words. None when a collection holding them was embedded with
        another model, or when a keyword search finds the model still loading or failed (keyword mode needs no model:
        its answer is then judged by its score alone). The seconds it took are added to ``spent``."""
        started = time.perf_counter()
        try:
            try:
                embedder = self.embedders.get()
            except DependencyUnavailable:
                if vector is not None:  # a hybrid search has the model: this is no keyword search's wait
                    raise
                return None
            names = dict.fromkeys(hit.collection for hit in hits)
            if any(self._model_mismatch(name, embedder) is not None for name in names):
                return None
            probe = vector if vector is not None and text == query else embedder.embed_query(text)
            return search_meanings(self.store, hits, probe, where)
        finally:
            spent.append(time.perf_counter() - started)

    async def search(self, request: SearchRequest) -> SearchResponse:
        try:
            where = build_filter(request.filters, request.tags)
        except FilterError as exc:
            raise errors.invalid(str(exc), "Fix the filter value; filters compare for equality.") from exc
        return await self._run(self._search, request, where)

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        def run() -> EmbedResponse:
            embedder = self.embedders.get()
            started = time.perf_counter()
            vectors = embedder.embed_documents(list(request.texts))
            elapsed = (time.perf_counter() - started) * 1000
            self.observe("embedding", elapsed / 1000)
            return EmbedResponse(
                vectors=vectors, model=embedder.model_name, dimension=embedder.dimension, embedding_ms=elapsed
            )

        return await self._run(run)

    async def embed_passages(self, request: EmbedPassagesRequest) -> EmbedResponse:
        texts = [passage_text(p.title, p.heading_path, p.text) for p in request.passages]
        return await self.embed(EmbedRequest(texts=texts))

    async def readiness(self) -> dict[str, str]:
        checks = {"model": self.embedders.status()}
        engine = self.store.engine  # "milvus" (Lite or a server) or "lance"
        try:
            with anyio.fail_after(5):
                await anyio.to_thread.run_sync(self.store.ping, abandon_on_cancel=True)
            checks[engine] = "ok"
        except TimeoutError:
            checks[engine] = f"no answer from {self.store.uri} within 5 s"
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready", with the reason
            checks[engine] = f"unreachable: {getattr(exc, 'message', None) or exc}"
        return checks
