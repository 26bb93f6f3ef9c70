"""Tool schemas in the JSON Schema subset every MCP client accepts (docs/schemas.md names the clients and rules).

Gemini (API and CLI) refuses `$ref`/`$defs`, `anyOf`/`oneOf`/`allOf`/`not` and `type` lists, and one refused
schema breaks the whole session; OpenAI's strict function calling takes a subset too. pydantic writes all of them
for an `X | None` field or a nested model. `strict` rewrites a generated schema in one place, where the server
lists its tools:

- every `$ref` is replaced by its definition, and `$defs` goes;
- a nullable value (`anyOf: [X, {"type": "null"}]`, `"type": [X, "null"]`, `None` in an enum, `"default": null`)
  is written as X, and a nullable property leaves `required`: null and absent mean the same to every tool, and
  answers leave absent fields out (never null);
- a map whose values may be of several JSON types (`dict[str, str | int | bool]`: filters) is listed as an
  object without a value schema; the tool's own model still checks each value;
- `allOf` with one schema is merged into its holder; a `const` is written as a one-value `enum`; an `enum` gains
  its `type` (lean_schema drops it to save bytes; Gemini and the "type on every property" rule need it); an array
  without `items` gets an item schema of its elements' usual type (string).

The tool's pydantic model still validates the arguments it receives: a client may omit an optional argument or
send null for it. A schema this cannot rewrite (a recursive definition, a union of objects) raises when the tools
are listed, which the profile tests do for every profile.
"""

from __future__ import annotations

from typing import Any

# Keys whose value is a map of names to schemas: the names there are data, never schema keywords.
_SCHEMA_MAPS = ("properties", "patternProperties")
# Keys whose value is one schema.
_SCHEMA_VALUES = ("items", "additionalProperties")
_NULL = {"type": "null"}
_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object", list: "array"}


class UnsupportedSchema(ValueError):
    """A schema construct with no equivalent in the strict subset."""


def strict(schema: Any) -> Any:
    """The schema in the strict subset (see the module's text); None stays None."""
    if not isinstance(schema, dict):
        return schema
    defs = schema.get("$defs") or schema.get("definitions") or {}
    return _rewrite(schema, defs, ())


def _rewrite(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if not isinstance(node, dict):
        return node
    node, _ = _resolved(node, defs, seen)
    out: dict[str, Any] = {}
    nullable_props: set[str] = set()
    for key, value in node.items():
        if key in ("$defs", "definitions"):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            props: dict[str, Any] = {}
            for name, sub in value.items():
                sub_resolved, nullable = _resolved(sub, defs, seen) if isinstance(sub, dict) else (sub, False)
                if nullable:
                    nullable_props.add(name)
                props[name] = _rewrite(sub_resolved, defs, seen)
            out[key] = props
        elif key == "additionalProperties" and isinstance(value, dict) and _several_types(value):
            continue  # any value here; the tool's model checks them (see the module's text)
        elif key in _SCHEMA_VALUES and isinstance(value, dict):
            out[key] = _rewrite(value, defs, seen)
        else:
            out[key] = value
    if nullable_props and isinstance(out.get("required"), list):
        kept = [name for name in out["required"] if name not in nullable_props]
        if kept:
            out["required"] = kept
        else:
            del out["required"]
    return _typed(out)


def _resolved(node: dict[str, Any], defs: dict[str, Any], seen: tuple[str, ...]) -> tuple[dict[str, Any], bool]:
    """The node with its `$ref`, null alternatives, single `allOf` and `anyOf`/`oneOf` folded in; and whether it
    admitted null."""
    nullable = False
    while True:
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name in seen:
                raise UnsupportedSchema(f"recursive schema definition {name!r}")
            if name not in defs:
                raise UnsupportedSchema(f"unresolved $ref {ref!r}")
            rest = {k: v for k, v in node.items() if k != "$ref"}
            inner = _rewrite(defs[name], defs, (*seen, name))
            node = {**inner, **rest}
            continue
        for key in ("anyOf", "oneOf", "allOf"):
            branches = node.get(key)
            if not isinstance(branches, list):
                continue
            others = [b for b in branches if b != _NULL]
            nullable = nullable or len(others) < len(branches)
            rest = {k: v for k, v in node.items() if k != key}
            if len(others) == 1 and isinstance(others[0], dict):
                node = {**others[0], **rest}  # the holder's own keywords (description, default) over the branch's
            else:
                raise UnsupportedSchema(f"{key} of {len(others)} schemas cannot be written without {key}")
            break
        else:
            break
    kinds = node.get("type")
    if isinstance(kinds, list):
        nullable = nullable or "null" in kinds
        kept = [kind for kind in kinds if kind != "null"]
        if len(kept) != 1:
            raise UnsupportedSchema(f"a value of several types {kept} cannot be written without a type list")
        node = {**node, "type": kept[0]}
    if node.get("default", 0) is None:
        nullable = True
        node = {k: v for k, v in node.items() if k != "default"}
    if isinstance(node.get("enum"), list) and None in node["enum"]:
        nullable = True
        node = {**node, "enum": [v for v in node["enum"] if v is not None]}
    return node, nullable


def _several_types(schema: dict[str, Any]) -> bool:
    """`"type": [A, B, ...]` or an anyOf of bare types: a value of more than one JSON type (null aside)."""
    kinds = schema.get("type")
    if isinstance(kinds, list):
        return len([kind for kind in kinds if kind != "null"]) > 1
    branches = [b for b in schema.get("anyOf") or [] if b != _NULL]
    return len(branches) > 1 and all(isinstance(b, dict) and set(b) == {"type"} for b in branches)


def _typed(node: dict[str, Any]) -> dict[str, Any]:
    """A node that says its type: from its enum or const, or `object`/`array` from its keywords."""
    if "type" in node:
        pass
    elif isinstance(node.get("enum"), list) and node["enum"]:
        node = {"type": _json_type(node["enum"][0]), **node}
    elif "const" in node:
        node = {"type": _json_type(node["const"]), **node}
    if "const" in node:  # Gemini's schema has no const: the one-value enum says the same
        node = {**{k: v for k, v in node.items() if k != "const"}, "enum": [node["const"]]}
    elif "properties" in node or "additionalProperties" in node:
        node = {"type": "object", **node}
    elif "items" in node:
        node = {"type": "array", **node}
    if node.get("type") == "array" and "items" not in node:
        node = {**node, "items": {"type": "string"}}
    return node


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), "string")
