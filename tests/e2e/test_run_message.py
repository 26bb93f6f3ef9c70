"""What a person sees after `make run` (and an MCP client after launching the server over stdio): once every
service is ready, one block on stderr says where the server listens and how to connect; the connection it
describes works (in a terminal the log is text: one line per event, the audit's too). Over stdio, stdout stays the
protocol and stderr gets one line: a client's log file is no terminal, so one JSON event."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from vector_gateway.int8 import fast_int8_cpu
from vector_gateway.settings import BUNDLED_MODEL_NAME

from .test_http_transport import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
READY = "ingestion-mcp is ready"
# The development install has onnx: int8 wherever the CPU has int8 dot products.
EMBEDDINGS = f"embeddings: {BUNDLED_MODEL_NAME}, {'int8' if fast_int8_cpu() else 'fp32'}"


def server_env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "INGESTION_MCP_DATA_DIR": str(tmp_path / "data"), "INGESTION_MCP_ALLOWED_ROOTS": str(tmp_path),
           "HF_HUB_OFFLINE": "1"}  # fmt: skip
    for name in ("AUTH_TOKEN", "DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL",
                 "VECTOR_GATEWAY_MILVUS_URI", "HF_HUB_DISABLE_PROGRESS_BARS", "GRPC_VERBOSITY"):  # fmt: skip
        env.pop(name, None)
    return env


class StderrLines:
    """Every line the process writes to stderr (a pipe, or the terminal it was started in), read on a thread so the
    pipe never fills."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        with contextlib.suppress(OSError):  # a terminal whose last writer exited answers EIO
            for line in stream:
                self.lines.put(line)

    def until(self, prefix: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            self.seen.append(line)
            if line.startswith(prefix):
                return line
        pytest.fail(f"no line starting {prefix!r} on stderr:\n" + "".join(self.seen))

    def block(self) -> list[str]:
        """The ready line's continuation: the indented lines written with it."""
        block: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=1.0)
            except queue.Empty:
                return block
            self.seen.append(line)
            if not line.startswith("  "):
                return block
            block.append(line.strip())


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], StderrLines, int]]:
    """`ingestion-mcp --transport streamable-http` as a person starts it in a terminal (a pseudo-terminal as its
    stderr, INGESTION_MCP_JSON_LOGS unset: text, as `make run` asks outright)."""
    port = free_port()
    main, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "ingestion_mcp.cli.server_command", "--transport", "streamable-http",
         "--port", str(port)],
        env=server_env(tmp_path), stdout=subprocess.DEVNULL, stderr=secondary,
    )  # fmt: skip
    os.close(secondary)
    try:
        yield process, StderrLines(open(main, encoding="utf-8", errors="replace")), port  # noqa: SIM115 - the thread's
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_make_run_says_once_ready_where_it_serves_and_that_connection_works(
    http_server: tuple[subprocess.Popen[str], StderrLines, int], tmp_path: Path
) -> None:
    process, stderr, port = http_server
    ready = stderr.until(READY, timeout_s=180)
    # Said only once every service answers ready (the model loaded), not when the socket opens.
    assert httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200
    match = re.search(r"at (http://\S+/mcp)$", ready.strip())
    assert match, ready
    url = match.group(1)
    assert url == f"http://127.0.0.1:{port}/mcp"
    block = stderr.block()
    # The precision the model loaded at: int8 on a CPU with int8 dot products (VNNI/AMX), fp32 elsewhere.
    assert f"tools: ingestion; data: {(tmp_path / 'data').resolve()} (index: lance); {EMBEDDINGS}" in block, block
    assert f"Claude Code: claude mcp add --transport http ingestion {url}" in block, block
    config = json.loads(next(line for line in block if line.startswith("other clients: ")).split(": ", 1)[1])
    assert config == {"mcpServers": {"ingestion": {"type": "http", "url": url}}}
    # Nothing of the start-up (the model's loading bar, gRPC's log) comes after the block.
    assert not any("Loading weights" in line or "GOAWAY" in line for line in stderr.seen), stderr.seen

    async with Client(url) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"ingest_document", "search", "get_collections"} <= names
        listed = await client.call_tool("get_collections", {})
        assert listed.structured_content and listed.structured_content["success"] is True
        made = await client.call_tool("create_collection", {"name": "terminal-notes"})
        assert not made.is_error, made.content
    # A write: one audit line, as text like the rest, naming no "None" (the caller has no subject here).
    audit = stderr.until("", timeout_s=10)
    while "ingestion_mcp.audit" not in audit:
        audit = stderr.until("", timeout_s=10)
    assert re.fullmatch(r"\d\d:\d\d:\d\d INFO ingestion_mcp\.audit: audit: create_collection on terminal-notes: "
                        r"ok \(create_collection\)", audit.strip()), audit  # fmt: skip
    assert not [line for line in stderr.seen if line.startswith("{") or "None" in line], stderr.seen
    assert process.poll() is None


async def test_stdio_keeps_stdout_for_the_protocol_and_says_one_line_on_stderr(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ingestion_mcp.cli.server_command"], env=server_env(tmp_path)
    )
    errlog = tmp_path / "stderr.txt"
    with errlog.open("w") as sink:
        async with Client(stdio_client(params, errlog=sink)) as client:
            assert "search" in {tool.name for tool in (await client.list_tools()).tools}
            deadline = time.monotonic() + 180
            while READY not in errlog.read_text() and time.monotonic() < deadline:
                await client.call_tool("get_collections", {})  # the protocol stays usable while it starts
                time.sleep(0.5)
    lines = [json.loads(line) for line in errlog.read_text().splitlines() if line.strip()]
    assert [(line["event"], line["msg"]) for line in lines] == [
        (
            "ready",
            f"{READY} on stdio; tools: ingestion; data: {(tmp_path / 'data').resolve()} (index: lance); {EMBEDDINGS}",
        )
    ], lines
