"""`initialize` answered within moments of the process start, before the MCP SDK and the services load (issue 49).

A client starts a stdio server, sends `initialize` and waits; some give up soon (Codex at 10 s). Importing the MCP
SDK and the tools takes 1.5-3 s of CPU, the services and the model more. So the entry point (cli/server_command.py)
reads the settings and starts ``EarlyStdio`` first, which needs the standard library alone: it takes the process's
stdin and stdout from the start, answers the opening `initialize` itself with what the SDK would answer (``answer``;
a test compares the two for every profile and protocol version) and keeps every line it read, that `initialize`
included, for the SDK. Once the SDK runs, it reads those lines and then the rest of stdin through ``stdin()`` and
writes through ``stdout()``, which drops the SDK's own answer to the `initialize` answered here: the client hears
one. Everything else (tools/list, a tool call) waits for the SDK, as it would have without this module.

The SDK's stdio transport points fd 0 at the null device and fd 1 at stderr while it serves, so that a library
printing to stdout cannot corrupt the protocol; this module does the same from the start (imports print too).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import threading
from importlib.metadata import PackageNotFoundError, version
from typing import IO, Any

# What the SDK (mcp 2.x, mcp_types.version) negotiates in `initialize`: the client's version when it is one of
# these, else the newest. test_handshake checks both against the installed SDK.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
# What an MCPServer announces, whatever its tools (test_handshake checks it against the SDK).
CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
# The key of 2026-07-28's per-request envelope: a request carrying it opens a connection without `initialize`.
MODERN_META_KEY = "io.modelcontextprotocol/protocolVersion"
# A profile served alone may announce the name and version of the server it copies (server.identity).
PROFILE_IDENTITIES = {"mcpvectordb": ("mcpvectordb", "0.2.0")}

INSTRUCTIONS = """\
ingestion-mcp indexes documents and finds passages in them.
- Every answer carries success and message; a failed one error and suggestion (what to do instead).
- Tools take an optional collection; without one they use the default collection (search: every collection).
  A collection name is 1-255 letters, digits, '-', '_' or '.', starting with a letter or digit.
- To add content: ingest_document (a file path), ingest_from_url (a link), ingest_text (text you have),
  ingest_batch (many at once).
- To find content: search (hybrid keyword + semantic); results name the document, page and section.
- To see what is indexed: get_collections, list_documents; read one with get_document, or a long one by
  get_document_outline, get_document_section, get_document_pages. Document tools take doc_id or key (the
  path, URL or name it was ingested with).
- Long work runs as a job: an ingest tool answers with job_id when it outlives ~40 s; poll get_job_status.
- Ingest tools also take: source (a filterable label, not the identity; default: the path, or the URL's
  domain), tags (up to 32, of up to 64 characters), metadata (stored with every chunk), chunking (default: 200
  tokens a chunk; dense: 100, for precise lookups; sparse: 400, for long prose), force (re-ingest even if
  unchanged). Their status: indexed, replaced (re-embedded), updated (labels only) or skipped (unchanged).
- response_format: concise (the default) or detailed; each result schema names what detailed adds.
- How much comes back: top_k (search results) or limit (list items), from offset (lists) or start_char
  (text); a cut answer says how to read on.
- sync_folder's include and exclude are glob patterns on paths in the folder ('*.md', 'notes/*').
- Evidence (PDFs, images): 'detailed' answers give regions, per page {page, size [w, h], boxes [[start, end, x0, top,
  x1, bottom]]}: characters start..end of the text lie in that box (points, from the page's top-left);
  get_document_pages shows a passage's tables and figures whole, and its page as a picture.
"""


def package_version() -> str:
    try:  # the one version is VERSION at the repository root, read into the installed metadata at build time
        return version("ingestion-mcp-server")
    except PackageNotFoundError:  # run from a source tree without an install
        return "0+unknown"


def identity(profiles: list[str]) -> tuple[str, str, str | None]:
    """(name, version, instructions) the server announces for these profiles."""
    if len(profiles) == 1 and profiles[0] in PROFILE_IDENTITIES:
        return (*PROFILE_IDENTITIES[profiles[0]], None)
    # The instructions name the ingestion tools: other profiles' tools describe themselves.
    return "ingestion-mcp", package_version(), INSTRUCTIONS if "ingestion" in profiles else None


def answer(request: dict[str, Any], profiles: list[str]) -> dict[str, Any] | None:
    """The SDK's answer to this `initialize` request, or None when the SDK should answer it (params it may refuse)."""
    params = request.get("params")
    if request.get("jsonrpc") != "2.0" or request.get("method") != "initialize" or not isinstance(params, dict):
        return None
    client = params.get("clientInfo")
    meta = params.get("_meta")
    plain = (
        isinstance(params.get("protocolVersion"), str) and isinstance(params.get("capabilities"), dict)
        and isinstance(client, dict) and isinstance(client.get("name"), str) and isinstance(client.get("version"), str)
        and (meta is None or (isinstance(meta, dict) and MODERN_META_KEY not in meta))
    )  # fmt: skip
    request_id = request.get("id")
    if not plain or isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return None
    name, server_version, instructions = identity(profiles)
    requested = params["protocolVersion"]
    result: dict[str, Any] = {
        "capabilities": CAPABILITIES,
        **({"instructions": instructions} if instructions is not None else {}),
        "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE,
        "serverInfo": {"name": name, "version": server_version},
    }
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def claim(fd: int, mode: str, divert_to: int) -> IO[bytes]:
    """A private file on what ``fd`` was (the wire), with ``fd`` itself pointed at ``divert_to``."""
    private = os.dup(fd)
    os.set_inheritable(private, False)  # the docling workers and other children never hold the wire
    os.dup2(divert_to, fd)
    return os.fdopen(private, mode, buffering=0)


class EarlyStdio:
    """The process's stdin and stdout from its start: `initialize` answered here, the rest kept for the SDK."""

    def __init__(
        self, profiles: list[str], wire_in: IO[bytes] | None = None, wire_out: IO[bytes] | None = None
    ) -> None:
        """Without ``wire_in``/``wire_out``, fd 0 and fd 1 are claimed (fd 0 -> the null device, fd 1 -> stderr)."""
        if wire_in is None or wire_out is None:
            null = os.open(os.devnull, os.O_RDONLY)
            wire_in, wire_out = claim(0, "rb", null), claim(1, "wb", 2)
            os.close(null)
            sys.stdout = sys.stderr  # Python's own stdout object still holds the old fd 1's buffer: use stderr's
        self.profiles = profiles
        self.wire_in, self.wire_out = wire_in, wire_out
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.answered: set[str | int] = set()  # ids answered here whose SDK answer is still to drop
        self.write_lock = threading.Lock()
        self.handed_over = False
        self._requests = 0
        self._reader = threading.Thread(target=self._read, name="early-stdin", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for line in self.wire_in:
                if not self.handed_over:
                    self._maybe_answer(line)
                self.lines.put(line)
        except (OSError, ValueError):  # the wire closed under us: the end of input
            pass
        self.lines.put(None)

    def _maybe_answer(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return  # a notification or an answer: no request
        self._requests += 1
        reply = answer(message, self.profiles) if self._requests == 1 else None  # `initialize` opens, or not at all
        if reply is not None:
            self.answered.add(reply["id"])
            self.write(json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    def write(self, data: bytes) -> None:
        with self.write_lock:
            self.wire_out.write(data)
            self.wire_out.flush()

    def stdin(self) -> WireIn:
        """A text file for the SDK's stdio transport: the lines read so far, then the rest of stdin."""
        self.handed_over = True
        return WireIn(self.lines)

    def stdout(self) -> WireOut:
        """A text file for the SDK's stdio transport: its writes go to the wire, less its answer to an
        `initialize` answered here."""
        return WireOut(self)


class WireIn:
    """A blocking text file over the queue of lines (the SDK reads it in a worker thread)."""

    def __init__(self, lines: queue.Queue[bytes | None]) -> None:
        self.lines = lines
        self.ended = False

    def readline(self) -> str:
        if self.ended:
            return ""
        line = self.lines.get()
        if line is None:
            self.ended = True
            self.lines.put(None)  # another reader (there is none) would see the end too
            return ""
        return line.decode("utf-8", errors="replace")

    def __iter__(self) -> WireIn:
        return self

    def __next__(self) -> str:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def close(self) -> None:
        return None


class WireOut:
    """A text file whose writes go to the wire; the SDK's answer to an `initialize` answered early is dropped."""

    def __init__(self, early: EarlyStdio) -> None:
        self.early = early

    def write(self, text: str) -> int:
        if self.early.answered:  # only until the SDK has answered the `initialize` answered early
            with contextlib.suppress(ValueError, TypeError):
                message = json.loads(text)
                if isinstance(message, dict) and "result" in message and message.get("id") in self.early.answered:
                    self.early.answered.discard(message["id"])
                    return len(text)
        self.early.write(text.encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None
