"""Which sentences of a hit's passage an agent would cite: the one or two that match the query best.

A passage is 10-18 printed lines; the sentence that answers is a fifth of it (issue 47). So each hit names the
sentences to quote, as character offsets into its text, and a page image marks them apart from the rest.

Sentences: each line of the passage (a heading, a table row, a list item, a paragraph: the converter ends a block
with a line break) cut by sentencex (Wikimedia's rule-based segmenter for ~300 languages; no model, a compiled
wheel, character offsets; it keeps "e.g.", "z. B.", "U.S." inside a sentence, which a regex on [.!?] does not).

Scoring: the query's content words, stemmed as BM25 sees them (citations.terms), each weighed by how rare it is
among the passage's sentences (log(1 + sentences / sentences holding it)): a word every sentence holds says nothing
about which one answers. The best sentence is cited, and the second best with it when it scores at least SECOND of
the best (an answer told in two sentences). bench.cited_sentences measured this against embedding every sentence
with the model (docs/search-scores.md, "The cited sentence"): right more often (0.61 against 0.44 of answering
passages on real manuals) and 500 times cheaper (0.7 ms a search against 339).
A query that shares no word with the passage (a semantic hit on a paraphrase) cites none: the whole passage stands.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import sentencex

from .citations import terms

Span = tuple[int, int]  # [start, end) in the hit's text
SECOND = 0.75  # the second-best sentence is cited too when it scores this share of the best
MOST = 2
_LINE = re.compile(r"[^\n]+")
_WORDY = re.compile(r"\w")
# sentencex's rules for this language; others differ in abbreviations only (a passage's language is not on its row)
LANGUAGE = "en"


def sentences(text: str) -> list[Span]:
    """The sentences of ``text``, spaces around each left out, in order."""
    spans: list[Span] = []
    for line in _LINE.finditer(text):
        for bound in sentencex.get_sentence_boundaries(LANGUAGE, line.group()):
            piece = bound["text"]
            start = line.start() + bound["start_index"] + (len(piece) - len(piece.lstrip()))
            end = line.start() + bound["start_index"] + len(piece.rstrip())
            if end > start and _WORDY.search(text, start, end):
                spans.append((start, end))
    return spans


def scored(text: str, query: str) -> list[tuple[float, Span]]:
    """Each sentence of ``text`` with its score against ``query`` (0: no query word)."""
    wanted = terms(query)
    spans = sentences(text) if wanted else []
    found = [terms(text[start:end]) & wanted for start, end in spans]
    spread = Counter(word for words in found for word in words)
    weight = {word: math.log(1 + len(spans) / count) for word, count in spread.items()}
    return [(sum(weight[word] for word in words), span) for words, span in zip(found, spans, strict=True)]


def cited_sentences(text: str, query: str) -> list[list[int]]:
    """Offsets ``[start, end]`` in ``text`` of the sentences to cite for ``query``, in order of offset; none when
    no sentence shares a word with it."""
    ranked = sorted(scored(text, query), key=lambda pair: -pair[0])
    if not ranked or ranked[0][0] <= 0:
        return []
    best = ranked[0][0]
    chosen = [span for score, span in ranked[:MOST] if score >= SECOND * best]
    return [[start, end] for start, end in sorted(chosen)]
