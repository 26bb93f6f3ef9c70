"""The process hosting a shared data folder goes away (issue 20, point 6): the others carry on.

Each agent app is a real MCP server over stdio (embedded services) driven by a real MCP client. The first
server on the folder hosts it; the others attach to its socket. When the host is killed (SIGKILL, SIGTERM)
or exits cleanly, an attached server's next call takes the folder over (it loads the model and serves the
socket) and a server started later attaches to it. Before issue 20 every call of the attached server failed
after ~6 s with "check that the vector gateway service is running and its URL is configured".
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from journeys import counts, finished_job, long_text, server_params
from mcp import Client
from mcp.client.stdio import stdio_client
from service_stack import call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

ORCHARD = "The orchard ladder is stored in the barn behind the walnut tree, next to the cider press."
LIGHTHOUSE = "The lighthouse keeper logs the fog horn hours in a green ledger beside the lantern room."
TOOK_OVER = "took over hosting"
REATTACHED = "attached to the new host"


# What leaving the client of a server that was killed may raise (its pipes are gone); nothing else is hidden.
GONE = (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError, anyio.ClosedResourceError)


@dataclass
class Agent:
    """One agent app: its MCP client, its server's stderr (INFO logs) and a mark to find its process by."""

    client: Client
    log: Path
    mark: str
    stop: anyio.Event
    done: anyio.Event

    def pid(self) -> int:
        return server_pid(self.mark)

    def lines(self, needle: str) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if needle in line]

    async def close(self) -> None:
        """Leave the client: it closes the server's stdin, and the server exits cleanly (if it still runs)."""
        self.stop.set()
        with anyio.fail_after(120):
            await self.done.wait()


def server_pid(mark: str) -> int:
    """The pid of the MCP server process started with E2E_AGENT=mark (not its docling workers)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            environ = (entry / "environ").read_bytes().split(b"\0")
            if (
                f"E2E_AGENT={mark}".encode() in environ
                and b"ingestion_mcp.cli.server_command" in (entry / "cmdline").read_bytes()
            ):
                return int(entry.name)
    raise AssertionError(f"no MCP server process marked {mark}")


class Agents:
    """Starts agent apps on one data folder, each client in a task of its own so any of them can leave first."""

    def __init__(self, tmp_path: Path, data: Path, group: anyio.abc.TaskGroup) -> None:
        self.tmp_path, self.data, self.group = tmp_path, data, group
        self.docs = tmp_path / "docs"
        self.docs.mkdir(exist_ok=True)
        self.started: list[Agent] = []

    async def start(self, name: str, **env: str) -> Agent:
        agent: Agent = await self.group.start(self._run, name, env)
        self.started.append(agent)
        return agent

    async def _run(self, name: str, env: dict[str, str], *, task_status: anyio.abc.TaskStatus[Agent]) -> None:
        mark = f"{name}-{uuid.uuid4().hex[:8]}"
        params = server_params(self.docs, self.data, E2E_AGENT=mark, INGESTION_MCP_LOG_LEVEL="INFO", **env)
        log = self.tmp_path / f"{name}.stderr"
        done = anyio.Event()
        try:
            with log.open("w") as sink, contextlib.suppress(*GONE):
                async with Client(stdio_client(params, errlog=sink), read_timeout_seconds=300) as client:
                    agent = Agent(client, log, mark, anyio.Event(), done)
                    task_status.started(agent)
                    await agent.stop.wait()
        finally:
            done.set()


@contextlib.asynccontextmanager
async def agents(tmp_path: Path, data: Path | None = None) -> AsyncIterator[Agents]:
    async with anyio.create_task_group() as group:
        team = Agents(tmp_path, data or tmp_path / "data", group)
        try:
            yield team
        finally:
            for agent in team.started:
                agent.stop.set()


def kill(pid: int, sig: signal.Signals) -> None:
    os.kill(pid, sig)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid), f"process {pid} did not exit on {sig.name}"


def alive(pid: int) -> bool:
    """Running, or still closing its files: a zombie leader whose other threads still exit holds them (so its
    sockets, and a client's idle connection to it, still look open)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z" or len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


async def search(client: Client, query: str) -> dict[str, Any]:
    return await call(client, "search", query=query, mode="keyword", top_k=3)


async def ingest(client: Client, **arguments: Any) -> dict[str, Any]:
    """ingest_text's answer, or (a takeover outlasted the call's synchronous wait) its job's result."""
    made = await call(client, "ingest_text", **arguments)
    if made.get("job_id"):
        made = (await finished_job(client, made["job_id"]))["job"]["result"]
    return made


async def after_takeover(ask: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """The answer of a call that finds the host gone. A takeover outlasting a call's wait (50 s: a starved
    machine) answers "still starting"; the takeover goes on, and a later call gets the answer."""
    for _ in range(4):
        answer = await ask()
        if "still starting" not in str(answer.get("error")):
            break
    return answer


def texts(found: dict[str, Any]) -> str:
    assert not found.get("is_error") and "results" in found, found
    return " ".join(r["text"] for r in found["results"])


async def test_a_killed_host_is_taken_over_once_and_a_newcomer_attaches_to_the_new_host(tmp_path: Path) -> None:
    async with agents(tmp_path) as team:
        a = await team.start("a")
        assert (await ingest(a.client, text=ORCHARD, name="orchard"))["status"] == "indexed"
        b = await team.start("b")
        assert "orchard ladder" in texts(await search(b.client, "orchard ladder barn"))  # attached to a

        kill(a.pid(), signal.SIGKILL)
        # Three calls at once find the host gone: one takeover serves them all.
        answers: list[dict[str, Any]] = []

        async def one(query: str) -> None:
            answers.append(await after_takeover(lambda: search(b.client, query)))

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for query in ("orchard ladder", "walnut tree barn", "cider press"):
                group.start_soon(one, query)
        takeover_s = time.perf_counter() - started
        assert all("orchard ladder" in texts(found) for found in answers), answers
        assert len(b.lines(TOOK_OVER)) == 1 and not b.lines(REATTACHED), b.log.read_text()[-3000:]
        print(f"\ntakeover after SIGKILL of the host: the first calls answered in {takeover_s:.1f} s")
        print(b.lines(TOOK_OVER)[0])

        made = await ingest(b.client, text=LIGHTHOUSE, name="lighthouse")
        assert made["status"] == "indexed", made

        # A server started now attaches to b, the new host, and sees both documents.
        c = await team.start("c")
        assert "fog horn" in texts(await search(c.client, "lighthouse fog horn ledger"))
        assert "orchard ladder" in texts(await search(c.client, "orchard ladder"))
        assert not c.lines(TOOK_OVER), c.log.read_text()[-3000:]
        assert [line for line in c.lines("attached to the services of pid") if str(b.pid()) in line], c.log.read_text()


@pytest.mark.parametrize("exit_kind", ["clean exit", "SIGTERM"])
async def test_the_attached_server_takes_over_when_the_host_exits(tmp_path: Path, exit_kind: str) -> None:
    async with agents(tmp_path) as team:
        a = await team.start("a")
        assert (await ingest(a.client, text=ORCHARD, name="orchard"))["status"] == "indexed"
        b = await team.start("b")
        assert "orchard ladder" in texts(await search(b.client, "orchard ladder"))
        pid = a.pid()
        if exit_kind == "SIGTERM":
            kill(pid, signal.SIGTERM)
        await a.close()  # a clean exit: the client closes the server's stdin and the server returns
        assert not alive(pid)

        started = time.perf_counter()
        assert "orchard ladder" in texts(await after_takeover(lambda: search(b.client, "orchard ladder")))
        print(
            f"\ntakeover after the host's {exit_kind}: the first call answered in {time.perf_counter() - started:.1f} s"
        )
        made = await ingest(b.client, text=LIGHTHOUSE, name="lighthouse")
        assert made["status"] == "indexed", made
        assert len(b.lines(TOOK_OVER)) == 1, b.log.read_text()[-3000:]


async def test_work_in_flight_on_a_killed_host_fails_clearly_and_the_next_call_succeeds(tmp_path: Path) -> None:
    data = (tmp_path / "data").resolve()
    text = long_text(60, "inflight")
    async with agents(tmp_path) as team:
        a = await team.start("a")
        assert (await ingest(a.client, text=ORCHARD, name="orchard"))["status"] == "indexed"  # a's model is loaded
        b = await team.start("b")
        embedding = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if message == "embedding":
                embedding.set()

        answer: list[Any] = []

        async def first_try() -> None:
            arguments = {"text": text, "name": "inflight"}
            answer.append(await b.client.call_tool("ingest_text", arguments, progress_callback=on_progress))

        pid, before = a.pid(), await counts(a.client, "rag_gateway")
        async with anyio.create_task_group() as group:
            group.start_soon(first_try)
            with anyio.fail_after(300):
                await embedding.wait()  # b's first batch of chunks is being embedded by a
            kill(pid, signal.SIGKILL)
        failed = answer[0].structured_content or json.loads(answer[0].content[0].text)
        if failed.get("job_id"):  # the call's synchronous wait ended first: the job's own outcome
            failed = await finished_job(b.client, failed["job_id"])
        assert failed.get("is_error") or failed.get("success") is False, failed
        message = f"{failed.get('error')} {failed.get('suggestion')}"
        assert str(data) in message and f"pid {pid}" in message and "in flight" in message, failed
        assert "URL" not in message, failed

        await after_takeover(lambda: call(b.client, "get_collections"))  # b's next call: a takeover
        assert await counts(b.client, "rag_gateway") == before  # nothing of the text was stored
        made = await ingest(b.client, text=text, name="inflight")
        assert made["status"] == "indexed", made
        documents, chunks = await counts(b.client, "rag_gateway")
        assert documents == 2 and chunks > before[1] + 32, (documents, chunks, before)
        found = await call(b.client, "search", query="Paragraph 7 of inflight", mode="keyword", top_k=1)
        assert found["results"][0]["title"] == "inflight", found


# Run as another local user: reach the socket's directory, then connect to the socket by its name there.
CONNECT_AS_OTHER_USER = """
import os, socket, sys
try:
    os.chdir(sys.argv[1])
    socket.socket(socket.AF_UNIX).connect(sys.argv[2])
    print("connected")
except PermissionError as exc:
    print("refused", exc)
"""


def other_user_connects(sock: Path) -> str:
    """What happens when the user nobody tries the socket (as root only; else "not tried")."""
    python = Path("/usr/bin/python3")
    if os.geteuid() != 0 or not python.exists():
        return "not tried"
    done = subprocess.run(
        [str(python), "-c", CONNECT_AS_OTHER_USER, str(sock.parent), sock.name],
        user=65534, group=65534, extra_groups=[], capture_output=True, text=True, cwd="/", timeout=30, check=False,
    )  # fmt: skip
    return (done.stdout + done.stderr).strip()


def socket_file(data: Path) -> Path:
    """The host's socket, wherever this version puts it (before issue 20: beside the data, or in /tmp)."""
    digest = hashlib.sha256(str(data).encode()).hexdigest()[:16]
    legacy = Path(tempfile.gettempdir()) / f"ingestion-mcp-{digest}.sock"
    places = [data / "run" / "services.sock", data / "services.sock", legacy]
    return next((place for place in places if place.exists()), places[0])


@pytest.mark.parametrize("depth", ["short path", "path over 110 characters"])
async def test_the_socket_is_the_owners_alone_and_never_in_the_shared_tmp(tmp_path: Path, depth: str) -> None:
    # Under /tmp with parents others may traverse: only the socket's own directory and mode keep them out.
    base = Path(tempfile.mkdtemp(prefix="emb-sock-"))
    base.chmod(0o755)
    data = (base / ("d" * 100 if depth != "short path" else "data")).resolve()
    assert (len(str(data)) > 110) == (depth != "short path")
    before = set(os.listdir(tempfile.gettempdir()))
    try:
        async with agents(tmp_path, data) as team:
            a = await team.start("a")
            assert (await call(a.client, "get_collections"))["success"]  # a hosts the folder and serves it
            sock = socket_file(data)
            assert sock.exists(), sock
            outcome = other_user_connects(sock)
            assert outcome == "not tried" or outcome.startswith("refused"), f"user nobody reached {sock}: {outcome}"
            folder, served = os.stat(data / "run"), os.stat(data / "run" / "services.sock")
            assert stat.S_IMODE(folder.st_mode) == 0o700 and folder.st_uid == os.geteuid()
            assert stat.S_ISSOCK(served.st_mode) and stat.S_IMODE(served.st_mode) == 0o600
            assert served.st_uid == os.geteuid()

            b = await team.start("b")  # attaches through the private directory, the deep path included
            made = await ingest(b.client, text=ORCHARD, name="orchard")
            assert made["status"] == "indexed", made
            assert "orchard ladder" in texts(await search(a.client, "orchard ladder"))
            assert b.lines("attached to the services of pid") and not b.lines("hosting"), b.log.read_text()[-3000:]
        created = set(os.listdir(tempfile.gettempdir())) - before
        assert not [name for name in created if name.endswith(".sock") or name.startswith("ingestion-mcp")], created
    finally:
        shutil.rmtree(base, ignore_errors=True)
