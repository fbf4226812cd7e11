"""``builtin_tool_defs()``: the tool definitions, generated from the registry and ``Limits``.

Descriptions carry the numbers and the scoping parameters verbatim (seed
section 2): a tool that looks incapable of the scoped thing gets routed around
through Bash. Change a limit and the text changes with it.

Both schemas are derived from the pydantic models of the tool's spec
(``toolbound.tools.registry``), never written beside them: the input schema
from the argument model (its types, enums, bounds and field descriptions,
with the limits' ranges and defaults filled in), the output schema from the
result models and the error shape.

Pieces:
    ToolDef            name, description, input and output schemas, read-only flag
    input_schema       a spec's arguments as JSON schema, under the limits in force
    output_schema      a spec's results (success or error) as JSON schema
    tool_defs          limits -> the definitions as values
    builtin_tool_defs  limits + format -> list of rendered definitions
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from toolbound.arguments import Limited
from toolbound.limits import DEFAULT_LIMITS, EXACT, Limits, Profile, ProfileName, profile_named
from toolbound.tools.registry import SPECS, ToolSpec

Format = Literal["anthropic", "openai", "mcp"]

JSON = dict[str, Any]

# What a property of an input schema says, in this order: validation details
# beyond these (a string's minimum length) stay the model's to report.
_PROPERTY_KEYS = (
    "type",
    "enum",
    "minimum",
    "maximum",
    "default",
    "description",
    "properties",
    "required",
    "additionalProperties",
)


@dataclass(frozen=True, slots=True)
class ToolDef:
    name: str
    description: str
    input_schema: JSON
    read_only: bool
    spec: ToolSpec

    @property
    def output_schema(self) -> JSON:
        return output_schema(self.spec)

    def render(self, fmt: Format) -> JSON:
        if fmt == "anthropic":
            return {
                "name": self.name,
                "description": self.description,
                "input_schema": self.input_schema,
            }
        if fmt == "openai":
            return {
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": self.input_schema,
                },
            }
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {
                "readOnlyHint": self.read_only,
                "destructiveHint": not self.read_only,
                "openWorldHint": False,
            },
        }


def _property(derived: JSON, limited: Limited | None, defs: JSON) -> JSON:
    """One argument's schema: the model's, an optional field's non-null branch, the limits'
    default and range, ``{range}`` in the description filled; a nested object's (JobOutput's
    ``since``) inlined from ``defs``, its own properties shaped the same way."""
    branches = [b for b in derived.get("anyOf", [derived]) if b.get("type") != "null"]
    merged = {**derived, **branches[0]} if len(branches) == 1 else dict(derived)
    ref = merged.pop("$ref", None)
    if isinstance(ref, str):
        nested = defs[ref.rsplit("/", 1)[-1]]
        merged = {**merged, "type": "object"}
        merged["properties"] = {
            name: _property(schema, None, defs) for name, schema in nested["properties"].items()
        }
        merged["required"] = list(nested.get("required", []))
        merged["additionalProperties"] = False
    if limited is not None:
        merged["default"] = limited.default
        if limited.span is not None:
            merged["minimum"], merged["maximum"] = limited.lo, limited.hi
            merged["description"] = merged["description"].format(range=limited.span)
    if merged.get("default") is None:
        merged.pop("default", None)
    return {key: merged[key] for key in _PROPERTY_KEYS if key in merged}


def input_schema(spec: ToolSpec, limits: Limits = DEFAULT_LIMITS) -> JSON:
    """The arguments ``spec.parse`` accepts under ``limits``, as JSON schema."""
    derived = _model_schema(spec)
    limited = spec.limited(limits)
    properties = {
        name: _property(schema, limited.get(name), derived.get("$defs", {}))
        for name, schema in derived["properties"].items()
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(derived.get("required", [])),
        "additionalProperties": False,
    }


@cache
def _model_schema(spec: ToolSpec) -> JSON:
    return spec.args.model_json_schema(by_alias=True)


@cache
def output_schema(spec: ToolSpec) -> JSON:
    """The JSON schema of a tool's results, as ``to_wire()`` emits them: its success
    model(s) or the error shape ``{"error": {"code", "message"}}``.

    Errors are covered because clients validate ``structuredContent`` whether or
    not ``isError`` is set (the TypeScript SDK 1.x does, and throws otherwise).
    """
    from pydantic import TypeAdapter

    from toolbound.results import ErrorResult

    union: Any = ErrorResult
    for model in reversed(spec.results):
        union = model | union
    schema = TypeAdapter(union).json_schema(by_alias=True, mode="serialization")
    # MCP before 2026-07-28 wants an object schema at the root, union or not.
    return {"type": "object", **schema}


def tool_defs(
    limits: Limits = DEFAULT_LIMITS, profile: Profile | ProfileName = EXACT
) -> list[ToolDef]:
    """The definitions as values, in the registry's order, described for ``profile``
    (a Profile or its name)."""
    described = profile_named(profile)
    return [
        ToolDef(
            name=spec.name,
            description=spec.description(limits, described),
            input_schema=input_schema(spec, limits),
            read_only=spec.read_only,
            spec=spec,
        )
        for spec in SPECS
    ]


def builtin_tool_defs(
    limits: Limits = DEFAULT_LIMITS,
    fmt: Format = "anthropic",
    *,
    profile: Profile | ProfileName = EXACT,
) -> list[JSON]:
    """The tool definitions rendered for a provider format, described for ``profile``."""
    return [d.render(fmt) for d in tool_defs(limits, profile)]
