"""No chunk is only headings, whitespace or markup, on every preset: a heading travels with its text."""

from __future__ import annotations

import re

import httpx
import pytest
from chunker_service.headings import is_bare
from ingestion_contracts.chunker import PRESETS

_SENTENCES = {
    "Harbour records": "The harbour master logged every arrival and departure in a bound ledger kept at the quay.",
    "Tide tables": "Tide tables were printed each winter and pinned beside the harbour office door for pilots.",
    "Crew lists": "Every vessel filed a crew list naming the master, the mate and each deckhand aboard.",
    "Cargo manifests": "Cargo manifests recorded the weight, owner and destination of each consignment landed.",
}
# What docling makes of a DOCX with four short sections, each a paragraph a little longer than a dense
# window, plus an empty section, a picture placeholder and a rule.
DOCUMENT = (
    "# Port of Aldmouth\n\n"
    + "\n\n".join(
        f"## {title}\n\n" + " ".join([sentence] * 6) + ("\n\n<!-- image -->" if title == "Tide tables" else "")
        for title, sentence in _SENTENCES.items()
    )
    + "\n\n## Appendix\n\n---\n\n### Sources\n\nParish registers and the customs house letter books.\n"
)
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$", re.MULTILINE)
_MARKUP = re.compile(r"<!--.*?-->|[\s#*_\-=|>`~]", re.DOTALL)


def _bare(text: str) -> bool:  # independent of headings.is_bare
    return not _MARKUP.sub("", _HEADING_LINE.sub("", text))


@pytest.mark.parametrize("preset", sorted(PRESETS))
async def test_no_chunk_is_only_headings_or_markup(client: httpx.AsyncClient, preset: str) -> None:
    response = await client.post("/v1/chunk", json={"text": DOCUMENT, "preset": preset})
    assert response.status_code == 200, response.text
    texts = [c["text"] for c in response.json()["chunks"]]
    assert not [t for t in texts if _bare(t)], f"bare chunks with preset {preset}"
    for title in [*_SENTENCES, "Appendix"]:
        # The heading is in a chunk that holds text under it (an empty parent section's heading may lead).
        under = [t.split(f"## {title}\n\n", 1)[1] for t in texts if f"## {title}\n\n" in t]
        assert under and not _bare(under[0]), (preset, title, under)
    covered = " ".join(texts)
    assert "Parish registers" in covered and "<!-- image -->" in covered  # nothing lost


def test_bare_spans_are_recognised() -> None:
    assert is_bare("## Harbour records")
    assert is_bare("# A\n\n## B\n\n<!-- image -->\n\n---\n\n| --- |")
    assert not is_bare("## Harbour records\n\nThe ledger.")
    assert not is_bare("#hashtag")  # not a heading: no space after the hashes
