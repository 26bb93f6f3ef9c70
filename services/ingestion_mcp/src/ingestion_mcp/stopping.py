"""A signal stops the server as a closed stdin does, and leaves nothing behind in the temp folder.

Clients stop a stdio server by closing its stdin, and after a grace period (2 s in the MCP SDK) with SIGTERM; service
managers and closing terminals send SIGTERM or SIGHUP. At a signal's default action nothing of the process's exit
runs: multiprocessing's ``pymp-*`` folder (the docling fork server's socket) stayed in the temp folder. Over stdio the
graceful path cannot be taken either: the SDK reads stdin in a thread that a cancel waits for until a line or EOF
comes. So the signal runs the process's exit handlers (multiprocessing's stops the docling workers and removes its
folder; logging flushes) and exits at once with 128 + the signal's number, as the default action reports it. The
index loses nothing: every write is atomic (docs/consistency.md), and the next start takes the folder over.

Over streamable HTTP uvicorn stops gracefully on SIGINT and SIGTERM, then raises the signal again so that the process
ends as the signal's default action ends it: before its exit handlers, leaving ``pymp-*`` behind too (the offline
journey over HTTP found it). So the handlers uvicorn finds in place and restores are a trap (SignalTrap) that records
the signal; the server's own shutdown goes on, and die_as_signalled ends the process as the signal would, once the exit
handlers have run. SIGHUP is handled as over stdio.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys

import anyio

log = logging.getLogger("ingestion_mcp")
STDIO_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
HTTP_SIGNALS = (signal.SIGHUP,)  # uvicorn handles SIGINT and SIGTERM itself
UVICORN_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def exit_on_signals(*signals: signal.Signals) -> None:
    """Wait for one of ``signals``, then exit as the process's exit would (exit_now)."""
    with anyio.open_signal_receiver(*signals) as received:
        async for signum in received:
            log.info("stopping on %s", signal.Signals(signum).name)
            exit_now(128 + signum)


def exit_now(code: int) -> None:
    atexit._run_exitfuncs()  # what a normal interpreter exit runs: multiprocessing's clean-up, logging's flush
    os._exit(code)


class SignalTrap:
    """Handlers that record a signal, for uvicorn to find in place before it serves and to raise the signal to again
    once it has stopped gracefully (see the module's docstring); ``received`` is the first one, or None."""

    def __init__(self, signals: tuple[signal.Signals, ...] = UVICORN_SIGNALS) -> None:
        self.received: int | None = None
        for signum in signals:
            signal.signal(signum, self._record)

    def _record(self, signum: int, _frame: object) -> None:
        if self.received is None:
            self.received = signum


def die_as_signalled(signum: int) -> None:
    """Run the process's exit handlers, then end it by the signal's default action: the status a service manager or
    a shell expects of a process stopped by that signal (143 for SIGTERM, 130 for SIGINT)."""
    log.info("stopped on %s", signal.Signals(signum).name)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
