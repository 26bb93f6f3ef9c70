"""Ingest a real PDF through the console's form, watch its job reach 100%, then find a sentence of its page 2
with search and open the document there."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from selenium.webdriver.support.ui import Select

from .conftest import Console
from .pages import all_of, attribute, find, on_page, visit, wait

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sample.pdf"
COLLECTION = "field-guides"
SENTENCE = "The axolotl regenerates entire limbs through a blastema of dedifferentiated cells"
JOB_S = 300  # docling converts the PDF on two cores


@pytest.fixture(scope="module")
def uploaded(browser: Any, served: Console) -> dict[str, str]:
    """The PDF sent through /ingest; the job page it lands on, followed until the job ends."""
    visit(browser, f"{served.url}/ingest", "ingest")
    find(browser, "#ingest-file").send_keys(str(FIXTURE))
    collection = find(browser, "#ingest-collection")
    collection.clear()
    collection.send_keys(COLLECTION)
    find(browser, "#ingest-submit").click()
    on_page(browser, "job")
    job_url = browser.current_url
    seen_running = attribute(browser, "#job-panel", "data-status") == "running"
    wait(browser, JOB_S).until(lambda b: find(b, "#job-panel").get_attribute("data-status") != "running")
    return {"job_url": job_url, "seen_running": str(seen_running)}


def test_an_uploaded_pdf_job_reaches_100_percent(
    served: Console, browser: Any, uploaded: dict[str, str], shoot: Any
) -> None:
    assert "/jobs/" in uploaded["job_url"]
    assert attribute(browser, "#job-panel", "data-status") == "completed", find(browser, "#content").text
    assert float(find(browser, "#job-progress").get_attribute("value") or 0) == 100
    assert find(browser, "#job-result").is_displayed()
    shoot("job")
    find(browser, "#job-document-link").click()
    on_page(browser, "document")
    assert find(browser, "#document-title").text.strip()
    assert "Amphibian Regeneration" in find(browser, "#document-markdown").text
    assert len(all_of(browser, "[data-test=document-page]")) == 3
    shoot("document")

    visit(browser, f"{served.url}/", "collections")
    row = find(browser, f'[data-test=collection-row][data-collection="{COLLECTION}"]')
    assert int(row.find_element("css selector", "[data-test=collection-documents]").text) == 1
    shoot("collections")
    row.find_element("css selector", "[data-test=collection-name] a, a[data-test=collection-name]").click()
    on_page(browser, "collection")
    keys = [cell.text for cell in all_of(browser, "[data-test=document-key]")]
    assert len(keys) == 1 and "sample.pdf" in keys[0], keys
    shoot("collection")


def test_a_sentence_is_found_on_its_page_and_opens_its_document(
    served: Console, browser: Any, uploaded: dict[str, str], shoot: Any
) -> None:
    visit(browser, f"{served.url}/search", "search")
    shoot("search-empty")
    find(browser, "#search-query").send_keys(SENTENCE)
    Select(find(browser, "#search-collection")).select_by_value(COLLECTION)
    Select(find(browser, "#search-mode")).select_by_value("compare")
    find(browser, "#search-submit").click()
    for mode in ("hybrid", "semantic", "keyword"):
        best = find(browser, f"#results-{mode} [data-test=hit]")
        assert best.get_attribute("data-rank") == "1", mode
        assert "axolotl" in best.find_element("css selector", "[data-test=hit-text]").text.lower(), mode
        assert best.find_element("css selector", "[data-test=hit-page]").text.strip().endswith("2"), mode
    shoot("search")

    best = find(browser, "#results-hybrid [data-test=hit]")
    doc_id = best.get_attribute("data-doc-id")
    link = best.find_element("css selector", "[data-test=hit-title] a, a[data-test=hit-title]")
    link.click()
    on_page(browser, "document")
    assert doc_id and doc_id in unquote(browser.current_url)
    # The hit's own chunk, on page 2, is in the document as stored.
    chunks = [c for c in all_of(browser, "[data-test=chunk]") if "axolotl" in c.text.lower()]
    assert chunks and all(
        c.find_element("css selector", "[data-test=chunk-page]").text.strip().endswith("2") for c in chunks
    )
    if "#" in browser.current_url:  # the link points at the page or chunk: that element exists
        anchor = browser.current_url.rsplit("#", 1)[1]
        assert find(browser, f"[id='{anchor}']").is_displayed()
