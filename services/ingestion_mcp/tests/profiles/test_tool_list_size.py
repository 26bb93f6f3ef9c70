"""What every conversation pays for: each profile's tools/list, compact JSON as the client receives it,
stays under a pinned ceiling (the measured size rounded up a little; README "Tools" prints the sizes).
A ceiling that breaks asks for a review of what grew, not a higher number by reflex.

Measure all profiles: `.venv/bin/pytest -q services/ingestion_mcp/tests/profiles/test_tool_list_size.py -s`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ingestion_mcp.server import ProfileServer, build_server, lean_annotations
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.toolkit.lean_schema import inline_single_use, lean, without_required, without_unreached_limits
from mcp import Client
from mcp.types import ToolAnnotations

from .conftest import profile_state

# Bytes of {"tools": [...]} as compact JSON (per tool and part: scripts/tool_list_sizes.py).
CEILINGS = {
    "ingestion": 16_950, "mcpvectordb": 5_650, "vector_store": 4_200, "docs_server": 11_750, "obsidian": 2_100,
    "chatgpt": 1_200,
}  # fmt: skip
# Issues 13 and 30: what a default install costs every conversation; issues 41 and 53: room for two more tools.
DEFAULT_PROFILE_LIMIT = 18_000
# A lean tool: one read, an argument or two, a small answer (issue 53 measured one added to the default profile:
# 17,470 -> 17,988 bytes). The default profile leaves room for ROOM_FOR of them under DEFAULT_PROFILE_LIMIT.
LEAN_TOOL, ROOM_FOR = 520, 2
PROFILES_DOC = Path(__file__).resolve().parents[4] / "docs" / "profiles.md"
# An argument whose name says all it does (a boolean named for what it switches); every other argument is explained.
SELF_EXPLAINED = {"recursive"}
# The budget that matters is per tool: what its description and schemas cost against what they tell.
TOOL_LIMIT = 2_200


async def listed_size(state: Any) -> int:
    async with Client(build_server(state)) as client:
        tools = (await client.list_tools()).tools
    payload = {"tools": [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]}
    return len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))


@pytest.mark.parametrize("profile", list(CEILINGS))
async def test_tools_list_stays_under_its_ceiling(profile: str, app_state: Any) -> None:
    size = await listed_size(profile_state(app_state, profiles=[profile]))
    print(f"\n{profile}: tools/list {size} bytes compact JSON (ceiling {CEILINGS[profile]})")
    assert size <= CEILINGS[profile], f"{profile}'s tools/list grew to {size} bytes (ceiling {CEILINGS[profile]})"


async def test_the_default_profile_leaves_room_for_two_more_lean_tools(app_state: Any) -> None:
    default = McpSettings.model_fields["profiles"].get_default(call_default_factory=True)
    size = await listed_size(profile_state(app_state, profiles=default))
    assert size + ROOM_FOR * LEAN_TOOL <= DEFAULT_PROFILE_LIMIT, (
        f"the default profiles {default} list {size} bytes of tools: no room for {ROOM_FOR} more tools of "
        f"{LEAN_TOOL} bytes under {DEFAULT_PROFILE_LIMIT:,} (scripts/tool_list_sizes.py shows what grew)"
    )


async def test_the_how_to_states_the_default_profiles_size_as_measured(app_state: Any) -> None:
    """docs/profiles.md's figure is this measure: the tool count exactly, the bytes within 300 (a sentence more in a
    description need not touch the docs; a new tool or a new field does)."""
    async with Client(build_server(profile_state(app_state, profiles=["ingestion"]))) as client:
        count = len((await client.list_tools()).tools)
    size = await listed_size(profile_state(app_state, profiles=["ingestion"]))
    said = re.search(r"lists (\d+) tools in ([\d,]+) bytes", PROFILES_DOC.read_text())
    assert said is not None, "docs/profiles.md: 'the default profile lists N tools in B bytes'"
    assert int(said[1]) == count and abs(int(said[2].replace(",", "")) - size) <= 300, (
        f"docs/profiles.md says {said[0]!r}; measured {count} tools in {size:,} bytes: write that"
    )


async def test_every_argument_is_explained_where_the_agent_reads(app_state: Any) -> None:
    """Fewer bytes, the same meaning: each argument of the default profile's tools is explained by its own
    description, its tool's description, or the server's instructions (where what many tools share is said once:
    the collection, a document's key, the ingest options, response_format, paging)."""
    async with Client(build_server(profile_state(app_state, profiles=["ingestion"]))) as client:
        tools = (await client.list_tools()).tools
        instructions = client.instructions or ""
    unexplained = [
        f"{tool.name}.{name}"
        for tool in tools
        for name, schema in tool.input_schema.get("properties", {}).items()
        if "description" not in schema
        and name not in SELF_EXPLAINED
        and not named(name, tool.description or "")
        and not named(name, instructions)
    ]
    assert unexplained == [], "say what each does: in its description, the tool's, or the instructions"


def named(argument: str, text: str) -> bool:
    """``argument`` named in ``text`` (``prune`` in "gone ones pruned" too)."""
    return re.search(rf"\b{re.escape(argument)}(s|d|ed)?\b", text) is not None


async def test_no_tool_of_our_own_contract_costs_more_than_its_share(app_state: Any) -> None:
    """The compatibility profiles' tools say what their specs say; the primary profile's are ours to keep lean."""
    async with Client(build_server(profile_state(app_state, profiles=["ingestion"]))) as client:
        tools = (await client.list_tools()).tools
    sizes = {
        tool.name: len(
            json.dumps(tool.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
        )
        for tool in tools
    }
    assert {name: size for name, size in sizes.items() if size > TOOL_LIMIT} == {}


def test_lean_drops_titles_and_output_null_defaults_but_keeps_a_property_named_title() -> None:
    schema = {
        "title": "Out",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "page": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None, "title": "Page"},
            "mode": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]},
            "meta": {"anyOf": [{"type": "object", "additionalProperties": True}, {"type": "null"}]},
        },
        "required": ["title"],
    }
    assert lean(schema, output=True) == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "page": {"type": ["integer", "null"], "minimum": 1},
            "mode": {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]},  # one enum would refuse null
            "meta": {"type": ["object", "null"]},
        },
        "required": ["title"],
    }


@pytest.mark.parametrize(
    "value",
    [{"title": "x"}, {"title": "x", "page": None}, {"title": "x", "page": 0}, {"title": "x", "page": "2"},
     {"title": "x", "mode": None}, {"title": "x", "mode": "c"}, {"title": "x", "meta": {"k": 1}}, {"title": 1}, {}],
)  # fmt: skip
def test_lean_accepts_exactly_what_the_original_accepts(value: dict[str, Any]) -> None:
    schema = {
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "page": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None},
            "mode": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]},
            "meta": {"anyOf": [{"type": "object", "additionalProperties": True}, {"type": "null"}]},
        },
        "required": ["title"],
    }
    validator = jsonschema.Draft202012Validator
    for output in (False, True):
        assert validator(schema).is_valid(value) == validator(lean(schema, output=output)).is_valid(value)


OPTIONALS = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "page": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None},
        "mode": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}], "default": None},
        "stage": {"anyOf": [{"$ref": "#/$defs/Stage"}, {"type": "null"}], "default": None},
    },
    "required": ["name"],
    "$defs": {"Stage": {"type": "object", "properties": {"ms": {"type": "number"}}}},
}


def test_absent_is_null_lists_optional_properties_without_their_null_form() -> None:
    assert inline_single_use(lean(OPTIONALS, output=True, absent_is_null=True)) == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "page": {"type": "integer", "minimum": 1},
            "mode": {"enum": ["a", "b"]},
            "stage": {"type": "object", "properties": {"ms": {"type": "number"}}},
        },
        "required": ["name"],
    }


@pytest.mark.parametrize(
    "value",
    [{"name": "x"}, {"name": "x", "page": 2}, {"name": "x", "page": 0}, {"name": "x", "mode": "c"},
     {"name": "x", "mode": "a", "stage": {"ms": 1.5}}, {"name": "x", "stage": {"ms": "slow"}}, {"page": 1},
     {"name": "x", "page": None}, {"name": "x", "mode": None}, {"name": "x", "stage": None}],
)  # fmt: skip
def test_absent_is_null_accepts_what_the_original_accepts_except_null(value: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator
    narrowed = validator(inline_single_use(lean(OPTIONALS, output=True, absent_is_null=True))).is_valid(value)
    expected = validator(OPTIONALS).is_valid(value) and None not in value.values()
    assert narrowed == expected


def test_a_definition_used_twice_stays_shared() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/P"}, "b": {"$ref": "#/$defs/P"}, "c": {"$ref": "#/$defs/Q"}},
        "$defs": {"P": {"type": "integer"}, "Q": {"type": "string"}},
    }
    assert inline_single_use(schema) == {
        "$defs": {"P": {"type": "integer"}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/P"}, "b": {"$ref": "#/$defs/P"}, "c": {"type": "string"}},
    }


@pytest.mark.parametrize("value", ["a", 3, 2.5, True, None, [1], {"k": 1}])
def test_an_anyof_of_bare_types_is_one_list_of_types_accepting_the_same(value: Any) -> None:
    schema = {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}]}
    leaned = lean(schema)
    assert leaned == {"type": ["string", "number", "boolean"]}
    validator = jsonschema.Draft202012Validator
    assert validator(schema).is_valid(value) == validator(leaned).is_valid(value)


def test_without_required_drops_every_required_list_but_keeps_a_property_named_required() -> None:
    schema = {
        "type": "object",
        "properties": {
            "required": {"type": "boolean"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"a": {}}, "required": ["a"]}},
        },
        "required": ["required"],
    }
    items = {"type": "array", "items": {"type": "object", "properties": {"a": {}}}}
    kept = {"required": {"type": "boolean"}, "items": items}
    assert without_required(schema) == {"type": "object", "properties": kept}


def test_without_unreached_limits_keeps_the_limits_an_agent_can_reach() -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "maxLength": 4096},
            "tags": {"type": "array", "maxItems": 32, "items": {"type": "string", "minLength": 1, "maxLength": 64}},
            "url": {"type": "string", "minLength": 8, "maxLength": 2048},
        },
    }
    assert without_unreached_limits(schema)["properties"] == {
        "path": {"type": "string"},
        "tags": {"type": "array", "maxItems": 32, "items": {"type": "string", "maxLength": 64}},
        "url": {"type": "string", "minLength": 8},
    }


def test_hints_that_say_the_spec_default_are_left_out_only_when_asked() -> None:
    write = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True)
    dump = {"by_alias": True, "exclude_none": True}
    assert lean_annotations(write, omit_defaults=True).model_dump(**dump) == {
        "destructiveHint": False, "idempotentHint": True,
    }  # fmt: skip
    assert lean_annotations(write).model_dump(**dump) == write.model_dump(**dump)
    read = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    assert lean_annotations(read, omit_defaults=True).model_dump(**dump) == {
        "readOnlyHint": True, "openWorldHint": False,
    }  # fmt: skip


def test_descriptions_lose_the_source_wrapping_but_keep_paragraphs() -> None:
    server = ProfileServer(name="t")

    @server.tool()
    def probe() -> str:
        """First line wraps
        onto a second.

        A new paragraph."""
        return ""

    assert probe.__doc__ == "First line wraps onto a second.\n\nA new paragraph."
