"""What an exact sentence from a long manual scores, per search mode, against off-topic queries (issue 38, point 6).

    python -m bench.experiments.manual_scores --data DIR --file /usr/share/doc/gnuplot/gnuplot.pdf --file nettle.pdf \
        --out bench/experiments/results/manual_scores.json

Ingests each manual into DIR's collection (through the embedded stack; reused when it is there) and draws
sentences of 8-40 words (fixed seed; prose: mostly words, ending with a full stop) from two texts of it:

- ``converted``: the document as the converter read it (get_document: Markdown, escapes and all);
- ``pdftotext``: the PDF as a viewer shows it (poppler's pdftotext, lines joined): what a user copies from it.

Each is searched as typed in every mode through the gateway's own search code on the collection's Milvus Lite
file (vector_gateway.search, as the service runs it, top_k 10), with the exact-phrase lift and without it
(``before``). Reported per manual, source and mode: the score of the best hit holding the sentence (p10 / median /
min; a sentence no hit holds counts 0), how often that hit is first, how many sentences one chunk holds whole
(the others cross a chunk boundary or differ from the stored text), beside the best score of bench.offtopic's 40
everyday off-topic queries on the same collection. A "relevant" threshold that holds for long documents sits
above the off-topic scores and below the exact sentences'. A hit holds a sentence when its words (as
vector_gateway.lexical.phrase_text reads them) hold the first or the last half of the sentence's words in order.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import subprocess
from pathlib import Path
from typing import Any

from ..offtopic import OFF_TOPIC
from ..pipeline import open_stack
from ..results_io import write_json
from .exact_phrase import MODES, gateway_search

COLLECTION = "manual_scores"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _sentences(text: str, count: int, seed: int) -> list[str]:
    """Prose sentences of 8-40 words from paragraphs (blank-line separated), shuffled with ``seed``."""
    found = []
    for block in text.split("\n\n"):
        if not block.strip() or block.lstrip().startswith(("#", "```", "|", "- ")):
            continue
        for sentence in _SENTENCE.split(" ".join(block.split())):
            words = sentence.split()
            wordy = sum(bool(re.fullmatch(r"[A-Za-z][a-z'-]*[,;:.]?", w)) for w in words)
            if 8 <= len(words) <= 40 and sentence.endswith(".") and wordy >= 0.7 * len(words):
                found.append(sentence)
    found = sorted(set(found))
    random.Random(seed).shuffle(found)
    return found[:count]


def _viewer_text(pdf: Path) -> str:
    """The PDF's text as pdftotext reads it (reading order); pages are paragraph breaks."""
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True)
    return out.stdout.replace("\f", "\n\n")


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"min": round(ordered[0], 3), "p10": round(ordered[len(ordered) // 10], 3),
            "median": round(statistics.median(ordered), 3), "max": round(ordered[-1], 3)}  # fmt: skip


def _holds(hit_words: str, sentence_words: list[str]) -> bool:
    half = max(len(sentence_words) // 2, 4)
    return any(f" {' '.join(part)} " in hit_words for part in (sentence_words[:half], sentence_words[-half:]))


async def _texts(data: Path, files: list[Path], collection: str) -> dict[str, str]:
    """Each manual's converted text (ingested first where the collection lacks it)."""
    from ingestion_mcp.ingest.pipeline import BatchItem

    async with open_stack(data) as stack:
        listing = await stack.backend.list_documents(collection, offset=0, limit=100) if collection in {
            c.name for c in (await stack.backend.list_collections()).collections} else None  # fmt: skip
        held = {Path(d.source).name: d.doc_id for d in (listing.documents if listing else [])}
        for file in files:
            if file.name not in held:
                await stack.ingestor.ingest_many([BatchItem(file_path=str(file))], collection=collection)
        listing = await stack.backend.list_documents(collection, offset=0, limit=100)
        held = {Path(d.source).name: d.doc_id for d in listing.documents}
        return {file.name: (await stack.backend.get_document(collection, held[file.name])).content for file in files}


def measure(data: Path, files: list[Path], count: int, seed: int, collection: str = COLLECTION) -> dict[str, Any]:
    from vector_gateway.lexical import phrase_text

    converted = asyncio.run(_texts(data, files, collection))
    stored = _chunk_texts(data, collection)
    run, close = gateway_search(data / "milvus.db", [collection])
    report: dict[str, Any] = {"collection": collection, "sentences_per_source": count, "seed": seed}
    try:
        for lifted in (False, True):
            label = "lifted" if lifted else "before"
            report[f"off_topic_{label}"] = {
                mode: _summary([(hits[0].score if hits else 0.0) for hits in (run(q, mode, 10, lifted)
                                                                            for q in OFF_TOPIC)])
                for mode in MODES
            }  # fmt: skip
            print("off-topic", label, report[f"off_topic_{label}"], flush=True)
        for file in files:
            sources = {"converted": converted[file.name], "pdftotext": _viewer_text(file)}
            chunks = [phrase_text(text) for name, text in stored if name == file.name]
            for source, text in sources.items():
                sentences = _sentences(text, count, seed)
                words = [phrase_text(s).split() for s in sentences]
                whole = sum(any(f" {' '.join(w)} " in chunk for chunk in chunks) for w in words)
                entry: dict[str, Any] = {"sentences": len(sentences), "held_whole_by_a_chunk": whole}
                missed: list[dict[str, Any]] = []
                for lifted in (False, True):
                    for mode in MODES:
                        scores, first = [], 0
                        for sentence, sentence_words in zip(sentences, words, strict=True):
                            hits = run(sentence, mode, 10, lifted)
                            holding = [h for h in hits if _holds(phrase_text(h.text), sentence_words)]
                            scores.append(holding[0].score if holding else 0.0)
                            first += bool(holding) and hits[0].chunk_id == holding[0].chunk_id
                            if lifted and not (holding and hits[0].chunk_id == holding[0].chunk_id):
                                whole = any(f" {' '.join(sentence_words)} " in chunk for chunk in chunks)
                                missed.append({"mode": mode, "sentence": sentence, "held_whole": whole,
                                               "score": scores[-1]})  # fmt: skip
                        entry[f"{mode}{'' if lifted else '_before'}"] = {
                            "exact_sentence": _summary(scores), "first": round(first / len(sentences), 3)}  # fmt: skip
                report[f"{file.name} {source}"] = entry | {"not_first_lifted": missed}
                print(file.name, source, json.dumps(entry), flush=True)
    finally:
        close()
    return report


def _chunk_texts(data: Path, collection: str) -> list[tuple[str, str]]:
    """(file name, text) of every chunk, read from the store (to count the sentences one chunk holds whole)."""
    from vector_gateway.milvus import MilvusStore

    store = MilvusStore(str(data / "milvus.db"))
    try:
        store.ensure_loaded(collection)
        rows = store.query(collection, None, ["source", "text"])
    finally:
        store.close()
    return [(Path(row["source"]).name, row["text"]) for row in rows]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.experiments.manual_scores", description=__doc__)
    parser.add_argument("--data", type=Path, required=True, help="embedded data folder (the manuals are kept there)")
    parser.add_argument("--file", type=Path, action="append", help="a PDF under --data (repeat)")
    parser.add_argument("--sentences", type=int, default=60)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--collection", default=COLLECTION, help="where the manuals are (or go)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    files = args.file or [args.data / "gnuplot.pdf"]
    report = measure(args.data, files, args.sentences, args.seed, args.collection)
    print(json.dumps(report, indent=1))
    if args.out:
        write_json(args.out, report, indent=1)


if __name__ == "__main__":
    main()
