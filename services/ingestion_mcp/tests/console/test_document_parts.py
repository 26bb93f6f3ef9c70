"""A document of more chunks than one page shows says it shows part of it and pages through the rest
(it once showed the first 1,000 chunks and said nothing). The page size is lowered, not the path."""

from __future__ import annotations

import re

import pytest
from ingestion_mcp.console import pages
from ingestion_mcp.state import AppState

from .conftest import console, upload

SECTIONS = "\n\n".join(
    f"## Bed {n}\n\n" + " ".join(f"Bed {n} holds tomato variety {n}-{i} watered at dawn." for i in range(60))
    for n in range(1, 7)
)


def shown(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'data-test="chunk" data-chunk-index="(\d+)"', html)]


async def test_a_long_document_is_shown_in_parts_that_say_so(
    open_state: AppState, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with console(open_state) as client:
        made = await upload(client, open_state, "beds.md", "# Garden beds\n\n" + SECTIONS, "console-parts")
        url = f"/collections/console-parts/documents/{made['doc_id']}"
        whole = await client.get(url)
        count = len(shown(whole.text))
        assert count >= 3 and 'id="document-chunks-info"' not in whole.text  # one page: nothing to say

        monkeypatch.setattr(pages, "CHUNK_PAGE", 2)
        parts = -(-count // 2)
        seen: list[int] = []
        for part in range(1, parts + 1):
            html = (await client.get(url, params={"part": part})).text
            first, last = (part - 1) * 2, min(count, part * 2) - 1
            assert f"chunks {first} to {last} of {count} (part {part} of {parts})" in html
            assert ('id="document-chunks-prev"' in html) == (part > 1)
            assert ('id="document-chunks-next"' in html) == (part < parts)
            if part < parts:
                assert f'href="{url}?part={part + 1}"' in html
            seen += shown(html)
        assert seen == list(range(count))
