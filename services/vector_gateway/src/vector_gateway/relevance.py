"""Whether an answer is on the library's topic: what the MCP search tool's relevance floor reads (issue 52, point 2).

The floor (RELEVANCE_FLOOR, per mode) was fitted on SciFact and dbpedia-5k, whose queries share words with many
passages. Three kinds of true answer fall under it elsewhere and are spared here (docs/search-scores.md, "A floor
for nonsense"):

- a hybrid answer whose meaning alone matches: its dense part, weighed by the fusion's alpha (0.3), scores under the
  hybrid floor even when semantic mode would show it ("why was the ballot delayed" against "the committee postponed
  the vote"); it is on topic when its dense part alone reaches MEANING_FLOOR (a calibrated cosine, as semantic
  mode scores it);
- an answer holding the query's words: a word found in every chunk of a small library has a BM25 IDF near 0, so the
  passages about exactly that word score low; a hit holding two thirds of the query's content words as written is
  on topic. Of bench.offtopic's 80 everyday questions, 0 find such a document anywhere in SciFact and 2 in dbpedia-5k;
- a keyword answer under its floor whose best hit is as close to the query in meaning as a hit semantic mode shows
  (MEANING_FLOOR). A manual's own words are in many of its passages, so in a library of one manual true answers
  scored 0.18-0.22 in keyword mode: 6 of the manual set's 148 when each manual has its own collection
  (bench.manual_qa --per-manual), against 0 of the 800 off-topic questions asked of them. Their hits' meaning was
  0.51-0.86; the off-topic answers' at most 0.30.

Three kinds of off-topic answer passed it, and are held back here:

- an answer that reaches its floor on a word or two it shares with the question ("beach", "cup", "fee"): BM25 scores
  any shared word, so a keyword or hybrid score alone cannot tell an everyday question from one the library answers.
  Unless a hit holds the query's words, it is on topic only when its best hit is close to the query in meaning too
  (LEXICAL_MEANING_FLOOR, per mode: the cosine of the hits' own vectors, searched for only when the fused parts
  leave the question open; a keyword search embeds the query for this only);
- an answer close to the query in meaning only as far as one word of it goes: the passage that is closest holds one
  of the query's words ("wine" of "which wine goes with grilled salmon", in a study of why people drink wine), and
  that word alone is as close to it as the whole question. The passage is about the word, not the question. Judged
  of answers shown on their score (a meaning between LEXICAL_MEANING_FLOOR and MEANING_FLOOR) to a question the model
  reads (vocabulary.readable). On the tuning queries (bench.tune_floor --split train) it held back 2 of the 3
  everyday questions hybrid mode still answered on SciFact, 2 of 4 (keyword) on SciFact and 2 of 5 on dbpedia-5k, and
  none of the relevant documents of a top 10;
- made-up words: a query none of whose words any hit holds, and none of whose words the model knows whole
  (vocabulary.py), is not about anything the library holds, however close its vector falls to a name. The same holds
  for a query the model cannot read, knowing fewer than half of its words whole (vocabulary.readable: a question in
  German, French or Spanish to the English model): "Tipps für den Urlaub am Strand mit Kindern" came within a
  calibrated 0.46 of a German manual's passage that shares none of its words, over the semantic floor. Where a hit
  does hold one of its words, only the hits its words tie to it count by meaning (``_tied``): "welcher Wein passt zu
  gegrilltem Lachs" came within 0.50 of a French passage holding none of them while a German one held "passt". A
  hybrid answer to such a question that reaches its floor on its words is shown on its score: the model's reading
  of the question cannot tell against it (biblatex's German passage on Spanish "y" and "e", hybrid 0.33).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import overload

from ingestion_contracts.gateway import (
    LEXICAL_MEANING_FLOOR,
    MEANING_FLOOR,
    RELEVANCE_FLOOR,
    OffTopic,
    SearchHit,
)

from . import lexical
from .fusion import Fusion
from .vocabulary import content, readable

# The calibrated cosine of a text (the query, or one of its words) with each of an answer's hits (search.meanings), or
# None where it cannot be had (a collection embedded with another model, a keyword search without the model): asked
# for a hybrid or keyword answer only where its score and its dense parts leave the question open.
Meaning = Callable[[list[SearchHit], str], list[float] | None]


def off_topic(
    query: str,
    mode: str,
    hits: list[SearchHit],
    fusion: Fusion,
    meaning: Meaning | None = None,
    known: frozenset[str] | None = None,
) -> OffTopic | None:
    """Why a (non-empty) answer is off the library's topic, or None when it is on it. ``known``: the whole words the
    embedding model knows (vocabulary.model_words); an answer none of whose hits shares a word with the query is off
    topic when the model knows fewer than half of the query's words (made-up words, another language)."""
    words = lexical.query_words(query)
    written = [_written(hit) for hit in hits] if words else []  # each hit's words as written
    held = [len(words & hit_words) for hit_words in written]  # the query's words each hit holds
    if any(3 * count >= 2 * len(words) for count in held):  # one hit holds two thirds of them
        return None
    meant = content(words)  # without any analysed language's stop words
    if known is not None and words and _unreadable_and_unshared(meant, written, known):
        return "unknown_words"
    read = readable(meant, known) if known is not None and words else None
    if read is not False:
        return _judged(query, mode, hits, fusion, meaning, read, meant, written)
    # A question the model cannot read: only the hits its words tie to it are judged by their meaning. An answer held
    # back for that alone says so (its other hits came close on the model's reading of the question's pieces).
    asked = _once(meaning)
    verdict = _judged(query, mode, hits, fusion, asked, read, meant, written, _tied(meant, hits, written))
    if verdict is not None and _judged(query, mode, hits, fusion, asked, read, meant, written) is None:
        return "unknown_words"
    return verdict


def _judged(
    query: str,
    mode: str,
    hits: list[SearchHit],
    fusion: Fusion,
    meaning: Meaning | None,
    read: bool | None,
    words: frozenset[str],
    written: list[set[str]],
    tied: list[bool] | None = None,
) -> OffTopic | None:
    """off_topic's judgment by score and meaning. ``read``: whether the model reads the query (None: no word list to
    tell); ``words``: its content words (vocabulary.content); ``tied``: the hits whose closeness to the query counts
    (None: all)."""
    if mode == "semantic":
        return None if max(_only([hit.score for hit in hits], tied)) >= RELEVANCE_FLOOR[mode] else "under_floor"
    best = max(hit.score for hit in hits)
    told = _only(_told(query, mode, hits, fusion), tied)
    if mode == "hybrid" and max(told) >= MEANING_FLOOR:
        return None
    if best < RELEVANCE_FLOOR[mode]:
        # A keyword answer's hits carry no meaning of their own: under its floor, it is on topic still when one of
        # them is as close to the query as a hit semantic mode shows (a small library's BM25).
        found = _only(meaning(hits, query), tied) if mode == "keyword" and meaning is not None else None
        return None if found and max(found) >= MEANING_FLOOR else "under_floor"
    # On its score: a hit must be close to the query in meaning too, and about more than one word of it.
    closeness = (
        told if max(told) >= LEXICAL_MEANING_FLOOR[mode] else _only(meaning(hits, query), tied) if meaning else None
    )
    if not closeness:  # its meaning cannot be had (another model's collection): the score alone judges
        return None
    if max(closeness) < LEXICAL_MEANING_FLOOR[mode]:
        # The meaning of a question the model cannot read tells nothing against a hybrid answer that reaches the
        # hybrid floor with a hit holding one of its words (biblatex's German passage on Spanish "y" and "e"). Keyword
        # mode's floor is reached on one common word of a French everyday question ("heure", "mère"): it still asks.
        return None if mode == "hybrid" and read is False else "words_without_meaning"
    # Whether one word explains the hit as well as the question can be told only of a question the model reads (an
    # English model reads a German question by its pieces, and its one known word is closer to anything).
    if meaning is None or not read:
        return None
    nearest = max(range(len(hits)), key=closeness.__getitem__)
    shared = words & (written[nearest] if written else set())
    return "one_word" if _about_one_word(words, shared, hits[nearest], meaning, closeness[nearest]) else None


def _tied(words: frozenset[str], hits: list[SearchHit], written: list[set[str]]) -> list[bool]:
    """The hits whose closeness to a question the model cannot read counts: every hit when one holds two of its
    content words as written (the library is on the question's ground), else the hits holding one of them (as
    written, or matched by BM25). The model reads such a question by its pieces, and a passage in the question's
    language comes close to any question in it: "welcher Wein passt zu gegrilltem Lachs" came within a calibrated
    0.50 of the French installation guide's passage on the root password while a German passage held "passt"."""
    if any(len(words & hit_words) >= min(2, len(words)) for hit_words in written):
        return [True] * len(hits)
    return [bool(words & hit_words) or _matched(hit) for hit, hit_words in zip(hits, written, strict=True)]


@overload
def _only(values: list[float], tied: list[bool] | None) -> list[float]: ...
@overload
def _only(values: list[float] | None, tied: list[bool] | None) -> list[float] | None: ...
def _only(values: list[float] | None, tied: list[bool] | None) -> list[float] | None:
    """``values`` (one per hit; None: no meaning to be had) with the hits not ``tied`` at 0."""
    if values is None or tied is None:
        return values
    return [value if keep else 0.0 for value, keep in zip(values, tied, strict=True)]


def _once(meaning: Meaning | None) -> Meaning | None:
    """``meaning``, asked once per text and hits (an answer judged twice, with and without its untied hits)."""
    if meaning is None:
        return None
    found: dict[tuple[str, tuple[int, ...]], list[float] | None] = {}

    def asked(hits: list[SearchHit], text: str) -> list[float] | None:
        key = (text, tuple(id(hit) for hit in hits))
        if key not in found:
            found[key] = meaning(hits, text)
        return found[key]

    return asked


def _told(query: str, mode: str, hits: list[SearchHit], fusion: Fusion) -> list[float]:
    """Each hit's calibrated cosine with the query as its dense part tells it (a hybrid hit's is weighed by the
    fusion's alpha; a hit of the keyword list alone has none, and a keyword answer none at all: ``meaning`` finds
    them)."""
    weight = fusion.for_query(query).alpha if mode == "hybrid" else 0.0
    return [hit.dense_score / weight if weight > 0 else 0.0 for hit in hits]


def _about_one_word(
    words: frozenset[str], shared: frozenset[str], hit: SearchHit, meaning: Meaning, closeness: float
) -> bool:
    """Whether the hit closest to the query (``closeness``) holds only one of its two or more content words
    (``shared``), and that word alone is at least as close to it in meaning as the whole query: the passage is about
    the word, not the question (a study of why people drink wine, for "which wine goes with grilled salmon")."""
    if len(words) < 2 or len(shared) != 1:
        return False
    alone = meaning([hit], next(iter(shared)))
    return alone is not None and len(alone) == 1 and alone[0] >= closeness


def shares_a_word(query: str, hits: list[SearchHit]) -> bool:
    """Whether a hit holds one of the query's content words as written, or matched it in BM25 (a stem); True for a
    query of stop words only (nothing to judge by)."""
    words = lexical.query_words(query)
    return not words or _shares_a_word(hits, [_held(words, hit) for hit in hits])


def _shares_a_word(hits: list[SearchHit], held: list[int]) -> bool:
    """``held``: how many of the query's words each hit holds as written."""
    return any(_matched(hit) for hit in hits) or any(held)


def _matched(hit: SearchHit) -> bool:
    """Whether BM25 or the exact phrase matched the hit (a stem of one of the query's words, or the query whole)."""
    return hit.keyword_score > 0 or hit.phrase_score > 0


def _unreadable_and_unshared(words: frozenset[str], written: list[set[str]], known: frozenset[str]) -> bool:
    """The model knows too few of the query's words (without stop words: vocabulary.content) to read it, and no hit
    holds one of them as written (``written``: each hit's words): nothing says what the query is about. A BM25 match
    does not count here: it may be another language's stop word ("mit" of a German question meets the MIT licence)."""
    return not readable(words, known) and not any(words & hit_words for hit_words in written)


def _held(words: frozenset[str], hit: SearchHit) -> int:
    return len(words & _written(hit))


def _written(hit: SearchHit) -> set[str]:
    """A hit's words as written, case and accents folded (lexical.phrase_text), its title and headings too."""
    return set(lexical.phrase_text(" ".join((hit.title, *hit.heading_path, hit.text))).split())
