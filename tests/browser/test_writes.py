"""The console's writes in a browser: cancel a long job from the jobs page, delete a document and see it gone
from search."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from selenium.webdriver.support.ui import Select

from .conftest import Console
from .pages import all_of, attribute, confirm, find, on_page, submit, visit, wait

WORDS = [
    "harbour",
    "crane",
    "ledger",
    "tide",
    "beacon",
    "quay",
    "anchor",
    "rope",
    "gull",
    "pier",
    "buoy",
    "chart",
    "dredger",
    "tug",
]


def long_markdown(path: Path, paragraphs: int = 6000) -> Path:
    """A few MB of distinct paragraphs: thousands of chunks to embed, so the job runs long enough to cancel."""
    rng = random.Random(23)
    lines = [f"# Long log {path.stem}\n"]
    for number in range(paragraphs):
        words = " ".join(rng.choice(WORDS) for _ in range(80))
        lines.append(f"## Entry {number}\n\nEntry {number} reads {words}.\n")
    path.write_text("\n".join(lines))
    return path


def test_a_long_job_is_cancelled_from_the_jobs_page(served: Console, browser: Any, tmp_path: Path, shoot: Any) -> None:
    upload = long_markdown(tmp_path / "long-log.md")
    visit(browser, f"{served.url}/ingest", "ingest")
    shoot("ingest")
    find(browser, "#ingest-file").send_keys(str(upload))
    find(browser, "#ingest-collection").send_keys("long-logs")
    find(browser, "#ingest-submit").click()
    on_page(browser, "job")
    job_id = browser.current_url.rstrip("/").rsplit("/", 1)[1]
    assert attribute(browser, "#job-panel", "data-status") == "running"

    visit(browser, f"{served.url}/jobs", "jobs")
    row = f'[data-test=job-row][data-job-id="{job_id}"]'
    assert attribute(browser, row, "data-status") == "running"
    shoot("jobs")
    submit(browser, f"{row} [data-test=job-cancel]")
    confirm(browser)

    def ended(b: Any) -> bool:
        rows = all_of(b, f'[data-test=job-row][data-job-id="{job_id}"]')
        return not rows or rows[0].get_attribute("data-status") != "running"

    wait(browser, 60).until(ended)
    visit(browser, f"{served.url}/jobs/{job_id}", "job")
    wait(browser, 60).until(lambda b: find(b, "#job-panel").get_attribute("data-status") == "cancelled")
    assert find(browser, "#job-error").is_displayed()
    assert not all_of(browser, "#job-cancel")
    shoot("job-cancelled")

    visit(browser, f"{served.url}/jobs", "jobs")  # listed with the jobs that ended, with why
    ended_row = f'[data-test=recent-job-row][data-job-id="{job_id}"]'
    assert attribute(browser, ended_row, "data-status") == "cancelled"
    assert "Cancelled" in find(browser, f"{ended_row} [data-test=job-outcome]").text


def search_hits(browser: Any, base: str, query: str, collection: str) -> list[str]:
    visit(browser, f"{base}/search", "search")
    find(browser, "#search-query").send_keys(query)
    Select(find(browser, "#search-collection")).select_by_value(collection)
    Select(find(browser, "#search-mode")).select_by_value("keyword")
    find(browser, "#search-submit").click()
    column = find(browser, "#results-keyword")
    wait(browser).until(lambda b: all_of(b, "#results-keyword [data-test=hit], #results-keyword [data-test=no-hits]"))
    return [hit.get_attribute("data-doc-id") for hit in column.find_elements("css selector", "[data-test=hit]")]


def test_a_deleted_document_is_gone_from_search(served: Console, browser: Any, shoot: Any) -> None:
    collection, query = "quokka-notes", "quokka Rottnest Island marsupial selfies"
    text = "Quokka census. The quokka of Rottnest Island is a small marsupial famous for selfies with visitors. " * 3
    doc_id = served.ingest_text(text, collection=collection, name="Quokka census")
    served.ingest_text("Ferry timetable. Boats leave Fremantle for the island every hour in summer. " * 3,
                       collection=collection, name="Ferry timetable")  # fmt: skip
    assert doc_id in search_hits(browser, served.url, query, collection)

    visit(browser, f"{served.url}/collections/{collection}/documents/{doc_id}", "document")
    shoot("document-delete")
    find(browser, "#document-delete").click()
    confirm(browser)
    on_page(browser, "collection")
    assert find(browser, "#notice").is_displayed()
    rows = [row.get_attribute("data-doc-id") for row in all_of(browser, "[data-test=document-row]")]
    assert doc_id not in rows and len(rows) == 1, rows

    assert doc_id not in search_hits(browser, served.url, query, collection)
    visit(browser, f"{served.url}/collections/{collection}/documents/{doc_id}", "error")
    assert find(browser, "[data-test=error-message]").text

    # Then the whole collection, its name typed to confirm: gone from the list and from search.
    visit(browser, f"{served.url}/collections/{collection}", "collection")
    find(browser, "#collection-delete summary").click()
    find(browser, "#collection-delete-name").send_keys(collection)
    find(browser, "#collection-delete-submit").click()
    on_page(browser, "collections")
    assert collection in find(browser, "#notice").text
    assert not all_of(browser, f'[data-test=collection-row][data-collection="{collection}"]')
    visit(browser, f"{served.url}/collections/{collection}", "error")
