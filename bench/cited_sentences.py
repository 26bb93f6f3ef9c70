"""Which sentence of a hit's passage holds the answer: the gateway's cited sentences against the alternatives (issue 47,
point 6).

    python -m bench.cited_sentences --out bench/results/cited_sentences.json [--manuals nettle r-intro-pdf ...]

The manual question set (bench/sets/manual_qa: questions a reader asks of real Debian -doc manuals, each with the
words or short quote its answer holds) is asked through the real server (stdio, embedded services, a fresh data
folder; bench.manual_qa's set-up) with ``search`` (hybrid, detailed, top_k 5, min_score 0). Among the five hits, each
passage that holds the answer (bench.manual_qa_set.holds) is an "answering passage"; for each, the sentence chosen
is right when it holds a word or quote of the answer (``points``) or all of them (``whole``). Chosen by:

- ``lexical``: the gateway's ``cited`` (vector_gateway/cited.py: query words weighed by their rarity among the
  passage's sentences; the best sentence, and the second when it scores 3/4 of it);
- ``embedder``: every sentence of the passage embedded by the gateway's model, the one closest to the query's vector
  (which a search has already computed: only the sentences cost);
- ``first``: the passage's first sentence; ``chance``: the share of a passage's sentences that hold a word of the
  answer (what a sentence picked at random scores).

Also: the share of the passage's characters the cited sentences make (what a reader has to read), and the cost per
search (its five hits): the lexical choice as the gateway runs it, and the embedder's, median and p95 in ms.
Figures: docs/search-scores.md, "The cited sentence".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

from .manual_qa import COLLECTION, documents, ingest, stage
from .manual_qa_set import CHOSEN, holds, load_questions, plain
from .pdf_scale import ROOT, server
from .results_io import write_json
from .scale_mcp import BIG_BUDGET, OPEN_TIMEOUT_S

DEFAULT_MANUALS = ("nettle", "r-intro-pdf", "install-de", "packaging-guide-es")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 3) if ordered else 0.0


def right(text: str, answer: tuple[str, ...]) -> tuple[bool, bool]:
    """(holds a word or quote of the answer, holds all of them)."""
    where = plain(text)
    found = [plain(part) in where for part in answer]
    return any(found), all(found)


def judged(passages: list[tuple[str, str, tuple[str, ...], list[list[int]]]], embedder: Any) -> dict[str, Any]:
    """The answering passages (query, text, answer, cited) judged each way, and each way's cost per search."""
    from vector_gateway.cited import cited_sentences, sentences

    scores: dict[str, list[tuple[bool, bool]]] = {"lexical": [], "embedder": [], "first": []}
    chance, read = [], []
    for query, text, answer, cited in passages:
        spans = sentences(text)
        if not spans:
            continue
        scores["lexical"].append(right(" ".join(text[s:e] for s, e in cited), answer) if cited else (False, False))
        scores["first"].append(right(text[spans[0][0] : spans[0][1]], answer))
        vectors = embedder.embed_documents([text[s:e] for s, e in spans])
        wanted = embedder.embed_query(query)
        best = max(range(len(spans)), key=lambda i: sum(a * b for a, b in zip(vectors[i], wanted, strict=True)))
        scores["embedder"].append(right(text[spans[best][0] : spans[best][1]], answer))
        chance.append(sum(right(text[s:e], answer)[0] for s, e in spans) / len(spans))
        read.append(sum(e - s for s, e in cited) / max(len(text), 1) if cited else 1.0)
        assert cited_sentences(text, query) == cited, "the gateway's choice is this module's"
    count = len(scores["first"])
    out: dict[str, Any] = {"answering_passages": count}
    for way, found in scores.items():
        out[way] = {"points": round(sum(p for p, _ in found) / max(count, 1), 3),
                    "whole": round(sum(w for _, w in found) / max(count, 1), 3)}  # fmt: skip
    out["chance"] = round(statistics.fmean(chance), 3) if chance else None
    out["cited_share_of_passage"] = round(statistics.median(read), 3) if read else None
    return out


def costs(searches: list[list[tuple[str, str]]], embedder: Any, rounds: int = 3) -> dict[str, Any]:
    """Per search (its hits): ms of the lexical choice and of embedding every sentence, alternated, ``rounds`` each."""
    from vector_gateway.cited import cited_sentences, sentences

    lexical, embedded = [], []
    for _ in range(rounds):
        for hits in searches:
            started = time.perf_counter()
            for query, text in hits:
                cited_sentences(text, query)
            lexical.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            texts = [text[s:e] for _, text in hits for s, e in sentences(text)]
            if texts:
                embedder.embed_documents(texts)
            embedded.append((time.perf_counter() - started) * 1000)
    return {way: {"median_ms": round(statistics.median(v), 3), "p95_ms": percentile(v, 0.95)}
            for way, v in (("lexical", lexical), ("embedder", embedded))}  # fmt: skip


async def gather(work: Path, manuals: tuple[str, ...]) -> tuple[list[Any], list[list[tuple[str, str]]], float]:
    """Ingest the manuals and ask their questions: the answering passages, every search's hits, the ingest seconds."""
    questions = [q for q in load_questions() if q.manual in manuals]
    docs, data = work / "docs", work / "data"
    owner = {k: v for k, v in stage(docs).items() if v in manuals} if not data.exists() else {}
    launch = server(ROOT, docs, data)
    quiet = {"INGESTION_MCP_RESPONSE_TOKEN_BUDGET": BIG_BUDGET, "INGESTION_MCP_LOG_LEVEL": "WARNING"}
    launch = launch.model_copy(update={"env": {**(launch.env or {}), **quiet}})
    passages, searches = [], []
    with (work / "server.log").open("a") as errlog:
        async with Client(stdio_client(launch, errlog), read_timeout_seconds=OPEN_TIMEOUT_S) as client:
            started = time.perf_counter()
            for key in owner:
                await ingest(client, docs / key)
            ingest_s = round(time.perf_counter() - started, 1)
            doc_ids = await documents(client)
            for q in questions:
                args = {"query": q.question, "collection": COLLECTION, "top_k": 5, "min_score": 0,
                        "response_format": "detailed", "filters": {"doc_id": doc_ids.get(q.doc_key, "")}}  # fmt: skip
                found = (await client.call_tool("search", args)).structured_content or {}
                hits = found.get("results") or []
                searches.append([(q.question, h["text"]) for h in hits])
                passages += [(q.question, h["text"], q.answer, h.get("cited") or []) for h in hits
                             if holds(h["text"], q.answer)]  # fmt: skip
    return passages, searches, ingest_s


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.cited_sentences", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--out", type=Path)
    parser.add_argument("--work-dir", type=Path, help="keep the ingested manuals here (reused when present)")
    parser.add_argument("--manuals", nargs="+", default=list(DEFAULT_MANUALS), choices=CHOSEN)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from vector_gateway.embedder import create_embedder
    from vector_gateway.settings import GatewaySettings

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="cited-") as folder:
        work = (args.work_dir or Path(folder)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        passages, searches, ingest_s = anyio.run(gather, work, tuple(args.manuals))
        embedder = create_embedder(GatewaySettings(milvus_uri=str(work / "unused.db")))
        report = {"manuals": args.manuals, "searches": len(searches), "ingest_s": ingest_s,
                  **judged(passages, embedder), "cost_per_search": costs(searches, embedder),
                  "conditions": {"cores": os.cpu_count(), "load_before": round(load_before, 2),
                                 "load_after": round(os.getloadavg()[0], 2)}}  # fmt: skip
    print(json.dumps(report, indent=1))
    if args.out:
        write_json(args.out, report)


if __name__ == "__main__":
    main()
