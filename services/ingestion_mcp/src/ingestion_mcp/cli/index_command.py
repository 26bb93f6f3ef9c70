"""`ingestion-index`: build and maintain the notes index that the obsidian tool profile searches.

  ingestion-index full [--verbose] [--force]   index every note (--force: clear the index first)
  ingestion-index update [--verbose]           only new or changed notes; deleted notes leave the index
  (both: --max-removals N lifts the removal bound: a run that would drop over 25% and over 10 of the indexed
  notes drops none of them and says so, as sync_folder does; docs/sync.md)
  ingestion-index clear --confirm              delete the index
  ingestion-index status [--json]              what is indexed

The vault is any folder of Markdown notes or documents: --vault or INGESTION_MCP_VAULT_PATH. The
collection: --collection or INGESTION_MCP_OBSIDIAN_COLLECTION. Services run in-process on
--data-dir / INGESTION_MCP_DATA_DIR unless DOCLING_SERVICE_URL, CHUNKER_SERVICE_URL and
VECTOR_GATEWAY_URL are set. Exit codes: 0 success, 1 general error, 2 configuration error,
3 API error (a service failed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from servicekit.settings import settings_or_exit

from ..backend import Backend
from ..errors import ToolFailure, UpstreamError
from ..ingest.notes import NoteIndex
from ..settings import McpSettings
from .index import VaultIndexer
from .index_output import Reporter, status_table

EXIT_OK, EXIT_ERROR, EXIT_CONFIG, EXIT_API = 0, 1, 2, 3
READY_TIMEOUT_S = 300.0


class CliError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--vault", default=argparse.SUPPRESS, help="folder of notes (INGESTION_MCP_VAULT_PATH)")
    common.add_argument(
        "--collection", default=argparse.SUPPRESS, help="index collection (INGESTION_MCP_OBSIDIAN_COLLECTION)"
    )
    common.add_argument("--data-dir", default=argparse.SUPPRESS, help="embedded data folder (INGESTION_MCP_DATA_DIR)")
    parser = argparse.ArgumentParser(
        prog="ingestion-index", description=__doc__, parents=[common], formatter_class=argparse.RawTextHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{full,update,clear,status}")
    full = commands.add_parser("full", parents=[common], help="index every note")
    full.add_argument("--verbose", action="store_true", help="print every file")
    full.add_argument("--force", action="store_true", help="clear the index first and rebuild it")
    full.add_argument("--max-removals", type=int, default=None, help="drop up to N notes gone from the vault")
    update = commands.add_parser("update", parents=[common], help="index new and changed notes, drop deleted ones")
    update.add_argument("--verbose", action="store_true", help="print every file")
    update.add_argument("--max-removals", type=int, default=None, help="drop up to N notes gone from the vault")
    clear = commands.add_parser("clear", parents=[common], help="delete the index")
    clear.add_argument("--confirm", action="store_true", help="required: yes, delete it")
    status = commands.add_parser("status", parents=[common], help="show the index status")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    return parser.parse_args(argv)


def load_settings(args: argparse.Namespace) -> McpSettings:
    overrides: dict[str, Any] = {}  # argparse values, validated by McpSettings
    if "vault" in args:
        overrides["vault_path"] = args.vault
    if "collection" in args:
        overrides["obsidian_collection"] = args.collection
    if "data_dir" in args:
        overrides["data_dir"] = args.data_dir
    settings = settings_or_exit(McpSettings, "ingestion-index", **overrides)
    if args.command in ("full", "update"):
        vault = settings.vault_path
        if vault is None:
            raise CliError(EXIT_CONFIG, "no vault: pass --vault PATH or set INGESTION_MCP_VAULT_PATH.")
        vault = vault.expanduser().resolve()
        if not vault.is_dir():
            raise CliError(EXIT_CONFIG, f"the vault {vault} is not a folder.")
        settings = settings.model_copy(update={"vault_path": vault, "allowed_roots": [vault]})
    return settings


def _locked(settings: McpSettings) -> CliError:
    return CliError(
        EXIT_CONFIG,
        f"the data folder {settings.data_dir.expanduser().resolve()} is in use by another process "
        "(Milvus Lite allows one at a time; a running ingestion-mcp server with embedded services?). "
        "Stop it, pass another --data-dir, or point both at shared services with VECTOR_GATEWAY_URL, "
        "DOCLING_SERVICE_URL and CHUNKER_SERVICE_URL.",
    )


def _lite_in_use(settings: McpSettings) -> bool:
    """Whether another process holds the embedded Milvus Lite database (its LOCK file is flock-ed)."""
    if not settings.embedded:
        return False
    uri = os.environ.get("VECTOR_GATEWAY_MILVUS_URI") or str(settings.data_dir.expanduser().resolve() / "milvus.db")
    lock = Path(uri).expanduser() / "LOCK"
    if "://" in uri or not lock.is_file():
        return False
    import fcntl

    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def _is_lock_error(text: str) -> bool:
    lowered = text.lower()
    return "lock" in lowered or "another process may hold" in lowered


def _open_failure(exc: BaseException, settings: McpSettings) -> CliError:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ToolFailure) and exc.suggestion:
        text = f"{text} {exc.suggestion}"
    if _is_lock_error(text):
        return _locked(settings)
    if isinstance(exc, RuntimeError) and "Embedded mode" in str(exc):
        return CliError(EXIT_CONFIG, str(exc))
    return CliError(EXIT_API, f"the services could not start or be reached: {text}")


async def _wait_ready(backend: Backend, *, index_only: bool = False) -> None:
    """The gateway opens Milvus and loads its model in the background: wait, and say why if it fails.

    ``index_only``: the command needs the vector gateway alone (status, clear)."""
    try:
        await backend.list_collections()
    except UpstreamError as exc:
        unreachable = exc.code == "SERVICE_UNAVAILABLE"  # no answer at all, not "starting up"
        if exc.status != 503 or unreachable or _is_lock_error(f"{exc.message} {exc.suggestion}"):
            raise
    checks: dict[str, str] = {}
    with anyio.move_on_after(READY_TIMEOUT_S):
        while True:
            checks = await backend.readiness()
            if index_only:
                checks = {name: value for name, value in checks.items() if name == "vector gateway"}
            if all(value == "ok" for value in checks.values()):
                return
            await anyio.sleep(0.1)
    raise CliError(EXIT_API, f"the services did not become ready in {READY_TIMEOUT_S:.0f} s: {checks}")


@contextlib.asynccontextmanager
async def services(settings: McpSettings, *, index_only: bool = False) -> AsyncIterator[Backend]:
    from ..embedded.services import hosted_elsewhere, open_backend

    # A running ingestion-mcp hosts the folder: attach to it. Only a process that holds Milvus Lite without
    # hosting (an ingestion-mcp before 0.3) makes the folder unusable.
    if not hosted_elsewhere(settings) and _lite_in_use(settings):
        raise _locked(settings)
    async with contextlib.AsyncExitStack() as stack:
        try:
            backend = await stack.enter_async_context(open_backend(settings, index_only=index_only))
            await _wait_ready(backend, index_only=index_only)
        except CliError:
            raise
        except Exception as exc:  # noqa: BLE001 - every start-up failure gets an exit code and a reason
            raise _open_failure(exc, settings) from None
        yield backend


async def run(args: argparse.Namespace, settings: McpSettings) -> int:
    # status and clear only read or drop the index: no model, no converter to start for them.
    async with services(settings, index_only=args.command in ("status", "clear")) as backend:
        if args.command == "status":
            status = await NoteIndex(backend, settings).status()
            if args.json:
                status.pop("embedding_model", None)
                print(json.dumps(status, ensure_ascii=False, indent=2))
            else:
                print(status_table(status))
            return EXIT_OK
        indexer = VaultIndexer(backend, settings)
        if args.command == "clear":
            cleared = await indexer.clear()
            print(f"Cleared {settings.obsidian_collection}: {cleared[0]} notes, {cleared[1]} chunks deleted."
                  if cleared else f"Nothing to clear: {settings.obsidian_collection} does not exist.")  # fmt: skip
            return EXIT_OK
        return await _index(args, settings, indexer)


async def _index(args: argparse.Namespace, settings: McpSettings, indexer: VaultIndexer) -> int:
    assert settings.vault_path is not None  # load_settings checked it
    if args.command == "full" and args.force:
        await indexer.clear()
    with Reporter(total=None, verbose=args.verbose) as reporter:  # files are counted as the walk finds them
        report = await indexer.sync(settings.vault_path, only_changed=args.command == "update",
                                    on_progress=reporter.advance, max_removals=args.max_removals)  # fmt: skip
    print(f"{settings.vault_path} -> {settings.obsidian_collection}: {report.summary()}.")
    if report.held:
        print(f"  kept {report.held} notes whose files are gone: over the removal bound (25% and 10 of the index); "
              f"run again with --max-removals {report.held} to drop them.", file=sys.stderr)  # fmt: skip
    for rel, message in [*report.failed, *report.api_failed]:
        print(f"  failed: {rel}: {message}", file=sys.stderr)
    if report.api_failed:
        return EXIT_API
    return EXIT_ERROR if report.failed else EXIT_OK


def _quiet_libraries() -> None:
    """The services log their own start-up failures with tracebacks; this command reports the cause itself."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("milvus_lite", "vector_gateway", "grpc", "pymilvus", "docling", "chunker_service"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    _quiet_libraries()
    try:
        settings = load_settings(args)
        if args.command == "clear" and not args.confirm:
            raise CliError(EXIT_ERROR, f"refusing to clear {settings.obsidian_collection} without --confirm.")
        code = anyio.run(run, args, settings)
    except CliError as exc:
        print(f"ingestion-index: {exc.message}", file=sys.stderr)
        code = exc.code
    except UpstreamError as exc:
        print(f"ingestion-index: a service failed: {exc.message} {exc.suggestion or ''}".rstrip(), file=sys.stderr)
        code = EXIT_API
    except ToolFailure as exc:
        print(f"ingestion-index: {exc.message} {exc.suggestion or ''}".rstrip(), file=sys.stderr)
        code = EXIT_ERROR
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # noqa: BLE001 - a reason and an exit code, never a traceback
        print(f"ingestion-index: unexpected error: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = EXIT_ERROR
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
