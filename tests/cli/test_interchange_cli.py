"""export and import through the real CLI: formats, round trips, first-wins refusals."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.conftest import Toolctl, write_files
from tests.interchange.test_interchange import (
    CHAT2GRAPH,
    JOKE_SERVICE,
    TELL_JOKE,
    TOOL_AGENT_GROUPS,
    TOOL_AGENT_REGISTRY,
)

REGISTRY = """
[[service]]
id = "joke-service"
description = "Tells jokes"
[service.pulsar]
request-queue = "non-persistent://tg/request/joke"
response-queue = "non-persistent://tg/response/joke"
config-params = [{ name = "style", required = false }]

[[tool]]
name = "tell-joke"
description = "Tell a joke on a given topic"
service = "joke-service"
config = { style = "pun" }
[[tool.arguments]]
name = "topic"
description = "The topic for the joke"

[[tool]]
name = "shout"
description = "Shout a text"
[tool.local]
command = ["echo", "{text}"]
input = "none"
[[tool.arguments]]
name = "text"
[[tool.arguments]]
name = "times"
type = "integer"
default = 1

[[group]]
name = "loud"
tools = ["shout"]
"""


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    return write_files(tmp_path / "reg", {"all.toml": REGISTRY})


def test_export_openai_and_mcp(registry: Path, toolctl: Toolctl) -> None:
    openai = toolctl("export", "--format", "openai", "-r", str(registry))
    assert openai.returncode == 0, openai.stderr
    again = toolctl("export", "--format", "openai", "-r", str(registry))
    assert openai.stdout == again.stdout
    functions = json.loads(openai.stdout)
    assert [f["function"]["name"] for f in functions] == ["shout", "tell-joke"]
    shout = functions[0]["function"]["parameters"]
    jsonschema.Draft202012Validator.check_schema(shout)
    assert shout["required"] == ["text"]
    assert shout["properties"]["times"] == {"type": "integer", "default": 1}

    mcp = toolctl("export", "-f", "mcp", "--group", "loud", "-r", str(registry))
    assert mcp.returncode == 0, mcp.stderr
    listed = json.loads(mcp.stdout)["tools"]
    assert [t["name"] for t in listed] == ["shout"]
    assert listed[0]["inputSchema"] == shout


def test_export_takes_json_as_every_reporting_command_does(
    registry: Path, toolctl: Toolctl
) -> None:
    """A script passing --json everywhere: export prints JSON anyway (it was exit 2)."""
    plain = toolctl("export", "-f", "openai", "-r", str(registry))
    asked = toolctl("export", "-f", "openai", "--json", "-r", str(registry))
    assert (asked.returncode, asked.stdout) == (0, plain.stdout), asked.stderr
    both = toolctl("export", "-f", "trustgraph", "--as-commands", "--json", "-r", str(registry))
    assert (both.returncode, both.stdout) == (2, "")
    assert "--json and --as-commands cannot be combined" in both.stderr


def test_export_trustgraph_and_its_refusals(registry: Path, toolctl: Toolctl) -> None:
    result = toolctl("export", "-f", "trustgraph", "-r", str(registry))
    assert result.returncode == 0, result.stderr
    items = json.loads(result.stdout)
    assert items == [
        {"key": "tool-service/joke-service", "value": JOKE_SERVICE},
        {"key": "tool/tell-joke", "value": TELL_JOKE},
    ]
    assert result.stderr == (
        "toolctl: warning: left out 1 tool(s) not on a Pulsar service "
        "(only those map to TrustGraph): shout\n"
    )
    loud = toolctl("export", "-f", "trustgraph", "-g", "loud", "-r", str(registry))
    assert loud.returncode == 2
    assert "group 'loud' has no tool on a Pulsar service" in loud.stderr
    assert loud.stdout == ""
    unknown = toolctl("export", "-f", "openai", "-g", "lowd", "-r", str(registry))
    assert unknown.returncode == 4
    assert "group 'lowd' not found; did you mean: loud?" in unknown.stderr
    missing = toolctl("export", "-r", str(registry))
    assert missing.returncode == 2


def test_import_trustgraph_seed_files_round_trips(tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "joke-service.json").write_text(json.dumps(JOKE_SERVICE, indent=2))
    (tmp_path / "tell-joke.json").write_text(json.dumps(TELL_JOKE, indent=2))
    (tmp_path / "reg").mkdir()
    files = ("joke-service.json", "tell-joke.json")
    done = toolctl("import", "trustgraph", *files, "-r", "reg")
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        "toolctl: imported service 'joke-service' into reg/services/joke-service.toml\n"
        "toolctl: imported tool 'tell-joke' into reg/tools/tell-joke.toml\n"
    )
    assert toolctl("check", "-r", "reg").returncode == 0
    exported = json.loads(toolctl("export", "-f", "trustgraph", "-r", "reg").stdout)
    assert {i["key"]: i["value"] for i in exported} == {
        "tool-service/joke-service": JOKE_SERVICE,
        "tool/tell-joke": TELL_JOKE,
    }
    again = toolctl("import", "trustgraph", *files, "-r", "reg")  # a CI step run twice
    assert again.returncode == 0, again.stderr
    assert again.stderr == (
        "toolctl: unchanged service 'joke-service' in reg/services/joke-service.toml "
        "(already in force)\n"
        "toolctl: unchanged tool 'tell-joke' in reg/tools/tell-joke.toml (already in force)\n"
    )
    assert sorted(p.name for p in (tmp_path / "reg").rglob("*.toml")) == [
        "joke-service.toml",
        "tell-joke.toml",
    ]


def test_import_refuses_confusable_names_and_bad_input(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"reg/all.toml": REGISTRY})
    (tmp_path / "alike.json").write_text(json.dumps({**TELL_JOKE, "name": "Tell_Joke"}))
    alike = toolctl("import", "trustgraph", "alike.json", "-r", "reg")
    assert alike.returncode == 3
    assert "'Tell_Joke' is confusable with 'tell-joke'" in alike.stderr
    (tmp_path / "broken.json").write_text("[{")
    broken = toolctl("import", "trustgraph", "broken.json", "-r", "reg")
    assert broken.returncode == 2
    assert "broken.json:1: not valid JSON" in broken.stderr
    wrong = toolctl("import", "yaml", "broken.json", "-r", "reg")
    assert wrong.returncode == 2
    for result in (alike, broken, wrong):
        assert "Traceback" not in result.stderr


def test_import_chat2graph_then_recommend(tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "chat2graph.yml").write_text(CHAT2GRAPH)
    (tmp_path / "reg").mkdir()
    done = toolctl("import", "chat2graph", "chat2graph.yml", "-r", "reg", "--json")
    assert done.returncode == 0, done.stderr
    written = json.loads(done.stdout)
    assert {(w["kind"], w["name"]) for w in written} >= {
        ("action", "content_understanding"),
        ("tool", "DocumentReader"),
    }
    assert "MCP server 'BrowserUsing' became service 'BrowserUsing'" in done.stderr
    check = toolctl("check", "-r", "reg")
    assert check.returncode == 0, check.stdout
    result = toolctl("recommend", "-a", "schema_design", "--hops", "5", "--json", "-r", "reg")
    data = json.loads(result.stdout)
    assert [(a["name"], a["hops"]) for a in data["actions"]] == [
        ("deep_recognition", 2),
        ("graph_validation", 1),
        ("schema_design", 0),
    ]


class Router(BaseHTTPRequestHandler):
    """A stand-in for tool_agent's router: POST /run_tool {tool_id, params}."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answer = json.dumps({"tool": body["tool_id"], "got": body["params"]}).encode()
        status = 200 if self.path == "/run_tool" else 404
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def router() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Router)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_import_tool_agent_and_run_through_its_router(
    tmp_path: Path, toolctl: Toolctl, router: str
) -> None:
    (tmp_path / "registry.json").write_text(json.dumps(TOOL_AGENT_REGISTRY))
    (tmp_path / "groups.json").write_text(json.dumps(TOOL_AGENT_GROUPS))
    (tmp_path / "reg").mkdir()
    done = toolctl("import", "tool-agent", "registry.json", "groups.json", "-r", "reg")
    assert done.returncode == 0, done.stderr
    shown = toolctl("show", "runcomfy_lifecycle", "-r", "reg")
    assert "  tools          1. launch_comfy_env\n" in shown.stdout
    descriptor = tmp_path / "reg" / "tools" / "image_stitcher.toml"
    descriptor.write_text(descriptor.read_text().replace("http://127.0.0.1:8001", router))
    ran = toolctl("run", "image_stitcher", "--args", '{"images": ["a.png"]}', "--json", "-r", "reg")
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["data"] == {"tool": "image_stitcher", "got": {"images": ["a.png"]}}
    invalid = toolctl("run", "image_stitcher", "--args", "{}", "-r", "reg")
    assert invalid.returncode == 2  # input_schema became the tool's parameters


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_tool_agent_states_dropped_fields_and_a_closed_router(
    tmp_path: Path, toolctl: Toolctl, router: str
) -> None:
    staged = [
        {**TOOL_AGENT_REGISTRY[0], "tool_id": "beta_tool", "status": "staging"},
        {"tool_id": "odd_tool", "name": "Odd", "status": "已接入", "extra_field": 3},
    ]
    (tmp_path / "registry.json").write_text(json.dumps(TOOL_AGENT_REGISTRY + staged))
    (tmp_path / "reg").mkdir()
    done = toolctl("import", "tool-agent", "registry.json", "-r", "reg")
    assert done.returncode == 0, done.stderr
    assert "dropped 'output_schema'" not in done.stderr  # empty: nothing is lost
    assert "dropped 'extra_field' (toolctl has no place for it) from odd_tool" in done.stderr
    assert "tool 'odd_tool' has status '已接入'" in done.stderr
    listed = toolctl("list", "-r", "reg")
    rows = {line.split()[0]: line.split()[1:3] for line in listed.stdout.splitlines()[1:]}
    assert rows["beta_tool"] == ["tool-agent", "(staging)"]
    assert rows["odd_tool"] == ["tool-agent", "(staging)"]
    assert rows["image_stitcher"] == ["tool-agent", "cv"]
    refused = toolctl("run", "beta_tool", "--args", '{"images": []}', "-r", "reg")
    assert refused.returncode == 2
    assert "tool 'beta_tool' is staging, not active" in refused.stderr
    assert "--allow-staging" in refused.stderr
    for name in ("beta_tool", "image_stitcher"):
        descriptor = tmp_path / "reg" / "tools" / f"{name}.toml"
        descriptor.write_text(descriptor.read_text().replace("http://127.0.0.1:8001", router))
    allowed = toolctl(
        "run", "beta_tool", "--allow-staging", "--args", '{"images": []}', "--json", "-r", "reg"
    )
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["data"] == {"tool": "beta_tool", "got": {"images": []}}
    closed = f"http://127.0.0.1:{free_port()}"
    descriptor = tmp_path / "reg" / "tools" / "image_stitcher.toml"
    descriptor.write_text(descriptor.read_text().replace(router, closed))
    refused_connection = toolctl("run", "image_stitcher", "--args", '{"images": []}', "-r", "reg")
    assert refused_connection.returncode == 5
    assert f"tool_agent router {closed} is not reachable" in refused_connection.stderr
    assert "Traceback" not in refused_connection.stderr


def test_tool_agent_groups_naming_unknown_tools_are_refused(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    (tmp_path / "groups.json").write_text(json.dumps(TOOL_AGENT_GROUPS))
    (tmp_path / "reg").mkdir()
    done = toolctl("import", "tool-agent", "groups.json", "-r", "reg")
    assert done.returncode == 3
    for tool in ("launch_comfy_env", "runcomfy_workflow_executor", "runcomfy_stop_env"):
        assert f"group 'runcomfy_lifecycle' names unknown tool '{tool}'" in done.stderr
    assert "nothing was imported" in done.stderr
    assert not list((tmp_path / "reg").rglob("*.toml"))


def test_import_checks_the_registry_it_lands_in(tmp_path: Path, toolctl: Toolctl) -> None:
    needy = {**JOKE_SERVICE, "config-params": [{"name": "style", "required": True}]}
    (tmp_path / "service.json").write_text(json.dumps(needy))
    orphan = {**TELL_JOKE, "name": "orphan joke", "service": "nope"}
    (tmp_path / "orphan.json").write_text(json.dumps(orphan))
    (tmp_path / "reg").mkdir()
    assert toolctl("import", "trustgraph", "service.json", "-r", "reg").returncode == 0
    plain = {k: v for k, v in TELL_JOKE.items() if k != "style"}
    (tmp_path / "plain.json").write_text(json.dumps(plain))
    missing = toolctl("import", "trustgraph", "plain.json", "orphan.json", "-r", "reg")
    assert missing.returncode == 3
    assert (
        "plain.json: tool 'tell-joke' misses config param 'style' that service "
        "'joke-service' requires" in missing.stderr
    )
    assert "orphan.json: tool 'orphan-joke' names unknown service 'nope'" in missing.stderr
    assert "2 problem(s)" in missing.stderr
    assert not (tmp_path / "reg" / "tools").exists()
    assert toolctl("check", "-r", "reg").returncode == 0


def test_trustgraph_config_goes_out_as_declared_only(tmp_path: Path, toolctl: Toolctl) -> None:
    chatty = {**TELL_JOKE, "group": ["fun"], "state": "x", "applicable-states": ["x"]}
    (tmp_path / "svc.json").write_text(json.dumps(JOKE_SERVICE))
    (tmp_path / "tool.json").write_text(json.dumps(chatty))
    (tmp_path / "reg").mkdir()
    done = toolctl("import", "trustgraph", "svc.json", "tool.json", "-r", "reg")
    assert done.returncode == 0, done.stderr
    assert "sets config 'group' that service 'joke-service' does not declare" in done.stderr
    plan = toolctl("run", "tell-joke", "-a", "topic=cats", "--dry-run", "--json", "-r", "reg")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["config"] == {"style": "pun"}


def test_export_trustgraph_as_put_commands(registry: Path, toolctl: Toolctl) -> None:
    import shlex

    done = toolctl("export", "-f", "trustgraph", "--as-commands", "-r", str(registry))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [shlex.split(line)[:5] for line in lines] == [
        ["tg-put-config-item", "--type", "tool-service", "--key", "joke-service"],
        ["tg-put-config-item", "--type", "tool", "--key", "tell-joke"],
    ]
    assert json.loads(shlex.split(lines[1])[6]) == TELL_JOKE
    wrong = toolctl("export", "-f", "openai", "--as-commands", "-r", str(registry))
    assert wrong.returncode == 2


def test_foreign_names_show_with_their_title_and_export_by_name(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    (tmp_path / "c2g.yml").write_text(
        "tools:\n"
        "  - &t {name: 'Page Reader', module_path: 'app.x'}\n"
        "actions:\n"
        "  - &a {name: 'browser using action', desc: 'Browse', tools: [*t]}\n"
        "  - &b {name: 'create parallel subtasks (Map) action', desc: 'Split'}\n"
        "toolkit:\n"
        "  - [*a, *b]\n"
    )
    (tmp_path / "reg").mkdir()
    done = toolctl("import", "chat2graph", "c2g.yml", "-r", "reg")
    assert done.returncode == 0, done.stderr
    shown = toolctl("show", "browser-using-action", "-r", "reg")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[1] == "  title        browser using action"
    assert "action=create-parallel-subtasks-map-action" in shown.stdout
    exported = json.loads(toolctl("export", "-f", "openai", "-r", "reg").stdout)
    assert [f["function"]["name"] for f in exported] == ["page-reader"]


def test_an_imported_look_alike_of_a_name_in_force_is_refused(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A TrustGraph service named like one in force but for a Cyrillic letter is the name
    it imitates, so first-wins refuses it: it is never imported beside it under another
    name with the imitating title."""

    def service(name: str) -> dict[str, object]:
        value = {
            "id": name,
            "request-queue": "non-persistent://tg/request/a",
            "response-queue": "non-persistent://tg/response/a",
        }
        return {"key": f"tool-service/{name}", "value": value}

    reg = tmp_path / "reg"
    reg.mkdir()
    (tmp_path / "a.json").write_text(json.dumps([service("hello")]))
    (tmp_path / "b.json").write_text(json.dumps([service("h\u0435llo")]))
    assert toolctl("import", "trustgraph", "a.json", "-r", str(reg)).returncode == 0
    done = toolctl("import", "trustgraph", "b.json", "-r", str(reg))
    assert done.returncode == 3, done.stderr
    listed = json.loads(toolctl("list", "services", "-r", str(reg), "--json").stdout)
    assert [s["name"] for s in listed] == ["hello"]


def test_chat2graph_names_with_braces_import_as_text_not_placeholders(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A LOCAL_TOOL's module path and class name are data in the shim's command: braces in
    them are written doubled, so `check` finds no placeholder naming nothing, and the tool
    gets them as they were."""
    (tmp_path / "in.yml").write_text(
        'tools:\n  - name: "T{x}"\n    module_path: "mod{text}"\n'
        'actions:\n  - name: act\n    tools: [{name: "T{x}"}]\n'
    )
    reg = tmp_path / "reg"
    reg.mkdir()
    done = toolctl("import", "chat2graph", "in.yml", "-r", str(reg))
    assert done.returncode == 0, done.stderr
    assert toolctl("check", "-r", str(reg)).returncode == 0
    plan = json.loads(toolctl("run", "t-x", "-r", str(reg), "--dry-run", "--json").stdout)
    assert plan["argv"][-2:] == ["mod{text}", "T{x}"]


def test_an_import_that_would_not_run_is_refused_whole(tmp_path: Path) -> None:
    """A converted tool whose command holds a {placeholder} naming no argument (`check`
    calls it an error: `run` would pass the braces on) refuses the import where it lands,
    as every other error does; what depends on this machine (a program not on PATH) does
    not."""
    from toolctl.errors import RegistryError
    from toolctl.interchange.entries import Tables, check_landing, validate
    from toolctl.settings import Settings

    reg = tmp_path / "reg"
    reg.mkdir()
    settings = Settings.load([reg])
    local = {"command": ["no-such-program-here", "{nope}"]}
    tool = {"name": "ph", "description": "d", "local": local}
    with pytest.raises(RegistryError) as refused:
        check_landing(validate([Tables("in.json", [("tool", tool)])]), settings)
    assert any("{nope}" in line for line in refused.value.details), refused.value.details
    assert not any("no-such-program-here" in line for line in refused.value.details)
    local["command"] = ["no-such-program-here", "{{literal}}"]
    assert check_landing(validate([Tables("in.json", [("tool", tool)])]), settings) == []


def test_an_import_reads_a_pipe_and_names_a_directory(toolctl: Toolctl, tmp_path: Path) -> None:
    """`toolctl import trustgraph <(curl ...)` reads the pipe (it was 'no such file'); a
    directory is said to be one."""
    import os
    import threading

    item = {
        "key": "tool-service/piped",
        "value": {
            "id": "piped",
            "request-queue": "non-persistent://tg/request/p",
            "response-queue": "non-persistent://tg/response/p",
        },
    }
    fifo = tmp_path / "items"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=(json.dumps([item]),), daemon=True)
    writer.start()
    reg = tmp_path / "reg"
    reg.mkdir()
    done = toolctl("import", "trustgraph", str(fifo), "-r", str(reg))
    writer.join(5)
    assert done.returncode == 0, done.stderr
    assert (reg / "services" / "piped.toml").is_file()
    folder = toolctl("import", "trustgraph", str(reg), "-r", str(reg))
    assert folder.returncode == 2
    assert folder.stderr == "toolctl: error: reg is a directory, not a file; name the files in it\n"


def test_a_look_alike_in_an_import_is_placed_in_its_file_without_a_made_up_line(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """The refusal named `(items.json:11)`, a line of the TOML rendered from the entry (in
    the source, another entry's), and said the entry was quarantined though nothing was
    written."""
    service = {"id": "jokes", "request-queue": "non-persistent://tg/request/joke",
               "response-queue": "non-persistent://tg/response/joke"}  # fmt: skip
    items = [{"key": "tool-service/jokes", "value": service}] + [
        # one name given under look-alike keys, as a config edited twice might
        {"key": f"tool/{key}", "value": {"type": "tool-service", "name": "tell-joke",
                                         "description": key, "service": "jokes"}}
        for key in ("tell-joke", "Tell_Joke")
    ]  # fmt: skip
    (tmp_path / "items.json").write_text(json.dumps(items, indent=2))
    (tmp_path / "reg").mkdir()
    done = toolctl("import", "trustgraph", "items.json", "-r", "reg")
    assert done.returncode == 3, done.stderr
    detail = next(line for line in done.stderr.splitlines() if "is confusable with" in line)
    assert detail.endswith("is confusable with 'tell-joke' (items.json): rename one of them")


def test_two_names_that_are_confusable_are_not_said_to_become_one(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """'tell-joke' and 'Tell_Joke' were said to "both become 'Tell_Joke'": they stay two
    names, confusable ones."""
    service = {"id": "jokes", "request-queue": "non-persistent://tg/request/joke",
               "response-queue": "non-persistent://tg/response/joke"}  # fmt: skip
    items = [{"key": "tool-service/jokes", "value": service}] + [
        {"key": f"tool/{name}", "value": {"type": "tool-service", "name": name,
                                          "description": "d", "service": "jokes"}}
        for name in ("tell-joke", "Tell_Joke")
    ]  # fmt: skip
    (tmp_path / "items.json").write_text(json.dumps(items))
    (tmp_path / "reg").mkdir()
    done = toolctl("import", "trustgraph", "items.json", "-r", "reg")
    assert done.returncode == 3, done.stderr
    assert (
        "tool names 'tell-joke' (items.json) and 'Tell_Joke' are confusable: they differ only "
        "in case or in - _ .; rename one of them in the source"
    ) in done.stderr
