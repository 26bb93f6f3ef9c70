"""What `ingestion-index` shows: a progress bar on long runs (rich, when installed) and the status table."""

from __future__ import annotations

import sys
from datetime import datetime
from types import TracebackType
from typing import Any

STATUS_TITLE = "Vector Search Index Status"


class Reporter:
    """Counts files done; a rich progress bar on a terminal, file lines with --verbose."""

    def __init__(self, *, total: int | None, verbose: bool) -> None:
        self.total = total
        self.verbose = verbose
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> Reporter:
        if sys.stderr.isatty() and self.total != 0:  # None: not known ahead (a streamed walk), a running count
            try:
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
            except ImportError:  # rich is optional: plain lines without it
                return self
            self._progress = Progress(
                TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True
            )
            self._progress.start()
            self._task = self._progress.add_task("indexing", total=self.total)
        return self

    def advance(self, done: int, lines: list[str]) -> None:
        if self.verbose:
            for line in lines:
                (self._progress.console.print if self._progress else print)(line)
        if self._progress is not None:
            self._progress.advance(self._task, max(done, 1 if lines else 0))

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()


def _when(value: str | None) -> str:
    if not value:
        return "never"
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return value


def status_table(status: dict[str, Any]) -> str:
    model = status.get("embedding_model")
    provider = f"{status['embedding_provider']} ({model})" if model else status["embedding_provider"]
    rows = [
        ("Collection", status["collection_name"]),
        ("Documents", f"{status['total_documents']:,} chunks"),
        ("Notes", f"{status['total_notes']:,} notes"),
        ("Provider", provider),
        ("Dimension", str(status["embedding_dimension"])),
        ("Updated", _when(status.get("last_updated"))),
        ("Path", status["chroma_path"]),
        ("Status", str(status["status"]).capitalize()),
    ]
    return "\n".join([STATUS_TITLE, "=" * len(STATUS_TITLE), *(f"{name + ':':<12}{value}" for name, value in rows)])
