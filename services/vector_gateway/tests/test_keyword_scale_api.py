"""A passage holding a query's rare words scores in the same class in a library of 1, 10 or 5,000+ chunks (issue 52,
point 3).

BM25's IDF follows the collection's size: a word found in the only chunk of a one-chunk collection has an IDF of
0.29, the same word in one of 5,000 chunks 8.1. Before, the one passage that held every word of the query scored
0.02 in a one-document library (read: irrelevant) and 0.5 in a large one. The passages are real: Nettle's manual
(the GCM passage of test_exact_phrase_api) among the paragraphs of the GPL-3 text every Debian system carries.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ingestion_contracts.gateway import RELEVANT_SCORE
from test_exact_phrase_api import NETTLE
from vector_gateway.calibration import REFERENCE_CHUNKS
from vector_gateway.passages import passage_text

NEEDLE = NETTLE[3]  # the GCM macros: gcm_encrypt, gcm_decrypt, gcm_digest, GCM_CTX
# Five rare words of it, not in its order (no exact phrase) and more than three (no exact-words lift): BM25 alone.
QUERY = "gcm_digest gcm_decrypt underlying gcm_encrypt macro"
GPL = Path("/usr/share/common-licenses/GPL-3")


def filler(count: int) -> list[str]:
    paragraphs = [p.strip() for p in GPL.read_text(encoding="utf-8").split("\n\n") if len(p.strip()) > 200]
    return [f"{paragraphs[i % len(paragraphs)]} ({i})" for i in range(count)]


@pytest.fixture(scope="module")
async def libraries(gateway_app: Any, make_doc: Any, upsert: Any, embedder: Any) -> AsyncIterator[dict[int, str]]:
    """Collections of 1, 10 and REFERENCE_CHUNKS + 1 chunks, the needle in each, searched right after the last write.
    The needle is written first and indexed (a library at rest), then the other passages arrive: on Lance the needle
    would keep the statistics of the index that held it alone (lance/upkeep.py, BM25_LAG). The large library is written
    with its vectors (the fillers' embedded once and repeated) so that it takes seconds, not minutes."""
    client, store, out = gateway_app[0], gateway_app[1].state.gateway.store, {}
    texts = filler(REFERENCE_CHUNKS)
    distinct = embedder.embed_documents([passage_text("GPL-3", [], t) for t in texts[:40]])
    # The search comes before the background upkeep a write starts (a race a real client often wins, by ~0.3 s at
    # 5,000 rows): that upkeep is held back here, so what is checked is the library as the write left it.
    with pytest.MonkeyPatch.context() as patch:
        if store.engine == "lance":
            patch.setattr(store.upkeep, "_start", lambda name: None)
        for size in (1, 10, REFERENCE_CHUNKS + 1):
            out[size] = name = f"scale_{size}"
            await upsert(client, name, make_doc("nettle.pdf", [NEEDLE], title="Nettle"))
            if store.engine == "lance":
                store.optimize(name)  # on Milvus Lite the write flushed: the needle is a segment of its own
            if size > 1:
                body = make_doc("gpl-3.txt", texts[: size - 1], title="GPL-3") | {
                    "vectors": [distinct[i % len(distinct)] for i in range(size - 1)],
                    "embedding_model": embedder.model_name,
                }
                await upsert(client, name, body)
        yield out


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
async def test_the_same_passage_scores_relevant_at_any_library_size(client, libraries, search, mode: str) -> None:
    scores = {}
    for size, name in libraries.items():
        found = await search(client, query=QUERY, collections=[name], mode=mode, top_k=3)
        first = found["hits"][0]
        assert first["source"] == "nettle.pdf", (size, found["hits"])
        assert first["phrase_score"] == 0  # scored by BM25 (and meaning), no exact lift
        scores[size] = first["score"]
    assert all(score >= RELEVANT_SCORE[mode] for score in scores.values()), scores
