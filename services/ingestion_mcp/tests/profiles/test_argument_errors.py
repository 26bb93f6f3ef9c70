"""Arguments the MCP framework refuses before a tool runs (wrong type, out of range, missing) still come
back in the error shape of the tool's profile, through a real client session."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ingestion_mcp.server import build_server
from mcp import Client

from .conftest import profile_state

CASES = [
    ("ingestion", "search", {"query": "x", "top_k": 500}),
    ("mcpvectordb", "search", {"query": "x", "top_k": 0}),
    ("vector_store", "vector_count", {"store_name": 12}),
    ("docs_server", "search_documents", {"query": "x", "options": {"limit": "many"}}),
    ("obsidian", "vector_search", {"query": "x", "n_results": 101}),
]


def shape(profile: str, answer: Any) -> dict[str, Any]:
    if profile == "obsidian":  # the spec's tools answer a JSON string
        return json.loads(answer.content[0].text)
    return answer.structured_content


@pytest.mark.parametrize(("profile", "tool", "arguments"), CASES, ids=[c[0] for c in CASES])
async def test_refused_arguments_use_the_profile_error_shape(app_state, profile: str, tool: str, arguments) -> None:
    async with Client(build_server(profile_state(app_state, profiles=[profile]))) as client:
        answer = await client.call_tool(tool, arguments)
    assert answer.is_error, answer
    body = shape(profile, answer)
    field = next(iter(k for k in arguments if k != "query"))
    if profile == "ingestion":
        assert body["success"] is False and body["error"].startswith(f"Invalid input: {field}") and body["suggestion"]
    elif profile == "mcpvectordb":
        assert set(body) == {"status", "error"} and body["status"] == "error" and field in body["error"]
    elif profile == "vector_store":
        assert set(body) == {"error"} and field in body["error"]
    elif profile == "docs_server":
        assert body["error"]["code"] == "INVALID_INPUT" and "limit" in body["error"]["message"]
    else:
        assert body["error"] is True and body["error_type"] == "ValidationError" and field in body["message"]


@pytest.mark.parametrize(
    ("tool", "arguments", "limit"),
    [("search", {"query": "q" * 4001}, "4000"), ("ingest_document", {"file_path": ""}, "1"),
     ("ingest_text", {"text": "t" * 60, "source": "s" * 2049}, "2048")],
)  # fmt: skip
async def test_limits_left_out_of_the_listing_are_still_enforced_and_named(
    app_state, tool: str, arguments: dict[str, Any], limit: str
) -> None:
    """The ingestion profile lists no minLength 1 and no string ceiling of 256 or more; the tool still refuses."""
    async with Client(build_server(profile_state(app_state, profiles=["ingestion"]))) as client:
        listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        field = next(iter(arguments)) if tool != "ingest_text" else "source"
        assert not {"minLength", "maxLength"} & set(listed[tool]["properties"][field])
        answer = await client.call_tool(tool, arguments)
    assert answer.is_error and answer.structured_content is not None
    error = answer.structured_content["error"]
    assert error.startswith(f"Invalid input: {field}") and limit in error, error


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [("list_documents", {"collection": "bad name!"}, "letters, digits"),
     ("get_document", {"doc_id": "../etc"}, "[A-Za-z0-9_-]{1,64}")],
)  # fmt: skip
async def test_rules_said_once_in_the_instructions_are_still_enforced_and_named(
    app_state, tool: str, arguments: dict[str, Any], named: str
) -> None:
    """A collection name's and a doc_id's rule are said once (the server's instructions), not in every schema;
    the tool still refuses a value that breaks it, and says the rule."""
    async with Client(build_server(profile_state(app_state, profiles=["ingestion"]))) as client:
        listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        field = next(iter(arguments))
        assert "pattern" not in listed[tool]["properties"][field]
        assert "1-255 letters, digits" in (client.instructions or "")
        answer = await client.call_tool(tool, arguments)
    assert answer.is_error and answer.structured_content is not None
    assert named in answer.structured_content["error"], answer.structured_content


async def test_an_argument_our_tools_do_not_take_is_refused_and_named(app_state) -> None:
    """`collections` for `collection` was dropped silently and searched every collection; now the call is refused
    with the argument named, the likely one, and the list. Copied contracts keep their systems' leniency."""
    async with Client(build_server(profile_state(app_state, profiles=["ingestion"]))) as client:
        answer = await client.call_tool("search", {"query": "tides", "collections": ["a"]})
        fine = await client.call_tool("search", {"query": "tides", "collection": "no_such_collection_here"})
    assert answer.is_error and answer.structured_content is not None, answer
    body = answer.structured_content
    assert body["error"] == "search does not take the argument 'collections' (did you mean 'collection'?)."
    assert "query" in body["suggestion"] and "collection" in body["suggestion"]
    assert "does not take" not in str(fine.structured_content)
    async with Client(build_server(profile_state(app_state, profiles=["mcpvectordb"]))) as client:
        lenient = await client.call_tool("search", {"query": "tides", "collections": ["a"]})
    assert "does not take" not in str(lenient.content)
