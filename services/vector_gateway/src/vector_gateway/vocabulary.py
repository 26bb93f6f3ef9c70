"""The words the embedding model knows whole: what tells a question in words from made-up ones (issue 52, point 2).

A query of made-up words ("kisknorttund") shares no word with any passage, yet its vector sits as close to a name in
an encyclopedia (a calibrated 0.54) as a true paraphrase does to its passage in a small library ("why was the ballot
delayed" against "the committee postponed the vote": 0.55), so no meaning floor parts the two. The model's own
vocabulary does: a WordPiece tokenizer holds the words it has seen often as single tokens ("ballot", "flu"), while a
made-up word is cut into pieces ("kis", "##kno", ...). Of bench.offtopic_sets' 80 made-up queries none holds such a
word; relevance.off_topic holds back an answer that shares no word with the query when the query holds no word the
model knows either (nothing, then, can say what it is about).

Only a WordPiece tokenizer (BERT's family, the bundled all-MiniLM-L6-v2 among them) keeps whole words as tokens; for
another model ``model_words`` gives None and the rule is off.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from pathlib import Path

from .lexical import LANGUAGES, phrase_text, stop_words

log = logging.getLogger(__name__)


def model_words(model_dir: Path) -> frozenset[str] | None:
    """The whole words (letters only) of the model's WordPiece vocabulary, from its ``tokenizer.json``; None when it
    has none or is not WordPiece."""
    path = model_dir / "tokenizer.json"
    try:
        model = json.loads(path.read_text(encoding="utf-8")).get("model") or {}
    except (OSError, ValueError) as exc:
        log.info("no word list for the relevance judgment (%s: %s)", path.name, type(exc).__name__)
        return None
    vocab = model.get("vocab")
    if model.get("type") != "WordPiece" or not isinstance(vocab, dict):
        return None
    prefix = model.get("continuing_subword_prefix") or "##"
    return frozenset(word for word in vocab if not word.startswith(prefix) and word.isalpha())


def content(words: frozenset[str]) -> frozenset[str]:
    """The query's words (lexical.query_words) without the stop words of every analysed language ("für", "den", "la",
    "pour": pieces of the model's vocabulary, and words any passage of their language holds); all of them when
    nothing else is left."""
    return words - _every_stop_word() or words


@lru_cache(maxsize=1)
def _every_stop_word() -> frozenset[str]:
    """Every analysed language's stop words, folded as lexical.query_words folds a query ("für" -> "fur")."""
    return frozenset(phrase_text(" ".join(sorted(set().union(*(stop_words(code) for code in LANGUAGES))))).split())


def readable(words: frozenset[str], known: frozenset[str]) -> bool:
    """Whether the model can read a query of these content words (``content``): it knows at least half of them
    whole. A question in German, French or Spanish mostly is not (the bundled model is English): its vector then
    says little, and an answer none of whose hits shares one of these words with it is not shown on meaning alone
    (relevance.py)."""
    return 2 * len(words & known) >= len(words)
