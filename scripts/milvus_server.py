"""A real Milvus-protocol server for tests: `milvus-lite server` on a free loopback port, its own process.

Several gateway processes (replicas), the CLI and workers can then share one store over gRPC, the way
they share a Milvus standalone in a deployment (`VECTOR_GATEWAY_MILVUS_URI=http://127.0.0.1:PORT`).

    with MilvusLiteServer(tmp / "milvus") as milvus:
        env["VECTOR_GATEWAY_MILVUS_URI"] = milvus.uri

The server runs with one worker thread: Milvus Lite serves its gRPC calls from a thread pool, and its
flush swaps the memtable out before taking its own lock, so a query running meanwhile can miss rows
(docs/consistency.md, "Milvus Lite needs its calls serialised"). In one process the gateway's lite_guard
serialises the calls; across processes only the server can, so it takes one call at a time.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from scripts.service_stack import free_port

BIN = Path(sys.executable).parent


class MilvusLiteServer:
    def __init__(self, workdir: Path, *, port: int | None = None, workers: int = 1) -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.workers = workers
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "milvus-server.log"

    def start(self) -> MilvusLiteServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        command = [str(BIN / "milvus-lite"), "server", "--data-dir", str(self.workdir / "data"),
                   "--host", "127.0.0.1", "--port", str(self.port), "--max-workers", str(self.workers)]  # fmt: skip
        env = {**os.environ, "GRPC_VERBOSITY": "NONE"}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        self.wait_ready()
        return self

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Until a pymilvus client lists collections (the port alone opens before the engine is up)."""
        from pymilvus import MilvusClient

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"milvus-lite server exited at start-up:\n{self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
                client = MilvusClient(self.uri, timeout=5)
                client.list_collections()
                client.close()
                return
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.2)
        raise RuntimeError(f"milvus-lite server did not answer on {self.uri}:\n{self.log_tail()}")

    def stop(self, sig: int = signal.SIGKILL) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, sig)
            process.wait(timeout=30)

    def restart(self) -> None:
        self.stop(signal.SIGTERM)
        self.start()

    def log_tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> MilvusLiteServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Run milvus-lite server on loopback until interrupted.")
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    with MilvusLiteServer(args.workdir, port=args.port) as server:
        print(server.uri, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
