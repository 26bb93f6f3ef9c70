"""Reads that ride out a Milvus restart: a collection the server calls released is loaded again, then read.

A restarted Milvus (standalone, or the `milvus-lite server` stand-in) comes back with every collection released
until someone loads it, and answers each read with code 101 ("Collection '_documents' is in state 'released';
call load() before search/get/query", or "collection not loaded" on standalone). The gateway loaded its
collections once at connect and remembered that, so after a restart every read failed for as long as the server
kept them released: 60 s and more of "Internal error" while /readyz stayed 200 (issue 27). The gateway must not
rely on the server reloading on its own, so every read on this client, the registry's and the leases' included,
loads the collection it names and tries once more when the server says it is not loaded.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("vector_gateway.milvus")

# The client calls that read a collection's rows (query_iterator reads its first page when made).
READS = frozenset({"query", "search", "hybrid_search", "get", "query_iterator"})
NOT_LOADED_CODE = 101


def not_loaded(exc: BaseException) -> bool:
    """Whether Milvus refused a read because the collection is not loaded (released, or never loaded)."""
    if getattr(exc, "code", None) == NOT_LOADED_CODE:
        return True
    text = str(exc).lower()
    return "'released'" in text or "not loaded" in text


def collection_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    name = kwargs.get("collection_name", args[0] if args else None)
    return name if isinstance(name, str) else None


class ReloadingClient:
    """A pymilvus ``MilvusClient`` (or a LiteClient around one) whose reads load a released collection once and
    are tried again; every other call passes through unchanged."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name not in READS or not callable(attribute):
            return attribute
        return functools.partial(self._read, attribute)

    def _read(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except Exception as exc:
            collection = collection_of(args, kwargs)
            if collection is None or not not_loaded(exc):
                raise
        log.warning("Milvus says collection %s is not loaded (restarted?): loading it again", collection)
        self._client.load_collection(collection)
        return call(*args, **kwargs)
