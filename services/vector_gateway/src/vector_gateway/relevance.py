"""Whether an answer is on the library's topic: what the MCP search tool's relevance floor reads (issue 52, point 2).

The floor (RELEVANCE_FLOOR, per mode) was fitted on SciFact and dbpedia-5k, whose queries share words with many
passages. Two true answers fall under it there and are spared here (docs/search-scores.md, "A floor for nonsense"):

- a hybrid answer whose meaning alone matches: its dense part, weighed by the fusion's alpha (0.3), scores under the
  hybrid floor even when semantic mode would show it ("why was the ballot delayed" against "the committee postponed
  the vote"); it is on topic when its dense part alone reaches MEANING_FLOOR (a calibrated cosine, as semantic
  mode scores it);
- an answer holding the query's words: a word found in every chunk of a small library has a BM25 IDF near 0, so the
  passages about exactly that word score low; a hit holding two thirds of the query's content words as written is
  on topic. Of bench.offtopic's 80 everyday questions, 0 find such a document anywhere in SciFact and 2 in dbpedia-5k.
"""

from __future__ import annotations

from ingestion_contracts.gateway import MEANING_FLOOR, RELEVANCE_FLOOR, SearchHit

from . import lexical
from .fusion import Fusion


def on_topic(query: str, mode: str, hits: list[SearchHit], fusion: Fusion) -> bool:
    if not hits:
        return False
    if max(hit.score for hit in hits) >= RELEVANCE_FLOOR[mode]:
        return True
    alpha = fusion.for_query(query).alpha
    if mode == "hybrid" and alpha > 0 and max(hit.dense_score for hit in hits) / alpha >= MEANING_FLOOR:
        return True
    return holds_query_words(query, hits)


def holds_query_words(query: str, hits: list[SearchHit]) -> bool:
    """Whether one hit holds at least two thirds of the content words of ``query`` as written (its title, headings
    or text; case and accents aside)."""
    words = lexical.query_words(query)
    return bool(words) and any(3 * _held(words, hit) >= 2 * len(words) for hit in hits)


def _held(words: frozenset[str], hit: SearchHit) -> int:
    return len(words & set(lexical.phrase_text(" ".join((hit.title, *hit.heading_path, hit.text))).split()))
