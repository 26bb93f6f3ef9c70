"""The compose stack that scripts/compose_smoke.py runs and scripts/compose_checks.py checks: its services, the
engine and compose commands (Smoke), the table of steps, and a real MCP client over HTTP."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripts.service_stack import session, succeeded

REPO = Path(__file__).resolve().parents[1]
APP_SERVICES = ["docling", "chunker", "vector-gateway", "ingestion-mcp", "ingestion-worker"]
SERVICES = ["redis", "milvus", *APP_SERVICES]
APP_UID = "1000650000"
HEALTH_TIMEOUT_S = 600
PODMAN_CONF = REPO / "scripts" / "podman" / "containers.conf"


@dataclass
class Step:
    name: str
    ok: bool
    seconds: float
    detail: str = ""


@dataclass
class Smoke:
    engine: str
    project: str
    env_file: Path
    documents: Path
    port: int
    token: str
    steps: list[Step] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    # -- compose ------------------------------------------------------------------------------
    @property
    def podman(self) -> bool:
        return Path(self.engine).name == "podman"

    def compose_command(self) -> list[str]:
        files = ["-f", str(REPO / "docker-compose.yml"), "-f", str(REPO / "docker-compose.milvus-lite.yml")]
        if self.podman:
            tool = shutil.which("podman-compose", path=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
            if tool is None:
                raise SystemExit("compose_smoke: podman-compose is not installed (pip install podman-compose)")
            return [tool, "--project-name", self.project, *files]
        return [self.engine, "compose", "--project-name", self.project, *files]

    def compose(self, *args: str, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        return run([*self.compose_command(), *args], env=self.env, check=check, timeout=timeout)

    def container(self, service: str) -> str:
        out = run([self.engine, "ps", "-a", "--filter", f"label=com.docker.compose.project={self.project}",
                   "--filter", f"label=com.docker.compose.service={service}", "--format", "{{.Names}}"],
                  env=self.env).stdout.split()  # fmt: skip
        if not out:
            raise AssertionError(f"no container for service {service}")
        return out[0]

    def healthy(self, service: str) -> bool:
        name = self.container(service)
        if self.podman:  # no systemd here: podman runs a health check only when asked
            return run([self.engine, "healthcheck", "run", name], env=self.env, check=False).returncode == 0
        state = run([self.engine, "inspect", "--format", "{{.State.Health.Status}}", name], env=self.env).stdout
        return state.strip() == "healthy"

    def wait_healthy(self, services: list[str], timeout_s: float = HEALTH_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout_s
        waiting = list(services)
        while waiting and time.monotonic() < deadline:
            waiting = [s for s in waiting if not self.healthy(s)]
            if waiting:
                time.sleep(2)
        if waiting:
            raise AssertionError(f"not healthy after {timeout_s:.0f} s: {', '.join(waiting)}")
        return f"{len(services)} healthy"

    def exec(self, service: str, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run([self.engine, "exec", self.container(service), *command], env=self.env, check=check)

    # -- steps --------------------------------------------------------------------------------
    def step(self, name: str, action: Callable[[], str | None]) -> bool:
        started = time.monotonic()
        try:
            detail = action() or ""
            ok = True
        except Exception as exc:  # noqa: BLE001 - every failure is a row of the table, then the exit code
            detail = f"{type(exc).__name__}: {exc}"
            ok = False
            traceback.print_exc()
        self.steps.append(Step(name, ok, time.monotonic() - started, detail))
        print(f"smoke: {'ok  ' if ok else 'FAIL'} {name} ({time.monotonic() - started:.1f} s) {detail}", flush=True)
        return ok

    def astep(self, name: str, action: Callable[[], Awaitable[str | None]]) -> bool:
        return self.step(name, lambda: asyncio.run(action()))


def run(command: list[str], *, env: dict[str, str] | None = None, check: bool = True,
        timeout: float = 900) -> subprocess.CompletedProcess[str]:  # fmt: skip
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(command[:4])}... exited {result.returncode}: {result.stderr[-1500:]}")
    return result


# -- MCP ----------------------------------------------------------------------------------------------
def mcp_client(url: str, token: str | None) -> Any:
    """A real MCP client over streamable HTTP (scripts/service_stack.session), with the stack's long reads."""
    return session(url, token, read_s=300.0)


async def search_hits(client: Any, query: str, **extra: Any) -> list[dict[str, Any]]:
    body = await succeeded(client, "search", {"query": query, "response_format": "detailed", **extra})
    return list(body.get("results") or [])
