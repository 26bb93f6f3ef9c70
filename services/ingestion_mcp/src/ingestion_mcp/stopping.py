"""A signal stops the server as a closed stdin does, and leaves nothing behind in the temp folder.

Clients stop a stdio server by closing its stdin, and after a grace period (2 s in the MCP SDK) with SIGTERM; service
managers and closing terminals send SIGTERM or SIGHUP. At a signal's default action nothing of the process's exit
runs: multiprocessing's ``pymp-*`` folder (the docling fork server's socket) stayed in the temp folder. Over stdio the
graceful path cannot be taken either: the SDK reads stdin in a thread that a cancel waits for until a line or EOF
comes. So the signal runs the process's exit handlers (multiprocessing's stops the docling workers and removes its
folder; logging flushes) and exits at once with 128 + the signal's number, as the default action reports it. The
index loses nothing: every write is atomic (docs/consistency.md), and the next start takes the folder over.

Over streamable HTTP uvicorn already stops gracefully on SIGINT and SIGTERM; SIGHUP is handled here.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal

import anyio

log = logging.getLogger("ingestion_mcp")
STDIO_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
HTTP_SIGNALS = (signal.SIGHUP,)  # uvicorn handles SIGINT and SIGTERM itself


async def exit_on_signals(*signals: signal.Signals) -> None:
    """Wait for one of ``signals``, then exit as the process's exit would (exit_now)."""
    with anyio.open_signal_receiver(*signals) as received:
        async for signum in received:
            log.info("stopping on %s", signal.Signals(signum).name)
            exit_now(128 + signum)


def exit_now(code: int) -> None:
    atexit._run_exitfuncs()  # what a normal interpreter exit runs: multiprocessing's clean-up, logging's flush
    os._exit(code)
