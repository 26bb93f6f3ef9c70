"""The same passage's keyword and hybrid score in libraries of 1, 10, 5,001 and 100,000 chunks, on Lance and Milvus
Lite (issue 52, point 3: "scores that mean the same in any library size").

    python -m bench.experiments.keyword_scale      # -> bench/experiments/results/keyword_scale.json (minutes)

The passage: the head of libusb's Debian copyright file (its packager and the first of its authors), written first
and alone (indexed on Lance, flushed on Lite: a segment of its own), then the library grows around it with GPL-3
paragraphs (each numbered, so every row is its own; their vectors embedded once per distinct paragraph and
repeated, so that 100,000 rows take minutes). The query holds five of the passage's rare words, not in its order
(no exact phrase) and more than three (no exact-word lift): BM25 and meaning alone. Searched through the gateway's
service right after the last write, as test_keyword_scale_api.py does at 1, 10 and 5,001 chunks; "relevant" is
RELEVANT_SCORE of the mode. On Lite, the store that wrote the library kept its BM25 statistics as it wrote; the store
is then opened again (a restart), and its first keyword search, which scans the statistics, is measured too.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from ingestion_contracts.gateway import RELEVANT_SCORE, SearchRequest, UpsertDocumentRequest
from vector_gateway.embedder import EmbedderHolder, create_embedder
from vector_gateway.lance import LanceStore
from vector_gateway.milvus import MilvusStore
from vector_gateway.passages import passage_text
from vector_gateway.service import GatewayService
from vector_gateway.settings import GatewaySettings

from ..rankings import TMP

OUT = Path(__file__).resolve().parent / "results" / "keyword_scale.json"
WORK = TMP / "keyword_scale"
SIZES = (1, 10, 5_001, 100_000)
NEEDLE = Path("/usr/share/doc/libusb-1.0-0/copyright")
QUERY = "Egorkine Vatchenko Rzepecki libusb Albrechtskirchinger"
GPL = Path("/usr/share/common-licenses/GPL-3")
PER_DOCUMENT = 1_000  # filler chunks per document
DISTINCT = 40  # filler vectors embedded (then repeated)


def _document(source: str, texts: list[str], vectors: list[list[float]] | None, model: str) -> UpsertDocumentRequest:
    chunks, offset = [], 0
    for index, text in enumerate(texts):
        chunks.append({"index": index, "text": text, "start": offset, "end": offset + len(text), "token_count": 1})
        offset += len(text) + 2
    body: dict[str, Any] = {
        "source": source, "title": source, "chunks": chunks,
        "content_hash": hashlib.sha256((source + "".join(texts)).encode()).hexdigest(),
    }  # fmt: skip
    if vectors is not None:
        body |= {"vectors": vectors, "embedding_model": model}
    return UpsertDocumentRequest.model_validate(body)


async def library(engine: str, folder: Path, size: int, filler: list[str], vectors: list[list[float]],
                  holder: EmbedderHolder) -> dict[str, Any]:  # fmt: skip
    store = LanceStore(str(folder / "lance")) if engine == "lance" else MilvusStore(str(folder / "milvus.db"))
    service = GatewayService(store, holder)
    try:
        needle = "\n".join(NEEDLE.read_text(encoding="utf-8").splitlines()[:40])
        name = f"scale_{size}"
        await service.upsert(name, [_document("libusb-copyright", [needle], None, "")])
        if isinstance(store, LanceStore):
            store.optimize(name)
        started, model = time.perf_counter(), holder.get().model_name
        if isinstance(store, LanceStore):  # the search comes before any background upkeep, as in the test
            store.upkeep._start = lambda name: None  # type: ignore[method-assign]  # why: the library as the writes left it
        for first in range(0, size - 1, PER_DOCUMENT):
            texts = filler[first : min(first + PER_DOCUMENT, size - 1)]
            doc = _document(f"gpl-{first}", texts, [vectors[i % DISTINCT] for i in range(len(texts))], model)
            await service.upsert(name, [doc])
        built = time.perf_counter() - started
        out: dict[str, Any] = {"chunks": store.count(name), "build_s": round(built, 1)}
        out["keyword"] = await ranked(service, name, "keyword")
        out["hybrid"] = await ranked(service, name, "hybrid")
        if isinstance(store, MilvusStore):
            # A store that did not make the collection (a restart) scans its statistics on its first keyword search,
            # which waits for the scan (up to lite_bm25.SCAN_WAIT_S).
            store.close()
            store = MilvusStore(str(folder / "milvus.db"))
            service = GatewayService(store, holder)
            out["keyword, reopened"] = await ranked(service, name, "keyword")
            out["keyword, reopened, second search"] = await ranked(service, name, "keyword")
        return out
    finally:
        store.close()


async def ranked(service: GatewayService, name: str, mode: Literal["keyword", "hybrid"]) -> dict[str, Any]:
    request = SearchRequest(query=QUERY, collections=[name], mode=mode, top_k=3, min_score=0)
    started = time.perf_counter()
    hits = (await service.search(request)).hits
    top = hits[0] if hits else None
    return {
        "first": top.source if top else None,
        "score": round(top.score, 3) if top else None,
        "relevant": bool(top and top.source == "libusb-copyright" and top.score >= RELEVANT_SCORE[mode]),
        "ms": round((time.perf_counter() - started) * 1000, 1),
    }


async def measure(engines: list[str], sizes: list[int]) -> dict[str, Any]:
    # The model files the embedder derives go under bench/results/tmp/ (kept between runs), not into the checkout.
    WORK.mkdir(parents=True, exist_ok=True)
    settings = GatewaySettings(milvus_uri=str(WORK / "unused.db"))
    embedder = create_embedder(settings)
    holder = EmbedderHolder(settings, embedder)
    paragraphs = [p.strip() for p in GPL.read_text(encoding="utf-8").split("\n\n") if len(p.strip()) > 200]
    filler = [f"{paragraphs[i % len(paragraphs)]} ({i})" for i in range(max(sizes))]
    vectors = embedder.embed_documents([passage_text("gpl", [], text) for text in filler[:DISTINCT]])
    report: dict[str, Any] = {"query": QUERY, "relevant_score": dict(RELEVANT_SCORE)}
    for engine in engines:
        report[engine] = {}
        for size in sizes:
            with tempfile.TemporaryDirectory() as work:
                report[engine][str(size)] = await library(engine, Path(work), size, filler, vectors, holder)
            print(engine, size, report[engine][str(size)], flush=True)
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.experiments.keyword_scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--engines", nargs="+", default=["lance", "milvus"], choices=["lance", "milvus"])
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    report = asyncio.run(measure(args.engines, args.sizes))
    args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
