"""BEIR-format benchmarks (SciFact, dbpedia-5k) from BENCH_DIR: corpus, test queries, qrels, subsets.

BENCH_DIR is the folder that holds ``scifact/`` and ``dbpedia-5k/``, each in BEIR's layout (corpus.jsonl,
queries.jsonl, qrels/test.tsv); where it is not set, the first ``shared/bench`` folder found in a folder above the
checkout (docs/benchmarks.md, "The data"). Nothing is downloaded.

SciFact's qrels are binary (every judged pair scores 1); dbpedia-5k's are graded 0/1/2 (0 = judged not
relevant). Grades are kept: nDCG uses them as gains, Recall and MRR count grade >= 1 as relevant.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _bench_dir() -> Path:
    """BENCH_DIR, else the first shared/bench in a folder above the checkout (one beside a clone, or above a
    worktree of it)."""
    if named := os.environ.get("BENCH_DIR"):
        return Path(named)
    root = Path(__file__).resolve().parents[1]
    found = (parent / "shared" / "bench" for parent in root.parents)
    return next((path for path in found if path.is_dir()), root.parent / "shared" / "bench")


BENCH_DIR = _bench_dir()
DEFAULT_DIR = BENCH_DIR / "scifact"
DATASETS = {"scifact": BENCH_DIR / "scifact", "dbpedia-5k": BENCH_DIR / "dbpedia-5k"}
SOURCE_PREFIX = "scifact:"  # a SciFact document's source is "scifact:<corpus id>"
# Queries and judgments of splits the shared copies lack (bench/sets/*/SOURCE.md): SciFact's train claims.
SETS_DIR = Path(__file__).resolve().parent / "sets"
TRAIN_SPLITS = {"scifact": SETS_DIR / "scifact-train"}
# dbpedia-5k has one judged split (40 queries): bench.tune tunes on DEV_SHARE of them, drawn with DEV_SEED, and
# reports the rest (held out) beside all 40.
DEV_SEED = 52
DEV_SHARE = 0.5


@dataclass(frozen=True)
class Doc:
    doc_id: str
    title: str
    text: str
    prefix: str = SOURCE_PREFIX

    @property
    def source(self) -> str:
        return f"{self.prefix}{self.doc_id}"


def corpus_id(source: str) -> str:
    """The corpus id a hit's source names ("<dataset>:<corpus id>"; ids may contain ':' themselves)."""
    return source.split(":", 1)[1]


@dataclass
class Dataset:
    docs: list[Doc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # query id -> {corpus id: grade >= 1}
    name: str = "scifact"
    graded: bool = False

    def subset(self, max_queries: int | None, extra_docs: int | None, seed: int = 13) -> Dataset:
        """The first ``max_queries`` queries, their relevant documents, and ``extra_docs`` random others
        (the distractors). None keeps everything."""
        if max_queries is None and extra_docs is None:
            return self
        query_ids = sorted(self.qrels, key=query_order)[: max_queries or None]
        qrels = {q: self.qrels[q] for q in query_ids}
        needed = set().union(*qrels.values())
        others = [d for d in self.docs if d.doc_id not in needed]
        rng = random.Random(seed)
        chosen = needed | {d.doc_id for d in rng.sample(others, min(len(others), extra_docs or 0))}
        docs = [d for d in self.docs if d.doc_id in chosen]
        return Dataset(docs, {q: self.queries[q] for q in query_ids}, qrels, self.name, self.graded)


SciFact = Dataset  # the name older callers import


def query_order(query_id: str) -> tuple[int, str]:
    return (int(query_id), "") if query_id.isdigit() else (0, query_id)


def load(directory: Path = DEFAULT_DIR, split: str = "test") -> Dataset:
    """The set in ``directory``; ``split`` "train" takes SciFact's train queries and judgments (TRAIN_SPLITS) over the
    same corpus, "dev" / "heldout" the two parts of dbpedia-5k's judged queries (``dev_split``)."""
    if split == "train":
        return _train_split(directory)
    if split in ("dev", "heldout"):
        return dev_split(load(directory), split)
    if not (directory / "corpus.jsonl").is_file():
        raise FileNotFoundError(
            f"No benchmark in {directory}: expected corpus.jsonl, queries.jsonl and qrels/test.tsv (BEIR format). "
            f"Set BENCH_DIR to the folder that holds scifact/ and dbpedia-5k/ (now {BENCH_DIR}), or pass --data DIR "
            "(docs/benchmarks.md, 'The data')."
        )
    name = directory.name
    prefix = f"{name}:"
    docs = []
    with (directory / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            docs.append(Doc(str(row["_id"]), (row.get("title") or "").strip(), (row.get("text") or "").strip(), prefix))
    qrels: dict[str, dict[str, int]] = {}
    grades: set[int] = set()
    with (directory / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
        next(handle)  # header
        for line in handle:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            grades.add(int(score))
            if int(score) > 0:
                qrels.setdefault(query_id, {})[doc_id] = int(score)
    queries = {}
    with (directory / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if str(row["_id"]) in qrels:
                queries[str(row["_id"])] = row["text"]
    return Dataset(docs, queries, qrels, name, graded=len(grades - {0}) > 1)


def _read_judged(path: Path, qrels_file: Path) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    qrels: dict[str, dict[str, int]] = {}
    with qrels_file.open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(query_id, {})[doc_id] = int(score)
    with path.open(encoding="utf-8") as handle:
        rows = (json.loads(line) for line in handle)
        queries = {str(row["_id"]): row["text"] for row in rows if str(row["_id"]) in qrels}
    return queries, qrels


def _train_split(directory: Path) -> Dataset:
    folder = TRAIN_SPLITS.get(directory.name)
    if folder is None:
        raise FileNotFoundError(f"No train split for {directory.name}: only {sorted(TRAIN_SPLITS)} have one.")
    test = load(directory)
    queries, qrels = _read_judged(folder / "queries.jsonl", folder / "qrels" / "train.tsv")
    return Dataset(test.docs, queries, qrels, test.name, test.graded)


def dev_split(data: Dataset, part: str) -> Dataset:
    """``data`` with a fixed part of its judged queries: "dev" (DEV_SHARE of them, drawn with DEV_SEED) or
    "heldout" (the others). For a set with no train split: tune on dev, report held out and all."""
    ids = sorted(data.qrels, key=query_order)
    random.Random(DEV_SEED).shuffle(ids)
    dev = set(ids[: round(len(ids) * DEV_SHARE)])
    chosen = [q for q in sorted(data.qrels, key=query_order) if (q in dev) == (part == "dev")]
    return Dataset(data.docs, {q: data.queries[q] for q in chosen}, {q: data.qrels[q] for q in chosen}, data.name,
                   data.graded)  # fmt: skip


def per_dataset_main(prog: str, description: str | None, measure: Callable[[str], Any], argv: list[str] | None) -> None:
    """A benchmark measured once per set: ``--dataset`` (repeatable; both sets by default) and ``--out`` (JSON)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--dataset", action="append", choices=sorted(DATASETS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    reports = [measure(dataset) for dataset in args.dataset or ["scifact", "dbpedia-5k"]]
    print(json.dumps(reports, indent=1))
    if args.out:
        args.out.write_text(json.dumps(reports, indent=1) + "\n")
