"""The words the embedding model knows whole (vocabulary.py): what tells made-up words from a question (issue 52)."""

from __future__ import annotations

import json
from pathlib import Path

from vector_gateway.embedder import bundled_model_dir
from vector_gateway.vocabulary import model_words


def test_the_bundled_model_knows_real_words_whole_and_made_up_ones_in_pieces() -> None:
    words = model_words(bundled_model_dir())
    assert words is not None and len(words) > 20_000
    assert {"ballot", "delayed", "participants", "flu", "kettle"} <= words
    assert not {"kisknorttund", "trairfix", "vorpalix", "quokkaplume"} & words
    assert not any(word.startswith("##") or not word.isalpha() for word in words)


def test_a_tokenizer_without_whole_words_gives_none(tmp_path: Path) -> None:
    assert model_words(tmp_path) is None  # no tokenizer.json
    bpe = {"model": {"type": "BPE", "vocab": {"Ġthe": 1, "ball": 2}, "merges": []}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(bpe))
    assert model_words(tmp_path) is None  # BPE keeps pieces, not words: the rule is off
    (tmp_path / "tokenizer.json").write_text("{not json")
    assert model_words(tmp_path) is None
