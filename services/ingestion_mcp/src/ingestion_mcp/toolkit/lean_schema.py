"""Tool schemas without the bytes an agent pays for and learns nothing from.

Applied once, where the server lists its tools: pydantic's generated `title` on every property and
model (the name again, title-cased), an output's `default` (a result has no defaults), `"type": "string"` beside
an enum of strings, `"additionalProperties": true` (what JSON Schema assumes anyway) and
`anyOf: [{"type": X, ...}, {"type": "null"}]` written as `"type": [X, "null"], ...` (an anyOf of bare types
likewise as one list of types). Each of these rewrites
accepts exactly the values the original accepted. `inline_single_use` writes a `$defs` entry used once in place.

One rewrite narrows, where the reader treats absent and null alike (`absent_is_null`): an optional property is
listed without its null alternative. Tool arguments are validated by the server's own model, which still
takes null; results of profiles that leave absent fields out (never null) validate against the narrower form.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

# Keys whose value is a map of names to schemas: the names there are data, never schema keywords.
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
# Keys whose value is one schema or a list of schemas.
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "anyOf", "oneOf", "allOf", "prefixItems")


def lean(schema: Any, *, output: bool = False, absent_is_null: bool = False) -> Any:
    """A copy of a JSON schema with the redundant parts removed (see the module's docstring).

    Defaults go from output schemas only. With absent_is_null (the side that reads the schema treats
    an absent optional property and a null one alike: tool arguments, and results dumped without their None
    fields), an optional property is listed in its non-null form only: `"type": "string"`, not
    `"type": ["string", "null"], "default": null`."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if (key == "default" and output) or (key == "additionalProperties" and value is True):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: lean(sub, output=output, absent_is_null=absent_is_null) for name, sub in value.items()}
        elif key in _SCHEMA_VALUES:
            subs = value if isinstance(value, list) else [value]
            leaned = [lean(sub, output=output, absent_is_null=absent_is_null) for sub in subs]
            out[key] = leaned if isinstance(value, list) else leaned[0]
        else:
            out[key] = value
    if (
        out.get("type") == "string"
        and isinstance(out.get("enum"), list)
        and all(isinstance(v, str) for v in out["enum"])
    ):
        del out["type"]  # the enum's strings say it
    if absent_is_null and isinstance(out.get("properties"), dict):
        required = set(out.get("required", []))
        props = out["properties"]
        out["properties"] = {name: sub if name in required else _not_null(sub) for name, sub in props.items()}
    return _type_union(_nullable_type(out))


def _type_union(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf` of bare types as one list of types (`integer` goes beside `number`, which takes every integer)."""
    branches = schema.get("anyOf")
    if "type" in schema or not isinstance(branches, list):
        return schema
    if not all(isinstance(b, dict) and set(b) == {"type"} and isinstance(b["type"], str) for b in branches):
        return schema
    kinds = [b["type"] for b in branches]
    kinds = [kind for kind in kinds if not (kind == "integer" and "number" in kinds)]
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    return {"type": kinds[0] if len(kinds) == 1 else kinds, **rest}


def _not_null(schema: Any) -> Any:
    """An optional property's schema without its null alternative (and without `"default": null`)."""
    if not isinstance(schema, dict):
        return schema
    schema = {key: value for key, value in schema.items() if not (key == "default" and value is None)}
    kinds = schema.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        kept = [kind for kind in kinds if kind != "null"]
        return {**schema, "type": kept[0] if len(kept) == 1 else kept}
    branches = schema.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches:
        others = [branch for branch in branches if branch != {"type": "null"}]
        rest = {key: value for key, value in schema.items() if key != "anyOf"}
        if len(others) > 1:
            return {**rest, "anyOf": others}
        if isinstance(others[0], dict) and not set(others[0]) & set(rest):
            return {**others[0], **rest}
    return schema


# Keywords that constrain only values of one JSON type: beside `"type": [X, "null"]` they leave null alone,
# so moving them out of an anyOf branch accepts the same values.
_TYPE_ONLY = {
    "type", "maxLength", "minLength", "pattern", "format", "maximum", "minimum", "exclusiveMaximum",
    "exclusiveMinimum", "multipleOf", "items", "maxItems", "minItems", "uniqueItems", "prefixItems",
    "properties", "additionalProperties", "required", "maxProperties", "minProperties", "patternProperties",
}  # fmt: skip


def _nullable_type(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [{"type": X, ...X's own keywords}, {"type": "null"}]` as `"type": [X, "null"], ...`."""
    branches = schema.get("anyOf")
    if "type" in schema or not isinstance(branches, list) or len(branches) != 2 or branches[1] != {"type": "null"}:
        return schema
    first = branches[0]
    if not isinstance(first, dict) or not isinstance(first.get("type"), str) or not set(first) <= _TYPE_ONLY:
        return schema
    if any(key in schema for key in first):  # a keyword on both levels: leave the schema as written
        return schema
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    return {**first, "type": [first["type"], "null"], **rest}


def _each_schema(schema: Any, rewrite: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """The schema with `rewrite` applied to it and to every schema inside it (property names stay data)."""
    if isinstance(schema, list):
        return [_each_schema(item, rewrite) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _each_schema(sub, rewrite) for name, sub in value.items()}
        elif key in _SCHEMA_VALUES:
            out[key] = _each_schema(value, rewrite)
        else:
            out[key] = value
    return rewrite(out)


def without_required(schema: Any) -> Any:
    """A result schema with no `required` lists: the agent reads each answer's text block (the same JSON),
    which shows what the answer carries; the listed schema names and types the fields."""
    return _each_schema(schema, lambda node: {k: v for k, v in node.items() if k != "required"})


# A string length an agent never writes by accident (a path, a URL, a query): refused by the server with the
# limit named in the error, not listed in every conversation.
UNLISTED_MAX_LENGTH = 256


def without_unreached_limits(schema: Any, said_once: Collection[str] = ()) -> Any:
    """Argument schemas without `minLength: 1`, without string ceilings of UNLISTED_MAX_LENGTH or more, and
    without the patterns in `said_once` (a rule the server's instructions state once for every tool).

    The tool's own model still enforces each; the listed schema then accepts a superset of what the tool
    takes, and a value outside it gets the model's error, which names the limit or the rule."""

    def drop(node: dict[str, Any]) -> dict[str, Any]:
        return {
            key: value
            for key, value in node.items()
            if not (key == "minLength" and value == 1)
            and not (key == "maxLength" and isinstance(value, int) and value >= UNLISTED_MAX_LENGTH)
            and not (key == "pattern" and value in said_once)
        }

    return _each_schema(schema, drop)


def inline_single_use(schema: Any) -> Any:
    """A root schema with each `$defs` entry that is referenced once written in place of its `$ref`.

    A definition used once costs its name twice and a `$ref` line for nothing; one used more often (or by
    itself) stays shared."""
    if not isinstance(schema, dict) or not isinstance(schema.get("$defs"), dict):
        return schema
    defs: dict[str, Any] = schema["$defs"]
    text = json.dumps(schema)
    uses = {name: text.count(json.dumps(f"#/$defs/{name}")) for name in defs}
    single = {name for name, count in uses.items() if count == 1 and f"#/$defs/{name}" not in json.dumps(defs[name])}
    if not single:
        return schema

    def substitute(node: Any) -> Any:
        if isinstance(node, list):
            return [substitute(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.removeprefix("#/$defs/") in single:
            rest = {key: value for key, value in node.items() if key != "$ref"}
            return {**substitute(defs[ref.removeprefix("#/$defs/")]), **rest}
        return {key: substitute(value) for key, value in node.items() if key != "$defs"}

    kept = {name: substitute(sub) for name, sub in defs.items() if name not in single}
    body = substitute(schema)
    return {"$defs": kept, **body} if kept else body


# An object shape smaller than this is written out again rather than pointed to (a pointer costs ~40 bytes).
SHARED_SHAPE_MIN_BYTES = 150


def shown_once(schemas: list[tuple[str, Any]]) -> list[Any]:
    """Result schemas of several tools (name, schema) in listing order, each object shape shown in full once:
    where a later tool returns an object of a shape an earlier one already showed (a job, a search hit), its
    schema says so instead ("As in get_job_status: job.") and still accepts any object.

    Only whole objects of SHARED_SHAPE_MIN_BYTES or more are shared; a tool whose whole result has the shape of an
    earlier one's says "As in ingest_document's result."."""
    seen: dict[str, str] = {}  # a shape's JSON -> where it was shown first

    def walk(node: Any, where: str, root: bool) -> Any:
        if isinstance(node, list):
            return [walk(item, where, False) for item in node]
        if not isinstance(node, dict):
            return node
        if node.get("type") == "object" and isinstance(node.get("properties"), dict):
            text = json.dumps(node, sort_keys=True, separators=(",", ":"))
            if len(text) >= SHARED_SHAPE_MIN_BYTES:
                if text in seen:
                    return {"type": "object", "description": f"As in {seen[text]}."}
                seen[text] = f"{where} result" if root else where
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {name: walk(sub, _at(where, name) if key == "properties" else where, False)
                            for name, sub in value.items()}  # fmt: skip
            elif key in _SCHEMA_VALUES:
                out[key] = walk(value, where, False)
            else:
                out[key] = value
        return out

    return [walk(schema, f"{name}'s", True) for name, schema in schemas]


def _at(where: str, name: str) -> str:
    return f"{where} {name}" if where.endswith("'s") else f"{where}.{name}"
