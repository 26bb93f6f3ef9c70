"""Collections and documents: create, list, page, read back, delete."""

from __future__ import annotations

from typing import Any

MARKDOWN = (
    "# Field guide\n\nZebras live in herds on the savanna and eat grass.\n\n"
    "## Night\n\nAt night the herd sleeps standing, while one zebra keeps watch for lions.\n\nThe end."
)


def _overlapping_chunks(text: str, size: int, overlap: int) -> list[dict[str, Any]]:
    chunks, start = [], 0
    while True:
        end = min(len(text), start + size)
        chunks.append({"index": len(chunks), "text": text[start:end], "start": start, "end": end, "page": 1})
        if end == len(text):
            return chunks
        start = end - overlap


async def test_get_document_rebuilds_the_markdown_exactly(client, unique, upsert, make_doc) -> None:
    name = unique("rebuild")
    body = make_doc("guide.md", ["x"], title="Field guide", tags=["nature"], metadata={"lang": "en"})
    body["chunks"] = _overlapping_chunks(MARKDOWN, 60, 25)
    doc_id = (await upsert(client, name, body))["doc_id"]
    response = await client.get(f"/v1/collections/{name}/documents/{doc_id}")
    assert response.status_code == 200
    document = response.json()
    assert document["content"] == MARKDOWN
    assert (document["chunk_count"], document["tags"], document["metadata"]) == (
        len(body["chunks"]),
        ["nature"],
        {"lang": "en"},
    )
    assert document["created_at"] <= document["updated_at"]


async def test_chunk_ranges_for_context_windows(client, unique, upsert, make_doc) -> None:
    name = unique("ranges")
    doc_id = (await upsert(client, name, make_doc("r.md", [f"Chunk number {i}." for i in range(6)])))["doc_id"]
    base = f"/v1/collections/{name}/documents/{doc_id}/chunks"
    middle = (await client.get(base, params={"start": 2, "end": 4})).json()
    assert [c["chunk_index"] for c in middle["chunks"]] == [2, 3, 4]
    assert middle["chunk_count"] == 6 and middle["chunks"][0]["text"] == "Chunk number 2."
    tail = (await client.get(base, params={"start": 4})).json()
    assert [c["chunk_index"] for c in tail["chunks"]] == [4, 5]
    backwards = await client.get(base, params={"start": 4, "end": 1})
    assert backwards.status_code == 422 and "before start" in backwards.json()["error"]


async def test_list_documents_pages_and_orders(client, unique, upsert, make_doc) -> None:
    name = unique("pages")
    sources = ["c.md", "a.md", "e.md", "b.md", "d.md"]
    for source in sources:
        await upsert(client, name, make_doc(source, [f"Text of {source}."]))
    base = f"/v1/collections/{name}/documents"
    newest = (await client.get(base, params={"limit": 2})).json()
    assert (newest["total"], newest["offset"], newest["limit"]) == (5, 0, 2)
    assert [d["source"] for d in newest["documents"]] == ["d.md", "b.md"]
    pages = [(await client.get(base, params={"order": "source", "offset": o, "limit": 2})).json() for o in (0, 2, 4)]
    assert [d["source"] for p in pages for d in p["documents"]] == sorted(sources)
    one = (await client.get(base, params={"source": "e.md"})).json()
    assert [d["source"] for d in one["documents"]] == ["e.md"] and one["total"] == 1
    assert (await client.get(base, params={"limit": 0})).status_code == 422


async def test_document_stamps_read_a_key_prefix_in_one_call(client, unique, upsert, make_doc) -> None:
    """What a folder sync compares a folder with: key, doc_id, hash and the asked metadata under a key prefix."""
    name = unique("stamps")
    for key, size in (("/docs/a/one.md", 10), ("/docs/a/sub/two.md", 20), ("/docs/b/three.md", 30)):
        body = make_doc(key, [f"Text of {key}."], key=key, metadata={"sync_size": size, "owner": "x"})
        await upsert(client, name, body)
    base = f"/v1/collections/{name}/document-stamps"
    found = (await client.get(base, params={"prefix": "/docs/a/", "meta": ["sync_size", "absent"]})).json()
    stamps = sorted(found["stamps"], key=lambda s: s["key"])
    assert [(s["key"], s["metadata"]) for s in stamps] == [
        ("/docs/a/one.md", {"sync_size": 10}), ("/docs/a/sub/two.md", {"sync_size": 20}),
    ]  # fmt: skip
    assert all(len(s["content_hash"]) == 64 and s["doc_id"] for s in stamps)
    assert len((await client.get(base)).json()["stamps"]) == 3
    assert (await client.get(f"/v1/collections/{unique('none')}/document-stamps")).status_code == 404


async def test_delete_document(client, unique, upsert, make_doc, search) -> None:
    name = unique("deldoc")
    keep = (await upsert(client, name, make_doc("keep.md", ["Okapis are shy."])))["doc_id"]
    gone = (await upsert(client, name, make_doc("gone.md", ["Okapis hide in forests.", "Second okapi chunk."])))[
        "doc_id"
    ]
    response = await client.delete(f"/v1/collections/{name}/documents/{gone}")
    assert response.json() == {"doc_id": gone, "collection": name, "deleted_chunks": 2}
    hits = (await search(client, query="okapi okapis", collections=[name], mode="keyword"))["hits"]
    assert {h["doc_id"] for h in hits} == {keep}
    missing = await client.delete(f"/v1/collections/{name}/documents/{gone}")
    assert missing.status_code == 404 and missing.json()["code"] == "DOCUMENT_NOT_FOUND"
    assert (await client.get(f"/v1/collections/{name}/documents/{gone}")).status_code == 404


async def test_collection_lifecycle(client, unique, upsert, make_doc) -> None:
    name = unique("life")
    created = await client.post("/v1/collections", json={"name": name})
    assert created.status_code == 201 and created.json()["document_count"] == 0
    assert (await client.post("/v1/collections", json={"name": name})).json()["code"] == "COLLECTION_EXISTS"
    await upsert(client, name, make_doc("l.md", ["One.", "Two."]))
    deleted = await client.delete(f"/v1/collections/{name}")
    assert deleted.json() == {"name": name, "deleted_documents": 1, "deleted_chunks": 2}
    missing = await client.get(f"/v1/collections/{name}")
    assert missing.status_code == 404 and name not in missing.json()["details"]["available_collections"]
    # A new collection of the same name starts empty: the old registry rows went with it.
    again = await upsert(client, name, make_doc("l.md", ["One.", "Two."]))
    assert again["status"] == "indexed"


async def test_unknown_collection_on_document_routes(client) -> None:
    for path in ["/v1/collections/nowhere/documents", "/v1/collections/nowhere/documents/abc"]:
        response = await client.get(path)
        assert response.status_code == 404 and response.json()["code"] == "COLLECTION_NOT_FOUND"
    assert (await client.post("/v1/collections", json={"name": "_documents"})).status_code == 422


async def test_embed_returns_normalized_vectors(client) -> None:
    body = (await client.post("/v1/embed", json={"texts": ["first text", "second text"]})).json()
    assert (body["dimension"], len(body["vectors"]), len(body["vectors"][0])) == (384, 2, 384)
    assert abs(sum(v * v for v in body["vectors"][0]) - 1.0) < 1e-4
    assert (await client.post("/v1/embed", json={"texts": []})).status_code == 422


async def test_page_count_is_kept_listed_and_survives_a_relabel(client, unique, upsert, make_doc) -> None:
    name = unique("pagecount")
    paged = make_doc("report.pdf", ["First page text.", "Last page text."], title="Report")
    paged["chunks"][0]["page"], paged["chunks"][1]["page"] = 1, 7
    paged["page_count"] = 9  # the converter counted two blank pages at the end
    derived = make_doc("slides.pptx", ["Slide one.", "Slide four."])
    derived["chunks"][0]["page"], derived["chunks"][1]["page"] = 1, 4
    plain = make_doc("notes.md", ["No pages here."])
    ids = {body["source"]: (await upsert(client, name, body))["doc_id"] for body in (paged, derived, plain)}
    listed = (await client.get(f"/v1/collections/{name}/documents", params={"order": "source"})).json()
    assert {d["source"]: d["page_count"] for d in listed["documents"]} == {
        "report.pdf": 9, "slides.pptx": 4, "notes.md": None,
    }  # fmt: skip
    paged["tags"] = ["relabelled"]
    assert (await upsert(client, name, paged))["status"] == "updated"
    document = (await client.get(f"/v1/collections/{name}/documents/{ids['report.pdf']}")).json()
    assert (document["tags"], document["page_count"]) == (["relabelled"], 9)


async def test_collection_names_list_every_collection_without_counting(client, unique, upsert, make_doc) -> None:
    first, second = unique("names_b"), unique("names_a")
    for name in (first, second):
        await upsert(client, name, make_doc("n.md", ["Named."]))
    names = (await client.get("/v1/collection-names")).json()["names"]
    full = [c["name"] for c in (await client.get("/v1/collections")).json()["collections"]]
    assert {first, second} <= set(names) and names == sorted(names) and set(names) == set(full)


REPORT = (
    "Preface text before any heading.\n\n"
    "# Report\n\nThe opening paragraph of the report.\n\n"
    "### Costs\n\nCosts rose on page one and went on rising on page two.\n\n"
    "## Outlook\n\nThe outlook is calm."
)


def _section_chunks(text: str, levels: bool) -> list[dict[str, Any]]:
    """One chunk a section, as the chunker cuts them (never across a heading), with pages: the Costs section
    flows from page 1 onto page 2."""
    marks = [text.index("# Report"), text.index("### Costs"), text.index("## Outlook"), len(text)]
    paths = [([], []), (["Report"], [1]), (["Report", "Costs"], [1, 3]), (["Report", "Outlook"], [1, 2])]
    chunks = []
    for index, ((path, level), start, end) in enumerate(zip(paths, [0, *marks[:-1]], marks, strict=True)):
        piece = text[start:end].rstrip("\n")
        chunk: dict[str, Any] = {"index": index, "text": piece, "start": start, "end": start + len(piece),
                                 "heading_path": path, "page": 1 if index < 3 else 2, "page_end": 2 if index >= 2
                                 else 1}  # fmt: skip
        if levels:
            chunk["heading_levels"] = level
        if index == 2:
            chunk["page_starts"] = [{"offset": piece.index("page two"), "page": 2}]
        chunks.append(chunk)
    return chunks


async def test_structure_maps_sections_levels_and_pages_onto_the_markdown(client, unique, upsert, make_doc) -> None:
    name = unique("outline")
    body = make_doc("report.md", ["x"], title="Report")
    body["chunks"], body["page_count"] = _section_chunks(REPORT, levels=True), 2
    doc_id = (await upsert(client, name, body))["doc_id"]
    content = (await client.get(f"/v1/collections/{name}/documents/{doc_id}")).json()["content"]
    response = await client.get(f"/v1/collections/{name}/documents/{doc_id}/structure")
    assert response.status_code == 200
    mapped = response.json()
    assert mapped["content"] == content == REPORT and mapped["levels_known"] is True
    sections = mapped["sections"]
    assert [(s["heading_path"], s["heading_levels"]) for s in sections] == [
        ([], []), (["Report"], [1]), (["Report", "Costs"], [1, 3]), (["Report", "Outlook"], [1, 2])
    ]  # fmt: skip
    assert "".join(content[s["start"] : s["end"]] for s in sections) == content  # the sections tile it
    assert content[sections[2]["start"] :].startswith("### Costs")
    assert (sections[2]["page"], sections[2]["page_end"]) == (1, 2)
    two = mapped["page_starts"][1]
    assert mapped["page_starts"][0] == {"offset": 0, "page": 1} and two["page"] == 2
    assert content[two["offset"] :].startswith("page two.")
    # A relabel rewrites each chunk's metadata without re-chunking: the levels and pages stay.
    relabel = {"content_hash": body["content_hash"], "source": "renamed.md", "tags": ["moved"], "metadata": {"k": 1}}
    relabelled = await client.post(f"/v1/collections/{name}/documents/{doc_id}/labels", json=relabel)
    assert relabelled.status_code == 200 and relabelled.json()["status"] == "updated", relabelled.text
    after = (await client.get(f"/v1/collections/{name}/documents/{doc_id}/structure")).json()
    assert (after["sections"], after["page_starts"], after["levels_known"]) == (sections, mapped["page_starts"], True)
    assert after["source"] == "renamed.md" and after["metadata"] == {"k": 1}


async def test_structure_of_a_document_stored_without_levels_says_so(client, unique, upsert, make_doc) -> None:
    name = unique("nolevels")
    body = make_doc("old.md", ["x"], title="Old")
    body["chunks"] = _section_chunks(REPORT, levels=False)
    doc_id = (await upsert(client, name, body))["doc_id"]
    mapped = (await client.get(f"/v1/collections/{name}/documents/{doc_id}/structure")).json()
    assert mapped["levels_known"] is False
    assert [s["heading_levels"] for s in mapped["sections"]] == [[], None, None, None]  # no heading: none to know
    assert [s["heading_path"] for s in mapped["sections"]][2] == ["Report", "Costs"]
    missing = await client.get(f"/v1/collections/{name}/documents/nope/structure")
    assert missing.status_code == 404 and missing.json()["code"] == "DOCUMENT_NOT_FOUND"


async def test_search_hits_carry_heading_levels_or_null_when_not_known(client, unique, upsert, make_doc) -> None:
    """Issue 30, point 2: a hit answers its chunk's heading levels; one stored without them answers null (re-ingest
    fills them in); levels that do not match the path are refused with what to send."""
    levels = {}
    for kept in (True, False):
        name = unique("hitlevels")
        body = make_doc("report.md", ["x"], title="Report")
        body["chunks"] = _section_chunks(REPORT, levels=kept)
        await upsert(client, name, body)
        found = await client.post("/v1/search", json={"query": "Costs", "collections": [name], "mode": "keyword"})
        assert found.status_code == 200, found.text
        levels[kept] = {tuple(h["heading_path"]): h["heading_levels"] for h in found.json()["hits"]}
    assert levels[True][("Report", "Costs")] == [1, 3]
    assert levels[False][("Report", "Costs")] is None
    bad = make_doc("bad.md", ["x"], title="Bad")
    bad["chunks"] = [{"index": 0, "text": "x", "heading_path": ["A", "B"], "heading_levels": [1]}]
    refused = await client.post(f"/v1/collections/{unique('badlevels')}/documents", json=bad)
    assert refused.status_code == 422 and "one level per heading" in refused.text
