"""The sentences a hit cites (cited.py): boundaries as a reader sees them, the sentence sharing the query's rarest
words, none for a query that shares no word."""

from __future__ import annotations

from vector_gateway.cited import cited_sentences, sentences

# From nettle's manual, "5 Linking" (Debian's nettle-dev): a heading line, then a paragraph of four sentences.
LINKING = (
    "## 5 Linking\n\n"
    "Nettle actually consists of two libraries, libnettle and libhogweed. The libhogweed library contains those "
    "functions of Nettle that uses bignum operations, and depends on the GMP library. If an application uses only "
    "the symmetric crypto algorithms of Nettle (i.e., block ciphers, hash functions, and the like), it is sufficient "
    "to link with -lnettle. If an application also uses public-key algorithms, the recommended linker flags are "
    "-lhogweed -lnettle -lgmp."
)


def quoted(text: str, query: str) -> list[str]:
    return [text[start:end] for start, end in cited_sentences(text, query)]


def test_sentences_end_where_a_reader_ends_them() -> None:
    found = [LINKING[start:end] for start, end in sentences(LINKING)]
    assert found[0] == "## 5 Linking"  # a heading is a line of its own, never glued to the paragraph
    assert any(s.startswith("If an application uses only") and s.endswith("-lnettle.") for s in found)  # "i.e.," kept
    assert len(found) == 5 and all(s == s.strip() for s in found)


def test_the_sentence_with_the_rarest_query_words_is_cited() -> None:
    assert quoted(LINKING, "Which linker flags does a program using public-key algorithms need?") == [
        "If an application also uses public-key algorithms, the recommended linker flags are -lhogweed -lnettle -lgmp."
    ]


def test_two_sentences_that_match_alike_are_both_cited_in_order() -> None:
    both = quoted(LINKING, "symmetric or public algorithms")
    assert len(both) == 2 and LINKING.index(both[0]) < LINKING.index(both[1])


def test_a_query_sharing_no_word_cites_nothing() -> None:
    assert cited_sentences(LINKING, "zebra migration patterns") == []
    assert cited_sentences(LINKING, "the and of") == []  # stop words only
