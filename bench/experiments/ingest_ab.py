"""Ingest speed of two checkouts, interleaved: the same PDF through each one's whole embedded pipeline, in turns.

    python -m bench.experiments.ingest_ab --pdf SCAN.pdf --before /path/to/old/checkout --rounds 4 --runs 2 \\
        --out bench/results/ingest_ab_scan.json

Two checkouts measured one after the other drift apart with the machine (the same code gave 5.47 s and 5.93 s in
two sittings): here each round runs ``bench/ingest_speed.py`` (this checkout's copy) once with each side's own venv,
the order alternating between rounds, so a slow minute falls on both. Each call ingests ``--runs`` times into a
fresh data folder: its first run also creates the collection and warms the models (what a user's first ingest
pays), the later ones are a collection's steady state. Reported: every run's stages, and the medians of the first
runs, the later runs and all runs on each side, with the ratios after / before. Vectors are fp32 on both sides
(an old checkout has no int8 path). Take reported figures on a quiet
machine: python -m bench.quiet -- python -m bench.experiments.ingest_ab ...
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..results_io import public

HERE = Path(__file__).resolve().parents[1]  # bench/: ingest_speed.py is a kept benchmark
STAGES = ("total_ms", "parsing_ms", "embedding_ms", "storing_ms")


def _side(checkout: Path, pdf: Path, runs: int, engine: str, out: Path) -> list[dict[str, Any]]:
    python = checkout / ".venv" / "bin" / "python"
    environment = {**os.environ, "VECTOR_GATEWAY_EMBEDDING_PRECISION": "fp32"}
    command = [str(python), str(HERE / "ingest_speed.py"), "--pdf", str(pdf), "--runs", str(runs),
               "--engines", engine, "--out", str(out)]  # fmt: skip
    subprocess.run(command, cwd=checkout, env=environment, check=True, stdout=subprocess.DEVNULL)
    report = json.loads(out.read_text())
    return [{**run, "commit": report["commit"], "run": index} for index, run in enumerate(report["engines"][0]["runs"])]


def _medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {stage: round(statistics.median(run[stage] for run in runs), 1) for stage in STAGES} if runs else {}


def summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians of the first runs, the later ones and all, a side; after / before of each."""
    out: dict[str, Any] = {}
    for part, keep in (("first", lambda r: r["run"] == 0), ("later", lambda r: r["run"] > 0), ("all", lambda r: True)):
        medians = {side: _medians([r for r in found if keep(r)]) for side, found in runs.items()}
        ratios = {stage: round(medians["after"][stage] / medians["before"][stage], 3)
                  for stage in STAGES if medians["before"].get(stage)}  # fmt: skip
        out[part] = {**medians, "after_over_before": ratios}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdf", type=Path, required=True)
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (with its own .venv)")
    parser.add_argument("--after", type=Path, default=HERE.parent, help="this checkout by default")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--runs", type=int, default=2, help="ingests a side a round (the first one is cold)")
    parser.add_argument("--engine", default="milvus", choices=["milvus", "lance"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ingest-ab-") as work:
        for round_number in range(args.rounds):
            order = ("before", "after") if round_number % 2 == 0 else ("after", "before")
            for side in order:
                found = _side(sides[side], args.pdf, args.runs, args.engine, Path(work) / f"{side}{round_number}.json")
                runs[side].extend({**run, "round": round_number} for run in found)
                print(f"round {round_number + 1} {side}: " + ", ".join(f"{r['total_ms']:.0f} ms" for r in found),
                      file=sys.stderr, flush=True)  # fmt: skip
    report = {"pdf": str(args.pdf), "engine": args.engine, "sides": {k: str(v) for k, v in sides.items()},
              "rounds": args.rounds, "runs_a_round": args.runs, "load_average_start": load_start,
              "load_average_end": os.getloadavg()[0], "summary": summary(runs), "runs": runs}  # fmt: skip
    text = json.dumps(public(report), indent=1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(json.dumps(report["summary"], indent=1))


if __name__ == "__main__":
    main()
