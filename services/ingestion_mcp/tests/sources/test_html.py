"""Main-content extraction: the article stays, chrome, scripts, styles and forms go."""

from __future__ import annotations

import pytest
from ingestion_mcp.sources import SourceError, SourcePolicy, fetch_url, html_to_markdown

from .conftest import ARTICLE_HTML, LiveServer

BOILERPLATE = [
    "SCRIPT-PAYLOAD",
    "STYLE-PAYLOAD",
    "NAV-HOME",
    "SITE-HEADER",
    "FORM-PAYLOAD",
    "FORM-BUTTON",
    "ASIDE-ADS",
    "FOOTER",
]


async def test_fetched_page_becomes_titled_markdown(http_server: LiveServer, policy: SourcePolicy) -> None:
    fetched = await fetch_url(http_server.url("/files/article.html"), policy=policy)
    page = html_to_markdown(fetched.text(), url=fetched.final_url)
    assert page.title == "Vector Search Guide"
    assert "# Hybrid retrieval explained" in page.markdown
    assert "## Reciprocal rank fusion" in page.markdown
    assert "- dense recall" in page.markdown
    assert "real content of the page" in page.markdown
    assert [word for word in BOILERPLATE if word in page.markdown] == []


def test_minified_page_keeps_its_structure() -> None:
    minified = "".join(line.strip() for line in ARTICLE_HTML.splitlines())
    page = html_to_markdown(minified.encode())
    assert "# Hybrid retrieval explained\n" in page.markdown
    assert [word for word in BOILERPLATE if word in page.markdown] == []


def test_short_page_uses_the_fallback() -> None:
    page = html_to_markdown(
        "<html><head><title>Tiny</title><script>evil()</script></head>"
        "<body><nav>menu</nav><h1>Hello</h1><p>Short note.</p><pre>x = 1</pre></body></html>"
    )
    assert page.title == "Tiny"
    assert "# Hello" in page.markdown and "Short note." in page.markdown and "x = 1" in page.markdown
    assert "evil" not in page.markdown and "menu" not in page.markdown


def test_title_falls_back_to_the_first_heading() -> None:
    assert html_to_markdown("<body><h1>Only heading</h1><p>Body text here.</p></body>").title == "Only heading"


def test_script_only_page_is_refused() -> None:
    with pytest.raises(SourceError) as caught:
        html_to_markdown("<html><body><div id='app'></div><script>render()</script></body></html>")
    assert caught.value.code == "UNSUPPORTED_FORMAT"
    assert "JavaScript" in caught.value.message
