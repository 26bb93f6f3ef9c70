"""The embedding model's own tokenizer, used to count content tokens (no [CLS]/[SEP])."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

from tokenizers import Encoding, Tokenizer

from .settings import tokenizer_file

# A chunk holds at most this many characters per token of its window. WordPiece reads any word
# over 100 characters as one [UNK] token, so a base64 run or a minified line would otherwise
# make a "200-token" chunk of megabytes.
MAX_CHARS_PER_TOKEN = 16


class TokenizerLoadError(RuntimeError):
    """The tokenizer file is missing or not a Hugging Face tokenizer.json."""


class TokenCounter:
    """Thread-safe wrapper: encodes without special tokens, padding or truncation."""

    def __init__(self, tokenizer: Tokenizer, name: str) -> None:
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        self.name = name

    @classmethod
    def from_path(cls, path: Path, name: str) -> TokenCounter:
        file = tokenizer_file(path)
        try:
            tokenizer = Tokenizer.from_file(str(file))
        except Exception as exc:  # the Rust side raises bare Exception
            raise TokenizerLoadError(
                f"Cannot load the tokenizer {file}: {exc}. Point CHUNKER_TOKENIZER_PATH at a Hugging Face "
                "tokenizer.json (the embedding model's own)."
            ) from exc
        return cls(tokenizer, name)

    def encode(self, text: str) -> Encoding:
        return self._tokenizer.encode(text, add_special_tokens=False)

    def encode_many(self, texts: Sequence[str]) -> list[Encoding]:
        """Batch encode (parallel in Rust); the result is in the order of ``texts``."""
        if not texts:
            return []
        return self._tokenizer.encode_batch(list(texts), add_special_tokens=False)

    def count(self, text: str) -> int:
        return len(self.encode(text).ids)

    def count_many(self, texts: Sequence[str], batch: int = 4096) -> list[int]:
        """Token counts, encoded in batches so that large inputs do not hold every Encoding at once."""
        counts: list[int] = []
        for i in range(0, len(texts), batch):
            counts.extend(len(e.ids) for e in self.encode_many(texts[i : i + batch]))
        return counts

    def size_function(self, cache_size: int = 65_536) -> Callable[[str], int]:
        """Size of a piece of text for the splitter: its tokens, or more when its characters are too many.

        One cache per call: the recursive splitter measures the same pieces several times.
        """

        @lru_cache(maxsize=cache_size)
        def size(piece: str) -> int:
            if not piece:
                return 0
            return max(self.count(piece), math.ceil(len(piece) / MAX_CHARS_PER_TOKEN))

        return size
