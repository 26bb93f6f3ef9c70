"""The deployment's shape for the fault suite (bench/chaos.py), every part a real process on loopback.

    Redis (AOF) --- 2 workers --+
        |                       +--> balancer --> 2 vector gateways --> one milvus-lite server
    balancer --> 2 MCP replicas +    docling, chunker

Clients and the fault injectors see two URLs: the MCP balancer's ``/mcp`` and the gateway balancer (what
the replicas and workers use as ``VECTOR_GATEWAY_URL``). Each process logs to its own file in ``workdir``;
``close()`` kills every process it started. An ``ExitWatch`` notes each process that dies without the
harness killing it (``kill`` and ``stop`` tell it which deaths were deliberate).

    with ChaosTopology(workdir, token, TopologyOptions(gateway_skew="-30s")) as topo:
        topo.mcp_url, topo.gateway_url, topo.redis.url
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from scripts.milvus_server import MilvusLiteServer
from scripts.redis_server import RedisServer
from scripts.service_stack import BIN, SERVICE_URL_NAMES, ServiceProcess, free_port

HERE = Path(__file__).resolve().parent
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
CODE_PATHS = ("libs/contracts/src", "libs/servicekit/src", "services/chunker/src", "services/docling/src",
              "services/ingestion_mcp/src", "services/vector_gateway/src")  # fmt: skip


@dataclass
class TopologyOptions:
    replicas: int = 2
    workers: int = 2
    gateways: int = 2
    gateway_skew: str | None = None  # libfaketime offset of the last gateway, e.g. "-30s"
    redis_maxmemory: str | None = None  # e.g. "32mb": Redis refuses writes (noeviction) once full
    mcp_env: dict[str, str] = field(default_factory=dict)  # INGESTION_MCP_* for replicas and workers
    gateway_env: dict[str, str] = field(default_factory=dict)
    code_root: Path | None = None  # run the product from this tree (PYTHONPATH) instead of the venv's


class Proxy:
    """scripts/rr_proxy.py as a process: per-request round robin over ``upstreams``."""

    def __init__(self, name: str, upstreams: list[str], log_path: Path) -> None:
        self.name, self.upstreams, self.log_path = name, upstreams, log_path
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        command = [sys.executable, str(HERE / "rr_proxy.py"), "--port", str(self.port), *self.upstreams]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited at start-up")
            try:
                httpx.get(f"{self.url}/_proxy/stats", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.2)
        raise RuntimeError(f"{self.name} never listened")

    def stop(self, sig: int = signal.SIGKILL) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, sig)
            process.wait(timeout=10)

    def requests_log(self) -> list[dict[str, Any]]:
        return httpx.get(f"{self.url}/_proxy/log", timeout=10).json()


class ExitWatch:
    """Polls every process of the topology; records each one that exits without being killed on purpose."""

    def __init__(self, topology: ChaosTopology) -> None:
        self.topology = topology
        self.exits: list[dict[str, Any]] = []
        self.deliberate: set[int] = set()  # pids the harness killed (or stopped) itself
        self._seen: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="exit-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
            self.check()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self.check()

    def check(self) -> None:
        for name, process in self.topology.processes().items():
            if process is None or process.pid in self._seen:
                continue
            code = process.poll()
            if code is not None and process.pid not in self.deliberate:
                self._seen.add(process.pid)
                self.exits.append({"process": name, "pid": process.pid, "returncode": code, "at": time.time()})


class ChaosTopology:
    def __init__(self, workdir: Path, token: str, options: TopologyOptions | None = None) -> None:
        self.workdir, self.token = workdir, token
        self.options = options = options or TopologyOptions()
        workdir.mkdir(parents=True, exist_ok=True)
        self.milvus = MilvusLiteServer(workdir / "milvus")
        self.redis = RedisServer(workdir / "redis", persist=True, maxmemory=options.redis_maxmemory)
        env = self._base_env()
        self.docling = ServiceProcess("docling", "docling-service", "DOCLING_", env, workdir / "docling.log")
        self.chunker = ServiceProcess("chunker", "chunker-service", "CHUNKER_", env, workdir / "chunker.log")
        self.gateways = [self._gateway(i, env) for i in range(options.gateways)]
        self.gateway_proxy = Proxy("gateway balancer", [g.url for g in self.gateways], workdir / "gateway-balancer.log")
        self.replicas: list[ServiceProcess] = []
        self.workers: list[ServiceProcess] = []
        self.mcp_proxy: Proxy | None = None
        self.watch = ExitWatch(self)
        self.lifetimes: dict[str, list[list[float]]] = {}  # name -> [started, ended] per process started

    def _base_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in SERVICE_URL_NAMES and k != "AUTH_TOKEN"}
        env |= {"HF_HUB_OFFLINE": "1", "AUTH_TOKEN": self.token, "DOCLING_LOG_LEVEL": "INFO",
                "CHUNKER_LOG_LEVEL": "INFO", "VECTOR_GATEWAY_LOG_LEVEL": "INFO"}  # fmt: skip
        if self.options.code_root is not None:
            paths = [str(self.options.code_root / p) for p in CODE_PATHS]
            env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        return env

    def _gateway(self, index: int, env: dict[str, str]) -> ServiceProcess:
        # The broker as a deployment gives it (write orders for writes that come without one); ignored by a
        # gateway that has no such setting.
        own = env | {"VECTOR_GATEWAY_MILVUS_URI": self.milvus.uri, "VECTOR_GATEWAY_EMBEDDING_THREADS": "1",
                     "VECTOR_GATEWAY_BROKER_URL": self.redis.url}  # fmt: skip
        own |= self.options.gateway_env
        if self.options.gateway_skew and index == self.options.gateways - 1:
            # FAKETIME_FORCE_MONOTONIC_FIX=0: libfaketime 0.9.10 otherwise rewrites every timed wait and Python's
            # threads convoy (services/vector_gateway/tests/gateway_processes.py says how much).
            own |= {"LD_PRELOAD": FAKETIME_LIB, "FAKETIME": self.options.gateway_skew,
                    "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_FORCE_MONOTONIC_FIX": "0"}  # fmt: skip
        log = self.workdir / f"gateway-{index}.log"
        return ServiceProcess(f"gateway-{index}", "vector-gateway", "VECTOR_GATEWAY_", own, log)

    def _mcp_process(self, name: str, command: str) -> ServiceProcess:
        env = self._base_env() | {
            "INGESTION_MCP_TRANSPORT": "streamable-http", "INGESTION_MCP_BROKER_URL": self.redis.url,
            "DOCLING_SERVICE_URL": self.docling.url, "CHUNKER_SERVICE_URL": self.chunker.url,
            "VECTOR_GATEWAY_URL": self.gateway_proxy.url, "INGESTION_MCP_DATA_DIR": str(self.workdir / "mcp-data"),
            "INGESTION_MCP_ALLOWED_ROOTS": str(self.workdir), "INGESTION_MCP_LOG_LEVEL": "INFO",
        } | self.options.mcp_env  # fmt: skip
        process = ServiceProcess(name, command, "INGESTION_MCP_", env, self.workdir / f"{name}.log")
        process.command = str(BIN / command)
        return process

    # -- start and stop ---------------------------------------------------------------------------------

    def __enter__(self) -> ChaosTopology:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        self.milvus.start()
        self.redis.start()
        services = [self.docling, self.chunker, *self.gateways]
        for service in services:
            self.launch(service)
        for service in services:
            service.wait_ready(timeout_s=300)
        self.gateway_proxy.start()
        self.replicas = [self._mcp_process(f"replica-{i}", "ingestion-mcp") for i in range(self.options.replicas)]
        self.workers = [self._mcp_process(f"worker-{i}", "ingestion-mcp-worker") for i in range(self.options.workers)]
        for process in (*self.replicas, *self.workers):
            self.launch(process)
        for replica in self.replicas:
            replica.wait_ready(timeout_s=300)
        for worker in self.workers:
            self.wait_worker(worker)
        self.mcp_proxy = Proxy("mcp balancer", [r.url for r in self.replicas], self.workdir / "mcp-balancer.log")
        self.mcp_proxy.start()
        self.watch.start()

    def close(self) -> None:
        """Kill every process started; one that fails to stop does not keep the others running."""
        steps: list[Callable[[], Any]] = [self.watch.close]
        steps += [partial(self._stop_proxy, p) for p in (self.mcp_proxy, self.gateway_proxy) if p is not None]
        services = (*self.workers, *self.replicas, *self.gateways, self.chunker, self.docling)
        steps += [partial(self.stop, s, signal.SIGKILL) for s in services]
        steps += [partial(self.deliberate, self.redis.process), self.redis.stop]
        steps += [partial(self.deliberate, self.milvus.process), self.milvus.stop]
        failures = []
        for step in steps:
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - go on killing the rest, then report
                failures.append(exc)
        if failures:
            raise failures[0]

    def _stop_proxy(self, proxy: Proxy) -> None:
        self.deliberate(proxy.process)
        proxy.stop()

    def launch(self, service: ServiceProcess) -> None:
        service.start()
        self.lifetimes.setdefault(service.name, []).append([time.time(), 0.0])

    def wait_worker(self, worker: ServiceProcess, timeout_s: float = 300) -> None:
        """Until this run of the worker logged 'worker ready' (it has no HTTP port)."""
        deadline = time.monotonic() + timeout_s
        starts = len(self.lifetimes.get(worker.name, []))
        while worker.log_text().count("worker ready") < starts:
            if worker.process is None or worker.process.poll() is not None:
                raise RuntimeError(f"{worker.name} exited during start-up:\n{worker.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{worker.name} not ready after {timeout_s:.0f} s:\n{worker.log_tail()}")
            time.sleep(0.2)

    # -- what the fault injectors use -------------------------------------------------------------------

    def deliberate(self, process: subprocess.Popen[bytes] | None) -> None:
        if process is not None:
            self.watch.deliberate.add(process.pid)

    def stop(self, service: ServiceProcess, sig: int = signal.SIGKILL, timeout_s: float = 30.0) -> float:
        """Signal ``service`` on purpose and wait for it to end; the seconds it took to exit."""
        self.deliberate(service.process)
        started = time.monotonic()
        if service.process is not None:
            self._ended(service.name)
        service.stop(sig, timeout_s=timeout_s)
        return time.monotonic() - started

    def _ended(self, name: str) -> None:
        runs = self.lifetimes.get(name)
        if runs and not runs[-1][1]:
            runs[-1][1] = time.time()

    def revive(self, service: ServiceProcess) -> None:
        """Start a stopped service again on its port and wait until it serves (or, a worker, polls)."""
        self.launch(service)
        if service in self.workers:
            self.wait_worker(service)
        else:
            service.wait_ready(timeout_s=300)

    def kill_redis(self) -> None:
        self.deliberate(self.redis.process)
        self.redis.kill()

    def processes(self) -> dict[str, subprocess.Popen[bytes] | None]:
        services = [self.docling, self.chunker, *self.gateways, *self.replicas, *self.workers]
        found: dict[str, subprocess.Popen[bytes] | None] = {s.name: s.process for s in services}
        found |= {"redis": self.redis.process, "milvus": self.milvus.process,
                  "gateway balancer": self.gateway_proxy.process}  # fmt: skip
        if self.mcp_proxy is not None:
            found["mcp balancer"] = self.mcp_proxy.process
        return found

    def ended_lifetimes(self) -> dict[str, list[tuple[float, float]]]:
        """Each process's runs as (started, ended) wall-clock times; a run still going ends now."""
        exits = {e["process"]: e["at"] for e in self.watch.exits}
        now = time.time()
        return {name: [(start, end or exits.get(name, now)) for start, end in runs]
                for name, runs in self.lifetimes.items()}  # fmt: skip

    def log_of(self, name: str) -> Path:
        """The log file of the process ``processes()`` calls ``name``."""
        if name == "redis":
            return self.redis.workdir / "redis.log"
        if name == "milvus":
            return self.milvus.log_path
        return self.workdir / f"{name.replace(' ', '-')}.log"

    @property
    def mcp_url(self) -> str:
        assert self.mcp_proxy is not None, "start() the topology first"
        return f"{self.mcp_proxy.url}/mcp"

    @property
    def gateway_url(self) -> str:
        return self.gateway_proxy.url

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}
