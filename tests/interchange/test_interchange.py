"""Export to OpenAI, MCP and TrustGraph; import from TrustGraph, Chat2Graph and tool_agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from toolctl.errors import RegistryError, UsageError
from toolctl.interchange import export, read_import
from toolctl.registry.loader import parse_document

# The seed's joke service and tool (TrustGraph tool-services spec), verbatim.
JOKE_SERVICE = {
    "id": "joke-service",
    "request-queue": "non-persistent://tg/request/joke",
    "response-queue": "non-persistent://tg/response/joke",
    "config-params": [{"name": "style", "required": False}],
}
TELL_JOKE = {
    "type": "tool-service",
    "name": "tell-joke",
    "description": "Tell a joke on a given topic",
    "service": "joke-service",
    "style": "pun",
    "arguments": [{"name": "topic", "type": "string", "description": "The topic for the joke"}],
}


def registry_data(toml: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(tools, services, groups) by name, as the registry keeps them, from a TOML string."""
    import tomllib

    parsed = parse_document(tomllib.loads(toml), toml, "test.toml")
    assert not parsed.problems, parsed.problems
    by_kind: dict[str, dict[str, Any]] = {"tool": {}, "service": {}, "group": {}, "action": {}}
    for d in parsed.definitions:
        by_kind[d.kind][d.name] = d.data
    services = by_kind["service"]
    for tool in by_kind["tool"].values():  # what the index does: a service tool runs on it
        if tool["runtime"] is None and tool.get("service") in services:
            tool["runtime"] = services[tool["service"]]["transport"]
    return by_kind["tool"], services, by_kind["group"]


SAMPLE = """
[[tool]]
name = "word-count"
description = "Count words"
[tool.local]
command = ["wc", "-w"]
[[tool.arguments]]
name = "text"
description = "The text"
[[tool.arguments]]
name = "mode"
enum = ["words", "lines"]
default = "words"

[[tool]]
name = "free-form"
parameters = { type = "object", properties = { q = { type = "string", description = "Q" } } }
[tool.local]
command = ["true"]

[[tool]]
name = "dotted.name"
[tool.local]
command = ["true"]

[[service]]
id = "joke-service"
[service.pulsar]
request-queue = "non-persistent://tg/request/joke"
response-queue = "non-persistent://tg/response/joke"
config-params = [{ name = "style", required = false }]

[[service]]
name = "unused-service"
[service.pulsar]
request_queue = "persistent://tg/request/unused"
response_queue = "persistent://tg/response/unused"

[[tool]]
name = "tell-joke"
description = "Tell a joke on a given topic"
service = "joke-service"
config = { style = "pun" }
[[tool.arguments]]
name = "topic"
description = "The topic for the joke"

[[group]]
name = "text"
tools = ["word-count", "free-form", "ghost"]
[[group]]
name = "jokes"
tools = ["tell-joke"]
"""


def test_openai_functions_are_sorted_valid_json_schema_and_map_dotted_names() -> None:
    tools, services, _ = registry_data(SAMPLE)
    exported = export("openai", tools, services)
    names = [f["function"]["name"] for f in exported.data]
    assert names == ["dotted_name", "free-form", "tell-joke", "word-count"]
    assert exported.notes == []
    for function in exported.data:
        assert function["type"] == "function"
        assert set(function["function"]) == {"name", "description", "parameters"}
        jsonschema.Draft202012Validator.check_schema(function["function"]["parameters"])
        jsonschema.Draft7Validator.check_schema(function["function"]["parameters"])
    word_count = exported.data[3]["function"]["parameters"]
    assert word_count["required"] == ["text"]
    assert word_count["properties"]["mode"] == {
        "type": "string",
        "enum": ["words", "lines"],
        "default": "words",
    }
    jsonschema.validate({"text": "a b"}, word_count)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"txt": "a b"}, word_count)


def test_mcp_tools_list_has_every_tool_with_its_input_schema() -> None:
    tools, services, _ = registry_data(SAMPLE)
    exported = export("mcp", tools, services)
    listed = exported.data["tools"]
    assert [t["name"] for t in listed] == ["dotted.name", "free-form", "tell-joke", "word-count"]
    for tool in listed:
        assert set(tool) == {"name", "description", "inputSchema"}
        assert tool["inputSchema"]["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
    assert "required" not in listed[1]["inputSchema"]  # an empty list says nothing
    assert exported.notes == []


MCP_TOOLS = """
[[service]]
name = "remote"
[service.mcp]
command = ["server"]

[[tool]]
name = "remote.count"
service = "remote"
[tool.mcp]
name = "count"
parameters = { type = "object" }
output_schema = { type = "object", properties = { n = { type = "integer" } } }

[[tool]]
name = "remote.maybe"
service = "remote"
[tool.mcp]
name = "maybe"
output_schema = '{"type": "object", "properties": {"n": {"default": null}}}'

[[tool]]
name = "remote.plain"
service = "remote"
[tool.mcp]
name = "plain"
"""


def test_mcp_export_carries_the_output_schema_an_mcp_server_declared() -> None:
    """``[tool.mcp] output_schema`` (JSON text where it holds a null) is the tool's
    ``outputSchema`` in MCP's tools/list; a tool without one lists none, and keeps no
    ``output_schema`` key (a lock taken before stays the same)."""
    tools, services, _ = registry_data(MCP_TOOLS)
    listed = {t["name"]: t for t in export("mcp", tools, services).data["tools"]}
    assert listed["remote.count"]["outputSchema"] == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }
    assert listed["remote.maybe"]["outputSchema"]["properties"] == {"n": {"default": None}}
    assert "outputSchema" not in listed["remote.plain"]
    assert "output_schema" not in tools["remote.plain"]["mcp"]


def test_an_output_schema_that_is_not_json_is_refused() -> None:
    import tomllib

    toml = MCP_TOOLS.replace(
        """'{"type": "object", "properties": {"n": {"default": null}}}'""", "'{'"
    )
    parsed = parse_document(tomllib.loads(toml), toml, "test.toml")
    assert ["mcp.output_schema is not JSON" in p for p in map(str, parsed.problems)] == [True]


def test_export_is_byte_stable() -> None:
    tools, services, _ = registry_data(SAMPLE)
    reversed_tools = dict(reversed(list(tools.items())))
    for format in ("openai", "mcp", "trustgraph"):
        one = json.dumps(export(format, tools, services).data, sort_keys=True)
        two = json.dumps(export(format, reversed_tools, services).data, sort_keys=True)
        assert one == two


def test_trustgraph_export_takes_pulsar_tools_and_services_only() -> None:
    tools, services, _ = registry_data(SAMPLE)
    exported = export("trustgraph", tools, services)
    assert [item["key"] for item in exported.data] == [
        "tool-service/joke-service",
        "tool-service/unused-service",
        "tool/tell-joke",
    ]
    values = {item["key"]: item["value"] for item in exported.data}
    assert values["tool-service/joke-service"] == JOKE_SERVICE
    assert values["tool/tell-joke"] == TELL_JOKE
    assert exported.notes == [
        "left out 3 tool(s) not on a Pulsar service (only those map to TrustGraph): "
        "dotted.name, free-form, word-count"
    ]


def test_a_group_narrows_every_export() -> None:
    tools, services, groups = registry_data(SAMPLE)
    openai = export("openai", tools, services, groups["text"])
    assert [f["function"]["name"] for f in openai.data] == ["free-form", "word-count"]
    assert openai.notes == ["group 'text' names unknown tool 'ghost'; left out"]
    jokes = export("trustgraph", tools, services, groups["jokes"])
    assert [i["key"] for i in jokes.data] == ["tool-service/joke-service", "tool/tell-joke"]
    with pytest.raises(UsageError, match="group 'text' has no tool on a Pulsar service"):
        export("trustgraph", tools, services, groups["text"])


def test_trustgraph_notes_what_its_arguments_cannot_carry() -> None:
    toml = SAMPLE.replace('description = "The topic for the joke"', 'default = "cats"')
    tools, services, _ = registry_data(toml)
    exported = export("trustgraph", tools, services, {"name": "g", "tools": ["tell-joke"]})
    assert exported.notes == [
        "tool 'tell-joke': TrustGraph arguments have no default, enum or optional; "
        "dropped them from topic"
    ]


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.mark.parametrize(
    "shape",
    ["bare", "items", "single-items", "string-values"],
)
def test_trustgraph_import_reads_every_shape_and_round_trips(tmp_path: Path, shape: str) -> None:
    if shape == "bare":
        files = [write(tmp_path, "s.json", JOKE_SERVICE), write(tmp_path, "t.json", TELL_JOKE)]
    elif shape == "items":
        items = [
            {"key": "tool-service/joke-service", "value": JOKE_SERVICE},
            {"key": "tool/tell-joke", "value": TELL_JOKE},
        ]
        files = [write(tmp_path, "items.json", items)]
    elif shape == "single-items":
        files = [
            write(tmp_path, "s.json", {"key": "tool-service/joke-service", "value": JOKE_SERVICE}),
            write(tmp_path, "t.json", {"key": "tool/tell-joke", "value": TELL_JOKE}),
        ]
    else:
        items = [
            {"key": "tool-service/joke-service", "value": json.dumps(JOKE_SERVICE)},
            {"key": "tool/tell-joke", "value": json.dumps(TELL_JOKE)},
        ]
        files = [write(tmp_path, "items.json", items)]
    imported = read_import("trustgraph", files)
    by_kind = {e.definition.kind: e for e in imported.entries}
    assert by_kind["service"].table == {
        "name": "joke-service",
        "pulsar": {
            "request_queue": "non-persistent://tg/request/joke",
            "response_queue": "non-persistent://tg/response/joke",
            "config_params": [{"name": "style", "required": False}],
        },
    }
    tools = {"tell-joke": {**by_kind["tool"].definition.data, "runtime": "pulsar"}}
    services = {"joke-service": by_kind["service"].definition.data}
    values = {i["key"]: i["value"] for i in export("trustgraph", tools, services).data}
    assert values == {"tool-service/joke-service": JOKE_SERVICE, "tool/tell-joke": TELL_JOKE}


def test_trustgraph_import_leaves_out_other_tool_types_and_refuses_junk(tmp_path: Path) -> None:
    items = [
        {"key": "tool/ask", "value": {"type": "knowledge-query", "name": "ask"}},
        {"key": "prompt/system", "value": {"text": "hi"}},
        {"key": "tool/tell-joke", "value": TELL_JOKE},
    ]
    imported = read_import("trustgraph", [write(tmp_path, "items.json", items)])
    assert [e.definition.name for e in imported.entries] == ["tell-joke"]
    assert len(imported.notes) == 2
    assert imported.notes[0].endswith(
        "left out 1 config item(s) that are not tools, tool services or MCP servers: prompt (1)"
    )
    assert imported.notes[1].endswith(
        "left out 1 tool(s) of type 'knowledge-query': it queries TrustGraph's knowledge "
        "graph, so each runs only inside TrustGraph: ask"
    )
    with pytest.raises(UsageError, match="holds nothing toolctl can import"):
        read_import("trustgraph", [write(tmp_path, "none.json", items[:2])])
    # among files that hold something (a dump's every file), it is left out with its note
    mixed = [write(tmp_path, "none.json", items[:2]), write(tmp_path, "all.json", items)]
    assert [e.definition.name for e in read_import("trustgraph", mixed).entries] == ["tell-joke"]
    with pytest.raises(UsageError, match="not valid JSON"):
        read_import("trustgraph", [write(tmp_path, "bad.json", "{nope")])
    with pytest.raises(UsageError, match="no such file"):
        read_import("trustgraph", [tmp_path / "missing.json"])
    broken = {**JOKE_SERVICE, "request-queue": "not a topic"}
    with pytest.raises(RegistryError) as caught:
        read_import("trustgraph", [write(tmp_path, "broken.json", broken)])
    assert "malformed Pulsar topic 'not a topic'" in caught.value.details[0]


CHAT2GRAPH = """
app:
  name: "Chat2Graph"
tools:
  - &reader
    name: "DocumentReader"
    module_path: "app.plugin.neo4j.resource.graph_modeling"
  - &adder
    name: "VertexLabelAdder"
    desc: "Adds a vertex label"
    type: "LOCAL_TOOL"
    module_path: "app.plugin.neo4j.resource.graph_modeling"
  - &browser
    name: "BrowserUsing"
    type: "MCP"
    mcp_transport_config: {transport_type: "STDIO", command: "npx"}
actions:
  - &understand
    name: "content_understanding"
    desc: "Understand the document"
    tools: [*reader, *browser]
  - &recognise
    name: "deep_recognition"
    desc: "Find the concepts"
  - &design
    name: "schema_design"
    desc: "Design the schema"
    tools: [*adder, *reader]
  - &validate
    name: "graph_validation"
    desc: "Check reachability"
toolkit:
  - [*understand, *recognise]
  - [*design, *validate, *recognise]
  - [*understand, *recognise]
operators:
  - instruction: "x"
    output_schema: "y"
    actions: [*understand]
"""


def test_chat2graph_chains_become_next_edges_without_merging_chains(tmp_path: Path) -> None:
    imported = read_import("chat2graph", [write(tmp_path, "c2g.yml", CHAT2GRAPH)])
    tables = {(e.definition.kind, e.definition.name): e.table for e in imported.entries}
    assert sorted(tables) == [
        ("action", "content_understanding"),
        ("action", "deep_recognition"),
        ("action", "graph_validation"),
        ("action", "schema_design"),
        ("service", "BrowserUsing"),
        ("tool", "DocumentReader"),
        ("tool", "VertexLabelAdder"),
    ]
    assert tables[("service", "BrowserUsing")]["mcp"] == {"command": ["npx"]}
    understand = tables[("action", "content_understanding")]
    assert understand["next"] == [{"action": "deep_recognition", "score": 1.0}]
    assert understand["tools"] == [{"tool": "DocumentReader", "score": 1.0}]
    # Chat2Graph's loader would also link deep_recognition to schema_design (end of one
    # chain to the start of the next); toolctl keeps the chains apart.
    assert "next" not in tables[("action", "deep_recognition")]
    assert tables[("action", "graph_validation")]["next"] == [
        {"action": "deep_recognition", "score": 1.0}
    ]
    assert tables[("action", "schema_design")]["tools"] == [
        {"tool": "VertexLabelAdder", "score": 1.0},
        {"tool": "DocumentReader", "score": 1.0},
    ]
    reader = tables[("tool", "DocumentReader")]
    assert reader["local"]["command"][-2:] == [
        "app.plugin.neo4j.resource.graph_modeling",
        "DocumentReader",
    ]
    assert reader["parameters"] == {"type": "object"}
    assert imported.notes == [
        f"{tmp_path / 'c2g.yml'}: MCP server 'BrowserUsing' became service 'BrowserUsing': "
        "import its tools with 'toolctl import mcp BrowserUsing'; Call edges to it are dropped",
        f"{tmp_path / 'c2g.yml'}: 2 LOCAL_TOOL tool(s) run through a shim that imports the "
        "class and calls its function with the JSON arguments, where Chat2Graph is "
        "importable: one whose function takes services Chat2Graph injects fails; each takes "
        "any object (Chat2Graph reads its parameters from docstrings)",
    ]


def test_chat2graph_refuses_what_is_not_a_configuration(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a Chat2Graph configuration"):
        read_import("chat2graph", [write(tmp_path, "list.yml", "- a\n- b\n")])
    with pytest.raises(UsageError, match="not valid YAML"):
        read_import("chat2graph", [write(tmp_path, "bad.yml", "tools: [a\n")])
    for as_loaded in (False, True):
        with pytest.raises(UsageError, match="action 'a': 'tools' must be a list"):
            read_import(
                "chat2graph",
                [
                    write(
                        tmp_path,
                        "tools.yml",
                        "actions: [{name: a, tools: 3}]\ntoolkit: [[{name: a}]]",
                    )
                ],
                as_loaded=as_loaded,
            )
    twins = "actions: [{name: 'Read File'}, {name: 'read file!'}]"
    with pytest.raises(RegistryError) as caught:
        read_import("chat2graph", [write(tmp_path, "twins.yml", twins)])
    assert "names 'Read File'" in caught.value.details[0]
    assert "and 'read file!' both become 'read-file'" in caught.value.details[0]


TOOL_AGENT_REGISTRY: list[dict[str, Any]] = [
    {
        "tool_id": "image_stitcher",
        "name": "图片拼接工具",
        "description": "将多张图片拼接成一张",
        "category": "cv",
        "backend_runtime": "local",
        "group_ids": [],
        "input_schema": {
            "type": "object",
            "properties": {"images": {"type": "array", "items": {"type": "string"}}},
            "required": ["images"],
        },
        "output_schema": {},
        "stream_support": False,
        "status": "active",
    },
    {"tool_id": "launch_comfy_env", "name": "Launch", "backend_runtime": "remote"},
    {"tool_id": "runcomfy_workflow_executor", "name": "Run", "input_schema": {}},
    {"tool_id": "runcomfy_stop_env", "name": "Stop"},
]
TOOL_AGENT_GROUPS = [
    {
        "group_id": "runcomfy_lifecycle",
        "name": "RunComfy 生命周期管理",
        "description": "云端 ComfyUI 环境的完整生命周期",
        "category": "remote",
        "tool_ids": ["launch_comfy_env", "runcomfy_workflow_executor", "runcomfy_stop_env"],
        "usage_order": ["launch_comfy_env", "runcomfy_workflow_executor", "runcomfy_stop_env"],
        "usage_example": "先 launch 获取 server_id,再 run 执行 workflow,最后 stop 释放资源",
    }
]


@pytest.mark.parametrize("wrapped", [False, True])
def test_tool_agent_registry_and_groups(tmp_path: Path, wrapped: bool) -> None:
    tools: Any = {"tools": TOOL_AGENT_REGISTRY} if wrapped else TOOL_AGENT_REGISTRY
    groups: Any = {"groups": TOOL_AGENT_GROUPS} if wrapped else TOOL_AGENT_GROUPS
    files = [write(tmp_path, "registry.json", tools), write(tmp_path, "groups.json", groups)]
    imported = read_import("tool-agent", files)
    tables = {e.definition.name: e.table for e in imported.entries}
    stitcher = tables["image_stitcher"]
    assert stitcher["description"] == "将多张图片拼接成一张"
    assert stitcher["category"] == "cv"
    assert stitcher["tags"] == ["backend:local"]
    assert stitcher["parameters"]["required"] == ["images"]
    assert stitcher["runtime"] == "tool-agent"
    assert stitcher["options"] == {"router": "http://127.0.0.1:8001", "tool_id": "image_stitcher"}
    assert stitcher["title"] == "图片拼接工具"
    assert tables["runcomfy_stop_env"]["description"] == "Stop"
    group = tables["runcomfy_lifecycle"]
    assert group["tools"] == group["usage_order"]
    assert group["usage_example"].startswith("先 launch")


def test_tool_agent_registry_keyed_by_id(tmp_path: Path) -> None:
    keyed = {
        t["tool_id"]: {k: v for k, v in t.items() if k != "tool_id"} for t in TOOL_AGENT_REGISTRY
    }
    imported = read_import("tool-agent", [write(tmp_path, "registry.json", keyed)])
    assert sorted(e.definition.name for e in imported.entries) == sorted(keyed)
    with pytest.raises(UsageError, match="neither tool_id nor group_id"):
        read_import("tool-agent", [write(tmp_path, "other.json", [{"id": "x"}])])
