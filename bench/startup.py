"""How soon a started ingestion-mcp answers (issue 49, point 3), timed from the process start as a client sees it.

A library is built once (``--docs`` SciFact documents, one text file each, synced through MCP); then the server is
started ``--rounds`` times on it over each transport in turn, stdio then streamable HTTP (fresh processes, the
same data folder), and timed from the moment the process is spawned: `initialize` answered (on HTTP the client
retries the connection every 20 ms until the port is open, as a client polling a just-started server would),
``tools/list`` answered, and the first ``search`` answered with hits (it waits for the model and the index). The
CPU time the server's process has used by each answer is read too (the load-independent part), and the resident
memory of its whole tree a few seconds after the search (every process under the server: at rest after a start).

    python -m bench.startup [--docs 300] [--rounds 3] [--out bench/results/startup.json]

docs/startup.md gives the figures.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, BinaryIO

import psutil

from .data import load

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "startup.json"
SETTLE_S = 5.0
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
CLIENT = {"name": "bench.startup", "version": "1"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT}}  # fmt: skip
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
SEARCH = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
          "params": {"name": "search", "arguments": {"query": "vitamin D and bone density", "top_k": 5}}}  # fmt: skip


def server_env(data: Path, docs: Path) -> dict[str, str]:
    env = {**os.environ, "INGESTION_MCP_DATA_DIR": str(data), "INGESTION_MCP_ALLOWED_ROOTS": str(docs),
           "HF_HUB_OFFLINE": "1"}  # fmt: skip
    for name in ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI"):
        env.pop(name, None)
    return env


def cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return round(times.user + times.system, 2)


def tree_mb(pid: int) -> float:
    processes = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            continue
    return round(total / 2**20, 1)


class Stdio:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.stdin: BinaryIO = process.stdin  # type: ignore[assignment]  # opened with PIPE
        self.stdout: BinaryIO = process.stdout  # type: ignore[assignment]  # opened with PIPE

    def ask(self, message: dict[str, Any]) -> dict[str, Any] | None:
        self.stdin.write(json.dumps(message).encode() + b"\n")
        self.stdin.flush()
        if "id" not in message:
            return None
        while True:
            line = self.stdout.readline()
            if not line:
                raise RuntimeError("the server closed stdout")
            answer = json.loads(line)
            if answer.get("id") == message["id"]:
                return answer


class Http:
    def __init__(self, port: int) -> None:
        self.port = port

    def ask(self, message: dict[str, Any]) -> dict[str, Any] | None:
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
                connection.request("POST", "/mcp", json.dumps(message), HEADERS)
                body = connection.getresponse().read().decode()
                connection.close()
                break
            except ConnectionRefusedError:
                time.sleep(0.02)
        data = [line[len("data: ") :] for line in body.splitlines() if line.startswith("data: ")]
        return json.loads(data[0] if data else body) if "id" in message else None


def one_start(transport: str, data: Path, docs: Path, log: BinaryIO) -> dict[str, Any]:
    """Spawn, then time each answer from the spawn; the tree's memory once quiet; stop it."""
    port = free_port()
    args = [sys.executable, "-m", "ingestion_mcp.cli.server_command"]
    args += ["--transport", "streamable-http", "--port", str(port)] if transport == "http" else []
    began = time.perf_counter()
    process = subprocess.Popen(args, env=server_env(data, docs), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=log)  # fmt: skip
    client: Stdio | Http = Stdio(process) if transport == "stdio" else Http(port)
    marks: dict[str, Any] = {"transport": transport}
    try:
        for name, message in (("initialize", INITIALIZE), (None, INITIALIZED), ("tools_list", TOOLS),
                              ("first_search", SEARCH)):  # fmt: skip
            answer = client.ask(message)
            if name is not None:
                marks[f"{name}_s"] = round(time.perf_counter() - began, 2)
                marks[f"{name}_cpu_s"] = cpu_s(process.pid)
            if name == "first_search":
                found = (answer or {}).get("result", {}).get("structuredContent", {}).get("results") or []
                marks["first_search_hits"] = len(found)
        time.sleep(SETTLE_S)
        marks["rest_tree_mb"] = tree_mb(process.pid)
        marks["load_average"] = round(os.getloadavg()[0], 2)
    finally:
        process.terminate()
        process.wait(timeout=120)
    return marks


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def build_library(data: Path, docs: Path, count: int, log: BinaryIO) -> float:
    for doc in load().docs[:count]:
        (docs / f"{doc.doc_id}.txt").write_text(f"{doc.title}\n\n{doc.text}\n", encoding="utf-8")
    began = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "ingestion_mcp.cli.server_command"], env=server_env(data, docs),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)  # fmt: skip
    client = Stdio(process)
    client.ask(INITIALIZE)
    client.ask(INITIALIZED)
    sync = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "sync_folder", "arguments": {"folder": str(docs), "collection": "startup"}}}  # fmt: skip
    answer = client.ask(sync) or {}
    job = answer.get("result", {}).get("structuredContent", {}).get("job_id")
    while job:
        time.sleep(0.5)
        status = client.ask({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                             "params": {"name": "get_job_status", "arguments": {"job_id": job}}}) or {}  # fmt: skip
        if (status.get("result", {}).get("structuredContent", {}).get("job") or {}).get("status") != "running":
            break
    process.terminate()
    process.wait(timeout=120)
    return round(time.perf_counter() - began, 1)


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in runs[0] if k.endswith(("_s", "_mb")) and isinstance(runs[0][k], int | float)]
    return {key: {"median": statistics.median(r[key] for r in runs), "max": max(r[key] for r in runs)} for key in keys}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.startup", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--docs", type=int, default=300, help="SciFact documents in the library")
    parser.add_argument("--rounds", type=int, default=3, help="starts per transport")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as scratch:
        data, docs = Path(scratch) / "data", Path(scratch) / "docs"
        docs.mkdir()
        with (Path(scratch) / "server.log").open("wb") as log:
            built = build_library(data, docs, args.docs, log)
            runs = [one_start(t, data, docs, log) for _ in range(args.rounds) for t in ("stdio", "http")]
    report = {"benchmark": "startup", "docs": args.docs, "library_built_s": built, "cpus": os.cpu_count(), "runs": runs,
              "stdio": summary([r for r in runs if r["transport"] == "stdio"]),
              "http": summary([r for r in runs if r["transport"] == "http"])}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
