"""What the embedding model's start costs: the full load (sentence-transformers + torch) against the torch-free
start (a verified manifest beside the cached ONNX file; docs/embeddings.md "A torch-free start").

    python -m bench.embedder_start [--runs 3] [--no-mcp]

Every run is a fresh process, and the two loads alternate. ``create_embedder``: seconds of the call and resident
memory (VmRSS) after it, the process's peak (VmHWM), and what the process held before the call. ``mcp``: an
embedded MCP server on stdio with its own data folder, read once its model is loaded and it has idled a few
seconds: the resident memory of the server, and of its tree (docling's forkserver and what it forked, the
multiprocessing resource tracker) both as a plain sum of RSS, which counts the pages forked processes share once
per process, and as a sum of PSS (each shared page split among its sharers: what the tree really holds); seconds
until the model is loaded; whether torch's library is mapped in the server.
Full loads run on a cache that holds model.onnx alone, so they load as before the torch-free start existed and
then run the one-off check that writes the manifest (timed apart). Writes bench/results/embedder_start.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .results_io import write_json

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "embedder_start.json"
MODES = ("full", "torch-free")
IDLE_S = 5.0


def memory_mb(pid: int | str = "self", keys: tuple[str, ...] = ("VmRSS", "VmHWM")) -> dict[str, float]:
    """The ``keys`` of /proc/PID/status (Linux: memory fields in kB), in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in keys:
            fields[key] = round(int(value.split()[0]) / 1024, 1)
    return fields


def child(mode: str, cache: Path) -> None:
    """One create_embedder in this fresh process; prints its figures as JSON."""
    from vector_gateway.embedder import create_embedder
    from vector_gateway.settings import GatewaySettings

    checked: list[float] = []
    if mode == "full":  # time the one-off check apart (the embedder module imports it at call time)
        from vector_gateway import light_check

        record = light_check.record_light_path

        def timed_record(*args: Any) -> Any:
            started = time.perf_counter()
            try:
                return record(*args)
            finally:
                checked.append(time.perf_counter() - started)

        light_check.record_light_path = timed_record  # type: ignore[assignment]  # a timing wrapper, same call
    settings = GatewaySettings(milvus_uri="unused.db", embedding_cache_dir=cache)
    before = memory_mb()["VmRSS"]
    started = time.perf_counter()
    embedder = create_embedder(settings)
    seconds = time.perf_counter() - started
    after = memory_mb()
    print(json.dumps({
        "path": getattr(embedder, "path", ""), "seconds": round(seconds, 2), "check_s": round(sum(checked), 2),
        "rss_before_mb": before, "rss_mb": after["VmRSS"], "peak_mb": after["VmHWM"],
        "torch_imported": "torch" in sys.modules,
    }))  # fmt: skip


def fresh_full_cache(verified: Path, folder: Path) -> Path:
    """A cache holding the ONNX file alone (a link to the verified one): the full load takes it as it is."""
    target = folder / verified.parent.name / verified.name
    target.parent.mkdir(parents=True)
    target.symlink_to(verified)
    return folder


def create_embedder_once(mode: str, cache: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.embedder_start", "--child", mode, "--cache", str(cache)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{mode} load failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def mcp_once(cache: Path, folder: Path) -> dict[str, Any]:
    """An embedded MCP server on stdio, read after its model loaded and it idled ``IDLE_S`` seconds."""
    import psutil

    vault, data = folder / "vault", folder / "data"
    vault.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_SERVICE_URL") and k != "VECTOR_GATEWAY_URL"}
    env |= {"HF_HUB_OFFLINE": "1", "INGESTION_MCP_LOG_LEVEL": "INFO", "INGESTION_MCP_DATA_DIR": str(data),
            "INGESTION_MCP_VAULT_PATH": str(vault), "INGESTION_MCP_ALLOWED_ROOTS": str(vault),
            "VECTOR_GATEWAY_EMBEDDING_CACHE_DIR": str(cache)}  # fmt: skip
    log = folder / "stderr.log"
    started = time.perf_counter()
    with log.open("w") as stderr:
        command = [sys.executable, "-m", "ingestion_mcp.cli.server_command"]
        server = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        loaded_s = None
        while loaded_s is None or "is ready on stdio" not in log.read_text():
            if server.poll() is not None or time.perf_counter() - started > 300:
                raise RuntimeError(f"the MCP server did not start: {log.read_text()[-2000:]}")
            if loaded_s is None and "embedding model" in (text := log.read_text()) and " loaded (" in text:
                loaded_s = round(time.perf_counter() - started, 1)
            time.sleep(0.2)
        time.sleep(IDLE_S)
        process = psutil.Process(server.pid)
        tree = [process, *process.children(recursive=True)]
        maps = Path(f"/proc/{server.pid}/maps").read_text()
        memory = [p.memory_full_info() for p in tree]
        return {
            "loaded_s": loaded_s, "server_rss_mb": memory_mb(server.pid)["VmRSS"], "processes": len(tree),
            "tree_rss_mb": round(sum(m.rss for m in memory) / 2**20, 1),
            "tree_pss_mb": round(sum(m.pss for m in memory) / 2**20, 1), "torch_mapped": "libtorch" in maps,
        }  # fmt: skip
    finally:
        if server.stdin:
            server.stdin.close()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    numbers = {k for k, v in runs[0].items() if isinstance(v, int | float) and not isinstance(v, bool)}
    summary = {k: round(statistics.median(run[k] for run in runs), 2) for k in sorted(numbers)}
    return summary | {k: runs[0][k] for k in runs[0] if k not in numbers} | {"runs": len(runs)}


def run(runs: int, mcp: bool) -> dict[str, Any]:
    results: dict[str, dict[str, list[dict[str, Any]]]] = {"create_embedder": {m: [] for m in MODES}}
    if mcp:
        results["mcp"] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory(prefix="embedder-start-") as tmp:
        verified_cache = Path(tmp) / "verified"
        bake = [sys.executable, "-m", "vector_gateway.onnx_bake", "--cache-dir", str(verified_cache)]
        onnx = Path(subprocess.run(bake, capture_output=True, text=True, check=True).stdout.splitlines()[0])
        caches = iter(range(4 * runs))  # a fresh cache per full load: each finds model.onnx alone

        def cache_for(mode: str) -> Path:
            return verified_cache if mode == "torch-free" else fresh_full_cache(onnx, Path(tmp) / f"c{next(caches)}")

        for i in range(runs):  # the loads alternate: a load spike on the machine hits both
            for mode in MODES:
                results["create_embedder"][mode].append(create_embedder_once(mode, cache_for(mode)))
                if mcp:
                    results["mcp"][mode].append(mcp_once(cache_for(mode), Path(tmp) / f"mcp-{mode}-{i}"))
    return {
        "load_average": os.getloadavg(), "cpus": os.cpu_count(),
        "medians": {what: {m: medians(r) for m, r in by.items()} for what, by in results.items()}, "runs": results,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-mcp", action="store_true", help="time create_embedder alone")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.cache)
        return
    report = run(args.runs, mcp=not args.no_mcp)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    write_json(OUT, report)
    print(json.dumps(report["medians"], indent=2))


if __name__ == "__main__":
    main()
