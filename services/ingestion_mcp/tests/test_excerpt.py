"""A concise answer's passage is cut around the query's words, not at its start (toolkit/excerpt.py)."""

from __future__ import annotations

from pathlib import Path

from ingestion_mcp.toolkit.excerpt import excerpt

GPL = Path("/usr/share/common-licenses/GPL-3").read_text(encoding="utf-8")  # base-files: on every Debian system


def test_the_cut_holds_the_words_asked_for_from_their_sentence() -> None:
    at = GPL.index("You may charge any price or no price")
    passage = GPL[at - 1500 : at + 600]  # the sentence sits 1,500 characters into a long passage
    cut = excerpt(passage, "may I charge a price for each copy", 600)
    assert "You may charge any price or no price" in cut, cut
    assert cut.startswith("…") and cut.endswith("…") and len(cut) == 602
    assert cut[1:].lstrip()[0].isupper(), cut[:80]  # it opens where a sentence does


def test_short_passages_and_matches_by_meaning_keep_their_start() -> None:
    assert excerpt("A short passage.", "passage", 600) == "A short passage."
    long = GPL[:2000]
    assert excerpt(long, "zebra giraffe", 600) == long[:600] + "…"  # no word in common: as before
