"""Issue 53, point 8: every refused delete and store call is on the record once, and answers the caller alike.

Alice (team-a: scope-a-*) and Bob (team-b: scope-b-*) hold real RS256 tokens (scripts/token_kit.py); the server's
real HTTP app, real MCP clients over streamable HTTP (the conftest's `tenants`). For the deletes that look their
document up first (the ingestion profile's delete_document by key, docs_server's remove_file) and for the vector_store
profile's calls (vector_delete, vector_search, vector_count), Alice aims at something of Bob's that exists and at one
that does not: each call leaves exactly one audit record, which names the rule that refused it, and the two records
and the two answers are the same but for the name. Her own missing document leaves one record too (failed, no rule:
nothing was refused).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.state import AppState

from scripts.service_stack import call, session

BOBS = "scope-b-refuse"  # Bob's collection and his vector store
BOBS_MISSING = "scope-b-refuse-nope"  # a name Bob could have, which does not exist
ALICES = "scope-a-refuse"
LOG = "Bob's workshop log: the lathe bearings were replaced and the bandsaw blade tensioned for resawing."
AuditLog = Callable[[], list[dict[str, Any]]]


@pytest.fixture(autouse=True)
async def leave_no_collections(app_state: AppState) -> AsyncIterator[None]:
    yield
    for collection in (await app_state.backend.list_collections()).collections:
        if collection.name.startswith("scope-"):
            await app_state.backend.delete_collection(collection.name)


async def on_record(audit_log: AuditLog, ask: Callable[[], Awaitable[Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The answer as the caller sees it (its JSON) and every audit record the call left."""
    before = len(audit_log())
    answer = await ask()
    return json.dumps(answer, sort_keys=True), audit_log()[before:]


def same_but_name(seen: dict[str, tuple[str, list[dict[str, Any]]]]) -> None:
    """Each call left exactly one record, by Alice, naming the rule that refused it; answers and records are the same
    once each call's own name is replaced (time and request id aside)."""
    shapes = set()
    for name, (answer, records) in seen.items():
        assert len(records) == 1, (name, records)
        (line,) = records
        assert line["subject"] == "alice" and line["result"] == "forbidden" and line["rule"], line
        record = json.dumps({k: v for k, v in line.items() if k not in ("ts", "request_id")}, sort_keys=True)
        shapes.add((answer.replace(name, "<name>"), record.replace(name, "<name>")))
    assert len(shapes) == 1, shapes


async def test_a_delete_by_key_of_bobs_document_or_none_leaves_one_record_and_answers_alike(
    tenants: Callable[..., Any], audit_log: AuditLog
) -> None:
    async with tenants(["ingestion"]) as (base, tokens):
        async with session(f"{base}/mcp", tokens.token("bob", scope="team-b")) as bob:
            made = await call(bob, "ingest_text", text=LOG, name="lathe", collection=BOBS)
            assert made["status"] == "indexed", made
        async with session(f"{base}/mcp", tokens.token("alice", scope="team-a")) as alice:
            made = await call(alice, "ingest_text", text=LOG.replace("Bob", "Alice"), name="own", collection=ALICES)
            assert made["status"] == "indexed", made

            def delete(collection: str, key: str) -> Callable[[], Awaitable[Any]]:
                return lambda: call(alice, "delete_document", collection=collection, key=key)

            # Bob's document, a key he has not, and a collection of his name that is not there.
            same_but_name({"lathe": await on_record(audit_log, delete(BOBS, "lathe")),
                           "planer": await on_record(audit_log, delete(BOBS, "planer"))})  # fmt: skip
            same_but_name({BOBS: await on_record(audit_log, delete(BOBS, "lathe")),
                           BOBS_MISSING: await on_record(audit_log, delete(BOBS_MISSING, "lathe"))})  # fmt: skip
            # Her own collection, a key not in it: one record of the delete's failure, no rule (nothing refused).
            answer, records = await on_record(audit_log, delete(ALICES, "planer"))
            assert '"success": false' in answer, answer
            ((line),) = records
            assert line["action"] == "delete_document" and line["document"] == "planer", line
            assert line["result"].startswith("failed:") and "rule" not in line, line
        async with session(f"{base}/mcp", tokens.token("bob", scope="team-b")) as bob:
            kept = await call(bob, "get_document", collection=BOBS, key="lathe")
            assert kept.get("success") is not False and "lathe bearings" in json.dumps(kept), kept


async def test_remove_file_in_bobs_index_leaves_one_record_and_answers_alike(
    tenants: Callable[..., Any], audit_log: AuditLog, docs_dir: Path
) -> None:
    notes = docs_dir / "refusal-workshop.md"
    notes.write_text(f"# Workshop\n\n{LOG}\n")
    async with (
        tenants(["ingestion"]) as (base, tokens),
        session(f"{base}/mcp", tokens.token("bob", scope="team-b")) as bob,
    ):
        made = await call(bob, "ingest_document", file_path=str(notes), collection=BOBS)
        assert made["status"] == "indexed", made
    gone = str(docs_dir / "refusal-never-indexed.md")
    seen: dict[str, dict[str, tuple[str, list[dict[str, Any]]]]] = {}
    for index in (BOBS, BOBS_MISSING):  # the docs_server profile serves one collection: Bob's, or one not there
        async with (
            tenants(["docs_server"], docs_collection=index) as (base, tokens),
            session(f"{base}/mcp", tokens.token("alice", scope="team-a")) as alice,
        ):
            seen[index] = {
                path: await on_record(audit_log, partial(call, alice, "remove_file", filePath=path))
                for path in (str(notes), gone)
            }
            same_but_name(seen[index])  # his file and a file never indexed
    same_but_name({index: seen[index][str(notes)] for index in seen})  # his index and one not there
    async with (
        tenants(["docs_server"], docs_collection=BOBS) as (base, tokens),
        session(f"{base}/mcp", tokens.token("bob", scope="team-b")) as bob,
    ):
        found = await call(bob, "get_file_details", filePath=str(notes))
        assert "lathe bearings" in json.dumps(found), found  # still there


async def test_vector_store_calls_on_bobs_store_leave_one_record_and_answer_alike(
    tenants: Callable[..., Any], audit_log: AuditLog
) -> None:
    async with tenants(["vector_store"]) as (base, tokens):
        async with session(f"{base}/mcp", tokens.token("bob", scope="team-b")) as bob:
            added = await call(bob, "vector_add", id="v1", embedding=[0.6, 0.8], store_name=BOBS)
            assert added["status"] == "added", added
        async with session(f"{base}/mcp", tokens.token("alice", scope="team-a")) as alice:
            ways: dict[str, Callable[[str], Awaitable[Any]]] = {
                "vector_delete": lambda n: call(alice, "vector_delete", id="v1", store_name=n),
                "vector_search": lambda n: call(alice, "vector_search", query=[0.6, 0.8], store_name=n),
                "vector_count": lambda n: call(alice, "vector_count", store_name=n),
            }
            for way, ask in ways.items():
                seen = {}
                for name in (BOBS, BOBS_MISSING):
                    seen[name] = await on_record(audit_log, partial(ask, name))
                same_but_name(seen)
                right = "write" if way == "vector_delete" else "read"
                assert seen[BOBS][1][0]["rule"] == f"needs the '{right}' right", (way, seen)
            # A vector id he has not, in his store: the same refusal.
            same_but_name({
                "v1": await on_record(audit_log, lambda: call(alice, "vector_delete", id="v1", store_name=BOBS)),
                "v2": await on_record(audit_log, lambda: call(alice, "vector_delete", id="v2", store_name=BOBS)),
            })  # fmt: skip
        async with session(f"{base}/mcp", tokens.token("bob", scope="team-b")) as bob:
            assert (await call(bob, "vector_count", store_name=BOBS))["count"] == 1  # nothing deleted
