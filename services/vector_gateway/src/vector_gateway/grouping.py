"""A passage ranking folded into documents (SearchRequest.group_by_document): top_k counts documents, each shown by
its best passages, with how many more of its passages the ranking holds (the Milvus grouping search's and Qdrant's
group API's shape)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

# A search grouped by document ranks this many candidates per document asked for (top_k 10: 100 per list, what the
# benchmarks fold into documents, so the tool's grouped figure is theirs: docs/search-scores.md).
GROUP_DEPTH = 10

H = TypeVar("H")


def document(collection: str, entity: dict[str, Any]) -> tuple[str, str]:
    """What a passage is grouped by: its collection and document."""
    return collection, entity["doc_id"]


def grouped(
    ranked: list[H], documents: int, per_document: int, key: Callable[[H], Hashable]
) -> tuple[list[H], dict[Hashable, int]]:
    """The first ``documents`` documents of a passage ranking (by their best passage), each with its best
    ``per_document`` passages in a row, and how many more of each one's passages the ranking holds."""
    groups: dict[Hashable, list[H]] = {}
    for hit in ranked:
        groups.setdefault(key(hit), []).append(hit)
    chosen = list(groups)[:documents]
    shown = [hit for name in chosen for hit in groups[name][:per_document]]
    return shown, {name: max(0, len(groups[name]) - per_document) for name in chosen}
