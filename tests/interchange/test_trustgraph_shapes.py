"""TrustGraph's shapes in: dumps, bundles, the documented queue form, topic-only services."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Toolctl
from tests.interchange.test_interchange import JOKE_SERVICE, TELL_JOKE, registry_data
from toolctl.errors import RegistryError, UsageError
from toolctl.interchange import read_import
from toolctl.models.service_sections import pulsar_topic


def names(files: list[Path]) -> list[tuple[str, str]]:
    imported = read_import("trustgraph", files)
    return sorted((e.definition.kind, e.definition.name) for e in imported.entries)


DUMP = {
    "tool": {"tell-joke": json.dumps(TELL_JOKE), "ask": json.dumps({"type": "prompt"})},
    "tool-service": {"joke-service": json.dumps(JOKE_SERVICE)},
    "prompt": {"system": json.dumps("be nice")},
}
EXPECTED = [("service", "joke-service"), ("tool", "tell-joke")]


def test_tg_show_config_output_with_its_version_line(tmp_path: Path) -> None:
    path = tmp_path / "config.txt"
    path.write_text("Version: 7\n" + json.dumps(DUMP, indent=4))
    imported = read_import("trustgraph", [path])
    assert sorted((e.definition.kind, e.definition.name) for e in imported.entries) == EXPECTED
    assert any("not tools, tool services or MCP servers: prompt (1)" in n for n in imported.notes)
    assert any("of type 'prompt': it renders a TrustGraph prompt" in n for n in imported.notes)


def test_a_configurator_dump_is_summed_up_per_type(tmp_path: Path) -> None:
    """A TrustGraph configurator dump holds prompts, flows and blueprints by the dozen:
    one line per type of what is left out, not one per item."""
    dump = {
        **DUMP,
        "prompt": {f"p{n}": json.dumps(f"text {n}") for n in range(40)},
        "flow": {f"f{n}": json.dumps({"class": "x"}) for n in range(20)},
        "flow-blueprint": {f"b{n}": json.dumps({}) for n in range(26)},
        "tool": {
            **DUMP["tool"],
            **{f"kq{n}": json.dumps({"type": "knowledge-query"}) for n in range(12)},
        },
    }
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump))
    imported = read_import("trustgraph", [path])
    assert len(imported.notes) == 3  # the items, the knowledge-query tools, the prompt one
    assert imported.notes[0].endswith(
        "left out 86 config item(s) that are not tools, tool services or MCP servers: "
        "flow (20), flow-blueprint (26), prompt (40)"
    )
    assert "left out 12 tool(s) of type 'knowledge-query'" in imported.notes[1]
    assert imported.notes[1].endswith("kq9, ...")


def test_workspace_config_export(tmp_path: Path) -> None:
    path = tmp_path / "workspace.json"
    path.write_text(json.dumps({"source_workspace": "w", "source_version": 3, "config": DUMP}))
    assert names([path]) == EXPECTED


def test_export_workspace_bundle_and_its_entries(tmp_path: Path) -> None:
    bundle = tmp_path / "workspace.tgx"
    with tarfile.open(bundle, "w:gz") as tar:
        for kind, values in DUMP.items():
            for key, raw in values.items():
                item = {"type": kind, "key": key, "value": json.loads(raw)}
                encoded = json.dumps(item).encode()
                info = tarfile.TarInfo(f"config/{kind}/{key}.json")
                info.size = len(encoded)
                tar.addfile(info, io.BytesIO(encoded))
        info = tarfile.TarInfo("knowledge/c/triples.nq")
        tar.addfile(info, io.BytesIO(b""))
    assert names([bundle]) == EXPECTED
    entry = tmp_path / "entry.json"
    entry.write_text(
        json.dumps({"type": "tool-service", "key": "joke-service", "value": JOKE_SERVICE})
    )
    assert names([entry]) == [("service", "joke-service")]
    broken = tmp_path / "broken.tgx"
    broken.write_bytes(bundle.read_bytes()[:200])
    with pytest.raises(UsageError):
        read_import("trustgraph", [broken])


def test_a_topic_derives_both_queues_as_dynamic_tool_service_does(tmp_path: Path) -> None:
    path = tmp_path / "svc.json"
    path.write_text(json.dumps({"id": "joke-service", "topic": "joke", "config-params": []}))
    (entry,) = read_import("trustgraph", [path]).entries
    assert entry.definition.data["pulsar"]["request_queue"] == "non-persistent://tg/request/joke"
    assert entry.definition.data["pulsar"]["response_queue"] == "non-persistent://tg/response/joke"


@pytest.mark.parametrize(
    ("queue", "topic"),
    [
        ("request:tg:custom-rag", "non-persistent://tg/request/custom-rag"),
        ("response:tg:custom-rag", "non-persistent://tg/response/custom-rag"),
        ("notify:tg:config", "non-persistent://tg/notify/config"),
        ("flow:tg:text-load", "persistent://tg/flow/text-load"),
        ("request:tg:a:b", "non-persistent://tg/request/a:b"),
        ("persistent://t/n/x", "persistent://t/n/x"),
    ],
)
def test_queue_form_maps_as_trustgraphs_pulsar_backend(queue: str, topic: str) -> None:
    assert pulsar_topic(queue) == topic


def test_the_queue_form_in_a_descriptor_and_its_bad_forms() -> None:
    _tools, services, _ = registry_data(
        """
[[service]]
id = "custom-rag"
[service.pulsar]
request-queue = "request:tg:custom-rag"
response-queue = "response:tg:custom-rag"
"""
    )
    assert services["custom-rag"]["pulsar"]["request_queue"] == (
        "non-persistent://tg/request/custom-rag"
    )
    from toolctl.models.service_sections import PulsarService

    for bad in ("queue:tg:x", "request:tg", "request::x", "request:tg:a/b"):
        with pytest.raises(ValueError, match="malformed Pulsar topic"):
            PulsarService.model_validate({"request_queue": bad, "response_queue": bad})


def test_a_tool_of_an_unknown_type_is_refused_and_junk_is_a_usage_error(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"type": "teleport", "name": "beam"}))
    with pytest.raises(RegistryError) as caught:
        read_import("trustgraph", [odd])
    assert (
        "has TrustGraph type 'teleport', which TrustGraph does not know"
        in (caught.value.details[0])
    )
    junk: list[Any] = [{"what": 1}, [], "x", {"key": "tool/a", "value": 3}]
    for position, value in enumerate(junk):
        path = tmp_path / f"junk{position}.json"
        path.write_text(json.dumps(value))
        with pytest.raises(UsageError):
            read_import("trustgraph", [path])


def test_foreign_names_become_slugs_and_references_follow(tmp_path: Path) -> None:
    service = {**JOKE_SERVICE, "id": "Joke Service"}
    tool = {**TELL_JOKE, "name": "Tell a Joke", "service": "Joke Service"}
    path = tmp_path / "items.json"
    path.write_text(json.dumps([service, tool]))
    imported = read_import("trustgraph", [path])
    tables = {e.definition.name: e.table for e in imported.entries}
    assert tables["tell-a-joke"]["title"] == "Tell a Joke"
    assert tables["tell-a-joke"]["service"] == "joke-service"
    assert tables["joke-service"]["title"] == "Joke Service"


def test_an_openai_function_list_is_refused_in_one_line(tmp_path: Path) -> None:
    """What `export --format openai` prints, given to `import trustgraph`, is named for what
    it is (it was one "TrustGraph does not know type 'function'" line per function)."""
    function = {"name": "hi", "description": "", "parameters": {"type": "object"}}
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"type": "function", "function": function}] * 3))
    with pytest.raises(UsageError, match="this is an OpenAI function list"):
        read_import("trustgraph", [path])


def test_a_tool_is_its_id_shown_by_its_name_and_goes_back_so(tmp_path: Path) -> None:
    """A rendered TrustGraph template gives a tool an ``id`` (the key it is stored under)
    and the ``name`` the agent's model is shown: the registry name is the id, the shown name
    its title, and neither is sent as config; export writes it back under the same key and
    name (it became ``tell-a-joke``, a second tool in TrustGraph, with ``id`` as config)."""
    from toolctl.interchange import export

    items = [
        {"id": "joke-service", "request-queue": "non-persistent://tg/request/joke",
         "response-queue": "non-persistent://tg/response/joke"},
        {"id": "tell-joke", "name": "Tell a joke", "type": "tool-service",
         "service": "joke-service", "style": "pun", "description": "Tell a joke"},
    ]  # fmt: skip
    (tmp_path / "t.json").write_text(json.dumps(items))
    imported = read_import("trustgraph", [tmp_path / "t.json"])
    (tool,) = [e.table for e in imported.entries if e.definition.kind == "tool"]
    assert (tool["name"], tool["title"], tool["config"]) == (
        "tell-joke",
        "Tell a joke",
        {"style": "pun"},
    )
    tools = {
        e.definition.name: e.definition.data
        for e in imported.entries
        if e.definition.kind == "tool"
    }
    services = {
        e.definition.name: e.definition.data
        for e in imported.entries
        if e.definition.kind == "service"
    }
    exported = {item["key"]: item["value"] for item in export("trustgraph", tools, services).data}
    assert exported["tool/tell-joke"]["name"] == "Tell a joke"
    assert "id" not in exported["tool/tell-joke"] and exported["tool/tell-joke"]["style"] == "pun"


def test_a_schema_defined_tool_says_what_trustgraph_arguments_lose(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`parameters = {...}` exported to TrustGraph: optional arguments, constraints and a
    type that is not one name are told on stderr, as `[[tool.arguments]]`'s defaults are."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a/s.toml").write_text(
        '[[service]]\nname = "svc"\n[service.pulsar]\n'
        'request_queue = "non-persistent://tg/request/svc"\n'
        'response_queue = "non-persistent://tg/response/svc"\n'
        '[[tool]]\nname = "s"\ndescription = "d"\nservice = "svc"\n'
        'parameters = { type = "object", required = ["q"], properties = { q = { type = "string" '
        '}, n = { type = "integer", minimum = 1 }, m = { type = ["string", "null"] } } }\n'
    )
    done = toolctl("export", "--format", "trustgraph", "-r", "a")
    assert done.returncode == 0, done.stderr
    assert (
        'dropped m (optional, type ["string", "null"] as string); n (optional, minimum)'
    ) in done.stderr


def test_a_secret_in_a_tools_config_is_warned_of_and_never_shown(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """A TrustGraph tool's config is sent to its service as written, so it stays: but the
    import and `check` warn that the registry holds a secret there, and `show` masks it."""
    secret = "sk-FUZZabcdefghijklmnopqrstuvwx"
    items = [
        {"id": "svc", "request-queue": "non-persistent://tg/request/s",
         "response-queue": "non-persistent://tg/response/s", "config-params": [{"name": "api-key"}]},
        {"id": "t", "name": "t", "type": "tool-service", "service": "svc", "api-key": secret,
         "description": "d"},
    ]  # fmt: skip
    (tmp_path / "t.json").write_text(json.dumps(items))
    done = toolctl("import", "trustgraph", "t.json", "-r", "reg")
    assert done.returncode == 0 and "config.api-key holds a secret written out" in done.stderr
    checked = toolctl("check", "-r", "reg")
    assert "config.api-key holds a secret written out" in checked.stdout
    shown = toolctl("show", "t", "-r", "reg", "--json")
    assert secret not in shown.stdout + done.stderr + checked.stdout


def test_what_trustgraph_itself_takes_is_imported_and_what_it_refuses_is_refused(
    tmp_path: Path,
) -> None:
    """A tool service is named by its config key, as TrustGraph's agent looks it up (an
    `id` inside the value named it, and a tool naming the key had an unknown service);
    `config-params` may be bare names, as TrustGraph takes them. A `group` that is not a
    list, which makes TrustGraph's agent refuse the workspace's whole tool config, was
    carried through; `arguments` as a string were read a character at a time."""
    service = {"id": "joke-service", "request-queue": "non-persistent://tg/request/joke",
               "response-queue": "non-persistent://tg/response/joke",
               "config-params": ["style", {"name": "mood", "required": False}]}  # fmt: skip
    tool = {"type": "tool-service", "name": "tell-joke", "description": "d",
            "service": "joke-svc"}  # fmt: skip
    items = [{"key": "tool-service/joke-svc", "value": service},
             {"key": "tool/tell-joke", "value": tool}]  # fmt: skip
    (tmp_path / "t.json").write_text(json.dumps(items))
    imported = read_import("trustgraph", [tmp_path / "t.json"])
    services = [e.table for e in imported.entries if e.definition.kind == "service"]
    assert [s["name"] for s in services] == ["joke-svc"]
    assert services[0]["pulsar"]["config_params"] == [
        {"name": "style"}, {"name": "mood", "required": False}
    ]  # fmt: skip
    refusals = {
        "group": "its group is not a list of group names (TrustGraph's agent refuses it)",
        "arguments": "its arguments are not a list",
    }
    for key, said in refusals.items():
        items[1] = {"key": "tool/tell-joke", "value": {**tool, key: "not-a-list"}}
        (tmp_path / "t.json").write_text(json.dumps(items))
        with pytest.raises(RegistryError) as caught:
            read_import("trustgraph", [tmp_path / "t.json"])
        assert caught.value.details == [f"{tmp_path / 't.json'}: tool 'tell-joke': {said}"]
