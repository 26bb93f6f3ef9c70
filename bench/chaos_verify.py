"""What a fault left behind, counted from the systems themselves, not from what the tools said.

- jobs: each acknowledged job's record in Redis (``ingestion-mcp:job:<id>``) after a bounded wait;
- documents: the gateway's registry listing and each document's chunks read back (their version tags);
- runs: the workers' logs (arq's '→ id:' start and '←/↻/⊘/!' end lines), to find a job run twice at once.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import httpx
import redis

from bench.chaos_faults import RECORD_PREFIX
from bench.chaos_workload import TAG, Submission
from scripts.chaos_topology import ChaosTopology

NOT_RUN = "ended before it ran"  # what worker_command.execute answers for a try that found its job over


async def wait_for_jobs(topology: ChaosTopology, subs: list[Submission], bound_s: float) -> float:
    """Poll the acknowledged jobs' records until every one ended or ``bound_s`` passed; seconds waited."""
    started = time.monotonic()
    pending = [s for s in subs if s.acknowledged and s.job_id]
    while pending and time.monotonic() - started < bound_s:
        records = await asyncio.to_thread(_records, topology.redis.url, [s.job_id or "" for s in pending])
        for sub, record in zip(pending, records, strict=True):
            sub.final = record or sub.final
        pending = [s for s in pending if s.final.get("status") in (None, "running")]
        await asyncio.sleep(1.0)
    return time.monotonic() - started


def _records(url: str, job_ids: list[str]) -> list[dict[str, Any] | None]:
    try:
        raws = cast(list[Any], redis.Redis.from_url(url, socket_timeout=3).mget([RECORD_PREFIX + i for i in job_ids]))
    except redis.RedisError:
        return [None] * len(job_ids)
    return [json.loads(raw) if raw else None for raw in raws]


def job_outcome(sub: Submission) -> str:
    """completed / failed / cancelled / running / missing (no record) for an acknowledged submission."""
    if sub.result_status is not None:
        return "completed"
    return str(sub.final.get("status") or "missing")


def jobs_summary(subs: list[Submission]) -> dict[str, Any]:
    acked = [s for s in subs if s.acknowledged]
    outcomes = Counter(job_outcome(s) for s in acked)
    failed = [s for s in acked if job_outcome(s) == "failed"]
    return {
        "submitted": len(subs), "acknowledged": len(acked),
        "ended": sum(outcomes[k] for k in ("completed", "failed", "cancelled")),
        "stuck": outcomes["running"] + outcomes["missing"], "outcomes": dict(outcomes),
        "failed": len(failed),
        "failed_codes": dict(Counter(str(s.final.get("error_code") or "?") for s in failed)),
        "failed_errors": sorted({str(s.final.get("error"))[:200] for s in failed})[:4],
        "refused": len(subs) - len(acked), "refused_errors": sorted({str(s.error) for s in subs if s.error})[:4],
        "retried": sum(1 for s in acked if (s.final.get("attempt") or 0) > 1),
    }  # fmt: skip


def read_store(topology: ChaosTopology, collection: str) -> dict[str, Any]:
    """The registry's documents with the version tags found in each one's chunks, and the collection's counts."""
    with httpx.Client(base_url=topology.gateway_url, headers=topology.headers(), timeout=60) as http:
        info = _get(http, f"/v1/collections/{collection}")
        if info is None:
            return {"collection": None, "documents": []}
        documents: list[dict[str, Any]] = []
        while True:
            page = _get(http, f"/v1/collections/{collection}/documents", limit=1000, offset=len(documents))
            documents += (page or {}).get("documents", [])
            if not page or len(documents) >= page["total"] or not page["documents"]:
                break
        for doc in documents:
            chunks = _get(http, f"/v1/collections/{collection}/documents/{doc['doc_id']}/chunks")
            texts = [c["text"] for c in (chunks or {}).get("chunks", [])] if chunks else None
            doc["readable"] = None if texts is None else len(texts)
            doc["versions"] = sorted({int(m.group(1)) for t in texts or [] for m in TAG.finditer(t)})
    return {"collection": info, "documents": documents}


def _get(http: httpx.Client, path: str, **params: Any) -> Any:
    """GET with a few tries (a gateway may just have restarted); None on 404 or when every try failed."""
    for attempt in range(4):
        try:
            response = http.get(path, params=params)
            if response.status_code == 404:
                return None
            response.raise_for_status()
            return response.json()
        except httpx.HTTPError:
            time.sleep(1 + attempt)
    return None


def documents_summary(subs: list[Submission], store: dict[str, Any]) -> dict[str, Any]:
    by_key: dict[str, list[dict[str, Any]]] = {}
    for doc in store["documents"]:
        by_key.setdefault(doc.get("key") or doc["source"], []).append(doc)
    keys = sorted({s.key for s in subs if s.acknowledged})
    findings: dict[str, list[str]] = {"lost": [], "duplicated": [], "wrong_version": [], "unacked_write": []}
    for key in keys:
        for finding in _judge(key, [s for s in subs if s.key == key], by_key.get(key, [])):
            findings[finding].append(key)
    info = store["collection"] or {}
    rows = sum(d["chunk_count"] for d in store["documents"])
    return {
        "stored": sum(1 for k in keys if _readable(by_key.get(k, []))),
        **{name: len(found) for name, found in findings.items()},
        "extra_rows": max(0, int(info.get("chunk_count", 0)) - rows),
        "unexpected": sorted(set(by_key) - {s.key for s in subs} - {"seed"}),
        "keys": findings,
    }  # fmt: skip


def _readable(docs: list[dict[str, Any]]) -> bool:
    return bool(docs) and all(d["readable"] == d["chunk_count"] > 0 for d in docs)


def _judge(key: str, subs: list[Submission], docs: list[dict[str, Any]]) -> list[str]:
    """lost / duplicated / wrong_version / unacked_write for one key (its submissions in order)."""
    completed = [s for s in subs if s.acknowledged and job_outcome(s) == "completed"]
    found: list[str] = []
    if completed and not _readable(docs):
        found.append("lost")
    if len(docs) > 1 or any((d["readable"] or 0) > d["chunk_count"] for d in docs):
        found.append("duplicated")
    stored = {v for d in docs for v in d["versions"]}
    if completed and docs and stored != {completed[-1].version}:
        later = {s.version for s in subs if s.order > completed[-1].order and not s.acknowledged}
        found.append("unacked_write" if stored and stored <= later else "wrong_version")
    return found


def _ts(line: dict[str, Any]) -> float:
    return datetime.fromisoformat(line["ts"].replace("Z", "+00:00")).timestamp()


def worker_runs(topology: ChaosTopology) -> dict[str, list[tuple[str, float, float]]]:
    """job id -> its runs as (worker, started, ended), from the arq lines of the workers' logs."""
    lifetimes = topology.ended_lifetimes()
    runs: dict[str, list[tuple[str, float, float]]] = {}
    for worker in topology.workers:
        open_runs: dict[str, float] = {}
        for line in _json_lines(worker.log_path):
            message, at = str(line.get("msg", "")), _ts(line)
            ref = next((w for w in message.split() if w.startswith("job_") and ":" in w), None)
            if line.get("logger") != "arq.worker" or ref is None:
                continue
            job_id = ref.split(":")[0].split("(")[0]
            if "→" in message:
                open_runs[job_id] = at
            elif job_id in open_runs and NOT_RUN not in message:
                runs.setdefault(job_id, []).append((worker.name, open_runs.pop(job_id), at))
            else:  # the try found the job ended already (worker_command.execute's answer): it ran nothing
                open_runs.pop(job_id, None)
        for job_id, at in open_runs.items():  # no end line: the run ended with its process
            end = next((e for s, e in lifetimes.get(worker.name, []) if s <= at <= e), time.time())
            runs.setdefault(job_id, []).append((worker.name, at, end))
    return runs


def _json_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for raw in path.read_text(errors="replace").splitlines() if path.exists() else []:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and "ts" in line:
            out.append(line)
    return out


def ran_twice_at_once(runs: dict[str, list[tuple[str, float, float]]]) -> dict[str, list[list[Any]]]:
    """Jobs with two runs overlapping in time (on two workers, or twice on one)."""
    found = {}
    for job_id, spans in runs.items():
        ordered = sorted(spans, key=lambda span: span[1])
        if any(b[1] < a[2] for a, b in itertools.pairwise(ordered)):
            found[job_id] = [[w, round(s, 2), round(e, 2)] for w, s, e in ordered]
    return found
