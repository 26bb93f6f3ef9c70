"""Questions a reader asks of real manuals, answered through the MCP tools (issue 52, point 5).

    python -m bench.manual_qa --out bench/results/manual_qa.json

The question set (bench/sets/manual_qa/*.jsonl, one file per manual) was written by reading eight manuals of the
project's manual set (bench/manuals.py: Debian -doc packages; PDF and HTML, English, German, French and Spanish):
each question in the manual's language, the section that answers it (its heading path as get_document_outline
gives it), its page, and the words or short quote the answer holds (bench/manual_qa_set.py reads it).

The real server (``ingestion_mcp.cli.server_command`` over stdio, embedded services, a fresh data folder) ingests
the eight manuals into one collection with ``ingest_document``, as an agent's library holds them; with
``--per-manual``, each manual into a collection of its own (a library of one manual, whose own words are in many of
its passages), each question asked of its manual's collection and the off-topic questions of each collection.
Each question is asked with ``search`` (top_k 5, as an agent calls it: the relevance floor on) in hybrid, keyword
and semantic mode, then hybrid with ``min_score: 0`` (``hybrid_no_floor``: what the floor costs here), hybrid with
``per_document: 1`` (``hybrid_grouped``: five documents, each by its best passage), and keyword and semantic with
``min_score: 0``:

- ``rank1``, ``top5``: the answering section's passage is the first hit, or among the five: a hit of the question's
  document whose section path is the answer's or lies under it;
- ``answer_whole`` (hybrid): ``get_document_section`` of the first hit's section (its subsections with it, the
  tool's default) holds every word or quote of the answer, as an agent that reads the top hit's section would
  find it; ``read_chars`` is the median length of that read;
- ``held_back``: answers the relevance floor held back whole (no hit shown); ``floor_cost``, per mode: the share of
  the answers found in the top 5 without the floor that it held back (issue 52, point 2: at most 1%);
- ``gold_whole``: the answer's own section, read by its path, holds the answer (checks the set itself: 1.0);
- ``ranks``: each question's rank in each way (null: not in the five) and its answer_whole, to compare two runs;
- ``offtopic``: questions the manuals do not answer (bench.offtopic_sets' test half: everyday questions in English,
  German, French and Spanish, and made-up words), asked in each mode: the share answering nothing, and each shown
  answer with its first hit.

Needs the -doc packages bench/manuals.py names for these manuals. Figures: docs/search-scores.md "Questions on
real manuals".
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

from .manual_qa_set import CHOSEN, Question, holds, load_questions, manual_files
from .offtopic_sets import offtopic_sets
from .pdf_scale import ROOT, server
from .results_io import write_json
from .scale_mcp import BIG_BUDGET, OPEN_TIMEOUT_S, first_answer

COLLECTION = "manuals"
# Each way a question is asked: the three modes as an agent calls them, then hybrid without the relevance floor (what
# the floor costs here) and hybrid grouped by document (one passage per manual file, issue 52 point 6).
# Then keyword and semantic without the floor, for what the floor costs in each mode.
WAYS: dict[str, dict[str, Any]] = {
    "hybrid": {"mode": "hybrid"}, "keyword": {"mode": "keyword"}, "semantic": {"mode": "semantic"},
    "hybrid_no_floor": {"mode": "hybrid", "min_score": 0}, "hybrid_grouped": {"mode": "hybrid", "per_document": 1},
    "keyword_no_floor": {"mode": "keyword", "min_score": 0}, "semantic_no_floor": {"mode": "semantic", "min_score": 0},
}  # fmt: skip
MODES = ("hybrid", "keyword", "semantic")
TOP_K = 5


def stage(docs: Path) -> dict[str, str]:
    """Each chosen manual's files copied (unzipped) under docs/<manual>/; {file name: manual}."""
    owner: dict[str, str] = {}
    for manual in CHOSEN:
        folder = docs / manual
        folder.mkdir(parents=True, exist_ok=True)
        for path in manual_files(manual):
            data = path.read_bytes()
            name = path.name.removesuffix(".gz")
            (folder / name).write_bytes(gzip.decompress(data) if path.suffix == ".gz" else data)
            owner[f"{manual}/{name}"] = manual
    return owner


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = await client.call_tool(tool, arguments)
    if answer.is_error or answer.structured_content is None:
        raise RuntimeError(f"{tool} failed: {answer.content}")
    return answer.structured_content


async def ingest(client: Client, path: Path, collection: str = COLLECTION) -> dict[str, Any]:
    """One ingest_document call, its job polled when it outlasts the call."""
    result = await call(client, "ingest_document", {"file_path": str(path), "collection": collection})
    while job_id := result.get("job_id"):
        await anyio.sleep(1.0)
        job = (await call(client, "get_job_status", {"job_id": job_id})).get("job") or {}
        if job.get("status") != "running":
            result = dict(job.get("result") or {"status": job.get("status"), "error": job.get("error")})
    return result


async def documents(client: Client, collection: str = COLLECTION) -> dict[str, str]:
    """{"manual/file name": doc_id} of the collection's documents."""
    found: dict[str, str] = {}
    offset: int | None = 0
    while offset is not None:
        page = await call(client, "list_documents", {"collection": collection, "offset": offset, "limit": 200})
        for item in page.get("documents") or []:
            source = Path(item.get("key") or item["source"])
            found[f"{source.parent.name}/{source.name}"] = item["doc_id"]
        offset = page.get("next_offset")
    return found


async def read_section(client: Client, doc_id: str, heading: list[str], collection: str = COLLECTION) -> str:
    """The whole of a section (its subsections with it), read window by window."""
    text, start = "", 0
    while True:
        answer = await call(client, "get_document_section", {"doc_id": doc_id, "collection": collection,
                                                              "heading": heading, "start_char": start})  # fmt: skip
        text += answer.get("content") or ""
        if not answer.get("truncated"):
            return text
        start = answer["next_start_char"]


def answers_in(hit: dict[str, Any], question: Question, doc_ids: dict[str, str]) -> bool:
    """The hit is of the question's document, in the answer's section or one under it."""
    if hit.get("doc_id") != doc_ids.get(question.doc_key):
        return False
    path = (hit.get("section") or "").split(" > ") if hit.get("section") else []
    return path[: len(question.section)] == question.section


async def ask(
    client: Client, question: Question, doc_ids: dict[str, str], collection: str = COLLECTION
) -> dict[str, Any]:
    row: dict[str, Any] = {"id": question.id}
    for way, arguments in WAYS.items():
        answer = await call(client, "search", {"query": question.question, "collection": collection,
                                               "top_k": TOP_K, **arguments})  # fmt: skip
        hits = answer.get("results") or []
        ranks = [i for i, hit in enumerate(hits, 1) if answers_in(hit, question, doc_ids)]
        # Every held-back answer's message says how to see it ("Pass min_score: 0"), whatever held it: the floor, or
        # words without meaning, or words the model cannot read (before, only the floor's, which names it, counted).
        held = not hits and "min_score: 0" in answer["message"]
        row[way] = {"rank": ranks[0] if ranks else None, "held_back": held}
        if way == "hybrid":
            row["top_hit"] = [hits[0].get("title"), hits[0].get("section")] if hits else None
            read = ""
            if hits and hits[0].get("section"):
                read = await read_section(client, hits[0]["doc_id"], hits[0]["section"].split(" > "), collection)
            row["answer_whole"] = bool(read) and holds(read, question.answer)
            row["read_chars"] = len(read)
    try:
        gold = await read_section(client, doc_ids[question.doc_key], question.section, collection)
    except (KeyError, RuntimeError):  # no such document or section: the set is wrong, shown in gold_failed
        gold = ""
    row["gold_whole"] = holds(gold, question.answer)
    return row


async def outlines(client: Client, doc_ids: dict[str, str], collection_of: Callable[[str], str]) -> dict[str, Any]:
    """Every document's outline (heading paths and pages), for writing and checking questions."""
    out: dict[str, list[dict[str, Any]]] = {}
    for key, doc_id in sorted(doc_ids.items()):
        entries: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            arguments = {"doc_id": doc_id, "collection": collection_of(key.split("/")[0]), "offset": offset,
                         "response_format": "detailed"}  # fmt: skip
            page = await call(client, "get_document_outline", arguments)
            entries += [{"path": s.get("heading_path"), "page": s.get("page")} for s in page.get("sections") or []]
            offset = page.get("next_offset")
        out[key] = entries
    return out


def share(rows: list[dict[str, Any]], test: Any) -> float:
    return round(sum(1 for row in rows if test(row)) / len(rows), 3) if rows else 0.0


def floor_cost(rows: list[dict[str, Any]], mode: str) -> float:
    """The share of the answers found in the top 5 without the relevance floor that the floor held back."""
    found = [r for r in rows if r[f"{mode}_no_floor"]["rank"] is not None]
    return round(sum(1 for r in found if r[mode]["held_back"]) / len(found), 4) if found else 0.0


async def offtopic(client: Client, collections: list[str]) -> dict[str, Any]:
    """Questions the manuals do not answer (bench.offtopic_sets' test half: everyday questions in English, German,
    French and Spanish, made-up words), asked of each collection in each mode as an agent asks them: the share of
    the answers that are empty, and each shown answer's query and first hit, for a reader to judge."""
    sets = offtopic_sets("test", multilingual=True)
    silent: dict[str, dict[str, float]] = {}
    shown: list[dict[str, Any]] = []
    for name, queries in sets.items():
        silent[name] = {}
        for mode in MODES:
            quiet = 0
            for collection in collections:
                for query in queries:
                    answer = await call(client, "search", {"query": query, "collection": collection,
                                                           "top_k": TOP_K, "mode": mode})  # fmt: skip
                    hits = answer.get("results") or []
                    quiet += not hits
                    if hits:
                        top = hits[0]
                        first = [top.get("title"), top.get("section")]
                        shown.append({"set": name, "mode": mode, "collection": collection, "query": query,
                                      "score": top.get("score"), "top_hit": first})  # fmt: skip
            silent[name][mode] = round(quiet / (len(queries) * len(collections)), 3)
    return {"queries": {name: len(queries) for name, queries in sets.items()}, "collections": len(collections),
            "silent": silent, "shown": shown}  # fmt: skip


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(rows)}
    for way in WAYS:
        out[way] = {
            "rank1": share(rows, lambda r, w=way: r[w]["rank"] == 1),
            "top5": share(rows, lambda r, w=way: r[w]["rank"] is not None),
            "held_back": sum(1 for r in rows if r[way]["held_back"]),
        }
    out["floor_cost"] = {mode: floor_cost(rows, mode) for mode in MODES}
    out["answer_whole"] = share(rows, lambda r: r["answer_whole"])
    out["read_chars_median"] = int(statistics.median(r["read_chars"] for r in rows)) if rows else 0
    out["gold_whole"] = share(rows, lambda r: r["gold_whole"])
    return out


async def measure(work: Path, dump: Path | None, per_manual: bool = False) -> dict[str, Any]:
    questions = load_questions()
    load_before, began = os.getloadavg()[0], time.perf_counter()
    docs, data = work / "docs", work / "data"
    fresh = not data.exists()
    owner = stage(docs) if fresh else {}

    def collection_of(manual: str) -> str:
        """One collection for the eight manuals, or (``per_manual``) one per manual, named after it."""
        return manual if per_manual else COLLECTION

    collections = sorted({collection_of(manual) for manual in CHOSEN})
    launch = server(ROOT, docs, data)
    quiet = {"INGESTION_MCP_RESPONSE_TOKEN_BUDGET": BIG_BUDGET, "INGESTION_MCP_LOG_LEVEL": "WARNING"}
    launch = launch.model_copy(update={"env": {**(launch.env or {}), **quiet}})
    ingested: dict[str, Any] = {}
    with (work / "server.log").open("a") as errlog:
        async with Client(stdio_client(launch, errlog), read_timeout_seconds=OPEN_TIMEOUT_S) as client:
            started = time.perf_counter()
            for key, manual in owner.items():
                result = await ingest(client, docs / key, collection_of(manual))
                ingested[key] = result.get("status") or result.get("error")
            ingest_s = round(time.perf_counter() - started, 1)
            doc_ids: dict[str, str] = {}
            for collection in collections:
                doc_ids |= await documents(client, collection)
            if dump:
                write_json(dump, await outlines(client, doc_ids, collection_of))
            for collection in collections:
                await first_answer(client, "manual", collection)
            rows = [await ask(client, q, doc_ids, collection_of(q.manual)) | {"manual": q.manual} for q in questions]
            off = await offtopic(client, collections)
    failed = {k: v for k, v in ingested.items() if v not in ("indexed", "replaced", "updated", "skipped")}
    seconds = round(time.perf_counter() - began, 1)
    conditions = {"cores": os.cpu_count(), "load_before": round(load_before, 2),
                  "load_after": round(os.getloadavg()[0], 2), "seconds": seconds}  # fmt: skip
    head = {"collections": collections, "documents": len(doc_ids), "ingest_s": ingest_s if fresh else None,
            "ingest_failed": failed}  # fmt: skip
    return head | report(rows) | {"offtopic": off, "conditions": conditions}


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per manual and overall; the misses of hybrid; each question's ranks, to compare two runs."""
    by_manual: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_manual[row["manual"]].append(row)
    return {
        "manuals": len(by_manual), "top_k": TOP_K, "overall": summary(rows),
        "per_manual": {name: summary(part) for name, part in sorted(by_manual.items())},
        "misses": [{k: r[k] for k in ("id", "top_hit")} | {"hybrid_rank": r["hybrid"]["rank"]}
                   for r in rows if r["hybrid"]["rank"] != 1],
        "gold_failed": [r["id"] for r in rows if not r["gold_whole"]],
        "ranks": {r["id"]: [r[way]["rank"] for way in WAYS] + [r["answer_whole"]] for r in rows},
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.manual_qa", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--out", type=Path)
    parser.add_argument("--work-dir", type=Path, help="keep the ingested manuals here (reused when present)")
    parser.add_argument("--outlines", type=Path, help="also write every document's outline here")
    parser.add_argument("--per-manual", action="store_true",
                        help="one collection per manual (a small library), instead of one for the eight")  # fmt: skip
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="manual-qa-") as folder:
        work = (args.work_dir or Path(folder)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        report = anyio.run(measure, work, args.outlines, args.per_manual)
    shown = ("manuals", "documents", "ingest_s", "overall", "per_manual")
    print(json.dumps({k: report[k] for k in shown} | {"offtopic_silent": report["offtopic"]["silent"]}, indent=1))
    if args.out:
        write_json(args.out, report)


if __name__ == "__main__":
    main()
