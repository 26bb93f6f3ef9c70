"""The backend as the caller may use it: every Backend method runs under a declared rule; one without a rule is
refused (deny by default).

Every profile's tools, the Library facade, the ingest pipeline and the note index reach the services through
the app state's backend, so checking here checks all five profiles at once. The guard holds the backend (it is
no subclass of it): a method it has no rule for in RULES is never passed through, whether it was added to
Backend later or not. A collection the caller may not read answers as a missing one (its name does not leak),
however it is named (an argument, search's ``filters.collection``); every "available collections" list holds
readable ones only, the gateway's too; a write without the right is refused with FORBIDDEN before anything is
sent; every write, delete and collection change leaves one audit record, and so does every refused read (the
caller still sees a missing collection; access/audit.py).

A new Backend method gets one line in RULES: ``Open()`` when it names no collection, ``Read()`` when it reads
one (``Read("name")`` when its argument has another name), ``Write("its_action")`` when it writes one.
tests/test_access_rules.py fails while a Backend method has no rule.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from ingestion_contracts import check_collection_name
from ingestion_contracts.common import NAME_RULE, collection_missing
from ingestion_contracts.gateway import SearchRequest, SearchResponse
from ingestion_contracts.vectors import VectorSearchResponse, VectorStoreInfo

from ..backend import Backend
from ..errors import CollectionNotFound, ToolFailure
from .audit import audited, refused_read
from .policy import Right, current_caller

log = logging.getLogger("ingestion_mcp.access")
COLLECTION_FILTER = "collection"  # a search filter that selects the collection searched, not a chunk field
Call = Callable[..., Coroutine[Any, Any, Any]]
Arguments = Mapping[str, Any]


class Rule(Protocol):
    """How one Backend method may be called: ``call`` is the backend's own method, ``args`` its arguments by name."""

    async def __call__(self, guard: GuardedBackend, call: Call, args: inspect.BoundArguments) -> Any: ...


@dataclass(frozen=True)
class Open:
    """Names no collection (conversion, chunking, embedding, the services' health): any caller may call it."""

    async def __call__(self, guard: GuardedBackend, call: Call, args: inspect.BoundArguments) -> Any:
        return await call(*args.args, **args.kwargs)


@dataclass(frozen=True)
class Read:
    """Reads the collection its argument ``arg`` names: one the caller may not read answers as a missing one."""

    arg: str = "collection"

    async def __call__(self, guard: GuardedBackend, call: Call, args: inspect.BoundArguments) -> Any:
        name = args.arguments[self.arg]
        await guard.readable(name, getattr(call, "__name__", "read"))
        try:
            return await call(*args.args, **args.kwargs)
        except CollectionNotFound as exc:
            raise await guard.missing(name, exc) from None


def _no_key(args: Arguments) -> str | None:
    return None


@dataclass(frozen=True)
class Write:
    """Writes to the collection (or vector store) its argument ``arg`` names: it needs ``right`` there whether the
    collection exists or not (so a refusal tells nothing of it), and leaves an audit record named ``action`` with
    the document ``key`` gives."""

    action: str
    right: Right = "write"
    arg: str = "collection"
    key: Callable[[Arguments], str | None] = _no_key

    async def __call__(self, guard: GuardedBackend, call: Call, args: inspect.BoundArguments) -> Any:
        name = args.arguments[self.arg]
        work = call(*args.args, **args.kwargs)
        try:
            return await audited(self.action, name, self.key(args.arguments), self.right, work)
        except CollectionNotFound as exc:
            raise await guard.missing(name, exc) from None


# -- the rules that answer for the caller: listings, search, the raw vector stores --------------------------------
async def readable_names(guard: GuardedBackend, call: Call, args: inspect.BoundArguments) -> list[str]:
    return await guard.readable_names()


async def readable_listing(guard: GuardedBackend, call: Call, args: inspect.BoundArguments) -> Any:
    listing = await call()
    caller = current_caller()
    listing.collections = [c for c in listing.collections if caller.can("read", c.name)]
    return listing


async def readable_search(guard: GuardedBackend, call: Call, args: inspect.BoundArguments) -> SearchResponse:
    """Over the named collections (each must be readable), or over every readable one when none is named.

    ``filters.collection`` names a collection like the argument does (it is sent as the one collection
    searched, never as a filter): the same readable-or-missing rule, and a bad value is blamed as itself."""
    caller = current_caller()
    request = scoped(args.arguments["request"])
    if request.collections:
        for name in request.collections:
            await guard.readable(name, "search")
    elif not caller.everywhere("read"):
        readable = await guard.readable_names()
        if not readable:
            return SearchResponse(hits=[], mode=request.mode, total_searched=0, embedding_ms=0.0, search_ms=0.0)
        request = request.model_copy(update={"collections": readable})
    try:
        return cast(SearchResponse, await call(request))
    except CollectionNotFound as exc:  # the gateway names the one missing
        named = exc.details.get("collection")
        if not isinstance(named, str):
            raise
        raise await guard.missing(named, exc) from None


async def readable_store_search(guard: GuardedBackend, call: Call, args: inspect.BoundArguments) -> Any:
    if not guard.may_read(args.arguments["store"], "vector_search"):  # as the gateway answers a store not there
        return VectorSearchResponse(results=[], total_searched=0, metric=None)
    return await call(*args.args, **args.kwargs)


async def readable_store(guard: GuardedBackend, call: Call, args: inspect.BoundArguments) -> Any:
    store, namespace = args.arguments["store"], args.arguments["namespace"]
    if not guard.may_read(store, "vector_store"):
        return VectorStoreInfo(store=store, namespace=namespace, count=0, dimension=None, metric=None)
    return await call(*args.args, **args.kwargs)


def _document_key(args: Arguments) -> str | None:
    return args["request"].key or args["request"].source


def _document_keys(args: Arguments) -> str:
    return ", ".join(str(doc.key or doc.source) for doc in args["documents"])


# Every Backend method, and how it may be called. A method missing here is refused (GuardedBackend.__getattr__).
RULES: dict[str, Rule] = {
    # docling, chunker, embeddings, write orders, health: no collection named
    "convert": Open(),
    "chunk": Open(),
    "chunk_batch": Open(),
    "embed": Open(),
    "embed_passages": Open(),
    "embedding_model": Open(),
    "write_order": Open(),
    "readiness": Open(),
    "aclose": Open(),
    # reads of one collection
    "get_collection": Read("name"),
    "list_documents": Read(),
    "find_document": Read(),
    "find_documents": Read(),
    "document_stamps": Read(),
    "get_document": Read(),
    "get_structure": Read(),
    "get_chunks": Read(),
    "page_image": Read(),  # a page is read as the document's text is
    # writes
    "upsert": Write("upsert_document", key=_document_key),
    "upsert_batch": Write("upsert_documents", key=_document_keys),
    "keep_original": Write("keep_original", key=lambda args: args["content_hash"]),  # kept before the write
    "relabel": Write("relabel_document", key=lambda args: args["doc_id"]),
    "delete_document": Write("delete_document", key=lambda args: args["doc_id"]),
    "create_collection": Write("create_collection", arg="name"),
    "delete_collection": Write("delete_collection", right="admin", arg="name"),
    "vector_add": Write("vector_add", arg="store"),
    "vector_delete": Write("vector_delete", arg="store", key=lambda args: args["vector_id"]),
    # answered for the caller: only what it may read
    "collection_names": readable_names,
    "list_collections": readable_listing,
    "search": readable_search,
    "vector_search": readable_store_search,
    "vector_store": readable_store,
}


class NoRule(ToolFailure, AttributeError):
    """A Backend method (or attribute) the guard has no rule for: refused, never passed through. An
    AttributeError too, so ``hasattr`` and ``getattr(..., default)`` read it as absent."""


class GuardedBackend:
    """The backend it holds, each method under its rule in RULES; anything else is refused (NoRule)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @classmethod
    def over(cls, backend: Backend) -> Backend:
        """The guarded backend, as the Backend its users call: it answers every Backend method (RULES). A backend
        already guarded is given back as it is (the rules ask the caller of each call, not of the wrapping)."""
        return backend if isinstance(backend, GuardedBackend) else cast(Backend, cls(backend))

    def __getattr__(self, name: str) -> Any:
        rule = RULES.get(name)
        if rule is None or name.startswith("_"):
            if name.startswith("__"):  # Python's own protocol lookups (copy, pickle): plainly absent
                raise AttributeError(name)
            log.error("refused backend call %r: it has no access rule (access/guarded_backend.py RULES)", name)
            raise NoRule(
                f"Not allowed: the server has no access rule for the backend call '{name}', so it is refused.",
                "This is a defect of the server, not of the request: report it.",
                code="FORBIDDEN",
                status=403,
                details={"backend_call": name},
            )
        method = getattr(self.backend, name)
        signature = _signature(type(self.backend), name)

        async def guarded(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return await rule(self, method, bound)

        guarded.__name__ = name
        return guarded

    async def readable(self, collection: str, action: str) -> None:
        """Refuse a read the caller may not make (``action``, the backend call) as a missing collection would be."""
        if not self.may_read(collection, action):
            raise await self.missing(collection)

    @staticmethod
    def may_read(collection: str, action: str) -> bool:
        """Whether the caller may read `collection`; a refusal leaves one audit record, the caller sees none."""
        if current_caller().can("read", collection):
            return True
        refused_read(action, collection)
        return False

    async def readable_names(self) -> list[str]:
        caller = current_caller()
        return [name for name in await self.backend.collection_names() if caller.can("read", name)]

    async def missing(self, collection: str, said: CollectionNotFound | None = None) -> CollectionNotFound:
        """The one "not found" (ingestion_contracts.common.collection_missing, as the gateway words it),
        listing only the collections the caller may read: a missing and an unreadable collection answer alike.
        What the gateway ``said`` stands when the caller may read every collection (it lists what it may read)."""
        if said is not None and current_caller().everywhere("read"):
            return said
        body = collection_missing(collection, await self.readable_names())
        return CollectionNotFound(body.error, body.suggestion, code=body.code, status=404, details=body.details)


_SIGNATURES: dict[tuple[type, str], inspect.Signature] = {}


def _signature(kind: type, name: str) -> inspect.Signature:
    """The method's parameters without ``self`` (looked up once per method): a call's arguments by their names."""
    found = _SIGNATURES.get((kind, name))
    if found is None:
        signature = inspect.signature(getattr(kind, name))
        found = _SIGNATURES[kind, name] = signature.replace(parameters=list(signature.parameters.values())[1:])
    return found


def unruled(kind: type[Backend] = Backend) -> list[str]:
    """The public methods of ``kind`` without a rule: each would be refused (tests/test_access_rules.py)."""
    return sorted(
        name for name, member in inspect.getmembers(kind, callable) if not name.startswith("_") and name not in RULES
    )


def scoped(request: SearchRequest) -> SearchRequest:
    """``filters.collection`` as the collection searched: a string that is a collection name, and (with named
    collections) one of them; anything else is refused naming the filter, whatever collections exist."""
    wanted = request.filters.get(COLLECTION_FILTER)
    if wanted is None:
        return request
    shown = repr(wanted)[:80]
    if not isinstance(wanted, str):
        raise bad_filter(f"Filter 'collection' takes a collection name; {shown} is not one.")
    try:
        check_collection_name(wanted)
    except ValueError:
        raise bad_filter(f"Filter 'collection' value {shown} is not a collection name: use {NAME_RULE}.") from None
    if request.collections and wanted not in request.collections:
        raise bad_filter(
            f"Filter 'collection' value {shown} contradicts the collections named ({', '.join(request.collections)})."
        )
    filters = {key: value for key, value in request.filters.items() if key != COLLECTION_FILTER}
    return request.model_copy(update={"collections": [wanted], "filters": filters})


def bad_filter(message: str) -> ToolFailure:
    return ToolFailure(
        message,
        "Give filters.collection a collection name (list them with get_collections), or leave it out.",
        code="INVALID_INPUT",
        status=400,
        details={"filter": COLLECTION_FILTER},
    )
