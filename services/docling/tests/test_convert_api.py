"""POST /v1/convert on every supported format, through the real app and real docling."""

from __future__ import annotations

import hashlib

import httpx
from ingestion_contracts.docling import ConvertResponse


async def convert(client: httpx.AsyncClient, name: str, data: bytes, **form: str) -> ConvertResponse:
    response = await client.post("/v1/convert", files={"file": (name, data)}, data=form)
    assert response.status_code == 200, response.text
    return ConvertResponse.model_validate(response.json())


def block_with(result: ConvertResponse, needle: str):
    matches = [block for block in result.blocks if needle in block.text]
    assert matches, f"no block contains {needle!r}"
    return matches[0]


async def test_pdf_pages_headings_and_paragraphs(client, read_fixture, check) -> None:
    data = read_fixture("sample.pdf")
    result = await convert(client, "sample.pdf", data)
    check(result)
    assert (result.file_type, result.pipeline, result.page_count) == ("pdf", "native", 3)
    assert result.content_hash == hashlib.sha256(data).hexdigest() and result.size_bytes == len(data)
    assert any("native pipeline" in warning for warning in result.warnings)
    # The rare passage spans two printed lines: they are merged into one paragraph on page 2.
    rare = block_with(result, "Ambystoma mexicanum")
    assert rare.kind == "paragraph" and rare.page == 2 and "Xochimilco" in rare.text
    headings = [(block.text, block.page) for block in result.blocks if block.kind == "heading"]
    assert headings == [
        ("Chapter 1: Harbour Logistics", 1),
        ("Chapter 2: Amphibian Regeneration", 2),
        ("Chapter 3: Railway Timetables", 3),
    ]
    assert result.title == "Chapter 1: Harbour Logistics"
    assert [span.page for span in result.page_spans] == [1, 2, 3]
    page_two = result.page_spans[1]
    assert "Xochimilco" in result.markdown[page_two.start : page_two.end]
    assert "Xochimilco" not in result.markdown[: page_two.start]


async def test_docx_headings_table_and_list(client, read_fixture, check) -> None:
    result = await convert(client, "sample.docx", read_fixture("sample.docx"))
    check(result)
    assert (result.file_type, result.pipeline, result.page_count, result.page_spans) == ("docx", "simple", None, [])
    headings = [(block.text, block.level) for block in result.blocks if block.kind == "heading"]
    assert headings == [("Beekeeping Handbook", 1), ("Hive Inspection", 2), ("Varroa Treatment", 2)]
    assert "# Beekeeping Handbook\n\n## Hive Inspection\n" in result.markdown
    assert block_with(result, "varroa destructor").kind == "paragraph"
    assert block_with(result, "apiary log").kind == "list_item"
    assert "- Record every treatment in the apiary log.\n- Wear gloves" in result.markdown
    table = next(block for block in result.blocks if block.kind == "table")
    assert table.text.splitlines()[0] == "| Hive | Honey (kg) |" and "| Heather | 11 |" in table.text
    assert all(block.page is None for block in result.blocks)
    assert result.title == "Beekeeping Handbook"


async def test_pptx_slide_numbers_are_pages(client, read_fixture, check) -> None:
    result = await convert(client, "deck.pptx", read_fixture("sample.pptx"))
    check(result)
    assert (result.file_type, result.page_count) == ("pptx", 2)
    assert block_with(result, "Vatnajokull").page == 1
    assert block_with(result, "Skeidararjokull").page == 2
    assert [b.text for b in result.blocks if b.kind == "title"] == ["Quarterly Glacier Survey", "Next Steps"]
    assert [span.page for span in result.page_spans] == [1, 2]


async def test_xlsx_table(client, read_fixture, check) -> None:
    result = await convert(client, "sample.xlsx", read_fixture("sample.xlsx"))
    check(result)
    assert result.file_type == "xlsx" and result.page_count is None
    table = block_with(result, "Mauna Kea")
    assert table.kind == "table" and "| Roque de los Muchachos | Spain | 2396 |" in table.text
    assert result.title == "sample"  # no heading, no metadata title: the file name


async def test_html_keeps_the_content_and_drops_scripts(client, read_fixture, check) -> None:
    result = await convert(client, "guide.html", read_fixture("sample.html"))
    check(result)
    assert result.file_type == "html" and result.title == "Sourdough Starter Guide"
    assert block_with(result, "grey hooch").kind == "paragraph"
    assert block_with(result, "Troubleshooting").kind == "heading"
    for boilerplate in ("tracking pixel", "window.analytics", "display: flex"):
        assert boilerplate not in result.markdown


async def test_markdown_round_trips_its_structure(client, read_fixture, check) -> None:
    result = await convert(client, "sample.md", read_fixture("sample.md"))
    check(result)
    assert result.markdown.startswith("# Lighthouse Maintenance\n\n")
    assert "## Lamp Replacement\n\n- Switch off the rotation motor first.\n" in result.markdown
    assert block_with(result, "Motor serviced").kind == "table"


async def test_plain_text_paragraphs(client, read_fixture, check) -> None:
    result = await convert(client, "notes.txt", read_fixture("sample.txt"))
    check(result)
    assert (result.pipeline, result.file_type, result.title) == ("text", "txt", "notes")
    assert [block.kind for block in result.blocks] == ["paragraph"] * 3
    assert block_with(result, "Lake Vyrnwy").text.startswith("The sphagnum bog")


async def test_filename_field_overrides_and_is_reduced_to_a_base_name(client, read_fixture) -> None:
    result = await convert(client, "blob", read_fixture("sample.md"), filename="../../etc/Lighthouse.md")
    assert result.file_name == "Lighthouse.md" and result.file_type == "md"


async def test_a_file_without_extension_is_typed_by_its_content(client, read_fixture) -> None:
    result = await convert(client, "download", read_fixture("sample.pdf"))
    assert result.file_type == "pdf" and result.page_count == 3


async def test_formats_lists_types_limit_and_pipeline(client) -> None:
    response = await client.get("/v1/formats")
    assert response.status_code == 200
    body = response.json()
    assert body["pdf_pipeline"] == "native" and body["ocr"] is True and body["path_conversion"] is True
    assert body["max_upload_bytes"] == 100 * 1024 * 1024
    by_type = {item["file_type"]: item for item in body["formats"]}
    assert set(by_type) == {"pdf", "docx", "pptx", "xlsx", "html", "md", "txt", "image", "epub", "odt", "ods", "odp",
                            "rtf", "email", "mhtml", "csv", "latex", "asciidoc"}  # fmt: skip
    assert by_type["html"]["extensions"] == [".html", ".htm", ".xhtml"]
    assert by_type["email"]["extensions"] == [".eml", ".msg"] and ".org" in by_type["txt"]["extensions"]
    assert (by_type["pdf"]["pipeline"], by_type["txt"]["pipeline"], by_type["docx"]["pipeline"]) == (
        "native",
        "text",
        "simple",
    )
    assert by_type["pptx"]["paged"] and not by_type["docx"]["paged"]


async def test_health_ready_and_metrics(client, read_fixture) -> None:
    assert (await client.get("/healthz")).json()["status"] == "ok"
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"] == {"converter": "ok"}
    await convert(client, "sample.txt", read_fixture("sample.txt"))
    metrics = (await client.get("/metrics")).text
    assert 'stage_duration_seconds_count{service="docling",stage="convert_txt"}' in metrics
