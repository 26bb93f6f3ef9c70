"""The laptop journey with no network and a fresh HOME: does anything leave the machine or land outside the data folder?

    python scripts/offline_journey.py --work DIR --docs PDF DOCX HTML [--queries Q Q Q] [--server 'CMD ARGS']
        [--transport stdio|streamable-http] [--keep-data] [--require-isolation]

Starts `ingestion-mcp` (stdio, as an agent app launches it) in a network namespace of its own, which has no
interface up and no route (`unshare -n`; `unshare -rn` where this user may not make one), under strace (every
process it starts followed), with HOME, the temp folder (TMPDIR) and the working folder fresh and empty. Then, through
a real MCP client: ingest the PDF, the DOCX and the HTML page, search each, show the PDF's page as a picture, list the
collections; and stop (the client closes stdin, as apps do; or `--stop sigterm`: SIGTERM, which a client sends when
the server is not gone 2 s after that, and a service manager at once).

With `--transport streamable-http` the driver itself enters the namespace (it runs itself again under unshare) and
brings its loopback interface up, the only one there is; the server listens on a loopback port and the MCP client
speaks HTTP to it; it is stopped by SIGTERM (what a service manager sends; uvicorn then stops gracefully). With
`--keep-data` the data folder of an earlier run in the same --work stays (a second start): documents it holds answer
"skipped", unchanged, but those named by `--force`, ingested again with force=true. It reports, as one JSON line:

- ``connections``: every connect/sendto/sendmsg to an internet address (AF_INET, AF_INET6) any process tried (over
  HTTP, but the server's own loopback address and port), and every Unix socket outside the data folder (a name
  service lookup goes through nscd's socket first);
- ``stray_writes``: every file or folder a process created, wrote or renamed outside the data folder and the temp
  folder (compiled ``__pycache__`` files of the installed packages aside: Python's own);
- ``left_behind``: what is still in HOME, the temp folder or the working folder once the server has stopped;
- the journey's answers (the precision get_collections states, the hits' pages), and the seconds it took.

Exits 1 when any of the three lists is not empty or a step fails. Needs only the MCP SDK (a venv made from dist/ has
it), so it can be copied alone into a clean container, as scripts/dist_smoke.py is; tests/e2e/test_offline_journey.py
runs it in the suite. docs/privacy.md says what it found and what was changed.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

READY = "ingestion-mcp is ready"
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
TRACED = (
    "connect,sendto,sendmsg,open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,link,linkat,symlink,symlinkat"
)
# Where a process may write besides the data folder and the temp folder: devices, its own /proc entries.
ALLOWED_ELSEWHERE = ("/dev/", "/proc/")
CALL = re.compile(r"^(?P<pid>\d+)\s+(?P<name>\w+)\((?P<args>.*)")
LOOPBACK = "127.0.0.1"
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1  # <linux/sockios.h>, <net/if.h>


def fail(message: str) -> None:
    print(f"offline_journey: FAILED: {message}", file=sys.stderr)
    raise SystemExit(1)


def isolation() -> list[str]:
    """The prefix that runs a command in a network namespace of its own (no interface up, no route), or []."""
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        if shutil.which("unshare") and subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return [*prefix, "--"]
    return []


def loopback_up() -> None:
    """Bring up `lo` in this network namespace (a new one has it down: even 127.0.0.1 is unreachable); the ioctl
    `ip link set lo up` makes, so that nothing beyond Python is needed."""
    with socket.socket() as sock:
        request = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))


def loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def tracer(trace: Path) -> list[str]:
    if shutil.which("strace") is None:
        return []
    return ["strace", "-f", "-qq", "--seccomp-bpf", "-s", "4096", "-e", f"trace={TRACED}", "-e", "signal=none",
            "-o", str(trace)]  # fmt: skip


def python_own(path: str) -> bool:
    """A compiled module Python writes beside the installed packages it imports, or its folder (not the program's
    doing: an install compiles them, an editable one leaves it to the first import)."""
    return path.endswith("/__pycache__") or ("/__pycache__/" in path and ".pyc" in path)


def within(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == folder or path.startswith(folder + "/") for folder in folders)


def quoted(args: str) -> list[str]:
    return [json.loads(f'"{raw}"') for raw in re.findall(r'"((?:[^"\\]|\\.)*)"', args)]


def written_paths(name: str, args: str) -> list[str]:
    """The paths a traced call creates or writes ([] for a read-only open)."""
    paths = quoted(args)
    if name in ("open", "openat"):
        return paths[:1] if any(flag in args for flag in WRITE_FLAGS) else []
    if name in ("rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat"):
        return paths[-1:]
    return paths[:1]  # creat, mkdir, mkdirat


def reached(name: str, args: str, inside: tuple[str, ...], itself: str = "") -> str | None:
    """The address a connect/sendto/sendmsg aims at, when it is off this machine's own folders (and is not
    ``itself``, the server's own listening address as strace writes it: see listening_at)."""
    family = re.search(r"sa_family=(AF_\w+)", args)
    if family is None:  # a connected socket's send (no address): its connect was recorded
        return None
    if family.group(1) in ("AF_INET", "AF_INET6"):
        address = args.split("}")[0] + "}"
        return None if itself and address.endswith(itself) else f"{name} {address}"
    if family.group(1) == "AF_UNIX":
        path = next(iter(quoted(args)), "")
        if path and not within(path, inside) and not path.startswith("@"):
            return f"{name} unix:{path}"
    return None


def listening_at(port: int) -> str:
    """How strace writes the server's own loopback address (the end of a connect's sockaddr)."""
    return f'sin_port=htons({port}), sin_addr=inet_addr("{LOOPBACK}")}}'


def read_trace(trace: Path, inside: tuple[str, ...], cwd: Path, itself: str = "") -> tuple[list[str], list[str]]:
    """(connections, stray writes) in a strace log; an interrupted call's arguments are on its first line."""
    connections, strays = [], []
    for line in trace.read_text(errors="replace").splitlines():
        match = CALL.match(line)
        if match is None:
            continue
        name, args = match.group("name"), match.group("args")
        if name in ("connect", "sendto", "sendmsg"):
            if (address := reached(name, args, inside, itself)) is not None:
                connections.append(address)
            continue
        for path in written_paths(name, args):
            full = path if path.startswith("/") else str(cwd / path)
            if not within(full, inside) and not full.startswith(ALLOWED_ELSEWHERE) and not python_own(full):
                strays.append(f"{name} {full}")
    return sorted(set(connections)), sorted(set(strays))


def payload(answer: Any) -> dict[str, Any]:
    if answer.is_error:
        fail(f"tool error: {answer.content}")
    return dict(answer.structured_content or json.loads(answer.content[0].text))


async def wait_ready(log: Path, began: float, timeout_s: float) -> float:
    """Seconds from ``began`` (the launch) to the ready line."""
    while time.monotonic() - began < timeout_s:
        if READY in log.read_text(errors="replace"):
            return time.monotonic() - began
        await asyncio.sleep(0.1)
    fail(f"no ready line within {timeout_s:.0f} s; stderr ends:\n{log.read_text(errors='replace')[-3000:]}")
    return 0.0


async def journey(
    client: Client, docs: list[Path], queries: list[str], *, kept: bool = False, forced: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Ingest each document, find it by words of its own, show the PDF's hit as a page picture, list collections.

    ``kept``: the data folder is an earlier run's, where a document already there answers "skipped"; the ``forced``
    ones (file names) are ingested with force=true, converted and embedded again."""
    pages: dict[str, Any] = {}
    statuses: dict[str, str] = {}
    for doc, query in zip(docs, queries, strict=True):
        ask = {"file_path": str(doc), "collection": "laptop"} | ({"force": True} if doc.name in forced else {})
        made = payload(await client.call_tool("ingest_document", ask))
        statuses[doc.name] = status = str(made.get("status"))
        written = status in ("indexed", "replaced") and made.get("chunks_created")
        if not (written or (kept and status == "skipped" and doc.name not in forced)):
            fail(f"ingest_document {doc.name} answered {made}")
        hits = payload(await client.call_tool("search", {"query": query, "collection": "laptop", "top_k": 5}))
        ours = [hit for hit in hits.get("results") or [] if Path(str(hit.get("source"))).name == doc.name]
        if not ours:
            fail(f"search {query!r} did not find {doc.name}: {hits}")
        pages[doc.name] = ours[0].get("page")
        if doc.suffix == ".pdf":
            shown = await client.call_tool("get_document_pages", {
                "doc_id": ours[0]["doc_id"], "collection": "laptop", "first_page": ours[0].get("page") or 1,
                "chunk_index": ours[0].get("chunk_index"), "image": "page"})  # fmt: skip
            pictures = [item for item in shown.content if getattr(item, "type", "") == "image"]
            if shown.is_error or not pictures:
                fail(f"get_document_pages image='page' gave no picture: {shown.content}")
    listing = payload(await client.call_tool("get_collections", {}))
    laptop = next(item for item in listing["collections"] if item["name"] == "laptop")
    return {"ingested": statuses, "pages": pages, "documents": laptop.get("document_count"),
            "precision": laptop.get("precision")}  # fmt: skip


async def terminate(pid: int, timeout_s: float = 30) -> None:
    """SIGTERM to the server (its pid from the data folder's host.lock), then wait until it has exited."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            return
        if state == "Z":  # exited; its parent reaps it
            return
        await asyncio.sleep(0.1)
    fail(f"the server (pid {pid}) did not stop within {timeout_s:.0f} s of SIGTERM")


def folders(work: Path, *, keep_data: bool = False) -> dict[str, Path]:
    made = {name: work / name for name in ("home", "tmp", "cwd", "data", "docs")}
    for name, folder in made.items():
        if not (keep_data and name in ("data", "docs")):
            shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
    return made


def server_env(where: dict[str, Path]) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "TERM")}
    return kept | {
        "HOME": str(where["home"]), "TMPDIR": str(where["tmp"]), "XDG_CACHE_HOME": str(where["home"] / ".cache"),
        "INGESTION_MCP_DATA_DIR": str(where["data"]), "INGESTION_MCP_ALLOWED_ROOTS": str(where["docs"]),
    }  # fmt: skip


async def over_stdio(args: argparse.Namespace, where: dict[str, Path], command: list[str]) -> tuple[float, Any]:
    """The journey as an agent app makes it: the server on the client's pipes; (seconds to ready, answers)."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(where), cwd=str(where["cwd"]))
    log, began = where["tmp"].parent / "server.stderr", time.monotonic()
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            ready_s = await wait_ready(log, began, args.timeout)
            answers = await journey(client, args.copies, args.queries, kept=args.keep_data, forced=args.force)
            if args.stop == "sigterm":  # as a client does 2 s after closing stdin, or a service manager at once
                await terminate(int((where["data"] / "host.lock").read_text()))
    return ready_s, answers


async def over_http(args: argparse.Namespace, where: dict[str, Path], command: list[str]) -> tuple[float, Any]:
    """The journey over streamable HTTP on a loopback port, stopped by SIGTERM; (seconds to ready, answers)."""
    command = [*command, "--transport", "streamable-http", "--host", LOOPBACK, "--port", str(args.port)]
    log, began = where["tmp"].parent / "server.stderr", time.monotonic()
    with log.open("w") as errlog:
        server = subprocess.Popen(command, env=server_env(where), cwd=where["cwd"], stdin=subprocess.DEVNULL,
                                  stdout=errlog, stderr=errlog, start_new_session=True)  # fmt: skip
        try:
            ready_s = await wait_ready(log, began, args.timeout)
            async with Client(f"http://{LOOPBACK}:{args.port}/mcp") as client:
                answers = await journey(client, args.copies, args.queries, kept=args.keep_data, forced=args.force)
            await terminate(int((where["data"] / "host.lock").read_text()))
            answers["server_exit"] = server.wait(timeout=30)  # strace's: the server's own, or -signal
        finally:
            if server.poll() is None:  # a failed step: nothing of this run may outlive it
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
    return ready_s, answers


async def run(args: argparse.Namespace) -> dict[str, Any]:
    where = folders(args.work.resolve(), keep_data=args.keep_data)
    args.copies = [Path(shutil.copy(doc, where["docs"] / doc.name)) for doc in args.docs]
    args.queries = args.queries or [doc.stem for doc in args.docs]
    over_http_ = args.transport == "streamable-http"
    netns = [] if over_http_ else isolation()  # over HTTP, the driver is in the namespace already (main)
    trace = where["tmp"].parent / "strace.log"
    strace = tracer(trace)
    isolated = args.in_namespace if over_http_ else bool(netns)
    if args.require_isolation and not (isolated and strace):
        fail(f"no {'network namespace (unshare -n)' if not isolated else 'strace'} here, and --require-isolation")
    if over_http_:
        if isolated:
            loopback_up()
        args.port = loopback_port()
    began = time.monotonic()
    ready_s, answers = await (over_http if over_http_ else over_stdio)(args, where, [*netns, *strace, *args.server])
    inside = (str(where["data"]), str(where["tmp"]), str(where["docs"]))
    itself = listening_at(args.port) if over_http_ else ""
    connections, strays = read_trace(trace, inside, where["cwd"], itself) if strace else ([], [])
    left = sorted(str(p) for name in ("home", "tmp", "cwd") for p in where[name].rglob("*"))
    return {"transport": args.transport, "network_namespace": isolated, "strace": bool(strace),
            "ready_s": round(ready_s, 1), "journey_s": round(time.monotonic() - began, 1), **answers,
            "connections": connections, "stray_writes": strays, "left_behind": left}  # fmt: skip


def in_namespace(args: argparse.Namespace) -> None:
    """Over HTTP the client must reach the server: the driver runs itself again in the namespace (no return)."""
    netns = isolation()
    if netns:
        os.execvp(netns[0], [*netns, sys.executable, str(Path(__file__).resolve()), *sys.argv[1:], "--in-namespace"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="an empty folder of this run's own")
    parser.add_argument("--docs", type=Path, nargs="+", required=True, help="a PDF, a DOCX and an HTML page")
    parser.add_argument("--queries", nargs="+", help="a search per document that finds it (default: its file name)")
    default = str(Path(sysconfig.get_path("scripts")) / "ingestion-mcp")
    parser.add_argument("--server", type=shlex.split, default=[default], help=f"the server command, as a shell "
                        f"would split it (default: {default})")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for the ready line")
    parser.add_argument("--require-isolation", action="store_true", help="fail where unshare -n or strace is missing")
    parser.add_argument("--stop", choices=["stdin", "sigterm"], default="stdin",
                        help="how a stdio server is stopped: stdin closed (what clients do first), or SIGTERM (an "
                        "HTTP server always gets SIGTERM)")  # fmt: skip
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--keep-data", action="store_true", help="keep the data folder of an earlier run in --work")
    parser.add_argument("--force", nargs="+", default=(), metavar="NAME",
                        help="names of --docs to ingest with force=true (converted again, kept folder)")  # fmt: skip
    parser.add_argument("--in-namespace", action="store_true", help=argparse.SUPPRESS)  # set by in_namespace
    args = parser.parse_args()
    if args.queries and len(args.queries) != len(args.docs):
        parser.error("give one query per document")
    if args.transport == "streamable-http" and not args.in_namespace:
        in_namespace(args)
    report = asyncio.run(run(args))
    print(json.dumps(report))
    if report["connections"] or report["stray_writes"] or report["left_behind"]:
        fail("something left the data folder or tried to leave the machine (see the report above)")


if __name__ == "__main__":
    main()
