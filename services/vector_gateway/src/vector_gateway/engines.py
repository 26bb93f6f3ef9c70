"""Which index the gateway opens, and an index left by an earlier version (docs/scale.md, "Which engine").

``VECTOR_GATEWAY_INDEX_ENGINE=auto`` (the default) opens Lance tables in a folder, the engine that holds a
million chunks on a laptop, except:

- a Milvus server address in VECTOR_GATEWAY_MILVUS_URI, or a broker for replicas (VECTOR_GATEWAY_BROKER_URL),
  opens Milvus: a deployment that names its server keeps it (compose and OpenShift also say ``milvus`` outright);
- a Milvus Lite index that holds documents, left by a version whose default was Milvus Lite, beside an empty
  Lance folder: it is kept and served as it is, and the gateway says once, with the command, how to move it to
  Lance; with ``VECTOR_GATEWAY_MIGRATE_LITE=true`` it is copied into the Lance folder at start and served from
  there. Nothing is lost either way: the copy leaves the Lite files as they were.

``milvus`` and ``lance`` choose outright. Nothing here opens a store: it looks at the files only.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .records import LEASES, REGISTRY
from .settings import GatewaySettings, is_server_uri

log = logging.getLogger("vector_gateway")

Engine = Literal["lance", "milvus"]
# The gateway's own Milvus collections: a Lite index that holds nothing else holds no one's documents.
OWN_COLLECTIONS = frozenset({REGISTRY, LEASES})


@dataclass(frozen=True)
class EngineChoice:
    engine: Engine
    label: str  # engine_label's: lance, milvus-lite or milvus (a server)
    lite: Path | None = None  # a Milvus Lite index with documents that the Lance folder does not hold yet
    migrate: bool = False  # copy ``lite`` into the Lance folder at start (VECTOR_GATEWAY_MIGRATE_LITE)


def engine_label(engine: str, uri: str) -> str:
    """lance, milvus-lite (a file) or milvus (a server): the index as a user knows it."""
    if engine != "milvus":
        return engine
    return "milvus" if is_server_uri(uri) else "milvus-lite"


def lite_holds_documents(path: Path) -> bool:
    """Whether the Milvus Lite index at ``path`` holds a collection of someone's (documents or a vector store).

    Read from its folder (Milvus Lite 3 keeps one folder per collection under ``collections/``), without
    opening it: a file or layout this does not know counts as holding documents, so nothing is ever passed over.
    """
    if not path.exists():
        return False
    collections = path / "collections"
    if not collections.is_dir():
        return True
    return any(entry.name not in OWN_COLLECTIONS for entry in collections.iterdir())


def _holds_tables(folder: Path) -> bool:
    return folder.is_dir() and any(folder.iterdir())


def choose(settings: GatewaySettings) -> EngineChoice:
    """The engine the settings and the files on disk name (see the module's docstring)."""
    milvus = EngineChoice("milvus", engine_label("milvus", settings.milvus_uri))
    if settings.index_engine == "milvus" or (settings.index_engine == "auto" and settings.deployment):
        return milvus
    lite = None if settings.uses_server else Path(settings.milvus_uri).expanduser()
    if lite is None or not lite_holds_documents(lite) or _holds_tables(settings.lance_folder):
        return EngineChoice("lance", "lance")
    if settings.migrate_lite:
        return EngineChoice("lance", "lance", lite, migrate=True)
    if settings.index_engine == "auto":  # keep serving what the earlier version wrote
        return EngineChoice("milvus", milvus.label, lite)
    return EngineChoice("lance", "lance", lite)  # lance, chosen outright: an empty index, and the way back


def migrate_command(settings: GatewaySettings) -> str:
    return f"vector-gateway-migrate --milvus-uri {settings.milvus_uri} --lance-uri {settings.lance_folder}"


def say_once(choice: EngineChoice, settings: GatewaySettings) -> None:
    """The one start-up line about an earlier version's Lite index: kept, left behind, or being copied."""
    if choice.lite is None:
        return
    command = migrate_command(settings)
    if choice.migrate:
        log.warning("copying the Milvus Lite index at %s into the Lance folder %s (VECTOR_GATEWAY_MIGRATE_LITE); "
                    "searches answer once it is done, and the Lite files are left as they were",
                    choice.lite, settings.lance_folder)  # fmt: skip
    elif choice.engine == "milvus":
        log.warning(
            "serving the Milvus Lite index at %s, written by an earlier version (Lance is the default engine now: "
            "it answers a search at 1M chunks in under 100 ms, where Milvus Lite slows past ~100,000 chunks). "
            "To move it, nothing lost and the Lite files kept: stop this server and run `%s`, or restart with "
            "VECTOR_GATEWAY_MIGRATE_LITE=true; VECTOR_GATEWAY_INDEX_ENGINE=milvus keeps Milvus Lite and silences this",
            choice.lite, command,
        )  # fmt: skip
    else:
        log.warning(
            "VECTOR_GATEWAY_INDEX_ENGINE=lance starts an empty index at %s, while a Milvus Lite index is at %s: "
            "to keep its documents, stop this process and run `%s`, or restart with VECTOR_GATEWAY_MIGRATE_LITE=true",
            settings.lance_folder, choice.lite, command,
        )  # fmt: skip


def migrate_at_start(choice: EngineChoice, settings: GatewaySettings) -> None:
    """Copy the earlier version's Lite index into the (empty) Lance folder: vector-gateway-migrate's copy."""
    from .migrate import migrate

    assert choice.migrate and choice.lite is not None
    started = time.monotonic()
    report = migrate(str(choice.lite), str(settings.lance_folder))
    log.warning("copied %d rows in %d tables from %s into %s in %.1f s; the Lite files are unchanged and may be "
                "removed once the documents are checked", report.rows, len(report.tables), choice.lite,
                settings.lance_folder, time.monotonic() - started)  # fmt: skip
