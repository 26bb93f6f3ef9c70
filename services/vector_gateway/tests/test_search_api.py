"""Search modes, filters, tags, scores and errors, on a small real corpus in Milvus Lite."""

from __future__ import annotations

from typing import Any

import pytest

CORPUS = "search_corpus"
OTHER = "search_other"
RARE = "The xylophonist quibbled with the zymurgist about fermentation."
CAR = "Changing a flat tire on your car takes ten minutes with a jack."
PARAPHRASE = "swapping punctured wheels"  # no word in common with CAR
HOSTILE_SOURCE = 'x" or doc_id != "'


@pytest.fixture(scope="module")
async def corpus(gateway_app, make_doc, upsert) -> dict[str, Any]:
    client = gateway_app[0]
    docs = {
        "zoo": make_doc("zoo.md", ["Lions sleep most of the day.", RARE], title="Zoo notes"),
        "car": make_doc("car.md", [CAR, "Check the spare before long trips."], title="Road trips"),
        "manual": make_doc(
            "manual.pdf",
            ["Safety instructions for the press.", "Pages two and three: maintenance.", "Warranty on page four."],
            file_type="pdf",
            chunk0={"page": 1},
            chunk1={"page": 2, "page_end": 3},
            chunk2={"page": 4},
        ),
        "report": make_doc(
            "report.md",
            ["Quarterly revenue grew in the third quarter."],
            tags=["finance", "q3"],
            metadata={"lang": "de", "year": 2024, "draft": False},
        ),
        "hostile": make_doc(HOSTILE_SOURCE, ["A document whose source looks like an injection."]),
    }
    ids = {key: (await upsert(client, CORPUS, body))["doc_id"] for key, body in docs.items()}
    ids["other"] = (await upsert(client, OTHER, make_doc("other.md", ["Zymurgist guild meeting minutes."])))["doc_id"]
    return ids


def _chunks(response: dict[str, Any]) -> list[tuple[str, int]]:
    return [(h["doc_id"], h["chunk_index"]) for h in response["hits"]]


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
async def test_rare_words_find_their_chunk(client, corpus, search, mode: str) -> None:
    result = await search(client, query="xylophonist zymurgist", collections=[CORPUS], mode=mode)
    assert _chunks(result)[0] == (corpus["zoo"], 1)
    scores = [h["score"] for h in result["hits"]]
    assert result["hits"][0]["text"] == RARE and scores[0] > max(scores[1:], default=0.0)


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
async def test_paraphrase_finds_its_chunk_without_shared_words(client, corpus, search, mode: str) -> None:
    result = await search(client, query=PARAPHRASE, collections=[CORPUS], mode=mode, top_k=3)
    assert _chunks(result)[0] == (corpus["car"], 0)


async def test_keyword_mode_needs_shared_words(client, corpus, search) -> None:
    result = await search(client, query=PARAPHRASE, collections=[CORPUS], mode="keyword")
    assert (corpus["car"], 0) not in _chunks(result)


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
async def test_scores_are_between_0_and_1_best_first(client, corpus, search, mode: str) -> None:
    result = await search(
        client, query="trips car spare tire zoo", collections=[CORPUS], mode=mode, top_k=20, include_total=True
    )
    scores = [h["score"] for h in result["hits"]]
    assert scores and all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    assert result["total_searched"] == 9 and result["search_ms"] > 0
    # Keyword mode embeds the query only to judge an answer that shares words but not all of them (relevance.py).
    assert result["embedding_ms"] > 0 or mode == "keyword"
    if mode == "keyword":
        holding = await search(client, query="car spare tire", collections=[CORPUS], mode=mode)
        assert holding["hits"] and holding["embedding_ms"] == 0 and holding["on_topic"]


async def test_chunks_are_counted_when_asked_or_when_nothing_matched(client, corpus, search) -> None:
    found = await search(client, query="car spare tire", collections=[CORPUS], mode="keyword")
    assert found["hits"] and found.get("total_searched") is None  # not asked: one query less per search
    none = await search(client, query="xylophonequartz", collections=[CORPUS], mode="keyword")
    assert none["hits"] == [] and none["total_searched"] == 9  # tells "no match" from "empty index"


@pytest.mark.parametrize(
    ("filters", "tags", "expected"),
    [
        ({"page": 3}, [], [("manual", 1)]),
        ({"page": 4, "file_type": "pdf"}, [], [("manual", 2)]),
        ({"metadata.lang": "de", "metadata.year": 2024}, [], [("report", 0)]),
        ({"metadata.draft": False}, [], [("report", 0)]),
        ({}, ["finance", "q3"], [("report", 0)]),
        ({}, ["finance", "absent"], []),
        ({"source": HOSTILE_SOURCE}, [], [("hostile", 0)]),
        ({"source": '") or (1==1'}, [], []),
        ({"metadata.lang": 'de" or metadata["lang"] != "'}, [], []),
        ({"title": "Zoo notes", "chunk_index": 0}, [], [("zoo", 0)]),
    ],
)
async def test_filters_select_exactly_the_matching_chunks(client, corpus, search, filters, tags, expected) -> None:
    # A query each chunk shares a word with: a filter selects among hits, and a hit scores above 0.
    query = "lions xylophonist tire spare safety maintenance warranty quarterly document"
    result = await search(client, query=query, collections=[CORPUS], filters=filters, tags=tags, top_k=50)
    assert sorted(_chunks(result)) == sorted((corpus[key], index) for key, index in expected)


async def test_min_score_drops_weak_hits(client, corpus, search) -> None:
    loose = await search(client, query=PARAPHRASE, collections=[CORPUS], mode="semantic", top_k=20)
    positive = sorted(h["score"] for h in loose["hits"] if h["score"] > 0)  # calibrated: far hits score 0
    cut = positive[len(positive) // 2]
    strict = await search(client, query=PARAPHRASE, collections=[CORPUS], mode="semantic", top_k=20, min_score=cut)
    assert 0 < len(strict["hits"]) < len(loose["hits"])
    assert all(h["score"] >= cut for h in strict["hits"])


async def test_unknown_filter_key_is_422_with_the_allowed_keys(client, corpus, search) -> None:
    body = await search(client, 422, query="x", filters={"colour": "red"})
    assert "Unknown filter key 'colour'" in body["error"] and "file_type" in body["error"]
    wrong_type = await search(client, 422, query="x", filters={"page": "three"})
    assert "integer" in wrong_type["error"]


async def test_unknown_collection_is_404_with_the_available_names(client, corpus, search) -> None:
    body = await search(client, 404, query="x", collections=[CORPUS, "no_such_collection"])
    assert body["code"] == "COLLECTION_NOT_FOUND"
    assert {CORPUS, OTHER} <= set(body["details"]["available_collections"])


async def test_all_collections_are_searched_and_merged(client, corpus, search) -> None:
    everywhere = await search(client, query="zymurgist", mode="keyword", top_k=50)
    found = {(h["collection"], h["doc_id"]) for h in everywhere["hits"]}
    assert {(CORPUS, corpus["zoo"]), (OTHER, corpus["other"])} <= found
    only_other = await search(
        client, query="zymurgist", mode="keyword", filters={"collection": OTHER}, include_total=True
    )
    assert {h["collection"] for h in only_other["hits"]} == {OTHER}
    assert only_other["total_searched"] == 1


async def test_hits_carry_the_document_fields(client, corpus, search) -> None:
    result = await search(client, query="Quarterly revenue", collections=[CORPUS], top_k=1)
    hit = result["hits"][0]
    assert hit["doc_id"] == corpus["report"] and hit["source"] == "report.md"
    assert (hit["tags"], hit["metadata"]["year"], hit["page"]) == (["finance", "q3"], 2024, None)
    assert "vector" not in hit and "search_text" not in hit


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
async def test_each_hit_explains_its_score(client, corpus, search, mode: str) -> None:
    # The two collections of this module (the shared database also holds other tests' collections).
    result = await search(client, query="spare tire zymurgist", mode=mode, top_k=20, collections=[CORPUS, OTHER])
    assert result["hits"]
    for hit in result["hits"]:
        assert hit["score"] == pytest.approx(hit["dense_score"] + hit["keyword_score"], abs=2e-6)
        assert hit["collection"] in (CORPUS, OTHER)
        assert hit["dense_rank"] is not None or hit["keyword_rank"] is not None
        if mode == "semantic":
            assert hit["keyword_score"] == 0 and hit["keyword_rank"] is None and hit["dense_rank"] >= 1
        if mode == "keyword":
            assert hit["dense_score"] == 0 and hit["dense_rank"] is None and hit["keyword_rank"] >= 1
    ranks = [h["dense_rank"] for h in result["hits"] if h["dense_rank"] is not None]
    assert len(ranks) == len(set(ranks)), "one dense ranking over both collections"


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
async def test_a_hit_that_scores_0_in_every_part_is_no_result(client, unique, upsert, make_doc, search, mode) -> None:
    """Issue 30, point 4: of a small collection only one chunk is about the query; the others score 0 in
    both parts (far in meaning, no shared word) and are not returned, whatever top_k asks for."""
    name = unique("zero")
    texts = ["Okapis are shy forest giraffes of the Ituri rainforest.", "SELECT count(*) FROM ledger WHERE id = 7;",
             "0x7f3a 0x19bc 0xffee 0x0001", "Tschüss, bis morgen um acht Uhr."]  # fmt: skip
    for i, text in enumerate(texts):
        await upsert(client, name, make_doc(f"z{i}.md", [text]))
    found = await search(client, query="okapi giraffe rainforest", collections=[name], mode=mode, top_k=10)
    assert [h["text"] for h in found["hits"]] == texts[:1], [(h["text"], h["score"]) for h in found["hits"]]
    assert all(h["dense_score"] > 0 or h["keyword_score"] > 0 for h in found["hits"])
