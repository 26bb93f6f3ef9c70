"""Copy a Milvus index (Lite file or server) into a Lance folder: `vector-gateway-migrate` (docs/scale.md).

Everything the gateway keeps is copied as it is stored: each document collection's chunks (text, analysed
BM25 text, vectors, fields) with its embedding model and BM25 analysis, the registry (which versions are
committed), open write leases, and the raw vector stores with their metric. Nothing is embedded again.

The copy is written into a temporary folder beside the target and renamed into place once every table's
row count matches its source, so a failed or interrupted migration leaves no half index; a target that
already exists is refused (the source is only read, and stays usable). Stop the server that owns a Lite
file first: one process opens a Lite file at a time.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import names
from .milvus import MilvusStore
from .milvus import vector_stores as milvus_vector_stores
from .records import CHUNK_OUTPUT_FIELDS, LEASES, REGISTRY, REGISTRY_FIELDS
from .where import Eq

if TYPE_CHECKING:
    from .lance import LanceStore

BATCH_ROWS = 5_000
CHUNK_FIELDS = [*CHUNK_OUTPUT_FIELDS, "search_text", "vector"]
LEASE_FIELDS = ["key", "collection", "doc_id", "version", "writer", "expires_ms"]
VECTOR_FIELDS = ["pk", "id", "namespace", "metadata", "vector"]


class MigrationError(Exception):
    """The migration cannot run or did not copy everything; the message says what to do."""


@dataclass
class Report:
    tables: dict[str, int] = field(default_factory=dict)  # Lance table -> rows copied
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return sum(self.tables.values())


def _batches(rows: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    while batch := list(itertools.islice(rows, BATCH_ROWS)):
        yield batch


def _copy(source: MilvusStore, target: LanceStore, name: str, fields: list[str], report: Report) -> None:
    copied = 0
    for batch in _batches(source.scan(name, fields)):
        target.insert(name, batch)
        copied += len(batch)
    report.tables[name] = copied


def _check(source: MilvusStore, target: LanceStore, report: Report, collections: list[str]) -> None:
    for name, copied in report.tables.items():
        stored = target.count(name)
        expected = source.count(name)
        if not stored == copied == expected:
            raise MigrationError(
                f"Table {name}: the source holds {expected} rows, {copied} were read and {stored} stored. "
                "Was the source written meanwhile? Stop every writer and run the migration again."
            )
    for user in collections:  # every committed version whole: a write during the copy shows here
        committed = target.registry_query(
            Eq("collection", names.collection(user)), ["doc_id", "version", "chunk_count"]
        )
        held = Counter((r["doc_id"], r["version"]) for r in target.query(user, None, ["doc_id", "version"]))
        for row in committed:
            if held[(row["doc_id"], row["version"])] != row["chunk_count"]:
                raise MigrationError(
                    f"Collection {user!r}, document {row['doc_id']}: the registry commits version {row['version']} "
                    f"with {row['chunk_count']} chunks, the copy holds {held[(row['doc_id'], row['version'])]}. "
                    "The source was written during the copy: stop every writer and run the migration again."
                )


def migrate(milvus_uri: str, lance_uri: str, *, token: str = "") -> Report:
    """Copy every collection of the Milvus index at ``milvus_uri`` into a new Lance folder ``lance_uri``."""
    target_dir = Path(lance_uri).expanduser()
    if target_dir.exists() and any(target_dir.iterdir()):
        raise MigrationError(
            f"The Lance folder {lance_uri} already holds files: migrate into a new folder (or move that one away)."
        )
    if "://" not in milvus_uri and not Path(milvus_uri).expanduser().exists():
        raise MigrationError(
            f"No Milvus Lite index at {milvus_uri}: give the .db path the server used (VECTOR_GATEWAY_MILVUS_URI)."
        )
    try:
        from .lance import LanceStore
    except ImportError as exc:
        raise MigrationError(
            f"The Lance engine is not installed here ({exc.name} is missing): "
            "pip install 'ingestion-mcp-gateway[lance]'."
        ) from exc
    started = time.monotonic()
    staging = target_dir.with_name(f".{target_dir.name}.migrating")
    shutil.rmtree(staging, ignore_errors=True)
    source = MilvusStore(milvus_uri, token=token)
    target = LanceStore(str(staging), maintain=False)
    report = Report()
    try:
        users = {names.collection(user): user for user in source.list_collections()}
        copied: list[str] = []
        for milvus_name in source.milvus_collections():
            if milvus_name in users:
                user = users[milvus_name]
                dimension, model = source.describe(user)
                target.create_collection(user, dimension, model, analysis=source.analysis_of(user))
                _copy(source, target, user, CHUNK_FIELDS, report)
                copied.append(user)
            elif milvus_name.startswith(names.VECTOR_STORE_PREFIX):
                dimension, metric = milvus_vector_stores.shape(source.client, milvus_name)
                user_name = source._properties(milvus_name).get(names.USER_NAME_PROPERTY, milvus_name)
                target.create_vector_store(milvus_name, user_name, dimension, metric)
                _copy(source, target, milvus_name, VECTOR_FIELDS, report)
        _copy(source, target, REGISTRY, REGISTRY_FIELDS, report)
        _copy(source, target, LEASES, LEASE_FIELDS, report)
        _check(source, target, report, copied)
        for name in report.tables:  # compacted, indexed, nothing old kept: it opens and searches at its best
            target.optimize(name, keep=timedelta(0))
        target.close()
        if target_dir.exists():
            target_dir.rmdir()  # empty (checked above)
        staging.rename(target_dir)
    except BaseException:
        target.close()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        source.close()
    report.seconds = time.monotonic() - started
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="vector-gateway-migrate",
        description="Copy a Milvus index (Lite .db file or server) into a new Lance folder, then start the "
        "gateway (or ingestion-mcp) with VECTOR_GATEWAY_INDEX_ENGINE=lance and VECTOR_GATEWAY_LANCE_URI=<folder>.",
    )
    parser.add_argument("--milvus-uri", required=True, help="the Lite file (data/milvus.db) or http://host:19530")
    parser.add_argument("--lance-uri", required=True, help="a new folder for the Lance tables (data/lance)")
    parser.add_argument("--milvus-token", default="", help="a Milvus server's token, if it needs one")
    args = parser.parse_args(argv)
    try:
        report = migrate(args.milvus_uri, args.lance_uri, token=args.milvus_token)
    except MigrationError as exc:
        print(f"vector-gateway-migrate: {exc}", file=sys.stderr)
        return 2
    for name, rows in sorted(report.tables.items()):
        print(f"{name}: {rows} rows")
    print(f"copied {report.rows} rows in {len(report.tables)} tables in {report.seconds:.1f} s into {args.lance_uri}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
