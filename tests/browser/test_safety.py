"""What a stored document and a missing token cannot do: a document's <script> shows as text and never runs;
in static-token mode a browser without the token sees the login page and no data."""

from __future__ import annotations

from typing import Any

import httpx

from .conftest import Console
from .pages import all_of, find, no_alert, on_page, visit

PAYLOAD = "<script>alert(1)</script>"
HOSTILE = (
    f"Release notes {PAYLOAD} for the pelican tracker. "
    "The pelican tracker counts brown pelicans along the estuary every morning. "
    '<img src="x" onerror="alert(2)"> An image tag that must stay text too.'
)


def test_a_documents_script_renders_as_text(served: Console, browser: Any, shoot: Any) -> None:
    doc_id = served.ingest_text(HOSTILE, collection="hostile", name=f"Notes {PAYLOAD}")
    visit(browser, f"{served.url}/collections/hostile/documents/{doc_id}", "document")
    assert no_alert(browser)
    assert PAYLOAD in find(browser, "#document-markdown").text
    assert PAYLOAD in find(browser, "#document-title").text
    assert not browser.execute_script("return document.querySelectorAll('main script, main img[onerror]').length")
    shoot("document-escaped")

    visit(browser, f"{served.url}/collections/hostile", "collection")
    assert no_alert(browser)
    assert any(PAYLOAD in cell.text for cell in all_of(browser, "[data-test=document-title]"))

    visit(browser, f"{served.url}/search?q=pelican+tracker&collection=hostile&mode=compare", "search")
    hits = all_of(browser, "[data-test=hit-text]")
    assert no_alert(browser)
    assert hits and any(PAYLOAD in hit.text for hit in hits)


def test_no_token_no_data_in_static_token_mode(served: Console, browser: Any, shoot: Any) -> None:
    served.ingest_text("Quarterly figures. Revenue of the lighthouse shop rose by a third this winter. " * 2,
                       collection="classified", name="Classified quarterly figures")  # fmt: skip
    for path in ("/", "/collections/classified", "/jobs", "/search?q=revenue"):
        answer = httpx.get(f"{served.token_url}{path}", timeout=30, follow_redirects=True)
        assert "classified" not in answer.text.lower(), path
        assert 'data-page="login"' in answer.text, (path, answer.status_code)
    bearer = {"Authorization": f"Bearer {served.token}"}
    assert "classified" in httpx.get(f"{served.token_url}/", headers=bearer, timeout=30).text  # the same page, let in

    browser.get(f"{served.token_url}/")
    browser.delete_all_cookies()
    visit(browser, f"{served.token_url}/collections/classified", "login")
    assert "Classified quarterly figures" not in browser.page_source
    assert not all_of(browser, "#collections-table, [data-test=collection-row], [data-test=document-row]")
    shoot("login")

    find(browser, "#login-token").send_keys("not-the-token")
    find(browser, "#login-submit").click()
    on_page(browser, "login")
    assert find(browser, "#login-error").is_displayed()
    assert "classified" not in browser.page_source.lower()

    find(browser, "#login-token").send_keys(served.token)
    find(browser, "#login-submit").click()
    content = find(browser, 'main#content:not([data-page="login"])')
    assert content.get_attribute("data-page") in {"collections", "collection"}
    visit(browser, f"{served.token_url}/", "collections")
    assert find(browser, '[data-test=collection-row][data-collection="classified"]')

    find(browser, "#logout").click()
    visit(browser, f"{served.token_url}/", "login")
    assert "classified" not in browser.page_source.lower()
