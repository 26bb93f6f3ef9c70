"""The page a hit cites (citations.py): where the query's words are, or where most of the chunk lies."""

from __future__ import annotations

from vector_gateway.citations import cited_page, page_sizes, stored_page_starts, with_page_starts

# A chunk across a page break: the end of page 8, then the top of page 9 (docling ends a block at the break).
END_OF_8 = "The committee reviewed the plan and noted that several milestones slipped by a few weeks.\n\n"
TOP_OF_9 = "Inspector Novak counted 8808 canvas tents in the Kestrel Point depot. Members agreed to wait."
CHUNK = END_OF_8 + TOP_OF_9
STARTS = [(0, 8), (len(END_OF_8), 9)]


def test_a_match_past_the_page_break_cites_the_page_it_is_on() -> None:
    assert cited_page(CHUNK, STARTS, "Inspector Novak counted 8808 canvas tents", 8) == 9
    assert cited_page(CHUNK, STARTS, "milestones slipped", 8) == 8


def test_words_found_on_both_pages_weigh_less_than_words_found_on_one() -> None:
    # "committee" is on both pages; "tents" only on page 9: the match is there.
    chunk = END_OF_8 + "The committee saw the tents."
    assert cited_page(chunk, [(0, 8), (len(END_OF_8), 9)], "committee tents", 8) == 9


def test_no_word_in_common_cites_the_page_holding_most_of_the_chunk() -> None:
    long_top = TOP_OF_9 * 3
    assert cited_page(END_OF_8 + long_top, STARTS, "how many shelters were there", 8) == 9
    assert cited_page(CHUNK, [(0, 8), (len(CHUNK) - 10, 9)], "", 8) == 8  # a chunk listing: no query


def test_a_chunk_on_one_page_or_stored_without_page_starts_cites_its_first_page() -> None:
    assert cited_page(TOP_OF_9, [], "Inspector Novak", 9) == 9
    assert cited_page(CHUNK, [], "Inspector Novak", 8) == 8  # written before page starts were kept
    assert cited_page(TOP_OF_9, [], "anything", None) is None


def test_a_repeated_table_header_before_the_first_page_start_is_on_no_page() -> None:
    header = "| Unit | Budget |\n|---|---|\n"
    chunk = header + "| North | 12 |\n" + "| South | 14 |\n"
    starts = [(len(header), 4), (len(header) + 15, 5)]
    assert page_sizes(starts, len(chunk)) == {4: 15, 5: 15}
    assert cited_page(chunk, starts, "Budget", 4) == 4  # only the header matches: the earlier of two equal pages
    assert cited_page(chunk, starts, "South budget", 4) == 5


def test_page_starts_ride_in_the_reserved_metadata_and_survive_a_round_trip() -> None:
    stored = with_page_starts({"year": 2024, "__ingest": {"key": "k"}}, STARTS)
    assert stored == {"year": 2024, "__ingest": {"key": "k", "pages": [[0, 8], [len(END_OF_8), 9]]}}
    assert stored_page_starts(stored) == STARTS
    assert stored_page_starts({"__ingest": {"key": "k"}}) == [] and stored_page_starts(None) == []
