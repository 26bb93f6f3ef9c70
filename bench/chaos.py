"""Fault suite (issue 20, point 9): does the distributed deployment ride out faults?

    python -m bench.chaos [--faults redis-restart,redis-freeze] [--jobs N] [--quick] [--code HEAD]

Each fault runs on a fresh topology (scripts/chaos_topology.py: Redis with AOF, a milvus-lite server,
two vector gateways and two MCP replicas each behind a round-robin balancer, two queue workers, docling
and chunker, AUTH_TOKEN everywhere). A real MCP client submits ``--jobs`` ingest_text jobs (some keys
twice, with new content) before and during the fault while probes call ``search`` (3/s) and
``get_job_status`` (1/s). After the fault every acknowledged job gets a bounded wait, then the jobs'
records (Redis), the documents (the gateway's registry and each document's chunks read back) and the
workers' logs are counted (bench/chaos_verify.py). Results: bench/results/chaos.json and chaos.md.
Exit status 1 when a cell that must be 0 (lost, duplicated, wrong version, stuck, exited, ran twice) is not.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.chaos_faults import FAULTS, QUICK, Fault, FaultContext
from bench.chaos_report import exit_reason, markdown, zero_cells
from bench.chaos_verify import (
    documents_summary,
    jobs_summary,
    ran_twice_at_once,
    read_store,
    wait_for_jobs,
    worker_runs,
)
from bench.chaos_workload import WORDS, Probe, Submission, call, connect, plan, probe, submit
from scripts.chaos_topology import FAKETIME_LIB, ChaosTopology, TopologyOptions

from .results_io import write_json

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "results" / "chaos.json"


@dataclass
class Config:
    jobs: int = 12
    twice: int = 3
    paragraphs: int = 40  # ~30 chunks a document: seconds of embedding on shared cores
    gap_s: float = 0.7  # between two submissions
    wait_s: float = 240.0  # the bound on every acknowledged job's end, after the fault
    hold_s: float = 20.0  # a freeze or a full broker lasts this long
    lease_s: int = 10  # INGESTION_MCP_JOB_LEASE_S: a killed worker's job runs again after this
    code_root: Path | None = None
    mcp_env: dict[str, str] = field(default_factory=dict)

    def options(self) -> TopologyOptions:
        env = {"INGESTION_MCP_SYNC_WAIT_S": "1", "INGESTION_MCP_JOB_LEASE_S": str(self.lease_s)} | self.mcp_env
        return TopologyOptions(mcp_env=env, code_root=self.code_root)


async def seed(client: Any, collection: str) -> None:
    """One small document first: a search of a collection that does not exist yet is an error, rightly."""
    text = "# Seed\n\n" + " ".join(WORDS * 4)
    answer, error = await call(client, "ingest_text", 120, text=text, name="seed", collection=collection)
    deadline = time.monotonic() + 180
    while answer is not None and answer.get("job_id") and time.monotonic() < deadline:
        status, error = await call(client, "get_job_status", 30, job_id=answer["job_id"])
        job = (status or {}).get("job") or {}
        if job.get("status") == "completed":
            return
        if job.get("status") in ("failed", "cancelled"):
            error = job.get("error")
            break
        await asyncio.sleep(0.5)
    if answer is None or answer.get("job_id"):
        raise RuntimeError(f"the seed document was not stored: {error or answer}")


async def submit_all(client: Any, subs: list[Submission], ctx: FaultContext, collection: str, config: Config) -> None:
    """The 'before' half at once (spaced), the 'during' half once the fault started; a key's versions in order."""
    answered = {(s.key, s.version): asyncio.Event() for s in subs}

    async def one(sub: Submission, delay: float) -> None:
        await asyncio.sleep(delay)
        if sub.version > 1:
            await answered[(sub.key, sub.version - 1)].wait()
        try:
            await submit(client, sub, collection, config.paragraphs, timeout_s=120)
        finally:
            answered[(sub.key, sub.version)].set()

    before = [s for s in subs if s.phase == "before"]
    tasks = [asyncio.create_task(one(s, i * config.gap_s)) for i, s in enumerate(before)]
    await asyncio.gather(*tasks)
    ctx.before_done.set()
    with contextlib.suppress(TimeoutError):  # the injector never started: submit the rest anyway
        await asyncio.wait_for(ctx.opened.wait(), 300)
    during = [s for s in subs if s.phase == "during"]
    await asyncio.gather(*[asyncio.create_task(one(s, i * config.gap_s)) for i, s in enumerate(during)])
    ctx.workload_done.set()


async def exercise(topology: ChaosTopology, fault: Fault, config: Config) -> dict[str, Any]:
    collection = "chaos_" + fault.name.replace("-", "_")
    subs = plan(config.jobs, config.jobs // 2 if fault.all_twice else config.twice)
    search, status = Probe("search"), Probe("get_job_status")
    headers, url = topology.headers(), topology.mcp_url
    async with connect(url, headers) as submitter, connect(url, headers) as reader, connect(url, headers) as poller:
        await seed(submitter, collection)
        ctx = FaultContext(topology, lambda: [s.job_id for s in subs if s.job_id], asyncio.Event(), config.hold_s)
        stop = asyncio.Event()

        def latest_job(_: Any) -> dict[str, Any] | None:
            ids = [s.job_id for s in subs if s.job_id]
            return {"job_id": ids[-1]} if ids else None

        def query(rng: Any) -> dict[str, Any]:
            return {"query": " ".join(rng.sample(WORDS, 2)), "collection": collection, "top_k": 3}

        probes = [asyncio.create_task(probe(reader, search, 0.33, stop, query)),
                  asyncio.create_task(probe(poller, status, 1.0, stop, latest_job))]  # fmt: skip
        submitting = asyncio.create_task(submit_all(submitter, subs, ctx, collection, config))
        note = await fault.inject(ctx)
        await asyncio.wait_for(submitting, 600)
        waited = await wait_for_jobs(topology, subs, config.wait_s)
        stop.set()
        await asyncio.gather(*probes)
    start, end = ctx.window
    return {
        "note": note, "collection": collection, "window_s": round(end - start, 1), "waited_s": round(waited, 1),
        "probes": {"search": search.stats(start, end), "get_job_status": status.stats(start, end)},
        "probes_whole_run": {"search": search.stats(0, time.time()), "get_job_status": status.stats(0, time.time())},
        "jobs": jobs_summary(subs), "submissions": [_row(s) for s in subs],
        "subs": subs,
    }  # fmt: skip


def _row(sub: Submission) -> dict[str, Any]:
    final = {k: sub.final.get(k) for k in ("status", "attempt", "error_code", "current_step", "step_ms")}
    result = sub.final.get("result")
    outcome: dict[str, Any] = result if isinstance(result, dict) else {}
    final["outcome"] = {k: outcome.get(k) for k in ("status", "chunks", "warnings") if k in outcome}
    return {"key": sub.key, "version": sub.version, "phase": sub.phase, "job_id": sub.job_id,
            "answered_s": round(sub.answered - sub.started, 2), "result": sub.result_status, "error": sub.error,
            "final": final}  # fmt: skip


def run_fault(fault: Fault, workdir: Path, config: Config) -> dict[str, Any]:
    """One fault on a fresh topology in ``workdir``: its result (or the error that stopped it)."""
    result: dict[str, Any] = {"fault": fault.name, "summary": fault.summary, "logs": str(workdir)}
    if fault.options.get("gateway_skew") and not Path(FAKETIME_LIB).exists():
        return result | {"skipped": f"no {FAKETIME_LIB} (apt-get install -y faketime)"}
    try:
        with ChaosTopology(workdir, uuid.uuid4().hex, fault.topology_options(config.options())) as topology:
            outcome = asyncio.run(exercise(topology, fault, config))
            subs = outcome.pop("subs")
            store = read_store(topology, outcome["collection"])
            topology.watch.check()
            result |= outcome | {"documents": documents_summary(subs, store)}
            result["exited"] = [e | _last_words(topology.log_of(e["process"])) for e in topology.watch.exits]
            result["ran_twice"] = ran_twice_at_once(worker_runs(topology))
            result["zero_cells"] = zero_cells(result)
    except Exception as exc:  # noqa: BLE001 - one fault's failure must not hide the others' results
        result["error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
        result["traceback"] = traceback.format_exception(exc)[-30:]
    return result


def _last_words(log: Path) -> dict[str, Any]:
    """Why a process died, from its log: the last exception line (a job's pickled text may follow it)."""
    tail = log.read_text(errors="replace").splitlines()[-400:] if log.exists() else []
    return {"reason": exit_reason(tail), "log_tail": tail[-6:]}


def export_code(rev: str, into: Path) -> tuple[Path | None, str]:
    """The product code to run: the working tree as installed ('worktree'), or ``rev`` exported from git."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    if rev == "worktree":
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "libs", "services"], cwd=ROOT,
                               capture_output=True, text=True).stdout.count("\n")  # fmt: skip
        return None, f"working tree at {head.strip()}" + (f" (+{dirty} changed files)" if dirty else "")
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev, "libs", "services"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True).stdout
    return into, f"{sha.strip()} (git archive of {rev})"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", help=f"comma-separated, from: {', '.join(FAULTS)} (default: all)")
    parser.add_argument("--jobs", type=int, help="ingest_text submissions a fault (default 12; --quick 6)")
    parser.add_argument("--twice", type=int, help="keys submitted twice, among them (default 3; --quick 2)")
    parser.add_argument("--quick", action="store_true", help=f"faults {', '.join(QUICK)} at small N")
    parser.add_argument("--code", default="worktree", help="'worktree' (default) or a git revision to run")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON report; .md beside it ({DEFAULT_OUT})")
    parser.add_argument("--workdir", type=Path, help="where logs go (default: a new temporary folder)")
    parser.add_argument("--render", type=Path, help="only write the .md table of this JSON report again")
    return parser.parse_args(argv)


def run_suite(names: list[str], config: Config, workdir: Path, out: Path, header: dict[str, Any]) -> list[dict]:
    results: list[dict[str, Any]] = []
    for name in names:
        print(f"[chaos] {name} ...", file=sys.stderr, flush=True)
        started = time.monotonic()
        result = run_fault(FAULTS[name], workdir / name, config)
        result["run_s"] = round(time.monotonic() - started, 1)
        results.append(result)
        print(f"[chaos] {name}: {result.get('zero_cells') or result.get('error')}", file=sys.stderr, flush=True)
        write(out, results, header)
    return results


def write(out: Path, results: list[dict[str, Any]], header: dict[str, Any]) -> str:
    table = markdown(results, header)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, {**header, "faults": results})
    out.with_suffix(".md").write_text(table)
    return table


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        report = json.loads(args.render.read_text())
        print(write(args.render, report.pop("faults"), report))
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: every process started gets killed
    names = args.faults.split(",") if args.faults else list(QUICK if args.quick else FAULTS)
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        raise SystemExit(f"unknown faults: {', '.join(unknown)} (known: {', '.join(FAULTS)})")
    config = Config(jobs=args.jobs or (6 if args.quick else 12), twice=args.twice or (2 if args.quick else 3))
    if args.quick:
        config.paragraphs, config.wait_s = 30, 150.0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="chaos-"))
    config.code_root, code = export_code(args.code, workdir / "code")
    header = {"code": code, "jobs": config.jobs, "twice": config.twice, "logs": str(workdir),
              "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "config": config.__dict__}  # fmt: skip
    results = run_suite(names, config, workdir, args.out, header)
    print(write(args.out, results, header))
    broken = any("error" in r or any(r.get("zero_cells", {}).values()) for r in results)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
