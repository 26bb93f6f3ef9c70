"""Documents, not only passages: a search grouped by document counts documents in top_k (issue 52, point 6).

Two real documents: Nettle's manual (six passages, test_exact_phrase_api) and the GPL-3 text every Debian system
carries (twelve of its paragraphs, one of which speaks of keys and functions: "Installation Information"). Asked
about encryption, a passage search fills its top 3 with Nettle's passages; grouped, the top 3 holds both documents,
each with its best passages and how many more of its own matched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_exact_phrase_api import NETTLE

GPL = [p.strip() for p in Path("/usr/share/common-licenses/GPL-3").read_text().split("\n\n") if len(p.strip()) > 300]
QUERY = "encryption function and key"


@pytest.fixture(scope="module")
async def library(gateway_app: Any, make_doc: Any, upsert: Any) -> str:
    name = "grouped"
    await upsert(gateway_app[0], name, make_doc("nettle.pdf", NETTLE, title="Nettle"))
    await upsert(gateway_app[0], name, make_doc("gpl-3.txt", GPL[12:24], title="GNU General Public License v3"))
    return name


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
async def test_top_k_counts_documents_when_grouped(client, library, search, mode: str) -> None:
    passages = await search(client, query=QUERY, collections=[library], mode=mode, top_k=3)
    assert len({h["source"] for h in passages["hits"]}) < 3  # Nettle's passages crowd the top 3
    assert all(h["more_in_document"] is None for h in passages["hits"])
    grouped = await search(client, query=QUERY, collections=[library], mode=mode, top_k=3, group_by_document=True)
    sources = [h["source"] for h in grouped["hits"]]
    assert sorted(sources) == ["gpl-3.txt", "nettle.pdf"], sources  # every document once: both there are
    best = grouped["hits"][0]
    assert best["chunk_id"] == passages["hits"][0]["chunk_id"]  # each document is shown by its best passage
    nettle = next(h for h in grouped["hits"] if h["source"] == "nettle.pdf")
    assert nettle["more_in_document"] >= sum(h["source"] == "nettle.pdf" for h in passages["hits"]) - 1


async def test_a_per_document_cap_shows_each_documents_best_passages(client, library, search) -> None:
    passages = await search(client, query=QUERY, collections=[library], top_k=20)
    by_source: dict[str, list[str]] = {}
    for hit in passages["hits"]:
        by_source.setdefault(hit["source"], []).append(hit["chunk_id"])
    grouped = await search(client, query=QUERY, collections=[library], top_k=2, group_by_document=True,
                           per_document=2)  # fmt: skip
    shown: dict[str, list[str]] = {}
    for hit in grouped["hits"]:
        shown.setdefault(hit["source"], []).append(hit["chunk_id"])
        assert hit["more_in_document"] == len(by_source[hit["source"]]) - 2
    assert shown == {source: chunks[:2] for source, chunks in by_source.items()}


async def test_the_cap_is_bounded(client, library, search) -> None:
    await search(client, status=422, query=QUERY, collections=[library], group_by_document=True, per_document=11)
