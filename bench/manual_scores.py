"""What an exact sentence from a long manual scores, per search mode, against off-topic queries (issue 38, point 6).

    python -m bench.manual_scores --data DIR --file /usr/share/doc/gnuplot/gnuplot.pdf --sentences 60

Ingests the manual into DIR through the embedded stack (reused when it is there), draws sentences of 8-40 words
from its text (fixed seed, prose only: no code, no headings), searches each as typed in every mode, and reports
the score of the best hit holding the sentence (and how often that hit is first), beside the best score of
bench.offtopic's 40 everyday off-topic queries on the same collection. A "relevant" threshold that holds for
long documents sits above the off-topic scores and below the exact sentences'.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
from pathlib import Path
from typing import Any

from ingestion_contracts.gateway import SearchRequest

from .offtopic import OFF_TOPIC
from .pipeline import open_stack

COLLECTION = "manual_scores"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _sentences(markdown: str, count: int, seed: int) -> list[str]:
    prose = [block for block in markdown.split("\n\n") if block and not block.startswith(("#", "```", "|", "- "))]
    found = []
    for block in prose:
        for sentence in _SENTENCE.split(" ".join(block.split())):
            if 8 <= len(sentence.split()) <= 40 and sentence.endswith("."):
                found.append(sentence)
    random.Random(seed).shuffle(found)
    return found[:count]


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"min": round(ordered[0], 3), "p10": round(ordered[len(ordered) // 10], 3),
            "median": round(statistics.median(ordered), 3), "max": round(ordered[-1], 3)}  # fmt: skip


async def measure(data: Path, file: Path, count: int, seed: int, collection: str = COLLECTION) -> dict[str, Any]:
    from ingestion_mcp.ingest.pipeline import BatchItem

    async with open_stack(data) as stack:
        names = {c.name for c in (await stack.backend.list_collections()).collections}
        if collection not in names:
            await stack.ingestor.ingest_many([BatchItem(file_path=str(file))], collection=collection)
        listing = await stack.backend.list_documents(collection, offset=0, limit=50)
        wanted = next(d for d in listing.documents if file.name in d.source)
        doc = await stack.backend.get_document(collection, wanted.doc_id)
        sentences = _sentences(doc.content, count, seed)
        report: dict[str, Any] = {"file": file.name, "sentences": len(sentences)}
        for mode in ("hybrid", "semantic", "keyword"):
            scores, first = [], 0
            for sentence in sentences:
                found = await stack.backend.search(SearchRequest(query=sentence, collections=[collection], mode=mode))
                holding = [hit for hit in found.hits if sentence[:60] in " ".join(hit.text.split())]
                scores.append(holding[0].score if holding else 0.0)
                first += bool(holding) and found.hits[0].chunk_id == holding[0].chunk_id
            off = []
            for query in OFF_TOPIC:
                found = await stack.backend.search(SearchRequest(query=query, collections=[collection], mode=mode))
                off.append(found.hits[0].score if found.hits else 0.0)
            report[mode] = {"exact_sentence": _summary(scores), "sentence_first": round(first / len(sentences), 3),
                            "off_topic_best": _summary(off)}  # fmt: skip
            print(mode, report[mode], flush=True)
        return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.manual_scores", description=__doc__)
    parser.add_argument("--data", type=Path, required=True, help="embedded data folder (the manual is kept there)")
    parser.add_argument("--file", type=Path, default=Path("/usr/share/doc/gnuplot/gnuplot.pdf"))
    parser.add_argument("--sentences", type=int, default=60)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--collection", default=COLLECTION, help="where the manual is (or goes)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    report = asyncio.run(measure(args.data, args.file, args.sentences, args.seed, args.collection))
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
