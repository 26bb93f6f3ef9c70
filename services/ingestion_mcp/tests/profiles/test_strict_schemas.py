"""Every profile's tools in the JSON Schema subset strict clients accept (docs/schemas.md): Gemini refuses a whole
session over one `$ref`, `anyOf` or type list, OpenAI's strict mode forbids them. Each tools/list is linted as a
client receives it; each tool that declares an outputSchema answers its failures (refused arguments and the
tool's own errors) with structuredContent valid against it; an optional argument may be left out or sent as null."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from ingestion_mcp.profiles import NAMES
from ingestion_mcp.server import build_server
from ingestion_mcp.state import AppState
from mcp import Client
from mcp.types import Tool

from .conftest import profile_state

MISSING = "no_such_coll_4f2"
# A call of each tool that fails inside the tool (nothing is written): an unknown id, path or collection, a
# private address, text too short. Tools without arguments (list_active_jobs, list_libraries, vector_status)
# cannot be called wrongly and are checked by the other tests.
FAILING_CALLS: dict[str, dict[str, dict[str, Any]]] = {
    "ingestion": {
        "cancel_job": {"job_id": "job_none"},
        "create_collection": {"name": "bad name!"},
        "delete_collection": {"name": MISSING, "confirm": False},
        "delete_document": {"doc_id": "nope", "collection": MISSING},
        "find_similar": {"doc_id": "nope", "collection": MISSING},
        "get_collections": {"collection": MISSING},
        "get_document": {"doc_id": "nope", "collection": MISSING},
        "get_document_outline": {"key": "/nope.md", "collection": MISSING},
        "get_document_pages": {"doc_id": "nope", "first_page": 2, "collection": MISSING},
        "get_document_section": {"doc_id": "nope", "position": 0, "collection": MISSING},
        "get_job_status": {"job_id": "job_none"},
        "ingest_batch": {"items": [{"file_path": "/nonexistent/a.md"}], "collection": "bad name!"},
        "ingest_document": {"file_path": "/nonexistent/a.md"},
        "ingest_from_url": {"url": "http://10.0.0.1/a.md"},
        "ingest_text": {"text": "too short"},
        "list_documents": {"collection": MISSING},
        "search": {"query": "tides", "collection": MISSING},
        "sync_folder": {"folder": "/etc"},
    },
    "mcpvectordb": {
        "delete_document": {"doc_id": "nope"},
        "get_document": {"doc_id": "nope"},
        "ingest_file": {"path": "/nonexistent/a.md"},
        "ingest_url": {"url": "http://10.0.0.1/a.md"},
        "list_documents": {"library": MISSING},
        "search": {"query": "tides", "library": MISSING},
    },
    "vector_store": {
        "vector_add": {"id": "a", "embedding": [0.5, 0.5], "store_name": "bad name!"},
        "vector_count": {"store_name": "bad name!"},
        "vector_delete": {"id": "nope", "store_name": "bad name!"},
        "vector_search": {"query": "tides", "store_name": "bad name!"},
    },
    "docs_server": {
        "fetch_file": {"url": "not a url", "filename": "a.md"},
        "fetch_repo": {"repoUrl": "not a url"},
        "get_file_details": {"filePath": "/nonexistent/a.md"},
        "get_job_status": {"jobId": "job_none"},
        "remove_file": {"filePath": "/nonexistent/a.md"},
        "search_documents": {"query": " "},
    },
    "obsidian": {
        "find_similar_notes": {"path": "no/such/note.md"},
        "vector_search": {"query": " "},
    },
    "chatgpt": {"fetch": {"id": "no-such-coll:abcdef"}, "search": {"query": "x" * 5000}},
}
# Optional arguments a client may leave out or send as null: the answers must be the same.
NULLABLE_CALLS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "ingestion": ("search", {"query": "tides"}, ["collection", "filters", "tags", "min_score"]),
    "mcpvectordb": ("search", {"query": "tides"}, ["library", "filter"]),
    "vector_store": ("vector_search", {"query": "tides"}, ["namespace", "metadata_filter"]),
    "docs_server": ("get_file_details", {"filePath": "/nonexistent/a.md"}, ["chunkIndex"]),
    "obsidian": ("vector_search", {"query": "tides"}, ["folder"]),
}


SCHEMA_MAPS = ("properties", "patternProperties")
FORBIDDEN = ("$ref", "$defs", "definitions", "anyOf", "oneOf", "allOf", "not")


def violations(schema: Any, path: str = "$") -> list[str]:
    """Where a schema breaks the rules of docs/schemas.md (empty when it keeps them all)."""
    if isinstance(schema, list):
        return [found for i, item in enumerate(schema) for found in violations(item, f"{path}[{i}]")]
    if not isinstance(schema, dict):
        return []
    found = [f"{path}: {key}" for key in FORBIDDEN if key in schema]
    if isinstance(schema.get("type"), list):
        found.append(f"{path}: type list {schema['type']}")
    if schema.get("type") == "array" and "items" not in schema:
        found.append(f"{path}: array without items")
    for key, value in schema.items():
        if key in SCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                if not (isinstance(sub, dict) and isinstance(sub.get("type"), str)):
                    found.append(f"{path}.{name}: property without a type")
                found += violations(sub, f"{path}.{name}")
        elif key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "not", "prefixItems"):
            found += violations(value, f"{path}/{key}")
        elif key in ("$defs", "definitions") and isinstance(value, dict):
            found += violations(list(value.values()), f"{path}/{key}")
    return found


async def listed(state: AppState) -> list[Tool]:
    async with Client(build_server(state)) as client:
        return (await client.list_tools()).tools


def wrong_arguments(tool: Tool) -> dict[str, Any] | None:
    """Arguments the framework refuses before the tool runs: a required one left out, else one of the wrong type."""
    schema = tool.input_schema
    if schema.get("required"):
        return {}
    for name, prop in (schema.get("properties") or {}).items():
        return {name: 12345 if prop.get("type") in ("string", "array", "object", "boolean") else "not a number"}
    return None


@pytest.mark.parametrize("profile", NAMES)
async def test_every_schema_is_in_the_subset_strict_clients_accept(profile: str, app_state: AppState) -> None:
    tools = await listed(profile_state(app_state, profiles=[profile]))
    problems = {
        f"{tool.name} {part}": found
        for tool in tools
        for part, schema in (("inputSchema", tool.input_schema), ("outputSchema", tool.output_schema))
        if (found := violations(schema))
    }
    assert not problems, problems
    for tool in tools:
        for schema in (tool.input_schema, tool.output_schema):
            if schema is not None:
                jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("profile", NAMES)
async def test_every_failure_answers_with_structured_content_valid_against_the_output_schema(
    profile: str, app_state: AppState
) -> None:
    state = profile_state(app_state, profiles=[profile], sync_wait_s=5)
    async with Client(build_server(state)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        calls = [(name, args) for name, args in FAILING_CALLS[profile].items()]
        calls += [(tool.name, args) for tool in tools.values() if (args := wrong_arguments(tool)) is not None]
        for name, arguments in calls:
            answer = await client.call_tool(name, arguments)
            assert answer.is_error, (name, arguments, answer.structured_content)
            schema = tools[name].output_schema
            if schema is None:  # chatgpt's tools answer one text item, as ChatGPT's contract says, and nothing else
                assert profile == "chatgpt" and answer.structured_content is None, (name, answer.structured_content)
                continue
            assert answer.structured_content is not None, (name, answer.content)
            jsonschema.Draft202012Validator(schema).validate(answer.structured_content)
    without_arguments = {name for name, tool in tools.items() if not tool.input_schema.get("properties")}
    assert set(tools) - without_arguments <= set(FAILING_CALLS[profile]), "a tool has no failing call here"


@pytest.mark.parametrize("profile", list(NULLABLE_CALLS))  # chatgpt's two tools take one required argument each
async def test_an_optional_argument_may_be_left_out_or_sent_as_null(profile: str, app_state: AppState) -> None:
    name, base, optional = NULLABLE_CALLS[profile]
    async with Client(build_server(profile_state(app_state, profiles=[profile]))) as client:
        absent = await client.call_tool(name, base)
        null = await client.call_tool(name, {**base, **dict.fromkeys(optional)})
    assert null.is_error == absent.is_error, (null.structured_content, absent.structured_content)
    assert null.structured_content == absent.structured_content
