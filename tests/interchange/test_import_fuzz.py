"""Whatever a file holds, an import ends in a result or a ToolctlError, never a crash."""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from toolctl.errors import ToolctlError
from toolctl.interchange import read_import

KEYS = [
    "key", "value", "type", "name", "id", "tools", "groups", "tool_id", "group_id",
    "tool_ids", "usage_order", "status", "input_schema", "actions", "toolkit", "desc",
    "module_path", "request-queue", "response-queue", "topic", "config-params", "service",
    "arguments", "tool", "tool-service", "mcp", "config", "source_version", "url",
]  # fmt: skip
LEAVES: list[Any] = [None, True, 0, -1, 2.5, "", "x y", "request:tg:a", "tool-service", [], {}]


def junk(chance: random.Random, depth: int = 0) -> Any:
    roll = chance.random()
    if depth > 3 or roll < 0.3:
        return chance.choice(LEAVES)
    if roll < 0.6:
        return [junk(chance, depth + 1) for _ in range(chance.randint(0, 3))]
    return {chance.choice(KEYS): junk(chance, depth + 1) for _ in range(chance.randint(0, 4))}


@pytest.mark.parametrize("format", ["trustgraph", "chat2graph", "tool-agent"])
def test_random_documents_never_crash_an_import(format: str, tmp_path: Path) -> None:
    chance = random.Random(format)
    for attempt in range(300):
        path = tmp_path / f"{attempt}.json"  # JSON is YAML too
        path.write_text(json.dumps(junk(chance)))
        for as_loaded in (False, True) if format == "chat2graph" else (False,):
            with contextlib.suppress(ToolctlError):
                read_import(format, [path], as_loaded=as_loaded)


@pytest.mark.parametrize("schema", [{"$ref": [1]}, {"properties": {"a": {"$ref": []}}}, {"id": []}])
def test_odd_input_schemas_are_refused_not_crashed(schema: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "registry.json"
    path.write_text(json.dumps([{"tool_id": "odd", "input_schema": schema}]))
    with pytest.raises(ToolctlError) as caught:
        read_import("tool-agent", [path])
    assert "tool 'odd': parameters: not a" in caught.value.details[0]


SCHEMA_KEYS = ["type", "properties", "required", "items", "anyOf", "$defs", "enum", "default"]
SCHEMA_LEAVES: list[Any] = ["object", "array", "string", ["string", "null"], None, 1, [], {}]


def schema_junk(chance: random.Random, depth: int = 0) -> Any:
    if depth > 4 or chance.random() < 0.25:
        return chance.choice(SCHEMA_LEAVES)
    return {
        chance.choice(SCHEMA_KEYS): schema_junk(chance, depth + 1)
        if chance.random() < 0.7
        else {"a": schema_junk(chance, depth + 1)}
        for _ in range(chance.randint(1, 4))
    }


def test_strict_schemas_of_any_shape_are_made_or_refused() -> None:
    from toolctl.interchange.functions import NotStrict, strict_schema

    chance = random.Random(6)
    for _ in range(1000):
        schema = {"type": "object", "properties": {"p": schema_junk(chance)}}
        with contextlib.suppress(NotStrict):
            strict_schema(schema)


CONFIG_KEYS = [
    "mcpServers", "servers", "context_servers", "mcp_servers", "inputs", "mcp", "command",
    "args", "env", "url", "httpUrl", "serverUrl", "type", "headers", "disabled", "enabled",
    "disabledTools", "enabled_tools", "includeTools", "timeout", "tool_timeout_sec",
    "startup_timeout_ms", "connectionTimeout", "cwd", "transport", "requestOptions",
    "bearer_token_env_var", "env_vars", "env_http_headers", "name", "source", "path", "id",
]  # fmt: skip
CONFIG_LEAVES: list[Any] = [
    None, True, 0, -1, 1e9, "", "npx", "sse", "http", "http://h/sse?key=abcdefghij0123456789",
    "${input:x}", "${workspaceFolder}", "${A:-b}", "$B", "${{ secrets.C }}", "${file:/x}",
    "Bearer sk-proj-0123456789abcdefghij", "-e", "--token", "K=v", [], {},
]  # fmt: skip


def config_junk(chance: random.Random, depth: int = 0) -> Any:
    roll = chance.random()
    if depth > 4 or roll < 0.25:
        return chance.choice(CONFIG_LEAVES)
    if roll < 0.45:
        return [config_junk(chance, depth + 1) for _ in range(chance.randint(0, 4))]
    keys = CONFIG_KEYS if chance.random() < 0.8 else ["a b", "Sérvér", "x"]
    return {
        chance.choice(keys): config_junk(chance, depth + 1) for _ in range(chance.randint(1, 5))
    }


def test_random_client_configs_never_crash_an_import(tmp_path: Path) -> None:
    from toolctl.interchange.client_configs import read_client_config
    from toolctl.interchange.mcp_config import convert
    from toolctl.interchange.secrets import Vault

    chance = random.Random("mcp-config")
    for attempt in range(500):
        path = tmp_path / f"{attempt}.json"
        path.write_text(json.dumps(config_junk(chance)))
        with contextlib.suppress(ToolctlError):
            convert(read_client_config(path), Vault())
