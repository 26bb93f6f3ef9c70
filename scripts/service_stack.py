"""Run the docling, chunker and vector-gateway services as real processes on loopback ports.

Used by the end-to-end fault tests (tests/e2e) and by scripts/load_test.py. Each service runs in its
own process group with its log (stdout + stderr) appended to a file, so a test can kill, restart and
read it. ``ServiceStack`` is a context manager: every process it started is killed on exit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

BIN = Path(sys.executable).parent
SERVICE_URL_NAMES = ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServiceProcess:
    """One service: start, wait until /readyz answers 200, stop with a signal, restart on the same port."""

    def __init__(self, name: str, command: str, prefix: str, env: dict[str, str], log_path: Path) -> None:
        self.name = name
        self.command = str(BIN / command)
        self.port = free_port()
        self.env = {**env, f"{prefix}PORT": str(self.port), f"{prefix}HOST": "127.0.0.1"}
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [self.command], env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited during start-up:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"{self.name} not ready after {timeout_s:.0f} s:\n{self.log_tail()}")

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 30.0) -> None:
        """Signal the process group and wait; SIGKILL whatever is left after ``timeout_s``."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout_s)
        except ProcessLookupError:
            process.wait(timeout=timeout_s)

    def restart(self, sig: int = signal.SIGTERM) -> None:
        self.stop(sig)
        self.start()
        self.wait_ready()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])


class ServiceStack:
    """The three services over loopback HTTP, one Milvus Lite database in ``workdir``."""

    def __init__(self, workdir: Path, *, auth_token: str | None = None, extra_env: dict[str, str] | None = None):
        self.workdir = workdir
        self.auth_token = auth_token
        workdir.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in SERVICE_URL_NAMES and k != "AUTH_TOKEN"}
        # The stack of separate processes has a deployment's shape, and deployments serve Milvus: the fault tests
        # here (a worker frozen while the gateway stores, a gateway killed mid-upsert) were made on its timings.
        env |= {"HF_HUB_OFFLINE": "1", "VECTOR_GATEWAY_MILVUS_URI": str(workdir / "milvus.db"),
                "VECTOR_GATEWAY_INDEX_ENGINE": "milvus"}  # fmt: skip
        env |= {"DOCLING_LOG_LEVEL": "INFO", "CHUNKER_LOG_LEVEL": "INFO", "VECTOR_GATEWAY_LOG_LEVEL": "INFO"}
        if auth_token:
            env["AUTH_TOKEN"] = auth_token
        env |= extra_env or {}
        self.docling = ServiceProcess("docling", "docling-service", "DOCLING_", env, workdir / "docling.log")
        self.chunker = ServiceProcess("chunker", "chunker-service", "CHUNKER_", env, workdir / "chunker.log")
        self.gateway = ServiceProcess("vector gateway", "vector-gateway", "VECTOR_GATEWAY_", env, workdir / "gw.log")

    @property
    def services(self) -> tuple[ServiceProcess, ...]:
        return (self.docling, self.chunker, self.gateway)

    def __enter__(self) -> ServiceStack:
        try:
            for service in self.services:
                service.start()
            for service in self.services:
                service.wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for service in self.services:
            service.stop(signal.SIGKILL, timeout_s=10)

    def ensure_running(self) -> None:
        """Bring back any service a test stopped (and did not restart)."""
        for service in self.services:
            if service.process is None or service.process.poll() is not None:
                service.process = None
                service.start()
                service.wait_ready()

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.auth_token}"} if self.auth_token else {}

    def mcp_settings(self, **overrides: Any) -> Any:
        from ingestion_mcp.settings import McpSettings

        defaults = {
            "docling_service_url": self.docling.url,
            "chunker_service_url": self.chunker.url,
            "vector_gateway_url": self.gateway.url,
            "auth_token": self.auth_token,
            "data_dir": self.workdir / "mcp-data",
            "allowed_roots": [self.workdir],
        }
        return McpSettings(**(defaults | overrides))

    def logs(self) -> str:
        return "\n".join(service.log_text() for service in self.services)

    def mcp_replica(self, name: str, **env: str) -> ServiceProcess:
        """One MCP server over streamable HTTP as its own process on these services: a replica of a deployment.

        Not started: call ``start()`` and ``wait_ready()``. ``env`` adds INGESTION_MCP_* (or broker) settings.
        """
        base = {k: v for k, v in os.environ.items() if k not in SERVICE_URL_NAMES and k != "AUTH_TOKEN"}
        base |= {"HF_HUB_OFFLINE": "1", "INGESTION_MCP_TRANSPORT": "streamable-http",
                 "DOCLING_SERVICE_URL": self.docling.url, "CHUNKER_SERVICE_URL": self.chunker.url,
                 "VECTOR_GATEWAY_URL": self.gateway.url, "INGESTION_MCP_DATA_DIR": str(self.workdir / "mcp-data"),
                 "INGESTION_MCP_ALLOWED_ROOTS": str(self.workdir)}  # fmt: skip
        if self.auth_token:
            base["AUTH_TOKEN"] = self.auth_token
        return ServiceProcess(name, "ingestion-mcp", "INGESTION_MCP_", base | env, self.workdir / f"{name}.log")


@contextlib.asynccontextmanager
async def mcp_client(stack: ServiceStack, *, attempts: int | None = None, **overrides: Any) -> AsyncIterator[Any]:
    """An in-process MCP client on the real server code, talking to ``stack`` over HTTP.

    ``attempts`` lowers the clients' retry count (a test that wants an ingest to give up quickly).
    Enter and leave it in the same task (the client's task group requires it).
    """
    from ingestion_mcp.embedded.services import remote_backend
    from ingestion_mcp.server import build_server
    from ingestion_mcp.state import AppState
    from mcp import Client

    settings = stack.mcp_settings(**overrides)
    async with remote_backend(settings) as backend:
        if attempts is not None:
            for service in (backend.docling, backend.chunker, backend.gateway):
                service.attempts = attempts
        state = AppState.create(settings, backend)
        try:
            async with Client(build_server(state)) as client:
                yield client
        finally:
            await state.jobs.aclose()


@contextlib.asynccontextmanager
async def session(url: str, token: str | None = None, *, read_s: float = 120.0) -> AsyncIterator[Any]:
    """A real MCP client over streamable HTTP to ``url`` (…/mcp), with a bearer token when one is given.

    Enter and leave it in the same task (the client's task group requires it)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=read_s)) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def call(client: Any, tool: str, **arguments: object) -> dict[str, Any]:
    """A tool's structured answer, with ``is_error`` added (tool errors are answers, not exceptions): the one
    helper every test, script and benchmark calls a tool with."""
    response = await client.call_tool(tool, arguments)
    assert response.structured_content is not None, response.content
    return response.structured_content | {"is_error": bool(response.is_error)}


async def succeeded(client: Any, tool: str, arguments: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    """``call``'s answer where the caller expects success (a script step, a benchmark): a tool error raises, naming
    the tool and its answer. Arguments as a dict, as keywords, or both."""
    body = await call(client, tool, **(arguments or {}), **more)
    if body["is_error"] or body.get("success") is False:
        raise AssertionError(f"{tool}: {body}")
    return body


def collection_state(stack: ServiceStack, collection: str) -> dict[str, Any]:
    """Counts straight from the gateway: documents (registry), chunk rows, and the live chunks per document."""
    with httpx.Client(base_url=stack.gateway.url, headers=stack.headers(), timeout=60) as http:
        info = http.get(f"/v1/collections/{collection}")
        if info.status_code == 404:
            return {"documents": 0, "chunk_rows": 0, "sources": {}, "unreadable_chunks": {}}
        info.raise_for_status()
        listing = http.get(f"/v1/collections/{collection}/documents", params={"limit": 1000}).json()
        # Each document's live chunks, read back: a registry naming a version whose rows are (partly) gone
        # shows here, whatever count(*) says.
        short = {}
        for doc in listing["documents"]:
            found = http.get(f"/v1/collections/{collection}/documents/{doc['doc_id']}/chunks").json()
            if len(found["chunks"]) != doc["chunk_count"]:
                short[doc["source"]] = {"registry": doc["chunk_count"], "readable": len(found["chunks"])}
    sources = {d["source"]: d["chunk_count"] for d in listing["documents"]}
    body = info.json()
    return {"documents": body["document_count"], "chunk_rows": body["chunk_count"], "sources": sources,
            "unreadable_chunks": short}  # fmt: skip


def stage_count(service: ServiceProcess, stage: str, headers: dict[str, str]) -> float:
    """How many times the service has finished ``stage`` (its Prometheus stage histogram's count)."""
    text = httpx.get(f"{service.url}/metrics", headers=headers, timeout=10).text
    for line in text.splitlines():
        if line.startswith("stage_duration_seconds_count{") and f'stage="{stage}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def log_count(service: ServiceProcess, needle: str) -> int:
    return service.log_text().count(needle)


def wait_for(predicate: Any, timeout_s: float, interval_s: float = 0.05) -> None:
    """Poll ``predicate`` (blocking) until true; bounded in time."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval_s)
    raise TimeoutError(f"condition not met within {timeout_s} s")
