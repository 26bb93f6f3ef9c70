"""What BM25 sees: words in the document's own language, each reduced to its Snowball stem, accents folded.

Milvus Lite has no language analyzers (no stemmer), so the gateway analyses in Python, the same way for the
stored text and for the query: "mutations" and "mutated" both become "mutat" and match each other. A
collection records the analysis it was built with (a property, PROPERTY), so a collection made before
keeps being queried as it was built and never mixes two analyses:

- ``raw``: text as is (collections made before stemming);
- ``snowball_en``: English stop words dropped, English stems (collections made before issue 38);
- ``snowball_multi`` (the default since): each document is analysed in its own language, detected once per
  document by py3langid (its model ships inside the wheel) among the languages Snowball stems; a text too
  short or too mixed to tell is English; a word in another script than its document's language is read in the
  language of its script (SCRIPT_LANGUAGES: Latin English, Cyrillic Russian, Greek Greek). Every stem is then
  folded to its letters without accents ("Binärpakete" -> German stem "binarpak", "Bröker" -> "broker"), so a
  name typed with or without its accents matches. An English document's terms are its folded English stems,
  exactly what snowball_en makes but for the accents (and for words in Cyrillic or Greek letters); another
  language's terms carry their language (LANGUAGE_MARK: "de\u01c2binarpak"), so
  no term of one language meets a term of another by chance. A query's language is not known (two or three
  words cannot tell it): it is analysed in English as before, and each word in every other language too, as
  marked terms. An English collection holds no marked Latin term, so it ranks and scores as with English alone; a
  collection of German, French and English manuals finds each in its own words.
"""

from __future__ import annotations

import re
import threading
import time
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

import snowballstemmer

Analysis = Literal["raw", "snowball_en", "snowball_multi"]
ANALYSES: tuple[Analysis, ...] = ("raw", "snowball_en", "snowball_multi")
PROPERTY = "bm25_analysis"
DEFAULT_ANALYSIS: Analysis = "snowball_multi"
# ISO 639-1 code (as py3langid names it) -> Snowball stemmer: the languages a document is analysed in.
LANGUAGES = {
    "en": "english", "de": "german", "fr": "french", "es": "spanish", "it": "italian", "pt": "portuguese",
    "nl": "dutch", "sv": "swedish", "da": "danish", "no": "norwegian", "nb": "norwegian", "fi": "finnish",
    "ru": "russian", "ro": "romanian", "hu": "hungarian", "tr": "turkish", "ca": "catalan", "cs": "czech",
    "pl": "polish", "el": "greek", "lt": "lithuanian", "id": "indonesian", "ga": "irish", "eu": "basque",
    "et": "estonian",
}  # fmt: skip
DEFAULT_LANGUAGE = "en"
# A document's language is trusted when py3langid gives it at least this probability (else English).
MIN_LANGUAGE_PROBABILITY = 0.9
LANGUAGE_SAMPLE_CHARS = 20_000  # enough text to tell; a 300-page manual is not read whole
# A word is read in its document's language when it is written in that language's script, and else in the language
# its own script says (SCRIPT_LANGUAGES): an English text that names things in Cyrillic keeps those names Russian, and
# a Russian one (as py3langid reads an English abstract with a Cyrillic name, probability 1.0) keeps its English words
# English. Before, the English words of such a text were stemmed as Russian ("theatres" no longer met "theatre") and
# kept "to", "a", "in" as Russian terms. Every language of LANGUAGES is written in Latin letters but these two.
SCRIPTS = {"ru": "CYRILLIC", "el": "GREEK"}
SCRIPT_LANGUAGES = {"LATIN": DEFAULT_LANGUAGE, "CYRILLIC": "ru", "GREEK": "el"}

_WORD = re.compile(r"\w+")
# Between a language and a term of that language: a letter (one token for Milvus' standard tokenizer and Lance's
# whitespace one) that no text's word holds.
LANGUAGE_MARK = "\u01c2"
_local = threading.local()
_identifier_lock = threading.Lock()
_identifier: Any = None
# The identifier (about 55 MB once its full model is dropped) is needed only while documents are written: it goes
# after this long unused, and the next write loads it again (0.7 s), as the converter's workers go (issue 49).
LANGUAGE_MODEL_IDLE_S = 50.0
_identifier_used = 0.0
_releaser: threading.Thread | None = None

# Lucene's English stop set (Milvus' `stop` filter gets the same list; see schema.py).
ENGLISH_STOP_WORDS = frozenset(
    (
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
        "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
        "will", "with",
    )
)  # fmt: skip


def known_analysis(value: object) -> Analysis:
    """The analysis a collection property names; "raw" for a collection made before the property existed."""
    return next((a for a in ANALYSES if a == value), "raw")


def _stemmer(algorithm: str = "english") -> snowballstemmer.stemmer:
    # Snowball stemmer objects keep state between calls: one per thread and language.
    stemmers = getattr(_local, "stemmers", None)
    if stemmers is None:
        stemmers = _local.stemmers = {}
    if algorithm not in stemmers:
        stemmers[algorithm] = snowballstemmer.stemmer(algorithm)
    return stemmers[algorithm]


@lru_cache(maxsize=262_144)
def stem(word: str) -> str:
    return _stemmer().stemWord(word)


@lru_cache(maxsize=262_144)
def _term(word: str, language: str) -> str:
    """``word`` (case-folded) stemmed in ``language`` and folded to its letters without accents."""
    stemmed = _stemmer(LANGUAGES[language]).stemWord(word) if language in LANGUAGES else word
    return fold(stemmed)


def fold(word: str) -> str:
    """The word without its accents (ö -> o, é -> e, ç -> c); letters of other scripts are kept."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFC", text).casefold())


def analyze(text: str, analysis: Analysis, language: str = DEFAULT_LANGUAGE) -> str:
    """The text as the BM25 field stores it, for a document in ``language`` (snowball_multi only)."""
    if analysis == "raw":
        return text
    if analysis == "snowball_en":
        return " ".join(stem(word) for word in _WORD.findall(text.lower()) if word not in ENGLISH_STOP_WORDS)
    language = language if language in LANGUAGES else DEFAULT_LANGUAGE
    own = SCRIPTS.get(language, "LATIN")
    terms = []
    for word in _words(text):
        script = _script(word)
        read = language if script == own else SCRIPT_LANGUAGES.get(script, language)
        if read != DEFAULT_LANGUAGE:
            terms.append(f"{read}{LANGUAGE_MARK}{_term(word, read)}")
        elif word not in ENGLISH_STOP_WORDS:
            terms.append(fold(stem(word)))
    return " ".join(terms)


def _script(word: str) -> str:
    """The script most of the word's letters are in: LATIN (every ASCII word, digits and underscores too), CYRILLIC,
    GREEK, or OTHER (another script, or no letter)."""
    if word.isascii():
        return "LATIN"
    cyrillic = greek = latin = 0
    for char in word:
        code = ord(char)
        if 0x400 <= code < 0x530:
            cyrillic += 1
        elif 0x370 <= code < 0x400 or 0x1F00 <= code < 0x2000:
            greek += 1
        elif char.isalpha() and (code < 0x250 or 0x1E00 <= code < 0x1F00):
            latin += 1
    count, script = max((cyrillic, "CYRILLIC"), (greek, "GREEK"), (latin, "LATIN"))
    return script if count else "OTHER"


def analyze_query(text: str, analysis: Analysis) -> str:
    """The query as BM25 matches it: for snowball_multi, its English terms (as a document's), then each word's
    terms in every other language, marked, each once; a word that is a stop word of a language ("de", "sur",
    "und") makes no term of that language: as English stop words do for English, it would match every passage of
    that language on a word that says nothing of the question. An English stop word makes no term in any language
    ("to" and "the" met a German passage quoting an English message; "a" is a stop word of French and Spanish)."""
    if analysis != "snowball_multi":
        return analyze(text, analysis)
    # Every word's English term, whatever its script: text stored before words were read by their script holds
    # its Cyrillic and Greek words so (and the marked terms below meet those stored since).
    english = " ".join(fold(stem(word)) for word in _words(text) if word not in ENGLISH_STOP_WORDS)
    others: dict[str, None] = {}
    for word in dict.fromkeys(_words(text)):
        if word in ENGLISH_STOP_WORDS:  # nor in another language: those that are words there are its stop words too
            continue
        for language in LANGUAGES:
            if LANGUAGES[language] != "english" and word not in stop_words(language):
                others[f"{language}{LANGUAGE_MARK}{_term(word, language)}"] = None
    return " ".join([english, *others]).strip()


@lru_cache(maxsize=len(LANGUAGES))
def stop_words(language: str) -> frozenset[str]:
    """The stop words of ``language`` (an ISO 639-1 code) as ``_words`` reads a query (case-folded, NFC), from the
    stop-words package's lists; none for a language it has no list of."""
    from stop_words import StopWordError, get_stop_words

    try:
        listed = get_stop_words(language)
    except StopWordError:
        return frozenset()
    return frozenset(unicodedata.normalize("NFC", word).casefold() for word in listed)


def _language_identifier() -> Any:
    """py3langid's identifier, restricted to the languages analysed here (loaded on first use: 0.7 s; released
    after LANGUAGE_MODEL_IDLE_S unused)."""
    global _identifier, _identifier_used, _releaser
    with _identifier_lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            identifier.set_languages(sorted(set(LANGUAGES) & set(identifier.nb_classes)))
            # It keeps the whole model to set other languages later, which this never does: 27 MB freed.
            if hasattr(identifier, "_full_model"):
                identifier._full_model = (identifier.nb_ptc, identifier.nb_pc, identifier.nb_classes)
            _identifier = identifier
        _identifier_used = time.monotonic()
        if _releaser is None:
            _releaser = threading.Thread(target=_release_when_idle, name="language-model-release", daemon=True)
            _releaser.start()
        return _identifier


def _release_when_idle() -> None:
    """Drop the identifier once unused for LANGUAGE_MODEL_IDLE_S (a caller holding it keeps it until done)."""
    global _identifier, _releaser
    while True:
        with _identifier_lock:
            left = _identifier_used + LANGUAGE_MODEL_IDLE_S - time.monotonic()
            if left <= 0:
                _identifier = _releaser = None
                break
        time.sleep(min(left, 1.0))  # a shorter idle time set meanwhile (a test) is seen within a second
    from servicekit.memory import collect_and_trim

    collect_and_trim()


def document_language(texts: Sequence[str]) -> str:
    """The language a document is written in (ISO 639-1, one of LANGUAGES), from its first text; English
    when it cannot be told with MIN_LANGUAGE_PROBABILITY."""
    sample, size = [], 0
    for text in texts:
        sample.append(text)
        size += len(text)
        if size >= LANGUAGE_SAMPLE_CHARS:
            break
    joined = "\n".join(sample)[:LANGUAGE_SAMPLE_CHARS]
    if not any(c.isalpha() for c in joined):
        return DEFAULT_LANGUAGE
    language, probability = _language_identifier().classify(joined)
    return str(language) if language in LANGUAGES and probability >= MIN_LANGUAGE_PROBABILITY else DEFAULT_LANGUAGE


def content_words(text: str) -> int:
    """How many words of ``text`` BM25 matches on (stop words left out), whatever a collection's analysis."""
    return sum(word not in ENGLISH_STOP_WORDS for word in _WORD.findall(text.lower()))


# -- exact phrases (search.py): the query's words, in order, inside a passage's --------------------------------------
PHRASE_MIN_WORDS = 4  # a query this long (2+ of them not stop words) is a phrase; one or two words never are
_PHRASE_WORD = re.compile(r"[^\W_]+")  # letters and digits: punctuation, Markdown marks and escapes are no words


def phrase_text(text: str) -> str:
    """``text`` as an exact-phrase check compares it: its words (letters and digits) in order, compatibility
    forms unfolded (NFKC: the ligature "ﬁ" is "fi"), case-folded, accents folded as BM25 folds them (``fold``),
    one space between words and one at each end. Whitespace, line breaks, punctuation and Markdown marks or
    escapes ("\\_", "**") do not count, so a sentence copied from a PDF viewer matches the stored Markdown."""
    folded = fold(unicodedata.normalize("NFKC", text).casefold())
    return f" {' '.join(_PHRASE_WORD.findall(folded))} "


# A query of this many content words is looked for as written too (search.py, exact words). One: at 3, dbpedia-5k's
# entity queries ("laura bush") lost 0.007 nDCG@10, their judged documents not all holding every word as written.
EXACT_WORDS_MAX = 1


def exact_words(query: str) -> frozenset[str] | None:
    """The query's content words as written (``phrase_text``: case and accents folded, not stemmed), when it has 1
    to EXACT_WORDS_MAX of them: a passage holding them ranks above one that matches only their stems
    ("automáticamente" before "automáticas"). None for a longer query."""
    found = [word for word in phrase_text(query).split() if word not in ENGLISH_STOP_WORDS]
    return frozenset(found) if 0 < len(found) <= EXACT_WORDS_MAX else None


def query_words(query: str) -> frozenset[str]:
    """Every content word of the query as written (``phrase_text``, stop words left out), however many."""
    return frozenset(word for word in phrase_text(query).split() if word not in ENGLISH_STOP_WORDS)


def holds_words(words: frozenset[str], *texts: str) -> bool:
    """Whether ``texts`` together hold every one of ``words`` (``exact_words``) as a whole word."""
    return words <= set(phrase_text(" ".join(texts)).split())


def phrase(query: str) -> str | None:
    """The query as a phrase to look for word for word (``phrase_text``), or None when it is too short to be one:
    fewer than PHRASE_MIN_WORDS words, or fewer than two that are not stop words."""
    words = phrase_text(query).split()
    if len(words) < PHRASE_MIN_WORDS or sum(word not in ENGLISH_STOP_WORDS for word in words) < 2:
        return None
    return f" {' '.join(words)} "
