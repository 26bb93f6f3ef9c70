"""Pathological HTML nesting is refused at once, without holding a worker; deep-but-sane pages convert."""

from __future__ import annotations

import httpx
import pytest
from docling_service.html_nesting import measure_nesting
from docling_service.settings import DoclingSettings
from pydantic import ValidationError

# 60,000 nested <div>s (660 KB): before the pre-check, docling's HTML reader spent minutes on it, then failed.
DEEP_HTML = b"<html><body>" + b"<div>" * 60_000 + b"deep" + b"</div>" * 60_000 + b"</body></html>"


def sane_deep_page(levels: int) -> tuple[bytes, list[str]]:
    """A generated page nested `levels` deep, with a heading, a paragraph and a list item at every level."""
    texts: list[str] = []
    parts = [b"<!DOCTYPE html><html><head><title>Nested report</title></head><body>"]
    for level in range(levels):
        heading, para, item = f"Section {level} heading", f"Paragraph {level} of the report.", f"Item {level}"
        texts += [heading, para, item]
        parts.append(f"<div class='l{level}'><h3>{heading}</h3><p>{para}</p><ul><li>{item}</li></ul>".encode())
    parts.append(b"</div>" * levels + b"</body></html>")
    return b"".join(parts), texts


def _pids(http: httpx.AsyncClient) -> list[int]:
    app = http._transport.app  # type: ignore[attr-defined]  # the fixture's client runs on an ASGITransport
    return sorted(worker._process.pid for worker in app.state.conversion.pool._idle)


@pytest.mark.slow
async def test_sixty_thousand_nested_divs_are_refused_without_holding_the_worker(make_client) -> None:
    async for http in make_client(workers=1, convert_timeout_s=30):
        before = _pids(http)
        response = await http.post("/v1/convert", files={"file": ("deep.html", DEEP_HTML)}, timeout=120)
        # Before the pre-check: 504 CONVERSION_TIMEOUT, and the worker was killed and replaced.
        assert response.status_code == 422, response.text
        body = response.json()
        assert body["code"] == "HTML_TOO_DEEP"
        assert "60002 levels deep" in body["error"] and "limit is 400" in body["error"]
        assert "DOCLING_MAX_HTML_DEPTH" in body["error"] and "DOCLING_MAX_HTML_DEPTH" in body["suggestion"]
        assert _pids(http) == before  # the same worker answered and was kept


async def test_a_three_hundred_level_page_converts_with_all_its_text(client: httpx.AsyncClient) -> None:
    page, texts = sane_deep_page(300)
    response = await client.post("/v1/convert", files={"file": ("nested.html", page)}, timeout=120)
    assert response.status_code == 200, response.text
    markdown = response.json()["markdown"]
    missing = [text for text in texts if text not in markdown]
    assert not missing, f"{len(missing)} of {len(texts)} texts lost, e.g. {missing[:3]}"


async def test_raw_html_in_markdown_is_held_to_the_same_limit(make_client) -> None:
    deep_markdown = b"# Notes\n\nSome text.\n\n" + b"<div>" * 40 + b"deep" + b"</div>" * 40 + b"\n"
    async for http in make_client(max_html_depth=32):
        response = await http.post("/v1/convert", files={"file": ("notes.md", deep_markdown)}, timeout=120)
        assert response.status_code == 422 and response.json()["code"] == "HTML_TOO_DEEP", response.text
        assert "40 levels deep; the limit is 32 (DOCLING_MAX_HTML_DEPTH)" in response.json()["error"]


async def test_many_elements_nested_deep_are_refused_by_their_summed_depth(client: httpx.AsyncClient) -> None:
    # 300 wrappers around 12,000 paragraphs: each wrapper makes docling search all 12,000 (elements x depth).
    page = b"<html><body>" + b"<div>" * 300 + b"<p>para</p>" * 12_000 + b"</div>" * 300 + b"</body></html>"
    response = await client.post("/v1/convert", files={"file": ("wrapped.html", page)}, timeout=120)
    body = response.json()
    assert response.status_code == 422 and body.get("code") == "HTML_TOO_DEEP", (response.status_code, body.get("code"))
    assert "12302 HTML elements nested" in body["error"] and "limit is 2000000" in body["error"]
    assert "DOCLING_MAX_HTML_DEPTH_TOTAL" in body["error"] and "DOCLING_MAX_HTML_DEPTH_TOTAL" in body["suggestion"]


@pytest.mark.parametrize(
    ("page", "depth"),
    [
        (b"<body>" + b"<p>para" * 5000 + b"</body>", 2),  # optional end tags are closed as docling does
        (b"<ul>" + b"<li>item" * 5000 + b"</ul>", 2),
        (b"<table>" + b"<tr><td>a<td>b" * 5000 + b"</table>", 3),
        (b"<div>" + b"<br><img src=x><hr/>" * 5000 + b"</div>", 2),  # void elements hold nothing
        (b"<div><span>a</div>b</span>" * 5000, 2),  # a stray end tag is ignored, as BeautifulSoup does
    ],
)
def test_flat_pages_written_loosely_are_not_counted_deep(page: bytes, depth: int) -> None:
    assert measure_nesting(page).max_depth == depth


def test_the_depth_limit_stays_below_what_docling_can_read() -> None:
    with pytest.raises(ValidationError, match="max_html_depth"):
        DoclingSettings(_env_file=None, max_html_depth=1000)
