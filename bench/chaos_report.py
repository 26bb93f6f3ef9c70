"""The fault suite's table: one row per fault, the cells that must be 0 on a topology that rides faults out."""

from __future__ import annotations

import re
from typing import Any

from .results_io import public

# (header, how to read the cell from a fault's result)
COLUMNS: list[tuple[str, Any]] = [
    ("fault", lambda r: r["summary"]),
    ("acked / ended / stuck", lambda r: f"{r['jobs']['acknowledged']} / {r['jobs']['ended']} / {r['jobs']['stuck']}"),
    ("failed (codes)", lambda r: _failed(r["jobs"])),
    ("refused", lambda r: r["jobs"]["refused"]),
    ("stored", lambda r: r["documents"]["stored"]),
    ("lost", lambda r: r["documents"]["lost"]),
    ("dup", lambda r: r["documents"]["duplicated"]),
    ("wrong ver.", lambda r: r["documents"]["wrong_version"]),
    ("extra rows", lambda r: r["documents"]["extra_rows"]),
    ("exited", lambda r: _exited(r["exited"])),
    ("ran twice", lambda r: len(r["ran_twice"])),
    ("search ok % / p95", lambda r: _probe(r["probes"]["search"])),
    ("job status ok % / p95", lambda r: _probe(r["probes"]["get_job_status"])),
]
EXCEPTION_LINE = re.compile(r"^[\s|]*[\w.]*(Error|Exception|Group)\b")
ZERO_CELLS = ("lost", "duplicated", "wrong_version", "stuck", "exited", "ran_twice")


def _failed(jobs: dict[str, Any]) -> str:
    codes = ", ".join(f"{code} {n}" for code, n in sorted(jobs["failed_codes"].items()))
    return f"{jobs['failed']} ({codes})" if jobs["failed"] else "0"


def _exited(exits: list[dict[str, Any]]) -> str:
    names = sorted({e["process"] for e in exits})
    return f"{len(exits)} ({', '.join(names)})" if exits else "0"


def _probe(stats: dict[str, Any]) -> str:
    if not stats["calls"]:
        return "no calls"
    p95 = "-" if stats["p95_ms"] is None else f"{stats['p95_ms'] / 1000:.2f} s"
    return f"{stats['ok_pct']:.0f}% / {p95}"


def zero_cells(result: dict[str, Any]) -> dict[str, int]:
    """The counts that must be 0 when the topology rides the fault out."""
    return {
        "lost": result["documents"]["lost"], "duplicated": result["documents"]["duplicated"],
        "wrong_version": result["documents"]["wrong_version"], "stuck": result["jobs"]["stuck"],
        "exited": len(result["exited"]), "ran_twice": len(result["ran_twice"]),
    }  # fmt: skip


def markdown(results: list[dict[str, Any]], header: dict[str, Any]) -> str:
    rows = [r for r in results if "jobs" in r]
    lines = [
        f"Fault suite (`python -m bench.chaos`), code {header['code']}, {header['jobs']} ingest_text jobs a fault "
        f"({header['twice']} keys twice), {header['when']}.",
        "",
        "| " + " | ".join(name for name, _ in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(str(cell(r)) for _, cell in COLUMNS) + " |" for r in rows]
    lines += ["", "What each fault did, and what it showed:", ""]
    lines += [f"- **{r['fault']}**: " + "; ".join(_details(r)) for r in results]
    lines += ["", f"Logs of every process: `{public(header['logs'])}`."]
    return "\n".join(lines) + "\n"


def _details(result: dict[str, Any]) -> list[str]:
    if "jobs" not in result:
        return [f"did not run: {result.get('skipped') or result.get('error')}"]
    out = [str(result["note"])]
    jobs, docs, status = result["jobs"], result["documents"], result["probes"]["get_job_status"]
    for process in result["exited"]:
        last = (process.get("reason") or exit_reason(process.get("log_tail") or []))[:110]
        out.append(f"{process['process']} exited (code {process['returncode']}): `{last}`")
    if jobs["refused_errors"]:
        out.append(
            f"{jobs['refused']} submissions refused: " + " / ".join(f"`{e[:110]}`" for e in jobs["refused_errors"])
        )
    if status["errors"]:
        out.append("get_job_status during the fault: " + " / ".join(f"`{e[:110]}`" for e in status["errors"]))
    for kind in ("lost", "duplicated", "wrong_version"):
        if docs["keys"][kind]:
            out.append(f"{kind.replace('_', ' ')}: {', '.join(docs['keys'][kind])}")
    if result["ran_twice"]:
        out.append(f"ran twice at once: {', '.join(result['ran_twice'])}")
    return out


def exit_reason(tail: list[str]) -> str:
    """The last line of a log's tail that starts with an exception's name (a traceback's end), else its last line."""
    named = [line.strip(" |") for line in tail if EXCEPTION_LINE.match(line)]
    return "".join(c for c in (named or tail or [""])[-1].strip() if c.isprintable() and c != "\ufffd")
