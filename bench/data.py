"""BEIR SciFact from shared/bench/scifact (corpus, test queries, qrels), and subsets for quick runs."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "scifact"
SOURCE_PREFIX = "scifact:"  # a document's source is "scifact:<corpus id>", so a hit names its corpus id


@dataclass(frozen=True)
class Doc:
    doc_id: str
    title: str
    text: str

    @property
    def source(self) -> str:
        return f"{SOURCE_PREFIX}{self.doc_id}"


@dataclass
class SciFact:
    docs: list[Doc]
    queries: dict[str, str]
    qrels: dict[str, set[str]]

    def subset(self, max_queries: int | None, extra_docs: int | None, seed: int = 13) -> SciFact:
        """The first ``max_queries`` queries, their relevant documents, and ``extra_docs`` random others
        (the distractors). None keeps everything."""
        if max_queries is None and extra_docs is None:
            return self
        query_ids = sorted(self.qrels, key=int)[: max_queries or None]
        qrels = {q: self.qrels[q] for q in query_ids}
        needed = set().union(*qrels.values())
        others = [d for d in self.docs if d.doc_id not in needed]
        rng = random.Random(seed)
        chosen = needed | {d.doc_id for d in rng.sample(others, min(len(others), extra_docs or 0))}
        return SciFact(
            docs=[d for d in self.docs if d.doc_id in chosen],
            queries={q: self.queries[q] for q in query_ids},
            qrels=qrels,
        )


def load(directory: Path = DEFAULT_DIR) -> SciFact:
    if not (directory / "corpus.jsonl").is_file():
        raise FileNotFoundError(
            f"SciFact not found in {directory}: expected corpus.jsonl, queries.jsonl and qrels/test.tsv "
            "(BEIR format). Pass --data DIR."
        )
    docs = []
    with (directory / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            docs.append(Doc(doc_id=str(row["_id"]), title=row.get("title", "").strip(), text=row["text"].strip()))
    qrels: dict[str, set[str]] = {}
    with (directory / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
        next(handle)  # header
        for line in handle:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(query_id, set()).add(doc_id)
    queries = {}
    with (directory / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if str(row["_id"]) in qrels:
                queries[str(row["_id"])] = row["text"]
    return SciFact(docs=docs, queries=queries, qrels=qrels)
