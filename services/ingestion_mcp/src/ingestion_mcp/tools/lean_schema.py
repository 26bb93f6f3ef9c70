"""Tool schemas without the bytes an agent pays for and learns nothing from.

Applied once, where the server lists its tools: pydantic's generated `title` on every property and
model (the name again, title-cased), an output's `"default": null` (an absent field says the same),
`"additionalProperties": true` (what JSON Schema assumes anyway) and
`anyOf: [{"type": X, ...}, {"type": "null"}]` written as `"type": [X, "null"], ...`. Each rewrite accepts exactly
the values the original accepted, so a client validating structuredContent against outputSchema sees
no difference.
"""

from __future__ import annotations

from typing import Any

# Keys whose value is a map of names to schemas: the names there are data, never schema keywords.
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
# Keys whose value is one schema or a list of schemas.
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "anyOf", "oneOf", "allOf", "prefixItems")


def lean(schema: Any, *, output: bool = False) -> Any:
    """A copy of a JSON schema with the redundant parts removed (see the module's docstring).

    `"default": null` goes from output schemas only: in an input schema it tells the agent "optional, no value"."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if (key == "default" and value is None and output) or (key == "additionalProperties" and value is True):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: lean(sub, output=output) for name, sub in value.items()}
        elif key in _SCHEMA_VALUES:
            subs = value if isinstance(value, list) else [value]
            leaned = [lean(sub, output=output) for sub in subs]
            out[key] = leaned if isinstance(value, list) else leaned[0]
        else:
            out[key] = value
    return _nullable_type(out)


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
