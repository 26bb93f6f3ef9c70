"""How long `ingestion-index status` takes: alone on a folder, and beside a running MCP server.

`python -m bench.experiments.cli_status [--runs N]` times whole commands (a fresh process each, as a user runs it):

- ``import floor``: `python -c "import ingestion_mcp.cli.index_command"`, what any CLI call pays before work;
- ``status, no server (empty)`` and ``status, no server (indexed)``: the command opens the index alone;
- ``status beside a server``: a stdio MCP server hosts the folder, the command attaches to it;
- ``update, no server`` (unchanged notes): the full services start (model, converter): the old cost
  of every call, measured in the same run as the baseline the ratios are taken against.

Writes bench/experiments/results/cli_status.json and prints, per case, median / p95 over `--runs` calls and the first
call apart
(it creates the database, or meets a server still loading its model).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ingestion_mcp.embedded.socket import SOCKET_NAME, socket_dir

from ..results_io import write_json

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
OUT = ROOT / "bench" / "experiments" / "results" / "cli_status.json"


def once(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started


def timed(command: list[str], env: dict[str, str], runs: int) -> dict[str, Any]:
    """The first call apart (it may create the database, or meet a server still loading its model), then ``runs``."""
    first = once(command, env)
    seconds = [once(command, env) for _ in range(runs)]
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    median, p95 = round(statistics.median(seconds), 3), round(p95, 3)
    return {"runs": runs, "first_s": round(first, 3), "median_s": median, "p95_s": p95}


def make_vault(folder: Path, notes: int = 20) -> None:
    folder.mkdir(parents=True)
    for i in range(notes):
        body = f"Note {i} about harbour {i}, tide tables, pilot boats and the lock keeper's ledger."
        (folder / f"note-{i:02d}.md").write_text(f"# Note {i}\n\n{body}\n")


def environment(vault: Path, data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_SERVICE_URL") and k != "VECTOR_GATEWAY_URL"}
    return env | {"HF_HUB_OFFLINE": "1", "INGESTION_MCP_DATA_DIR": str(data), "INGESTION_MCP_VAULT_PATH": str(vault)}


def with_server(env: dict[str, str], vault: Path, body: Any) -> Any:
    """Run ``body()`` while a stdio MCP server hosts the folder (its stdin held open, so it keeps running)."""
    server = subprocess.Popen(
        [str(BIN / "ingestion-mcp")], env=env | {"INGESTION_MCP_ALLOWED_ROOTS": str(vault)},
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        sock = socket_dir(Path(env["INGESTION_MCP_DATA_DIR"]).resolve()) / SOCKET_NAME
        deadline = time.monotonic() + 180
        while not sock.exists():
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the MCP server did not start hosting the folder")
            time.sleep(0.5)
        time.sleep(2)  # its services answer once their lifespans ran
        return body()
    finally:
        server.terminate()
        server.wait(timeout=60)


def run(runs: int) -> dict[str, Any]:
    status = [str(BIN / "ingestion-index"), "status", "--json"]
    with tempfile.TemporaryDirectory(prefix="cli-status-") as tmp:
        vault, empty, indexed = Path(tmp) / "vault", Path(tmp) / "empty", Path(tmp) / "indexed"
        make_vault(vault)
        cases = {
            "import floor": timed(
                [sys.executable, "-c", "import ingestion_mcp.cli.index_command"], os.environ.copy(), runs
            )
        }
        cases["status, no server (empty)"] = timed(status, environment(vault, empty), runs)
        env = environment(vault, indexed)
        subprocess.run([str(BIN / "ingestion-index"), "full"], env=env, check=True, capture_output=True)
        cases["status, no server (indexed)"] = timed(status, env, runs)
        cases["status beside a server"] = with_server(env, vault, lambda: timed(status, env, runs))
        cases["update, no server (baseline)"] = timed([str(BIN / "ingestion-index"), "update"], env, max(2, runs // 2))
    baseline = cases["update, no server (baseline)"]["median_s"]
    for case in cases.values():
        case["vs_baseline"] = round(case["median_s"] / baseline, 3)
    return {"cpu": os.cpu_count(), "cases": cases}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    report = run(args.runs)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    write_json(OUT, report, indent=2)
    for name, case in report["cases"].items():
        line = f"median {case['median_s']:6.2f} s  p95 {case['p95_s']:6.2f} s  first {case['first_s']:6.2f} s"
        print(f"{name:32s} {line}  x{case['vs_baseline']}")


if __name__ == "__main__":
    main()
