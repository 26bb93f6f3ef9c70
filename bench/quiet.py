"""Figures taken on a quiet machine, with the conditions recorded: `make bench-quiet`, or any command.

    python -m bench.quiet [--max-load 1.0] [--wait 900] [--out FILE] -- python -m bench.sync --files 1000

Waits until the 1-minute load average is at or under ``--max-load`` (another job's last minutes fade), runs the
command, and records the conditions a figure is reported with: the cores, the load average before and after (1, 5
and 15 minutes), when, and how long. They are printed as one line ("2 cores, load 0.42 before, 1.31 after") and,
with ``--out``, written as JSON beside the results. A machine that stays busy past ``--wait`` seconds is refused
(exit 3) with its load: run again later, or raise --max-load and say so beside the figure.
Timings taken another way state their load the same way, in words, beside the figure (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

POLL_S = 5.0


def load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def wait_for_quiet(max_load: float, wait_s: float, poll_s: float = POLL_S) -> list[float] | None:
    """The load once its 1-minute average is at or under ``max_load``; None when it stays over for ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while (now := load())[0] > max_load:
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll_s)
    return now


def in_words(conditions: dict[str, Any]) -> str:
    before, after = conditions["load_before"][0], conditions["load_after"][0]
    return f"{conditions['cores']} cores, load {before} before, {after} after ({conditions['seconds']:.0f} s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.quiet", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--max-load", type=float, default=1.0, help="start once the 1-minute load is at most this")
    parser.add_argument("--wait", type=float, default=900.0, help="seconds to wait for it before refusing")
    parser.add_argument("--out", type=Path, help="write the conditions here as JSON")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    before = wait_for_quiet(args.max_load, args.wait)
    if before is None:
        print(f"bench.quiet: the load stayed over {args.max_load} for {args.wait:.0f} s (now {load()}); "
              "run again later, or raise --max-load and say so beside the figures", file=sys.stderr)  # fmt: skip
        return 3
    started, began = datetime.now(UTC), time.monotonic()
    code = subprocess.run(command, check=False).returncode
    conditions = {
        "command": " ".join(command), "cores": os.cpu_count(), "max_load": args.max_load, "load_before": before,
        "load_after": load(), "started_utc": started.isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - began, 1), "exit": code,
    }  # fmt: skip
    print(f"bench.quiet: {in_words(conditions)}", file=sys.stderr)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(conditions, indent=2) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
