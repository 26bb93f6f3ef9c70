"""The word as written before its stems: does a short query find a passage holding it first? (issue 52, point 1)

    python -m bench.exact_words --out bench/results/exact_words.json

Debian's installation guide in four languages (installation-guide-amd64: install.{en,de,fr,es}.txt, the plain-text
build of the manual) is ingested into one collection through the real pipeline (chunker preset ``default``, the
bundled model; bench/results/tmp/exact_words/, reused). From each guide, QUERIES words are drawn (seed 52) whose
Snowball stem is shared by other words of the same guide at least as often as the word itself: "automáticamente"
(18 + 58 times) beside "automática", "automático", "automáticas" (47 times). Each word is searched alone, top_k 10,
in keyword and hybrid mode, with the exact-word lift and without it (``exact_phrase`` false turns both exact rules
off), in the same run: the share of queries whose first hit holds the word as written (case and accents aside),
and the mean rank of the first hit that does (11 when none of the 10 does).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import random
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

from ingestion_contracts.gateway import SearchRequest
from vector_gateway import lexical

from .data import Doc
from .pipeline import Stack, ingest, open_stack
from .rankings import TMP

GUIDES = Path("/usr/share/doc/installation-guide-amd64")
LANGUAGES = {"en": "english", "de": "german", "fr": "french", "es": "spanish"}
QUERIES = 30  # per language
MIN_LETTERS = 6
COLLECTION = "exact_words"


def guide_text(language: str) -> str:
    with gzip.open(GUIDES / language / f"install.{language}.txt.gz", "rt", encoding="utf-8") as handle:
        return unicodedata.normalize("NFC", handle.read())


def chosen_words(text: str, language: str, count: int = QUERIES, seed: int = 52) -> list[str]:
    """Words of ``text`` (letters only, MIN_LETTERS or more, no stop word) whose stem's other forms occur at least as
    often as they do, ``count`` of them drawn with ``seed``."""
    import snowballstemmer

    stemmer = snowballstemmer.stemmer(LANGUAGES[language])
    counts = Counter(w for w in re.findall(r"[^\W\d_]+", text.casefold()) if len(w) >= MIN_LETTERS)
    by_stem: dict[str, int] = Counter()
    for word, n in counts.items():
        by_stem[stemmer.stemWord(word)] += n
    fit = sorted(w for w, n in counts.items() if w not in lexical.ENGLISH_STOP_WORDS
                 and by_stem[stemmer.stemWord(w)] - n >= max(n, 2))  # fmt: skip
    return random.Random(seed).sample(fit, min(count, len(fit)))


async def first_holding(stack: Stack, word: str, mode: str, exact: bool) -> int:
    request = SearchRequest(query=word, collections=[COLLECTION], mode=mode, top_k=10, exact_phrase=exact)  # type: ignore[arg-type]  # mode is one of the Literal's words
    found = await stack.backend.search(request)
    words = frozenset(lexical.phrase_text(word).split())
    holding = (i for i, h in enumerate(found.hits, 1) if lexical.holds_words(words, h.title, *h.heading_path, h.text))
    return next(holding, 11)


async def measure(work: Path) -> dict[str, Any]:
    texts = {language: guide_text(language) for language in LANGUAGES}
    async with open_stack(work) as stack:
        names = {c.name for c in (await stack.backend.list_collections()).collections}
        if COLLECTION not in names:
            docs = [Doc(f"install-{lang}", f"Debian installation guide ({lang})", text, prefix="guide:")
                    for lang, text in texts.items()]  # fmt: skip
            await ingest(stack, docs, collection=COLLECTION, batch_size=1)
        out: dict[str, Any] = {}
        for language, text in texts.items():
            words = chosen_words(text, language)
            rows = {}
            for mode in ("keyword", "hybrid"):
                for exact in (False, True):
                    ranks = [await first_holding(stack, w, mode, exact) for w in words]
                    rows[f"{mode}, {'lift' if exact else 'no lift'}"] = {
                        "first": round(sum(r == 1 for r in ranks) / len(ranks), 3),
                        "mean_rank": round(sum(ranks) / len(ranks), 2),
                        "missed": [w for w, r in zip(words, ranks, strict=True) if r != 1][:8],
                    }
            out[language] = {"queries": len(words), "examples": words[:6], **rows}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.exact_words", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--work-dir", type=Path, default=TMP / "exact_words")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    report = asyncio.run(measure(args.work_dir))
    print(json.dumps(report, indent=1, ensure_ascii=False))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
