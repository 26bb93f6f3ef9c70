"""Each profile's tools/list against what each MCP client accepts (docs/clients.md, "What each client accepts").

    .venv/bin/python -m scripts.client_lint [PROFILE ...]     # default: every profile; exit 1 on a broken rule

Listed as a client receives it (an in-process MCP client, no backend). Required rules:
- gemini: input schemas use only the keywords of the Gemini API's Schema object (one unknown keyword fails every
  request of the session); a string `format` only "enum" or "date-time" (the Gemini Developer API).
- claude-code: every tool description and the server instructions at most 2,048 characters (Claude Code cuts
  there); every tool's answer bounded under its 25,000-token cap: paged by the response budget, bounded by
  construction, or declaring a larger cap in `_meta["anthropic/maxResultSizeChars"]`.
Reported, not required:
- openai-strict: whether OpenAI's strict function calling could take the input schema as it is (every object
  closed with additionalProperties false, every property required, only the keywords strict mode supports).
  Clients send MCP tools non-strict; a tool with optional arguments cannot be strict.
The rule that every answer of a tool with an output schema carries structuredContent (Gemini CLI's -32600) is
checked by calling the tools: services/ingestion_mcp/tests/profiles/test_strict_schemas.py and
test_output_schemas.py.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ingestion_mcp.profiles import NAMES
from ingestion_mcp.server import build_server
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.sources import SourcePolicy
from ingestion_mcp.state import AppState
from ingestion_mcp.toolkit.annotations import MAX_RESULT_KEY
from mcp import Client

# The Gemini API's Schema object (ai.google.dev/api/caching#Schema; the same fields in google-genai's types.Schema):
# a subset of OpenAPI 3.0. Anything else in a function declaration's parameters is an error for the whole request.
GEMINI_KEYWORDS = frozenset({
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties", "required",
    "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf", "propertyOrdering",
    "default", "items", "minimum", "maximum",
})  # fmt: skip
GEMINI_STRING_FORMATS = frozenset({"enum", "date-time"})
# OpenAI Structured Outputs, "Supported schemas" (strict mode): the keywords it accepts.
OPENAI_STRICT_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs",
    "description", "title", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "minItems", "maxItems",
})  # fmt: skip
CLAUDE_DESCRIPTION_CHARS = 2048
SUBSCHEMAS = ("items", "additionalProperties", "not")
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")

Bound = Literal["budget", "bounded", "meta"]
# How each tool's answer stays under Claude Code's 25,000-token cap: "budget" pages it by the response budget
# (INGESTION_MCP_RESPONSE_TOKEN_BUDGET, at most 25,000 tokens), "bounded" by construction (ids, counts, a job, lists
# with a small ceiling of short items), "meta" declares its cap in _meta (a whole document, caller-sized data).
# A tool missing here fails the lint: say how its answer is bounded when adding one.
RESULT_BOUNDS: dict[str, dict[str, Bound]] = {
    "ingestion": {
        "search": "budget", "get_document": "budget", "get_document_outline": "budget",
        "get_document_section": "budget", "get_document_pages": "budget", "list_documents": "bounded",
        "get_collections": "bounded", "find_similar": "bounded", "ingest_document": "bounded",
        "ingest_text": "bounded", "ingest_from_url": "bounded", "ingest_batch": "bounded", "sync_folder": "bounded",
        "create_collection": "bounded", "delete_collection": "bounded", "delete_document": "bounded",
        "get_job_status": "bounded", "list_active_jobs": "bounded", "cancel_job": "bounded",
    },
    "mcpvectordb": {
        "search": "bounded", "get_document": "meta", "list_documents": "bounded", "list_libraries": "bounded",
        "ingest_file": "bounded", "ingest_url": "bounded", "delete_document": "bounded",
    },
    "vector_store": {"vector_search": "meta", "vector_add": "bounded", "vector_delete": "bounded",
                     "vector_count": "bounded"},
    "docs_server": {
        "search_documents": "bounded", "get_file_details": "budget", "remove_file": "bounded", "fetch_repo": "bounded",
        "fetch_file": "bounded", "get_job_status": "bounded", "list_active_jobs": "bounded",
    },
    "obsidian": {"vector_search": "bounded", "find_similar_notes": "bounded", "vector_status": "bounded"},
    "chatgpt": {"search": "bounded", "fetch": "bounded"},
}  # fmt: skip


@dataclass
class Report:
    profile: str
    required: dict[str, list[str]] = field(default_factory=dict)  # client -> problems (must be empty)
    strict_ready: list[str] = field(default_factory=list)  # tools OpenAI strict mode takes as they are
    strict_not: dict[str, list[str]] = field(default_factory=dict)  # tool -> why not (reported only)

    @property
    def ok(self) -> bool:
        return not any(self.required.values())


def subschemas(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, schema) of the schemas directly inside one (property names are names, not keywords)."""
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            yield f".{name}", sub
    for key in SUBSCHEMAS:
        if isinstance(schema.get(key), dict):
            yield f"/{key}", schema[key]
    for key in SCHEMA_LISTS:
        for i, sub in enumerate(schema.get(key) or []):
            if isinstance(sub, dict):
                yield f"/{key}[{i}]", sub
    for name, sub in (schema.get("$defs") or {}).items():
        if isinstance(sub, dict):
            yield f"/$defs/{name}", sub


def walk(schema: dict[str, Any], path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for where, sub in subschemas(schema):
        yield from walk(sub, path + where)


def gemini_problems(schema: dict[str, Any]) -> list[str]:
    problems = []
    for path, node in walk(schema):
        problems += [f"{path}: {key}" for key in sorted(set(node) - GEMINI_KEYWORDS)]
        if node.get("type") == "string" and "format" in node and node["format"] not in GEMINI_STRING_FORMATS:
            problems.append(f"{path}: format {node['format']!r}")
    return problems


def openai_strict_problems(schema: dict[str, Any]) -> list[str]:
    problems = []
    for path, node in walk(schema):
        problems += [f"{path}: {key}" for key in sorted(set(node) - OPENAI_STRICT_KEYWORDS)]
        if node.get("type") == "object":
            if node.get("additionalProperties") is not False:
                problems.append(f"{path}: not closed (additionalProperties false)")
            optional = sorted(set(node.get("properties") or {}) - set(node.get("required") or []))
            if optional:
                problems.append(f"{path}: optional {', '.join(optional)}")
    return problems


def lint(profile: str, tools: list[dict[str, Any]], instructions: str | None) -> Report:
    report = Report(profile)
    gemini = report.required.setdefault("gemini", [])
    claude = report.required.setdefault("claude-code", [])
    bounds = RESULT_BOUNDS.get(profile, {})
    if instructions and len(instructions) > CLAUDE_DESCRIPTION_CHARS:
        claude.append(f"instructions: {len(instructions)} characters")
    for tool in tools:
        name = tool["name"]
        gemini += [f"{name} {problem}" for problem in gemini_problems(tool.get("inputSchema") or {})]
        if len(tool.get("description") or "") > CLAUDE_DESCRIPTION_CHARS:
            claude.append(f"{name}: description of {len(tool['description'])} characters")
        bound, declared = bounds.get(name), (tool.get("_meta") or {}).get(MAX_RESULT_KEY)
        if bound is None:
            claude.append(f"{name}: no result bound declared (client_lint.RESULT_BOUNDS)")
        elif bound == "meta" and not isinstance(declared, int):
            claude.append(f"{name}: answers may pass 25,000 tokens but no _meta[{MAX_RESULT_KEY!r}]")
        strict = openai_strict_problems(tool.get("inputSchema") or {})
        if strict:
            report.strict_not[name] = strict
        else:
            report.strict_ready.append(name)
    return report


async def listed(profile: str, folder: Path) -> tuple[list[dict[str, Any]], str | None]:
    settings = McpSettings.model_validate({"profiles": [profile], "allowed_roots": [folder], "data_dir": folder})
    # Listing reads settings only: no backend, ingestor or job store is opened.
    state = AppState(settings=settings, backend=None, ingestor=None, jobs=None,  # type: ignore[arg-type]  # listing never touches the three left out
                     policy=SourcePolicy.from_settings(settings))  # fmt: skip
    async with Client(build_server(state)) as client:
        tools = (await client.list_tools()).tools
        instructions = client.instructions
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools], instructions


async def reports(profiles: list[str]) -> list[Report]:
    with tempfile.TemporaryDirectory() as tmp:
        return [lint(profile, *(await listed(profile, Path(tmp)))) for profile in profiles]


def main(argv: list[str]) -> int:
    results = asyncio.run(reports(argv or list(NAMES)))
    for report in results:
        print(f"{report.profile}:")
        for client, problems in report.required.items():
            print(f"  {client:12} {'ok' if not problems else 'FAILS: ' + '; '.join(problems)}")
        total = len(report.strict_ready) + len(report.strict_not)
        print(f"  {'openai-strict':12} {len(report.strict_ready)}/{total} tools as they are (reported, not required)")
    return 0 if all(report.ok for report in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
