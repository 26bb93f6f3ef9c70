"""Through the HTTP API: a chunk across a page break is cited by the page of the passage that matched (issue 21),
in every mode, keeps its page starts when only its labels change, and refuses page starts outside its text."""

from __future__ import annotations

from typing import Any

import pytest

END_OF_8 = "Members agreed to revisit the budget targets once the full-year results are known.\n\n"
TOP_OF_9 = "Inspector Haverford counted 4817 amber lanterns in the Velmora depot."
STARTS = [{"offset": 0, "page": 8}, {"offset": len(END_OF_8), "page": 9}]


def report(make_doc, **fields: Any) -> dict[str, Any]:
    return make_doc(
        "report.pdf", [END_OF_8 + TOP_OF_9], file_type="pdf", chunk0={"page": 8, "page_end": 9, "page_starts": STARTS},
        **fields,
    )  # fmt: skip


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "semantic"])
async def test_a_hit_cites_the_page_of_the_passage_it_matched(client, unique, make_doc, upsert, search, mode) -> None:
    name = unique("cite")
    await upsert(client, name, report(make_doc))
    for query, page in (("Haverford amber lanterns Velmora", 9), ("budget targets full-year results", 8)):
        hit = (await search(client, query=query, collections=[name], mode=mode))["hits"][0]
        assert (hit["page"], hit["page_end"], hit["cited_page"]) == (8, 9, page), (query, hit)


async def test_new_labels_keep_the_page_starts(client, unique, make_doc, upsert, search) -> None:
    name = unique("cite")
    await upsert(client, name, report(make_doc))
    assert (await upsert(client, name, report(make_doc, tags=["audited"])))["status"] == "updated"
    hit = (await search(client, query="Haverford lanterns", collections=[name], tags=["audited"]))["hits"][0]
    assert hit["cited_page"] == 9 and "__ingest" not in hit["metadata"], hit


async def test_page_starts_outside_the_text_are_refused(client, unique, make_doc, upsert) -> None:
    body = make_doc("bad.pdf", ["Short text."], chunk0={"page": 1, "page_end": 2,
                    "page_starts": [{"offset": 0, "page": 1}, {"offset": 40, "page": 2}]})  # fmt: skip
    refused = await upsert(client, unique("cite"), body, status=422)
    assert "page_starts" in str(refused) and "inside `text`" in str(refused), refused
