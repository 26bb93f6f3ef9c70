"""English retrieval with the BM25 analysis of issue 38 against the one before, on the same chunks and vectors.

    python -m bench.experiments.bm25_languages --dataset scifact --dataset dbpedia-5k \
        --out bench/experiments/results/bm25_languages.json

Each set is ingested once through the real pipeline (bench.rankings: chunker preset ``default``, the bundled
model, Milvus Lite, analysis ``snowball_multi``: each document's language detected, its stems, accents folded,
a query analysed in every language). Its rows are then copied, vectors included, into a second collection whose
BM25 text is analysed as before (``snowball_en``), so the two differ in nothing but the analysis. Each query's
dense and BM25 lists (100 deep) are taken from both, and nDCG@10 reported for keyword, semantic and hybrid
(the gateway's calibrated fusion with its per-query weights), with how many documents were detected as
another language than English.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from ..data import DATASETS, load, per_dataset_main
from ..metrics import evaluate, fold_to_documents
from ..rankings import build, collection_name, ranked_lists

ROW_FIELDS = [
    *("chunk_id", "doc_id", "version", "chunk_index", "text", "source", "title", "file_type", "page", "page_end"),
    *("heading_path", "start", "end", "token_count", "tags", "metadata", "last_modified", "vector"),
]


def _copy_with_analysis(work: Path, source: str, target: str, analysis: str) -> dict[str, int]:
    """``source``'s rows into ``target``, BM25 text analysed with ``analysis``; languages detected per document."""
    from vector_gateway import lexical
    from vector_gateway.milvus import MilvusStore
    from vector_gateway.passages import search_text

    kind = lexical.known_analysis(analysis)
    store = MilvusStore(str(work / "milvus.db"), analysis=kind)
    rows = store.query(source, None, ROW_FIELDS)
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_doc.setdefault(row["doc_id"], []).append(row)
    languages: Counter[str] = Counter()
    if store.has_collection(target):  # made by an earlier run, maybe with another analysis code: made again
        store.drop_collection(target)
    dimension, model = store.describe(source)
    store.create_collection(target, dimension, model)
    out = []
    for chunks in by_doc.values():
        chunks.sort(key=lambda r: r["chunk_index"])
        language = lexical.document_language([r["text"] for r in chunks]) if analysis == "snowball_multi" else "en"
        languages[language] += 1
        for row in chunks:
            text = search_text(row["title"], row["heading_path"] or [], row["text"], kind, language)
            out.append({**row, "search_text": text})
    store.insert(target, out)
    store.flush(target)
    store.close()
    return dict(languages)


def measure(dataset: str) -> dict[str, Any]:
    from vector_gateway.embedder import create_embedder
    from vector_gateway.fusion import Fusion
    from vector_gateway.milvus import MilvusStore
    from vector_gateway.settings import GatewaySettings

    work = asyncio.run(build(dataset))
    data = load(DATASETS[dataset])
    name = collection_name(dataset)
    report: dict[str, Any] = {"dataset": dataset}
    embedder = create_embedder(GatewaySettings())
    for analysis in ("snowball_en", "snowball_multi"):
        target = f"{name}_{analysis}"
        report[f"languages_{analysis}"] = _copy_with_analysis(work, name, target, analysis)
        store = MilvusStore(str(work / "milvus.db"))
        lists = ranked_lists(store, embedder, target, data.queries)
        store.close()
        runs: dict[str, dict[str, list[str]]] = {"keyword": {}, "semantic": {}, "hybrid": {}}
        for qid, found in lists.items():
            doc_of = {chunk: doc for kind in ("dense", "bm25") for doc, chunk, _ in found[kind]}
            runs["semantic"][qid] = fold_to_documents(doc for doc, _, _ in found["dense"])
            runs["keyword"][qid] = fold_to_documents(doc for doc, _, _ in found["bm25"])
            fusion = Fusion().for_query(data.queries[qid])
            fused = fusion.fuse(*[[(c, s) for _, c, s in found[kind]] for kind in ("dense", "bm25")])
            runs["hybrid"][qid] = fold_to_documents(doc_of[chunk] for chunk, _ in fused)
        report[analysis] = {mode: round(evaluate(run, data.qrels)["ndcg@10"], 4) for mode, run in runs.items()}
        print(dataset, analysis, report[analysis], flush=True)
        if analysis == "snowball_multi":
            report["thresholds"] = _thresholds(work, target, embedder, lists, data)
    report["delta"] = {
        m: round(report["snowball_multi"][m] - report["snowball_en"][m], 4) for m in report["snowball_en"]
    }
    return report


def _thresholds(work: Path, collection: str, embedder: Any, lists: dict, data: Any) -> dict[str, dict[str, Any]]:
    """For each candidate threshold and mode: the share of the off-topic queries (bench.offtopic) whose best hit
    scores below it (they answer nothing), and the share of the relevant documents in the top 10 kept."""
    from vector_gateway.fusion import Fusion
    from vector_gateway.milvus import MilvusStore

    from ..offtopic import OFF_TOPIC, rates, single_rates

    store = MilvusStore(str(work / "milvus.db"))
    off = ranked_lists(store, embedder, collection, {str(i): query for i, query in enumerate(OFF_TOPIC)})
    store.close()
    table: dict[str, dict[str, Any]] = {}
    for threshold in (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5):
        table[str(threshold)] = {
            "hybrid": rates(threshold, Fusion(), lists, data.queries, data.qrels, off),
            "semantic": single_rates(threshold, "dense", lists, data.qrels, off),
            "keyword": single_rates(threshold, "bm25", lists, data.qrels, off),
        }
        print(threshold, table[str(threshold)], flush=True)
    return table


def main(argv: list[str] | None = None) -> None:
    per_dataset_main("bench.experiments.bm25_languages", __doc__, measure, argv)


if __name__ == "__main__":
    main()
