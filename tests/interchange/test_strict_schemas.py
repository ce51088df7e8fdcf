"""`export --format openai --strict-schemas`: OpenAI's strict subset, checked two ways.

``strict_violations`` is our own reading of the Structured Outputs rules (every property
required, ``additionalProperties: false`` on every object, only supported keywords); the
``openai`` SDK's own types check the shape of each function definition.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Toolctl, write_files
from tests.interchange.test_interchange import SAMPLE, registry_data
from toolctl.interchange import export
from toolctl.interchange.functions import (
    STRICT_FORMATS,
    STRICT_KEYWORDS,
    NotStrict,
    strict_functions,
    strict_schema,
)


def strict_violations(schema: Mapping[str, Any], where: str = "$") -> list[str]:
    """Every way ``schema`` breaks OpenAI's strict-mode rules (empty when it keeps them)."""
    found = [f"{where}: unsupported '{k}'" for k in sorted(set(schema) - STRICT_KEYWORDS)]
    if "format" in schema and schema["format"] not in STRICT_FORMATS:
        found.append(f"{where}: format {schema['format']}")
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "object" in kinds:
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            found.append(f"{where}: object without properties")
            properties = {}
        if schema.get("additionalProperties") is not False:
            found.append(f"{where}: additionalProperties is not false")
        if sorted(schema.get("required") or []) != sorted(properties):
            found.append(f"{where}: not every property is required")
        for name, prop in properties.items():
            found += strict_violations(prop, f"{where}.{name}")
    if "array" in kinds:
        found += strict_violations(schema.get("items") or {"x": 1}, f"{where}[]")
    if "enum" in schema and "null" in kinds and None not in schema["enum"]:
        found.append(f"{where}: nullable enum without null")
    for position, branch in enumerate(schema.get("anyOf") or []):
        found += strict_violations(branch, f"{where}|{position}")
    for name, definition in (schema.get("$defs") or {}).items():
        found += strict_violations(definition, f"$defs.{name}")
    return found


STRICT_SAMPLE = (
    SAMPLE
    + """
[[tool]]
name = "nested"
description = "Nested objects, arrays, an anyOf and a default"
[tool.local]
command = ["true"]
[tool.parameters]
type = "object"
required = ["where"]
[tool.parameters.properties.where]
type = "object"
properties = { city = { type = "string" }, zip = { type = "string", default = "0000" } }
required = ["city"]
[tool.parameters.properties.tags]
type = "array"
items = { type = "object", properties = { label = { type = "string" } } }
[tool.parameters.properties.when]
anyOf = [{ type = "string", format = "date" }, { type = "integer" }]

[[tool]]
name = "too-loose"
description = "minLength has no strict equivalent"
[tool.local]
command = ["true"]
[tool.parameters]
type = "object"
properties = { q = { type = "string", minLength = 2 } }
"""
)


def strict_export() -> tuple[list[dict[str, Any]], list[str]]:
    tools, services, _ = registry_data(STRICT_SAMPLE)
    exported = export("openai", tools, services, strict_schemas=True)
    return exported.data, exported.notes


def test_strict_export_keeps_every_rule_or_says_why_not() -> None:
    functions, notes = strict_export()
    by_name = {f["function"]["name"]: f["function"] for f in functions}
    for name, function in by_name.items():
        if function["strict"]:
            assert strict_violations(function["parameters"]) == [], name
    assert not by_name["too-loose"]["strict"]
    assert by_name["word-count"]["strict"] and by_name["nested"]["strict"]
    assert by_name["free-form"]["strict"]  # it lists its properties: extra keys now refused
    assert [n.split("'")[1] for n in notes if "without strict" in n] == ["too-loose"]
    assert any("minLength" in n for n in notes)
    assert "dotted_name" in by_name  # its name, mapped as names.function_name says


def test_optional_properties_become_nullable_and_defaults_move_to_the_description() -> None:
    functions, _ = strict_export()
    word_count = next(f["function"] for f in functions if f["function"]["name"] == "word-count")
    mode = word_count["parameters"]["properties"]["mode"]
    assert mode == {
        "type": ["string", "null"],
        "enum": ["words", "lines", None],
        "description": 'default: "words"',
    }
    assert word_count["parameters"]["required"] == ["text", "mode"]
    nested = next(f["function"] for f in functions if f["function"]["name"] == "nested")
    where = nested["parameters"]["properties"]["where"]
    assert where["properties"]["zip"]["type"] == ["string", "null"]
    assert where["additionalProperties"] is False
    when = nested["parameters"]["properties"]["when"]
    assert when["anyOf"][-1] == {"type": "null"}


def test_the_openai_sdk_types_accept_every_function() -> None:
    from openai.types.chat import ChatCompletionToolParam
    from openai.types.shared import FunctionDefinition
    from pydantic import TypeAdapter

    functions, _ = strict_export()
    tools = TypeAdapter(list[ChatCompletionToolParam]).validate_python(functions)
    assert len(tools) == len(functions)
    for entry in functions:
        definition = FunctionDefinition.model_validate(entry["function"])
        assert definition.strict is entry["function"]["strict"]
        assert definition.model_dump(exclude_none=True) == entry["function"]


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "array"}, "root is not an object"),
        ({"type": "object"}, "free-form object"),
        ({"type": "object", "additionalProperties": True, "properties": {"a": {}}}, "beyond"),
        ({"type": "object", "properties": {"a": {"type": "array"}}}, "without one 'items'"),
        ({"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}}, "uri"),
        ({"type": "object", "properties": {"a": {"oneOf": []}}}, "oneOf"),
        (  # openai-python unrolls such a $ref before it sends a strict schema
            {
                "type": "object",
                "properties": {"q": {"$ref": "#/$defs/P", "description": "d"}},
                "required": ["q"],
                "$defs": {"P": {"type": "object", "properties": {}}},
            },
            r"keywords beside its \$ref",
        ),
    ],
)
def test_what_cannot_be_made_strict(schema: dict[str, Any], why: str) -> None:
    with pytest.raises(NotStrict, match=why):
        strict_schema(schema)


def test_a_description_over_openais_limit_is_cut_and_said() -> None:
    """OpenAI refuses the whole `tools` list when one description is over 1,024
    characters (`string_above_max_length`): it was exported as it is, without a word."""
    from openai.types.shared import FunctionDefinition

    from toolctl.interchange.functions import openai_functions

    tool = {"name": "long", "description": "x" * 2000, "schema": {"type": "object"}}
    functions, notes = openai_functions([tool])
    description = functions[0]["function"]["description"]
    assert len(description) == 1024 and description.endswith("…")
    assert notes == ["tool 'long': its description (2,000 characters) is cut to OpenAI's 1,024"]
    FunctionDefinition.model_validate(functions[0]["function"])
    short = {**tool, "description": "y" * 1024}
    assert openai_functions([short]) == (
        [{"type": "function", "function": {"name": "long", "description": "y" * 1024,
                                           "parameters": {"type": "object"}}}],
        [],
    )  # fmt: skip


def test_deep_nesting_is_refused_not_crashed() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    node = schema
    for _ in range(12):
        child: dict[str, Any] = {"type": "object", "properties": {}}
        node["properties"]["x"] = child
        node = child
    node["properties"]["leaf"] = {"type": "string"}
    with pytest.raises(NotStrict, match="deeper than 10"):
        strict_schema(schema)


def canonical(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: sorted(v) if k == "required" else canonical(v) for k, v in data.items()}
    return [canonical(v) for v in data] if isinstance(data, list) else data


def test_cli_strict_flag_and_unchanged_default(tmp_path: Path, toolctl: Toolctl) -> None:
    registry = write_files(tmp_path / "reg", {"all.toml": STRICT_SAMPLE})
    plain = toolctl("export", "--format", "openai", "-r", str(registry))
    tools, services, _ = registry_data(STRICT_SAMPLE)
    today = export("openai", tools, services).data
    assert plain.stdout == json.dumps(today, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert '"strict"' not in plain.stdout
    strict = toolctl("export", "--format", "openai", "--strict-schemas", "-r", str(registry))
    assert strict.returncode == 0, strict.stderr
    assert "tool 'too-loose' is exported without strict: parameters.q uses minLength" in (
        strict.stderr
    )
    got, want = json.loads(strict.stdout), strict_export()[0]
    assert [f["function"]["name"] for f in got] == [f["function"]["name"] for f in want]
    for mine, theirs in zip(got, want, strict=True):  # the registry keeps keys sorted
        assert canonical(mine) == canonical(theirs), mine["function"]["name"]
    wrong = toolctl("export", "--format", "mcp", "--strict-schemas", "-r", str(registry))
    assert wrong.returncode == 2
    assert "--strict-schemas is for --format openai only" in wrong.stderr


def test_a_tool_without_arguments_is_strict() -> None:
    """A zero-argument tool (an MCP server's ``"properties": {}``) is a strict empty object;
    ``{"type": "object"}`` alone still says nothing about its keys, so it is not."""
    assert strict_schema({"type": "object", "properties": {}}) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    functions, notes = strict_functions(
        [{"name": "everything.get-tiny-image", "schema": {"type": "object", "properties": {}}}]
    )
    assert functions[0]["function"]["strict"] is True and notes == []
    assert functions[0]["function"]["name"] == "everything_get-tiny-image"
