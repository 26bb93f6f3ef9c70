"""Issue 28: one scoping rule for every way a collection is named, and every refusal on the audit record.

Two users with real RS256 tokens (a JWKS file), the server's real HTTP app under uvicorn, real MCP clients over
streamable HTTP and the console over HTTP. Alice may write scope-a-*, Bob scope-b-*. For each way Alice can name a
collection (an argument, search's filters.collection, mcpvectordb's library and filter.library, vector_store's
store, the console's paths and query strings), a collection she may read that does not exist and one of Bob's that
does answer alike, and no answer names one of Bob's. Each of those refused reads leaves one audit record (the
rule that refused it: the 'read' right), the same for Bob's existing and missing names, none for her own missing
one. Her refused writes each leave one audit record with its fields in the JSON log line, and the metric counts
them; mcpvectordb's delete_document of a doc_id she may not see, or of none, leaves one too.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState
from prometheus_client.parser import text_string_to_metric_families

from scripts.service_stack import call, session
from scripts.token_kit import Issuer

MISSING = "scope-a-nope"  # Alice may read it; it does not exist
HIDDEN = "scope-b-docs"  # Bob's, exists; Alice may not read it
HIDDEN_MISSING = "scope-b-nope"  # Alice may not read it; it does not exist
TEXT = {
    "scope-a-docs": "Alice's greenhouse notes: the orchids need misting twice a day and shade from noon sun onwards.",
    HIDDEN: "Bob's workshop log: the lathe bearings were replaced and the orchids on the windowsill watered.",
}


@pytest.fixture(autouse=True)
async def leave_no_collections(app_state: AppState) -> AsyncIterator[None]:
    yield
    for collection in (await app_state.backend.list_collections()).collections:
        if collection.name.startswith("scope-"):
            await app_state.backend.delete_collection(collection.name)


def refused_reads(lines: list[dict[str, Any]], name: str) -> list[str]:
    """The refused-read records about `name`, each without what differs from call to call (time, request id), the
    name replaced."""
    found = [line for line in lines if line.get("result") == "forbidden" and line.get("collection") == name]
    for line in found:
        assert line["subject"] == "alice" and line["rule"] == "needs the 'read' right" and line["request_id"], line
    return [json.dumps({k: v for k, v in line.items() if k not in ("ts", "request_id")}).replace(name, "<name>")
            for line in found]  # fmt: skip


def alike(answers: dict[str, Any]) -> None:
    """Each answer, its own name replaced, is the same; none names one of Bob's collections otherwise."""
    shapes = {name: json.dumps(answer, sort_keys=True).replace(name, "<name>") for name, answer in answers.items()}
    assert len(set(shapes.values())) == 1, shapes
    for shape in shapes.values():
        assert "scope-b-" not in shape, shape


async def seed(base: str, tokens: Issuer) -> str:
    """Alice's and Bob's collections, one document each; Bob's document id."""
    async with session(f"{base}/mcp", tokens.token("alice", scope="team-a")) as client:
        made = await call(client, "ingest_text", text=TEXT["scope-a-docs"], name="orchids", collection="scope-a-docs")
        assert made["status"] == "indexed", made
    async with session(f"{base}/mcp", tokens.token("bob", scope="team-b")) as client:
        made = await call(
            client, "ingest_text", text=TEXT[HIDDEN], name="lathe", collection=HIDDEN, response_format="detailed"
        )
        assert made["status"] == "indexed", made
        return str(made["doc_id"])


async def test_every_way_of_naming_a_collection_answers_an_unreadable_one_as_missing(
    tenants: Callable[..., Any], audit_log: Callable[[], list[dict[str, Any]]]
) -> None:
    async with tenants(["ingestion", "vector_store"]) as (base, tokens):
        bob_doc = await seed(base, tokens)
        alice = tokens.token("alice", scope="team-a")
        async with session(f"{base}/mcp", alice) as client:
            names = (MISSING, HIDDEN, HIDDEN_MISSING)
            ways: dict[str, Callable[[str], Any]] = {
                "search collection": lambda n: call(client, "search", query="orchids", collection=n),
                "search filters.collection": lambda n: call(
                    client, "search", query="orchids", filters={"collection": n}
                ),
                "search both": lambda n: call(
                    client, "search", query="orchids", collection=n, filters={"collection": n}
                ),
                "list_documents": lambda n: call(client, "list_documents", collection=n),
                "get_collections": lambda n: call(client, "get_collections", collection=n),
                "get_document": lambda n: call(client, "get_document", collection=n, doc_id=bob_doc),
                "find_similar": lambda n: call(client, "find_similar", collection=n, doc_id=bob_doc),
                "get_document by key": lambda n: call(client, "get_document", collection=n, key="lathe"),
                "get_document detailed": lambda n: call(
                    client, "get_document", collection=n, doc_id=bob_doc, response_format="detailed"
                ),
                "get_document_outline": lambda n: call(client, "get_document_outline", collection=n, doc_id=bob_doc),
                "get_document_section": lambda n: call(
                    client, "get_document_section", collection=n, doc_id=bob_doc, position=0
                ),
                "get_document_pages": lambda n: call(
                    client, "get_document_pages", collection=n, doc_id=bob_doc, first_page=1
                ),
                "delete_document by key": lambda n: call(client, "delete_document", collection=n, key="lathe"),
                "vector_count": lambda n: call(client, "vector_count", store_name=n),
                "vector_search": lambda n: call(client, "vector_search", store_name=n, query=[0.6, 0.8]),
            }
            for way, ask in ways.items():
                answers, records = {}, {}
                for name in names:
                    before = len(audit_log())
                    answers[name] = await ask(name)
                    records[name] = refused_reads(audit_log()[before:], name)
                assert all(a.get("success") is not True or way.startswith("vector") for a in answers.values()), way
                alike(answers)
                # Bob's collection and a name of his that is not there: one record each, alike; hers: none.
                assert len(records[HIDDEN]) == 1 and records[HIDDEN] == records[HIDDEN_MISSING], (way, records)
                assert records[MISSING] == [], (way, records)

            # A filter value that is no collection name is blamed as the filter's, whatever exists.
            for value in ['scope-a-docs" || collection != "', "scope-b-docs' or '1'='1", 42]:
                bad = await call(client, "search", query="orchids", filters={"collection": value})
                assert bad["success"] is False and "Filter 'collection'" in bad["error"], bad
                assert "not found" not in bad["error"] and "does not exist" not in bad["error"], bad
            contradicts = await call(
                client, "search", query="orchids", collection="scope-a-docs", filters={"collection": HIDDEN}
            )
            assert "Filter 'collection'" in contradicts["error"], contradicts
            # A readable, existing collection through the filter still finds its passages, and only them.
            found = await call(client, "search", query="orchids", filters={"collection": "scope-a-docs"})
            assert found["results"] and {h["collection"] for h in found["results"]} == {"scope-a-docs"}, found

        # The console: its paths and query strings, with the same token.
        async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {alice}"}, timeout=60) as web:
            pages: dict[str, Callable[[str], str]] = {
                "search ?collection=": lambda n: f"/search?q=orchids&collection={n}",
                "search ?filters=collection=": lambda n: f"/search?q=orchids&filters=collection%3D{n}",
                "collection page": lambda n: f"/collections/{n}",
                "documents page": lambda n: f"/collections/{n}/documents",
                "document page": lambda n: f"/collections/{n}/documents/{bob_doc}",
            }
            for way, path in pages.items():
                answers = {}
                for name in names:
                    page = await web.get(path(name))
                    message = re.search(r'data-test="error-message">([^<]*)<', page.text)
                    answers[name] = {"status": page.status_code, "message": message and message.group(1)}
                    assert "scope-b-" not in page.text.replace(name, ""), (way, page.text)
                assert next(iter(answers.values()))["status"] == 404, (way, answers)
                alike(answers)
            listing = await web.get("/search")
            assert "scope-a-docs" in listing.text and "scope-b-" not in listing.text

    # mcpvectordb names a collection "library": as an argument and as filter.library.
    async with (
        tenants(["mcpvectordb"]) as (base, tokens),
        session(f"{base}/mcp", tokens.token("alice", scope="team-a")) as client,
    ):
        ways = {
            "search library": lambda n: call(client, "search", query="orchids", library=n),
            "search filter.library": lambda n: call(client, "search", query="orchids", filter={"library": n}),
            "list_documents library": lambda n: call(client, "list_documents", library=n),
        }
        for way, ask in ways.items():
            answers = {name: await ask(name) for name in names}
            assert all("error" in a and a["error"] for a in answers.values()), (way, answers)
            alike(answers)
        libraries = await call(client, "list_libraries")
        assert "scope-b-" not in json.dumps(libraries), libraries
        # delete_document names no library: a doc_id in Bob's library and one nowhere answer alike, and each
        # attempt is on the audit record (the delete's own line: not found where she may look).
        deletes = {}
        for doc_id in (bob_doc, "0" * len(bob_doc)):
            before = len(audit_log())
            answer = await call(client, "delete_document", doc_id=doc_id)
            (line,) = [r for r in audit_log()[before:] if r.get("action") == "delete_document"]
            assert line["subject"] == "alice" and line["document"] == doc_id, line
            assert line["tool"] == "delete_document" and line["result"].startswith("failed:"), line
            deletes[doc_id] = answer
        alike(deletes)


def refusals(lines: list[dict[str, Any]], tool: str) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("tool") == tool and line.get("result") == "forbidden"]


async def forbidden_count(base: str, token: str) -> float:
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as web:
        text = (await web.get("/metrics")).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "mcp_audit_events_total" and sample.labels.get("result") == "forbidden"
    )


async def test_every_refused_write_leaves_one_structured_audit_record_and_is_counted(
    mcp_settings: McpSettings,
    tenants: Callable[..., Any],
    docs_dir: Path,
    audit_log: Callable[[], list[dict[str, Any]]],
) -> None:
    (docs_dir / "scope-note.md").write_text("# Note\n\n" + TEXT["scope-a-docs"] * 3)
    async with tenants(["ingestion"]) as (base, tokens):
        bob_doc = await seed(base, tokens)
        alice = tokens.token("alice", scope="team-a")
        before = await forbidden_count(base, alice)
        attempts: dict[str, dict[str, Any]] = {
            "ingest_text": {"text": TEXT["scope-a-docs"], "name": "x", "collection": HIDDEN},
            "ingest_document": {"file_path": str(docs_dir / "scope-note.md"), "collection": HIDDEN},
            "ingest_batch": {"items": [{"text": TEXT["scope-a-docs"], "name": "y"}], "collection": HIDDEN},
            "delete_document": {"collection": HIDDEN, "doc_id": bob_doc},
            "sync_folder": {"folder": str(docs_dir), "collection": HIDDEN, "watch": True},
        }
        async with session(f"{base}/mcp", alice) as client:
            for tool, arguments in attempts.items():
                answer = await call(client, tool, **arguments)
                assert answer["success"] is False and "needs the 'write' right" in answer["error"], (tool, answer)
        async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {alice}"}, timeout=60) as web:
            form = await web.get("/ingest")
            csrf = re.search(r'<meta name="csrf-token" content="([^"]*)">', form.text)
            assert csrf, form.text[:300]
            upload = await web.post(
                "/ingest", data={"csrf_token": csrf.group(1), "collection": HIDDEN},
                files={"file": ("note.md", TEXT["scope-a-docs"].encode(), "text/markdown")},
            )  # fmt: skip
            assert upload.status_code == 403, upload.text
            delete = await web.post(
                f"/collections/{HIDDEN}/documents/{bob_doc}/delete", data={"csrf_token": csrf.group(1)}
            )
            assert delete.status_code == 403, delete.text
        after = await forbidden_count(base, alice)

    lines = audit_log()
    for tool in [*attempts, "console.ingest", "console.delete_document"]:
        (line,) = refusals(lines, tool)  # one record per refused call, whichever stage refused it
        assert line["logger"] == "ingestion_mcp.audit" and line["subject"] == "alice", line
        assert line["collection"] == HIDDEN and line["action"] and line["request_id"], line
        assert "document" in line, line
    assert after - before == len(attempts) + 2, (before, after)
    from ingestion_mcp.ingest.folders import folder_store

    assert not [r for r in await folder_store(mcp_settings).all() if r.collection == HIDDEN]  # no watch stored
    assert any(line["subject"] == "bob" and line["result"] == "ok" for line in lines), lines
