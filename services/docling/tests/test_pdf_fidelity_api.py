"""PDFs as users have them, through the HTTP API: tables as tables, scans and images read by OCR."""

from __future__ import annotations

import pytest
from PIL import Image

from bench.pdf_fidelity import cell_recall, char_accuracy
from bench.pdf_fixtures import MEMO, REVENUE, STAFF, fixtures, image_bytes, mixed

FIXTURES = {fixture.name: fixture for fixture in fixtures()}


async def _convert(client, name: str, data: bytes) -> dict:
    response = await client.post("/v1/convert", files={"file": (name, data)}, timeout=300)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize(("name", "rows"), [("ruled_table.pdf", REVENUE), ("unruled_table.pdf", STAFF)])
async def test_born_digital_tables_come_out_as_markdown_tables(client, check, name: str, rows) -> None:
    body = await _convert(client, name, FIXTURES[name].data)
    assert cell_recall(rows, body["markdown"]) == (16 if rows is REVENUE else 20,) * 2
    header = "| " + " | ".join(rows[0]) + " |"
    assert header in body["markdown"]
    tables = [block for block in body["blocks"] if block["kind"] == "table"]
    assert len(tables) == 1 and tables[0]["page"] == 1 and tables[0]["text"].startswith(header)
    # The prose around the table stays prose, in order.
    kinds = [block["kind"] for block in body["blocks"]]
    assert kinds == ["heading", "paragraph", "table", "paragraph"]
    assert body["ocr_pages"] == []


async def test_a_two_column_page_is_read_column_by_column_without_a_table(client) -> None:
    body = await _convert(client, "two_column.pdf", FIXTURES["two_column.pdf"].data)
    paragraphs = [block["text"] for block in body["blocks"] if block["kind"] == "paragraph"]
    assert paragraphs == list(FIXTURES["two_column.pdf"].lines)
    assert "|" not in body["markdown"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["scanned_memo.pdf", "rotated_scan.pdf", "memo.png"])
async def test_scans_and_images_are_read_by_ocr_and_say_so(client, check, name: str) -> None:
    body = await _convert(client, name, FIXTURES[name].data)
    assert body["ocr_pages"] == [1] and body["page_count"] == 1
    assert any("OCR used on page(s) 1" in warning for warning in body["warnings"])
    assert body["pipeline"] == ("ocr" if name.endswith(".png") else "native")
    assert "north parking lot" in body["markdown"] and "14 March" in body["markdown"]
    assert char_accuracy("\n".join(MEMO), body["markdown"]) > 0.8
    assert all(block["page"] == 1 for block in body["blocks"])
    # A scan's OCR boxes are not type sizes: its title is no body line read as the largest text (the memo's
    # "From: Facilities management The north parking lot closes ..."), but its file name, as before.
    assert body["title"] == name.rsplit(".", 1)[0], body["title"]


@pytest.mark.slow
async def test_a_scanned_page_between_text_pages_keeps_its_page_number(client) -> None:
    body = await _convert(client, "bulletin.pdf", mixed())
    assert body["ocr_pages"] == [2] and body["page_count"] == 3
    pages = {block["page"] for block in body["blocks"] if "parking lot closes" in block["text"]}
    assert pages == {2}
    assert [span["page"] for span in body["page_spans"]] == [1, 2, 3]
    first = body["blocks"][0]
    assert first == {**first, "kind": "heading", "text": "Harbour Office Bulletin", "page": 1}


async def test_a_blank_scan_says_ocr_found_nothing(client) -> None:
    blank = image_bytes(Image.new("L", (800, 600), 255), "PNG")
    response = await client.post("/v1/convert", files={"file": ("blank.png", blank)})
    assert response.status_code == 422 and response.json()["code"] == "NO_TEXT"
    assert "Not even OCR" in response.json()["suggestion"]
