"""Tools as LLM function definitions: OpenAI ``tools`` entries and an MCP ``tools/list``.

OpenAI accepts function names of ``^[a-zA-Z0-9_-]{1,64}$``; a registry name may hold ``.``
(``everything.echo``, the default for tools `import mcp` writes). Such a name is exported
under ``names.function_name``: each ``.`` becomes ``_``. Names in force never fold alike,
so no two tools map to one name (a collision would be refused, both named in a note),
and ``toolctl run`` and ``serve`` take the mapped name back to the tool. A name over 64
characters is left out with a note; a description over 1,024 characters (OpenAI's
limit) is cut to it, with a note.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from toolctl.names import FUNCTION_NAME, function_name

OPENAI_NAME = re.compile(FUNCTION_NAME)
"""What OpenAI accepts as a function name (toolctl names may also hold '.' and be longer)."""


def input_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's argument schema, the single source; an empty ``required`` is left out
    (older JSON Schema drafts forbid it, and it says nothing)."""
    schema = dict(tool["schema"])
    if not schema.get("required"):
        schema.pop("required", None)
    return schema


def openai_functions(tools: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """``[{"type": "function", "function": {name, description, parameters}}]``, by name."""
    notes: list[str] = []
    functions = list(iter_openai(sorted(tools, key=lambda t: str(t["name"])), notes))
    return functions, notes


def iter_openai(tools: Iterable[Mapping[str, Any]], notes: list[str]) -> Iterator[dict[str, Any]]:
    """``openai_functions`` one tool at a time, in the order given; a tool left out adds a
    note to ``notes``."""
    given: dict[str, str] = {}
    for tool in tools:
        name = function_name(tool["name"])
        if name is None:
            notes.append(
                f"left out tool '{tool['name']}': OpenAI function names are at most 64 "
                "letters, digits, '_' and '-'"
            )
            continue
        first = given.setdefault(name, tool["name"])
        if first != tool["name"]:
            notes.append(
                f"left out tool '{tool['name']}': its function name '{name}' is "
                f"already that of tool '{first}'"
            )
            continue
        description = tool.get("description") or ""
        if len(description) > MAX_DESCRIPTION:  # OpenAI refuses the whole list for one
            notes.append(
                f"tool '{tool['name']}': its description ({len(description):,} characters) "
                f"is cut to OpenAI's {MAX_DESCRIPTION:,}"
            )
            description = description[: MAX_DESCRIPTION - 1] + "…"
        function = {"name": name, "description": description, "parameters": input_schema(tool)}
        yield {"type": "function", "function": function}


MAX_DESCRIPTION = 1024
"""The longest function description OpenAI takes: one longer refuses the whole ``tools``
list (``string_above_max_length``), every call that sends it."""


def mcp_tools(tools: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """An MCP ``tools/list`` result: ``{"tools": [{name, description, inputSchema}]}``, with
    ``title`` and ``annotations`` (readOnlyHint etc.) where the descriptor or, for a tool on
    an MCP server, its upstream declares them (the descriptor's own win key by key), and a
    tool on an MCP server's ``outputSchema`` where the server declared one."""
    return {"tools": list(iter_mcp(sorted(tools, key=lambda t: str(t["name"]))))}, []


ANNOTATION_KEYS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
"""The tool annotations MCP defines (2025-06-18), the ones served."""


def served_annotations(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's MCP annotations: those its upstream server declared when it was imported
    (``[tool.mcp.annotations]``, pinned with it), under the descriptor's own
    ``[tool.annotations]``, which win key by key."""
    upstream = (tool.get("mcp") or {}).get("annotations") or {}
    own = tool.get("annotations") or {}
    merged = {**upstream, **own} if isinstance(upstream, Mapping) else dict(own)
    return {k: merged[k] for k in ANNOTATION_KEYS if merged.get(k) is not None}


def iter_mcp(tools: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """The entries of ``mcp_tools``, one tool at a time, in the order given."""
    for tool in tools:
        entry = {
            "name": tool["name"],
            "description": tool.get("description") or "",
            "inputSchema": input_schema(tool),
        }
        if isinstance(tool.get("title"), str) and tool["title"]:
            entry["title"] = tool["title"]
        output = (tool.get("mcp") or {}).get("output_schema")
        if isinstance(output, Mapping):
            entry["outputSchema"] = output  # what the upstream's structuredContent holds
        hints = served_annotations(tool)
        if hints:
            entry["annotations"] = hints
        yield entry


# -- OpenAI strict mode -------------------------------------------------------------------

STRICT_KEYWORDS = frozenset(
    {
        "type", "description", "title", "properties", "required", "additionalProperties",
        "items", "enum", "anyOf", "$defs", "$ref", "pattern", "format", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
    }
)  # fmt: skip
"""What OpenAI's Structured Outputs guide lists as supported under ``strict: true``."""
STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
DROPPED_KEYWORDS = frozenset({"default", "examples", "$schema", "$comment"})
"""Unsupported but harmless to leave out (a default is kept in the description)."""
STRICT_DEPTH = 10


class NotStrict(ValueError):
    """Why a schema cannot be expressed in OpenAI's strict subset without changing it."""


def strict_functions(
    tools: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[str]]:
    """OpenAI function definitions with ``"strict": true`` and schemas its strict mode
    accepts; a tool whose schema cannot be made strict keeps its schema, ``"strict": false``,
    and a note saying why."""
    notes: list[str] = []
    strict_notes: list[str] = []
    ordered = sorted(tools, key=lambda t: str(t["name"]))
    functions = list(iter_strict(ordered, notes, strict_notes))
    return functions, notes + strict_notes


def iter_strict(
    tools: Iterable[Mapping[str, Any]], notes: list[str], strict_notes: list[str]
) -> Iterator[dict[str, Any]]:
    """``strict_functions`` one tool at a time: names left out go to ``notes``, tools kept
    without strict to ``strict_notes`` (printed after them, as ``strict_functions`` orders)."""
    for entry in iter_openai(tools, notes):
        function = entry["function"]
        try:
            function["parameters"] = strict_schema(function["parameters"])
            function["strict"] = True
        except NotStrict as exc:
            function["strict"] = False
            strict_notes.append(f"tool '{function['name']}' is exported without strict: {exc}")
        yield entry


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` in OpenAI's strict subset: every property required (optional ones may be
    null), ``additionalProperties: false`` on every object, no unsupported keyword. A tool
    that takes no arguments (``"properties": {}``) is a strict empty object."""
    if schema.get("type") != "object":
        raise NotStrict("the parameters' root is not an object")
    if schema.get("properties") == {} and schema.get("additionalProperties", False) is False:
        schema = {**schema, "additionalProperties": False}  # no argument: nothing else either
    return _strict(schema, "parameters", 1)


def _strict(node: Any, where: str, depth: int) -> dict[str, Any]:
    if not isinstance(node, Mapping):
        raise NotStrict(f"{where} is not a schema object")
    for key, kind in (("properties", Mapping), ("$defs", Mapping), ("anyOf", list)):
        if key in node and not isinstance(node[key], kind):
            raise NotStrict(f"{where}: '{key}' has the wrong shape")
    if not isinstance(node.get("required", []), list) or not isinstance(node.get("enum", []), list):
        raise NotStrict(f"{where}: 'required' or 'enum' is not a list")
    if depth > STRICT_DEPTH:
        raise NotStrict(f"{where} nests deeper than {STRICT_DEPTH} levels")
    unsupported = sorted(set(node) - STRICT_KEYWORDS - DROPPED_KEYWORDS)
    if unsupported:
        raise NotStrict(
            f"{where} uses {', '.join(unsupported)}, which strict mode does not support"
        )
    if "format" in node and node["format"] not in STRICT_FORMATS:
        raise NotStrict(
            f"{where} has format {node['format']!r}, which strict mode does not support"
        )
    if "$ref" in node and set(node) - DROPPED_KEYWORDS != {"$ref"}:
        raise NotStrict(f"{where} has keywords beside its $ref, which strict mode does not take")
    out = {k: v for k, v in node.items() if k in STRICT_KEYWORDS}
    if "default" in node:
        hint = f"default: {json.dumps(node['default'], ensure_ascii=False)}"
        out["description"] = f"{out['description']} ({hint})" if out.get("description") else hint
    kinds = node.get("type")
    if kinds == "object" or (isinstance(kinds, list) and "object" in kinds):
        out.update(_strict_object(node, where, depth))
    if kinds == "array" or (isinstance(kinds, list) and "array" in kinds):
        if not isinstance(node.get("items"), Mapping):
            raise NotStrict(f"{where} is an array without one 'items' schema")
        out["items"] = _strict(node["items"], f"{where}[]", depth + 1)
    if "anyOf" in node:
        out["anyOf"] = [_strict(s, f"{where}|{i}", depth + 1) for i, s in enumerate(node["anyOf"])]
    if "$defs" in node:
        out["$defs"] = {k: _strict(s, f"$defs.{k}", depth + 1) for k, s in node["$defs"].items()}
    return out


def _strict_object(node: Mapping[str, Any], where: str, depth: int) -> dict[str, Any]:
    properties = node.get("properties")
    extra = node.get("additionalProperties", True)
    if extra is not False and not properties:
        raise NotStrict(f"{where} is a free-form object (no properties, any keys allowed)")
    if extra not in (False, True) or (extra is True and "additionalProperties" in node):
        raise NotStrict(f"{where} allows keys beyond its properties")
    required = set(node.get("required") or [])
    strict_properties = {}
    for name, prop in (properties or {}).items():
        converted = _strict(prop, f"{where}.{name}", depth + 1)
        strict_properties[name] = converted if name in required else _nullable(converted)
    return {
        "properties": strict_properties,
        "required": list(strict_properties),
        "additionalProperties": False,
    }


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    """An optional property as strict mode spells it: required, but it may be null."""
    kinds = prop.get("type")
    if isinstance(kinds, str):
        prop = {**prop, "type": [kinds, "null"]}
    elif isinstance(kinds, list):
        prop = {**prop, "type": kinds if "null" in kinds else [*kinds, "null"]}
    else:
        return {"anyOf": [prop, {"type": "null"}]}
    if "enum" in prop and None not in prop["enum"]:
        prop["enum"] = [*prop["enum"], None]
    return prop
