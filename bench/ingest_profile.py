"""Where the time of a folder of small files goes: a per-stage profile of one ``sync_folder`` through MCP.

``--docs`` SciFact documents are written as one text file each (title line, blank line, abstract), and synced into
a fresh collection by a real MCP client in this process, on the embedded default (the three services in process,
the Lance index in a fresh data folder). Timers wrapped around the functions that do each stage record where the
wall time went, each stage's own time (the time of the stages it calls is theirs):

walk (listing the folder), compare (size/mtime against the registry), read (the file and its hash), dedup (the
registry look-up of the batch's keys), convert (docling; text files skip it), chunk (the chunker and its HTTP
hop), embed: tokenize / model / HTTP (the tokenizer, ONNX Runtime, and the in-process HTTP hop with its JSON), BM25
analysis (the search text of each chunk), rows (building the chunk rows), write chunks (the Lance insert), commit
(the registry row), versions (leases, registry reads, retiring old versions, flushes), store: HTTP (the upsert's
in-process HTTP hop), job and MCP (everything else between the call and its answer: the job, its polls, the
pipeline's own bookkeeping).

    python -m bench.ingest_profile [--docs 1000] [--batch N] [--out bench/results/ingest_profile.json]

docs/startup.md ("Where a folder of small files' ingest time goes") gives the figures and what they say.
"""

from __future__ import annotations

import argparse
import contextvars
import functools
import inspect
import json
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from .data import Doc, load

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "ingest_profile.json"
POLL_S = 0.2


@dataclass
class Frame:
    name: str
    children_s: float = 0.0


@dataclass
class Clock:
    """Wall time per stage, each stage's own: a timed call inside another is subtracted from the outer one."""

    own: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    current: contextvars.ContextVar[Frame | None] = field(
        default_factory=lambda: contextvars.ContextVar("stage", default=None)
    )

    def _enter(self, name: str) -> tuple[Frame, Frame | None, contextvars.Token[Frame | None], float]:
        frame, parent = Frame(name), self.current.get()
        return frame, parent, self.current.set(frame), time.perf_counter()

    def _leave(self, entered: tuple[Frame, Frame | None, contextvars.Token[Frame | None], float]) -> None:
        frame, parent, token, started = entered
        elapsed = time.perf_counter() - started
        self.current.reset(token)
        self.own[frame.name] += elapsed - frame.children_s
        self.calls[frame.name] += 1
        if parent is not None:
            parent.children_s += elapsed

    def wrap(self, owner: Any, attribute: str, name: str, stack: ExitStack) -> None:
        """Time ``owner.attribute`` (a function, coroutine function or generator function) as ``name``."""
        original = inspect.getattr_static(owner, attribute)
        target = original.__func__ if isinstance(original, staticmethod | classmethod) else original
        if inspect.iscoroutinefunction(target):

            @functools.wraps(target)
            async def timed(*args: Any, **kwargs: Any) -> Any:
                entered = self._enter(name)
                try:
                    return await target(*args, **kwargs)
                finally:
                    self._leave(entered)
        elif inspect.isgeneratorfunction(target):

            @functools.wraps(target)
            def timed(*args: Any, **kwargs: Any) -> Any:
                items = target(*args, **kwargs)
                while True:
                    entered = self._enter(name)
                    try:
                        item = next(items)
                    except StopIteration:
                        return
                    finally:
                        self._leave(entered)
                    yield item
        else:

            @functools.wraps(target)
            def timed(*args: Any, **kwargs: Any) -> Any:
                entered = self._enter(name)
                try:
                    return target(*args, **kwargs)
                finally:
                    self._leave(entered)

        wrapped: Any = staticmethod(timed) if isinstance(original, staticmethod) else timed
        setattr(owner, attribute, wrapped)
        stack.callback(setattr, owner, attribute, original)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        entered = self._enter(name)
        try:
            yield
        finally:
            self._leave(entered)


def instrument(clock: Clock, stack: ExitStack) -> None:
    """The timers, on the functions each stage runs (the embedded default; the Lance index)."""
    from chunker_service.service import ChunkingService
    from ingestion_mcp.backend.backend import Backend
    from ingestion_mcp.ingest import acquire, folder_sync, pipeline, walk
    from vector_gateway import upsert, versions
    from vector_gateway.lance.store import LanceStore
    from vector_gateway.light_embedder import LightEmbedder
    from vector_gateway.onnx_runtime import OnnxEncoder

    for owner, attribute, name in (
        (folder_sync.FolderSync, "run", "job and MCP"),  # its own time: the sync engine's bookkeeping, its lock
        (walk.Walk, "in_scope", "walk"),
        (folder_sync.FolderSync, "_look", "compare"),
        (acquire, "from_file", "read"),
        (pipeline.Ingestor, "find_many", "dedup"),
        (Backend, "convert", "convert"),
        (Backend, "chunk_batch", "chunk: HTTP"),
        (ChunkingService, "_chunk_all", "chunk"),
        (Backend, "embed_passages", "embed: HTTP"),
        (OnnxEncoder, "embed_documents", "embed: model"),
        (LightEmbedder, "_features", "embed: tokenize"),
        (LightEmbedder, "_token_lengths", "embed: tokenize"),
        (Backend, "upsert_batch", "store: HTTP"),
        (upsert.DocumentWriter, "write", "versions"),
        (upsert, "search_text", "BM25 analysis"),
        (upsert, "_chunk_rows", "rows"),
        (LanceStore, "insert", "write chunks"),
        (LanceStore, "registry_upsert", "commit"),
        (versions.VersionWriter, "write", "versions"),
    ):
        clock.wrap(owner, attribute, name, stack)


def write_folder(docs: list[Doc], folder: Path) -> int:
    """One text file per document; the bytes written."""
    size = 0
    for doc in docs:
        body = f"{doc.title}\n\n{doc.text}\n"
        (folder / f"{doc.doc_id}.txt").write_text(body, encoding="utf-8")
        size += len(body.encode())
    return size


async def sync_through_mcp(client: Any, folder: Path, clock: Clock) -> dict[str, Any]:
    with clock.stage("job and MCP"):
        answer = await client.call_tool("sync_folder", {"folder": str(folder), "collection": "profile"})
        result = answer.structured_content or {}
        while job_id := result.get("job_id"):
            await anyio.sleep(POLL_S)
            job = ((await client.call_tool("get_job_status", {"job_id": job_id})).structured_content or {}).get("job")
            if (job or {}).get("status") != "running":
                result = dict((job or {}).get("result") or {"error": (job or {}).get("error")})
    return result


async def profile(docs: list[Doc], batch: int | None) -> dict[str, Any]:
    from ingestion_mcp.embedded.services import open_backend
    from ingestion_mcp.server import build_server
    from ingestion_mcp.settings import McpSettings
    from ingestion_mcp.state import AppState
    from mcp import Client

    with tempfile.TemporaryDirectory(prefix="ingest-profile-", ignore_cleanup_errors=True) as scratch:
        folder, data = Path(scratch) / "docs", Path(scratch) / "data"
        folder.mkdir()
        size = write_folder(docs, folder)
        overrides: dict[str, Any] = {"index_batch_size": batch} if batch else {}
        settings = McpSettings(data_dir=data, allowed_roots=[folder], **overrides)
        clock = Clock()
        async with open_backend(settings) as backend:
            await backend.embed(["warm-up"])  # the model loaded: its start is not the ingest's
            state = AppState.create(settings, backend)
            async with Client(build_server(state)) as client:
                with ExitStack() as stack:
                    instrument(clock, stack)
                    load_before, started = os.getloadavg()[0], time.perf_counter()
                    result = await sync_through_mcp(client, folder, clock)
                    wall = time.perf_counter() - started
            await state.jobs.aclose()
    stages = {name: round(seconds, 2) for name, seconds in sorted(clock.own.items(), key=lambda kv: -kv[1])}
    return {
        "docs": len(docs), "bytes": size, "index_batch_size": settings.index_batch_size, "wall_s": round(wall, 2),
        "docs_per_s": round(len(docs) / wall, 2), "counts": result.get("counts"), "stages_s": stages,
        "stages_share": {name: round(s / wall, 3) for name, s in stages.items()}, "calls": dict(clock.calls),
        "load_average": [load_before, os.getloadavg()[0]],
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.ingest_profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--docs", type=int, default=1000, help="SciFact documents, one file each")
    parser.add_argument("--batch", type=int, help="INGESTION_MCP_INDEX_BATCH_SIZE for the run (default: the setting)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = anyio.run(profile, load().docs[: args.docs], args.batch)
    report["cpus"] = os.cpu_count()
    print(json.dumps(report, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
