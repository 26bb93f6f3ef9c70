"""Through the HTTP API, on both engines: a chunk's boxes are kept and returned (a run of lines kept compactly comes
back line by line), survive a relabel, and are absent (null) for a chunk stored without them; a document's original
is kept, drawn as a page with a passage marked, and goes with the document (issue 42)."""

from __future__ import annotations

import hashlib
import io
import os
import time
from pathlib import Path
from typing import Any

from fpdf import FPDF
from PIL import Image

LINE = 13.1  # the pitch of the lines below, in points


def lines(page: int, first: int, count: int, start: int = 0) -> list[dict[str, Any]]:
    """``count`` lines of a justified paragraph from line ``first`` on, 60 characters each."""
    return [{"page": page, "start": start + 61 * i, "end": start + 61 * i + 60,
             "box": [72.0, round(100 + LINE * (first + i), 1), 522.0, round(109.7 + LINE * (first + i), 1)]}
            for i in range(count)]  # fmt: skip


TEXT = " ".join(["lorem ipsum dolor sit amet consectetur adipiscing elit sed do"[:60]] * 8)
UNIT = {"kind": "table", "page": 2, "start": 10, "end": 90, "box": [72, 400, 300, 480], "caption": "Table 1. Sizes"}


def located(make_doc, source: str = "manual.pdf", **fields: Any) -> dict[str, Any]:
    boxes = [*lines(2, 0, 6), {"page": 2, "start": 366, "end": 400, "box": [72.0, 180.5, 300.2, 190.1]}]
    chunk = {"page": 2, "page_end": 2, "boxes": boxes, "units": [UNIT]}
    sizes = [{"page": 2, "width": 595.0, "height": 842.0}]
    return make_doc(source, [TEXT], file_type="pdf", chunk0=chunk, page_sizes=sizes, **fields)


async def test_boxes_are_kept_and_come_back_line_by_line(client, unique, make_doc, upsert, search) -> None:
    name = unique("boxes")
    body = located(make_doc)
    await upsert(client, name, body)
    hit = (await search(client, query="lorem ipsum dolor", collections=[name]))["hits"][0]
    sent = body["chunks"][0]["boxes"]
    assert [b["page"] for b in hit["boxes"]] == [2] * 7
    for got, want in zip(hit["boxes"], sent, strict=True):
        assert all(abs(g - w) <= 0.15 for g, w in zip(got["box"], want["box"], strict=True)), (got, want)
        assert got["end"] == want["end"]  # a line of a run keeps where it ends in the text
    assert hit["units"] == [UNIT]
    assert hit["page_sizes"] == [{"page": 2, "width": 595.0, "height": 842.0}]

    relabelled = await upsert(client, name, located(make_doc, tags=["checked"]))
    assert relabelled["status"] == "updated"
    again = (await search(client, query="lorem ipsum dolor", collections=[name], tags=["checked"]))["hits"][0]
    assert again["boxes"] == hit["boxes"] and again["units"] == hit["units"]

    doc_id = hit["doc_id"]
    structure = (await client.get(f"/v1/collections/{name}/documents/{doc_id}/structure")).json()
    assert [r["box"] for r in structure["regions"]] == [b["box"] for b in hit["boxes"]]
    assert structure["units"][0]["caption"] == "Table 1. Sizes"


async def test_a_chunk_stored_without_boxes_answers_null(client, unique, make_doc, upsert, search) -> None:
    name = unique("boxes")
    await upsert(client, name, make_doc("old.pdf", ["An old passage about harbour cranes."], file_type="pdf"))
    hit = (await search(client, query="harbour cranes", collections=[name]))["hits"][0]
    assert hit["boxes"] is None and hit["units"] is None and hit["page_sizes"] is None


async def test_boxes_past_the_text_are_refused(client, unique, make_doc, upsert) -> None:
    body = make_doc("bad.pdf", ["Short."], chunk0={"boxes": [{"page": 1, "start": 0, "end": 40, "box": [0, 0, 1, 1]}]})
    refused = await upsert(client, unique("boxes"), body, status=422)
    assert "past the end of `text`" in str(refused)


def one_page_pdf(season: str = "spring") -> bytes:
    pdf = FPDF(format="A4", unit="pt")
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.set_xy(72, 100)
    pdf.cell(300, 14, f"The harbour cranes are inspected every {season}.")
    pdf.set_xy(72, 300)
    pdf.cell(300, 14, "A line nobody asked for, further down the page.")
    return bytes(pdf.output())


async def keep(client: Any, name: str, data: bytes, status: int = 200) -> Any:
    answer = await client.put(f"/v1/collections/{name}/originals/{hashlib.sha256(data).hexdigest()}", content=data)
    assert answer.status_code == status, answer.text
    return answer.json()


def shown_page(make_doc, data: bytes, source: str = "cranes.pdf") -> dict[str, Any]:
    boxes = [{"page": 1, "start": 0, "end": 46, "box": [72.0, 101.0, 331.0, 113.0]}]
    body = make_doc(source, ["The harbour cranes are inspected every spring."], file_type="pdf",
                    chunk0={"page": 1, "page_end": 1, "boxes": boxes})  # fmt: skip
    return body | {"content_hash": hashlib.sha256(data).hexdigest(), "page_sizes": [
        {"page": 1, "width": 595.28, "height": 841.89}]}  # fmt: skip


def yellowness(picture: Image.Image, box: tuple[float, ...], scale: float) -> float:
    area = picture.convert("RGB").crop(tuple(round(v * scale) for v in box))  # type: ignore[arg-type]  # four ints: a PIL box
    pixels = list(area.getdata())
    return sum(r - b for r, _, b in pixels) / len(pixels)


async def test_a_page_is_drawn_from_the_kept_original_with_the_passage_marked(
    client, service, unique, make_doc, upsert
) -> None:
    name, data = unique("pages"), one_page_pdf()
    assert (await keep(client, name, data))["kept"] is True
    assert (await keep(client, name, data))["kept"] is False  # the same bytes again: kept already
    doc_id = (await upsert(client, name, shown_page(make_doc, data)))["doc_id"]
    answer = await client.get(f"/v1/collections/{name}/documents/{doc_id}/pages/1/image", params={"chunk": 0})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "image/png" and len(answer.content) <= 1_000_000
    assert answer.headers["x-marked"] == "1" and answer.headers["x-passage-pages"] == "1"
    assert answer.headers["x-page-size"] == "595.28,841.89"
    picture = Image.open(io.BytesIO(answer.content))
    assert max(picture.size) == 1568
    scale = picture.height / 841.89
    assert yellowness(picture, (80, 103, 300, 111), scale) > 40  # the passage, marked
    assert yellowness(picture, (80, 303, 300, 311), scale) < 5  # the other line, not

    crop = await client.get(f"/v1/collections/{name}/documents/{doc_id}/pages/1/image",
                            params={"crop": "72,95,340,120", "format": "webp"})  # fmt: skip
    assert crop.headers["content-type"] == "image/webp"
    cropped = Image.open(io.BytesIO(crop.content))
    assert abs(cropped.width / cropped.height - 268 / 25) < 0.1

    missing = await client.get(f"/v1/collections/{name}/documents/{doc_id}/pages/3/image")
    assert missing.status_code == 422 and missing.json()["code"] == "PAGE_NOT_FOUND"
    no_passage = await client.get(f"/v1/collections/{name}/documents/{doc_id}/pages/1/image", params={"chunk": 9})
    assert no_passage.status_code == 404 and no_passage.json()["code"] == "PASSAGE_NOT_FOUND"
    wrong = await client.put(f"/v1/collections/{name}/originals/{'0' * 64}", content=data)
    assert wrong.status_code == 422


async def test_an_original_goes_with_the_last_document_that_names_it(client, service, unique, make_doc, upsert) -> None:
    name, data = unique("pages"), one_page_pdf()
    await keep(client, name, data)
    first = (await upsert(client, name, shown_page(make_doc, data, "a.pdf")))["doc_id"]
    second = (await upsert(client, name, shown_page(make_doc, data, "b.pdf")))["doc_id"]
    kept = service.pages.originals.path(name, hashlib.sha256(data).hexdigest())
    assert kept is not None and kept.read_bytes() == data
    assert (await client.delete(f"/v1/collections/{name}/documents/{first}")).status_code == 200
    assert kept.exists()  # b.pdf still names it
    other = one_page_pdf("autumn")
    await keep(client, name, other)
    replaced = shown_page(make_doc, other, "b.pdf")
    assert (await upsert(client, name, replaced))["status"] == "replaced"
    assert not kept.exists()  # b.pdf now names the new bytes; nothing names the old ones
    answer = await client.get(f"/v1/collections/{name}/documents/{second}/pages/1/image")
    assert answer.status_code == 200
    assert (await client.delete(f"/v1/collections/{name}")).status_code == 200
    assert service.pages.originals.path(name, hashlib.sha256(other).hexdigest()) is None


async def test_a_document_without_its_original_says_to_reingest(client, unique, make_doc, upsert) -> None:
    name = unique("pages")
    doc_id = (await upsert(client, name, shown_page(make_doc, b"never kept")))["doc_id"]
    answer = await client.get(f"/v1/collections/{name}/documents/{doc_id}/pages/1/image")
    assert answer.status_code == 404 and answer.json()["code"] == "ORIGINAL_NOT_KEPT"
    assert "force=true" in answer.json()["suggestion"]
    text = (await upsert(client, name, make_doc("notes.txt", ["Plain notes about cranes."])))["doc_id"]
    refused = await client.get(f"/v1/collections/{name}/documents/{text}/pages/1/image")
    assert refused.status_code == 422 and refused.json()["code"] == "NO_PAGE_IMAGES"


async def test_the_originals_folder_is_bounded_and_swept(open_gateway, tmp_path: Path) -> None:
    data = one_page_pdf()
    digest = hashlib.sha256(data).hexdigest()
    async with open_gateway(tmp_path / "off.db", originals_max_mb=0) as (client, _):
        off = await client.put(f"/v1/collections/c/originals/{digest}", content=data)
        assert off.status_code == 507 and off.json()["code"] == "ORIGINALS_OFF"
    big = os.urandom(1_500_000)
    async with open_gateway(tmp_path / "small.db", originals_max_mb=1) as (client, app):
        full = await client.put(f"/v1/collections/c/originals/{hashlib.sha256(big).hexdigest()}", content=big)
        assert full.status_code == 507 and full.json()["code"] == "ORIGINALS_FULL"
        assert "VECTOR_GATEWAY_ORIGINALS_MAX_MB" in full.json()["suggestion"]
        assert (await client.put(f"/v1/collections/c/originals/{digest}", content=data)).status_code == 200
        orphan = app.state.gateway.pages.originals.path("c", digest)
    assert orphan is not None
    old = time.time() - 3600  # kept an hour ago, never named by a committed document: a write that died
    os.utime(orphan, (old, old))
    async with open_gateway(tmp_path / "small.db", originals_max_mb=1, write_lease_s=600) as (_, app):
        await app.state.gateway.sweep_originals()  # what the start-up sweep does (in the background)
    assert not orphan.exists()


def test_a_sweep_skips_originals_another_sweep_removed_meanwhile(tmp_path: Path) -> None:
    """The start-up sweep runs in the background; a second sweep at the same time (a replica on a shared folder,
    the suite's own call) stat()ed a file the first had just deleted and failed with FileNotFoundError (seen in
    the whole suite under load). The other sweeper is played here by a removal that also takes the other
    orphans, between this sweep's listing and its look at them."""
    from vector_gateway.originals import Originals

    class RacedBy(Originals):
        def _remove(self, target: Path) -> bool:
            done = super()._remove(target)
            for other in orphans:  # the other sweep, at the same moment
                other.unlink(missing_ok=True)
            return bool(done)

    originals = RacedBy(tmp_path / "originals", 10 * 2**20)
    orphans = []
    for index in range(3):
        data = f"original {index}".encode()
        digest = hashlib.sha256(data).hexdigest()
        assert originals.put("c", digest, data)
        orphan = originals.path("c", digest)
        assert orphan is not None
        old = time.time() - 3600
        os.utime(orphan, (old, old))
        orphans.append(orphan)
    assert originals.sweep(lambda collection: set(), grace_s=600) == 1  # the other two went to the other sweep
    assert not any(orphan.exists() for orphan in orphans)
