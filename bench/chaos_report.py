"""The fault suite's table: one row per fault, the cells that must be 0 on a topology that rides faults out."""

from __future__ import annotations

from typing import Any

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
    lines += ["", "What each fault did:", ""]
    lines += [f"- **{r['fault']}**: {r.get('note') or r.get('error', '')}" for r in results]
    broken = [r for r in results if "jobs" not in r]
    if broken:
        lines += ["", "Runs that did not complete: " + "; ".join(f"{r['fault']}: {r['error']}" for r in broken)]
    lines += ["", f"Logs of every process: `{header['logs']}`."]
    return "\n".join(lines) + "\n"
