"""What BM25 sees: words lower-cased, English stop words dropped, each word reduced to its Snowball stem.

Milvus Lite has no `english` analyzer (no stemmer), so the gateway stems in Python, the same way for the
stored text and for the query: "mutations" and "mutated" both become "mutat" and match each other. A
collection records the analysis it was built with (a property), so a collection made before stemming
keeps being queried with raw text and never mixes the two.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Literal

import snowballstemmer

Analysis = Literal["raw", "snowball_en"]
PROPERTY = "bm25_analysis"
DEFAULT_ANALYSIS: Analysis = "snowball_en"

_WORD = re.compile(r"\w+")
_local = threading.local()

# Lucene's English stop set (Milvus' `stop` filter gets the same list; see schema.py).
ENGLISH_STOP_WORDS = frozenset(
    (
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
        "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
        "will", "with",
    )
)  # fmt: skip


def _stemmer() -> snowballstemmer.stemmer:
    # Snowball stemmer objects keep state between calls: one per thread.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return stemmer


@lru_cache(maxsize=262_144)
def stem(word: str) -> str:
    return _stemmer().stemWord(word)


def analyze(text: str, analysis: Analysis) -> str:
    """The text as the BM25 field stores it (and as a query is matched against it)."""
    if analysis == "raw":
        return text
    return " ".join(stem(word) for word in _WORD.findall(text.lower()) if word not in ENGLISH_STOP_WORDS)


def content_words(text: str) -> int:
    """How many words of ``text`` BM25 matches on (stop words left out), whatever a collection's analysis."""
    return sum(word not in ENGLISH_STOP_WORDS for word in _WORD.findall(text.lower()))
