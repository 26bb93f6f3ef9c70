"""What the user-journey tests share: a stdio MCP server as an agent app launches it, calls, documents.

Every journey talks to the real server process through the real MCP client (stdio), with the embedded
services (real docling, chunker, MiniLM and Milvus Lite): the way an agent or a person uses it.
"""

from __future__ import annotations

import http.server
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from service_stack import call

SERVICE_URLS = ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI")
WORDS = [
    "harbour", "lantern", "orchard", "meadow", "copper", "violin", "glacier", "saffron", "compass", "falcon",
    "river", "marble", "thistle", "beacon", "ember", "willow", "quarry", "summit", "lagoon", "prairie",
]  # fmt: skip


def server_params(docs: Path, data: Path, **env: str) -> StdioServerParameters:
    environment = {
        **os.environ,
        "INGESTION_MCP_ALLOWED_ROOTS": str(docs),
        "INGESTION_MCP_DATA_DIR": str(data),
        "INGESTION_MCP_DOCUMENTS_DIR": str(docs),
        "HF_HUB_OFFLINE": "1",
        **env,
    }
    for name in SERVICE_URLS:
        environment.pop(name, None)
    command = [sys.executable, "-m", "ingestion_mcp.cli.server_command"]
    return StdioServerParameters(command=command[0], args=command[1:], env=environment, cwd=str(docs))


def from_the_root(params: StdioServerParameters, home: Path) -> StdioServerParameters:
    """The same server as a desktop client starts it: from /, with no data folder or allowed roots set, only HOME (the
    client declares its roots: issue 48)."""
    unset = ("INGESTION_MCP_ALLOWED_ROOTS", "INGESTION_MCP_DATA_DIR", "INGESTION_MCP_DOCUMENTS_DIR", "XDG_DATA_HOME")
    env = {k: v for k, v in (params.env or {}).items() if k not in unset} | {"HOME": str(home)}
    return params.model_copy(update={"env": env, "cwd": "/"})


def declaring(*folders: Path) -> Any:
    """A client's list_roots_callback that declares these folders as its roots."""
    from mcp import types

    async def roots(*_: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f.as_uri(), name=f.name) for f in folders])

    return roots


async def counts(client: Client, collection: str) -> tuple[int, int]:
    """(documents, chunks) of a collection; (0, 0) when it does not exist."""
    listing = await call(client, "get_collections")
    for item in listing.get("collections") or []:
        if item["name"] == collection:
            return item["document_count"], item["chunk_count"]
    return 0, 0


async def finished_job(client: Client, job_id: str, timeout: float = 300) -> dict[str, Any]:
    """Poll get_job_status (ingestion profile) until the job has ended; its whole answer."""
    import anyio

    with anyio.fail_after(timeout):
        while True:
            status = await call(client, "get_job_status", job_id=job_id)
            if status["job"]["status"] != "running":
                return status
            await anyio.sleep(0.5)


async def cancel_when_embedding(
    client: Client, arguments: dict[str, Any], before_cancel: Any = None, timeout: float = 300
) -> None:
    """Call ingest_text and cancel the call as soon as its progress says "embedding" (what a user's
    Ctrl-C does mid-ingest). ``before_cancel``: an async callable run just before the cancel."""
    import anyio

    embedding = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if message == "embedding":
            embedding.set()

    async def ingest() -> None:
        await client.call_tool("ingest_text", arguments, progress_callback=on_progress)

    with anyio.move_on_after(timeout) as outer:
        async with anyio.create_task_group() as group:
            group.start_soon(ingest)
            await embedding.wait()
            if before_cancel is not None:
                await before_cancel()
            group.cancel_scope.cancel()
    assert not outer.cancelled_caught, "embedding never started"


def long_text(paragraphs: int, marker: str) -> str:
    """Distinct prose (no two paragraphs alike) of about 600 characters a paragraph."""
    out = [f"# Report {marker}"]
    for number in range(paragraphs):
        words = [WORDS[(number * 7 + i * 3) % len(WORDS)] for i in range(80)]
        out.append(f"Paragraph {number} of {marker}: " + " ".join(words) + f" {number}.")
    return "\n\n".join(out)


@dataclass
class FileServer:
    root: Path
    port: int

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"


@contextmanager
def file_server(root: Path, delay_404_s: float = 0.0) -> Iterator[FileServer]:
    """A loopback HTTP server for `root`; a path under /slow-404/ answers 404 after a delay."""
    import time

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self) -> None:
            if self.path.startswith("/slow-404/"):
                time.sleep(delay_404_s)
                self.send_error(404)
                return
            super().do_GET()

        def log_message(self, *_: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FileServer(root, server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
