"""`toolctl import mcp SERVICE` and `import mcp-config` through the real CLI, against the real
probe server (SDK 1.x and 2.x) and the reference time server: pins written, first wins,
homoglyphs refused, --update's diff, client configs with their secrets left out."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import anyio
import pytest
import tomli_w

from tests.conftest import Toolctl, write_files
from tests.mcp.conftest import PROBE

HOMOGLYPH = "\u0435cho"  # a Cyrillic e, then "cho": drawn like "echo"


def service_registry(
    root: Path, services: dict[str, list[str]], env: dict[str, dict[str, str]] | None = None
) -> Path:
    document = {
        "service": [
            {"name": name, "mcp": {"command": argv, "env": (env or {}).get(name, {})}}
            for name, argv in services.items()
        ]
    }
    (root / "reg").mkdir(parents=True, exist_ok=True)
    (root / "reg/services.toml").write_text(tomli_w.dumps(document))
    return root / "reg"


def test_import_writes_one_pinned_tool_per_remote_tool_and_runs_them(
    toolctl: Toolctl, tmp_path: Path, probe_argv: list[str]
) -> None:
    reg = service_registry(tmp_path, {"probe": probe_argv})
    done = toolctl("import", "mcp", "probe", "-r", str(reg), "--json")
    assert done.returncode == 0, done.stderr
    names = {item["name"] for item in json.loads(done.stdout)["imported"]}
    assert {"probe.echo", "probe.fail", "probe.hang", "probe.picture"} <= names
    text = (reg / "tools/probe.echo.toml").read_text()
    assert 'pin = "sha256:' in text and 'service = "probe"' in text
    assert toolctl("check", "-r", str(reg)).returncode == 0
    ran = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=imported")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "imported"
    again = toolctl("import", "mcp", "probe", "-r", str(reg))
    assert again.returncode == 0, again.stderr
    assert "already imported" in again.stderr


def test_an_output_schema_is_kept_and_mcp_serve_lists_it_with_results_that_match(
    toolctl: Toolctl, tmp_path: Path, probe_argv: list[str]
) -> None:
    """The probe's echo declares an outputSchema (the SDK derives one from ``-> str``):
    `import mcp` keeps it, export and `mcp serve`'s tools/list carry it, and a call through
    `mcp serve` gives the server's structuredContent, which the SDK client checks against
    it (a listed schema with no structuredContent is an error there)."""
    from tests.serve.mcp_clients import stdio_session

    reg = service_registry(tmp_path, {"probe": probe_argv})
    done = toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "echo")
    assert done.returncode == 0, done.stderr
    assert "[tool.mcp.output_schema]" in (reg / "tools/probe.echo.toml").read_text()
    (exported,) = json.loads(toolctl("export", "--format", "mcp", "-r", str(reg)).stdout)["tools"]
    schema = exported["outputSchema"]
    assert schema["type"] == "object" and "result" in schema["properties"]

    async def main() -> None:
        async with stdio_session(reg) as session:
            (listed,) = (await session.list_tools()).tools
            assert listed.outputSchema == schema
            answer = await session.call_tool("probe.echo", {"text": "kept"})
            assert (answer.isError, answer.structuredContent) == (False, {"result": "kept"})

    anyio.run(main)


def test_update_adds_the_output_schema_an_earlier_import_left_out(
    toolctl: Toolctl, tmp_path: Path, probe_argv: list[str]
) -> None:
    """A tool imported before toolctl kept outputSchema: its pin still matches, but
    `--update` shows the schema it lacks and `--yes` writes it."""
    reg = service_registry(tmp_path, {"probe": probe_argv})
    assert toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "echo").returncode == 0
    file = reg / "tools/probe.echo.toml"
    kept, _, _ = file.read_text().partition("[tool.mcp.output_schema]")
    file.write_text(kept)
    shown = toolctl("import", "mcp", "probe", "-r", str(reg), "--update")
    assert shown.returncode == 3, shown.stderr
    assert "probe.echo (echo): outputSchema changed" in shown.stdout
    accepted = toolctl("import", "mcp", "probe", "-r", str(reg), "--update", "--yes")
    assert accepted.returncode == 0, accepted.stderr
    assert "[tool.mcp.output_schema]" in file.read_text()
    quiet = toolctl("import", "mcp", "probe", "-r", str(reg), "--update")
    assert quiet.returncode == 0 and "match the server" in quiet.stderr


def test_prefix_and_tool_globs_choose_names(toolctl: Toolctl, tmp_path: Path) -> None:
    reg = service_registry(tmp_path, {"probe": [sys.executable, str(PROBE)]})
    done = toolctl(
        "import", "mcp", "probe", "-r", str(reg), "--prefix", "p_", "--tool", "ec*",
        "--tool", "fail", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(i["name"] for i in json.loads(done.stdout)["imported"]) == ["p_echo", "p_fail"]
    none = toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "nothing*")
    assert none.returncode == 2
    assert "no tool of service 'probe' matches nothing*" in none.stderr


def test_a_second_server_offering_the_same_name_is_refused_first_wins(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    argv = [sys.executable, str(PROBE)]
    reg = service_registry(
        tmp_path,
        {"first": argv, "second": argv},
        env={"second": {"PROBE_EXTRA_TOOLS": "shout"}},
    )
    assert toolctl("import", "mcp", "first", "-r", str(reg), "--prefix", "").returncode == 0
    before = (reg / "tools/echo.toml").read_text()
    done = toolctl("import", "mcp", "second", "-r", str(reg), "--prefix", "")
    assert done.returncode == 3
    assert "'echo': name 'echo' is already defined in" in done.stderr
    assert "refused (1 imported)" in done.stderr  # the one new name got through
    assert (reg / "tools/shout.toml").exists()
    assert (reg / "tools/echo.toml").read_text() == before
    assert 'service = "first"' in before


def test_a_homoglyph_of_a_tool_name_is_refused(
    toolctl: Toolctl, tmp_path: Path, probe_argv: list[str]
) -> None:
    reg = service_registry(
        tmp_path, {"probe": probe_argv}, env={"probe": {"PROBE_EXTRA_TOOLS": HOMOGLYPH}}
    )
    done = toolctl("import", "mcp", "probe", "-r", str(reg))
    assert done.returncode == 3
    assert f"'{HOMOGLYPH}' (as 'probe.echo')" in done.stderr
    echo = (reg / "tools/probe.echo.toml").read_text()
    assert 'name = "echo"' in echo  # the genuine one, not the lookalike


def test_a_homoglyph_across_services_is_refused(toolctl: Toolctl, tmp_path: Path) -> None:
    argv = [sys.executable, str(PROBE)]
    reg = service_registry(
        tmp_path, {"a": argv, "b": argv}, env={"b": {"PROBE_EXTRA_TOOLS": HOMOGLYPH}}
    )
    assert (
        toolctl("import", "mcp", "a", "-r", str(reg), "--prefix", "x.", "--tool", "echo").returncode
        == 0
    )
    done = toolctl("import", "mcp", "b", "-r", str(reg), "--prefix", "x.", "--tool", HOMOGLYPH)
    assert done.returncode == 3
    assert "already defined" in done.stderr


def test_update_shows_the_diff_and_rewrites_pins_only_with_yes(
    toolctl: Toolctl, tmp_path: Path, probe_argv: list[str]
) -> None:
    reg = service_registry(tmp_path, {"probe": probe_argv})
    assert toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "echo").returncode == 0
    services = reg / "services.toml"
    document = {
        "service": [
            {
                "name": "probe",
                "mcp": {"command": probe_argv, "env": {"PROBE_DESCRIPTION": "Echo, and more."}},
            }
        ]
    }
    services.write_text(tomli_w.dumps(document))  # the rug-pull
    refused = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=x")
    assert refused.returncode == 3
    shown = toolctl("import", "mcp", "probe", "-r", str(reg), "--update")
    assert shown.returncode == 3
    assert "probe.echo (echo): description changed" in shown.stdout
    assert "-Echo the text back." in shown.stdout and "+Echo, and more." in shown.stdout
    assert "--update --yes" in shown.stderr
    still = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=x")
    assert still.returncode == 3  # nothing rewritten without --yes
    accepted = toolctl("import", "mcp", "probe", "-r", str(reg), "--update", "--yes")
    assert accepted.returncode == 0, accepted.stderr
    ran = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=x")
    assert ran.returncode == 0, ran.stderr
    quiet = toolctl("import", "mcp", "probe", "-r", str(reg), "--update")
    assert quiet.returncode == 0 and "match the server" in quiet.stderr
    # the probe's other tools were never imported: said, so a new one is not missed
    assert "the server also offers" in quiet.stderr and "fail" in quiet.stderr


def test_update_of_a_hand_written_tool_drops_the_arguments_it_replaces(
    toolctl: Toolctl, tmp_path: Path, probe_argv: list[str]
) -> None:
    """`new tool --runtime mcp` writes [[tool.arguments]]; pinning it with `--update`
    writes the server's schema beside them, and they were left in the file, never read
    (its `--arg message=hi` then "missing required argument")."""
    reg = service_registry(tmp_path, {"probe": probe_argv})
    (reg / "mine.toml").write_text(
        '[[tool]]\nname = "mine"\nservice = "probe"\n[tool.mcp]\nname = "echo"\n'
        '[[tool.arguments]]\nname = "message"\nrequired = false\ndefault = "hi"\n'
    )
    accepted = toolctl("import", "mcp", "probe", "-r", str(reg), "--update", "--yes")
    assert accepted.returncode == 0, accepted.stderr
    assert "arguments" not in (reg / "mine.toml").read_text()
    assert "[tool.mcp.output_schema]" in (reg / "mine.toml").read_text()
    ran = toolctl("run", "mine", "-r", str(reg), "--arg", "text=pinned")
    assert (ran.returncode, ran.stdout.strip()) == (0, "pinned"), ran.stderr


def test_import_from_the_reference_time_server(
    toolctl: Toolctl, tmp_path: Path, time_argv: list[str]
) -> None:
    reg = service_registry(tmp_path, {"time": time_argv})
    done = toolctl("import", "mcp", "time", "-r", str(reg), "--json")
    assert done.returncode == 0, done.stderr
    names = {item["name"] for item in json.loads(done.stdout)["imported"]}
    assert "time.get_current_time" in names
    ran = toolctl("run", "time.get_current_time", "-r", str(reg), "--arg", "timezone=UTC", "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["data"]["timezone"] == "UTC"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["import", "mcp", "nope"], "service 'nope' not found"),
        (["import", "mcp", "a", "b"], "takes one SERVICE"),
        (["import", "mcp", "plain"], "not an MCP service"),
        (["import", "mcp", "plain", "--yes"], "--yes accepts the changes of --update"),
        (["import", "trustgraph", "x.json", "--prefix", "p"], "--prefix is for"),
        (["import", "mcp-config", "missing.json"], "no such file"),
    ],
)
def test_bad_import_input_is_one_line(
    toolctl: Toolctl, tmp_path: Path, args: list[str], message: str
) -> None:
    reg = write_files(
        tmp_path / "reg",
        {"s.toml": '[[service]]\nname = "plain"\n[service.http]\nurl = "http://127.0.0.1:9"\n'},
    )
    done = toolctl(*args, "-r", str(reg))
    assert done.returncode in (2, 4), done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("format", "argument"),
    [("mcp", "SERVICE"), ("mcp-config", "FILE..."), ("trustgraph", "FILE..."),
     ("chat2graph", "FILE..."), ("tool-agent", "FILE...")],
)  # fmt: skip
def test_import_without_its_argument_names_the_one_its_format_takes(
    toolctl: Toolctl, tmp_path: Path, format: str, argument: str
) -> None:
    """`import mcp` takes a SERVICE where the other formats take FILE...: the one missing
    is named (it said 'FILE...' for mcp too), and nothing is imported."""
    done = toolctl("import", format, "-r", str(tmp_path / "reg"))
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr == f"toolctl: error: missing argument '{argument}'; see 'toolctl import -h'\n"
    )
    assert not (tmp_path / "reg").exists() or not any((tmp_path / "reg").iterdir())


CLAUDE = {
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_literalsecret123"},
        },
        "remote api": {
            "type": "http",
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer sk-literal-456", "X-Team": "blue"},
        },
        "from-env": {"command": "srv", "env": {"KEY": "${MY_KEY}"}},
    }
}
VSCODE = {"servers": {"time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]}}}


def test_mcp_config_writes_services_without_secrets(toolctl: Toolctl, tmp_path: Path) -> None:
    claude = tmp_path / ".mcp.json"
    claude.write_text(json.dumps(CLAUDE))
    vscode = tmp_path / "mcp.json"
    vscode.write_text(json.dumps(VSCODE))
    reg = tmp_path / "reg"
    done = toolctl("import", "mcp-config", str(claude), str(vscode), "-r", str(reg))
    assert done.returncode == 0, done.stderr
    written = "".join(p.read_text() for p in sorted((reg / "services").glob("*.toml")))
    assert "ghp_literalsecret123" not in written and "sk-literal-456" not in written
    assert "${env:GITHUB_PERSONAL_ACCESS_TOKEN}" in written
    assert "${env:MY_KEY}" in written
    assert 'X-Team = "blue"' in written
    assert "export GITHUB_PERSONAL_ACCESS_TOKEN=" in done.stdout
    assert "export REMOTE_API_AUTHORIZATION=" in done.stdout
    assert "ghp_literalsecret123" not in done.stdout + done.stderr
    assert 'title = "remote api"' in written
    assert toolctl("check", "-r", str(reg)).returncode == 0
    listed = toolctl("list", "services", "-r", str(reg))
    assert "remote-api" in listed.stdout and "uvx mcp-server-time" in listed.stdout


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([1, 2], "not an MCP config"),
        ({"other": {}}, "no 'mcpServers'"),
        ({"mcpServers": {"a": 3}}, "server 'a' is not a JSON object"),
        ({"mcpServers": {"a": {"command": ["x"]}}}, "'command' is not a non-empty string"),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "'args' is not a list"),
        ({"mcpServers": {"a": {}}}, "neither 'command'"),
        ({"mcpServers": {"a": {"url": "ftp://h"}}}, "url must be absolute"),
    ],
)
def test_bad_mcp_configs_are_refused_in_one_line(
    toolctl: Toolctl, tmp_path: Path, document: object, message: str
) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps(document))
    done = toolctl("import", "mcp-config", str(config), "-r", str(tmp_path / "reg"))
    assert done.returncode in (2, 3), done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "reg/services").exists()


def test_trustgraph_mcp_items_and_tools_import_as_mcp_services_and_tools(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    dump = {
        "mcp": {
            "bank": json.dumps(
                {"remote-name": "get_balance", "url": "http://127.0.0.1:9/mcp", "auth-token": "tk-9"}
            )
        },
        "tool": {
            "balance": json.dumps(
                {"type": "mcp-tool", "name": "balance", "mcp-tool": "bank",
                 "description": "Balance", "arguments": [{"name": "account", "type": "string"}]}
            )
        },
    }  # fmt: skip
    (tmp_path / "tg.json").write_text(json.dumps(dump))
    done = toolctl("import", "trustgraph", str(tmp_path / "tg.json"), "-r", str(tmp_path / "reg"))
    assert done.returncode == 0, done.stderr
    assert "export BANK_AUTH_TOKEN" in done.stderr
    written = "".join(p.read_text() for p in sorted((tmp_path / "reg").rglob("*.toml")))
    assert "tk-9" not in written
    assert 'Authorization = "Bearer ${env:BANK_AUTH_TOKEN}"' in written
    assert 'name = "get_balance"' in written  # the server's name for it, from mcp/bank
    dry = toolctl(
        "run", "balance", "-r", str(tmp_path / "reg"), "--arg", "account=7", "--dry-run",
        "--json", env={"BANK_AUTH_TOKEN": "tk-9"},
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "tk-9" not in dry.stdout
    assert json.loads(dry.stdout)["request"]["params"]["name"] == "get_balance"


def test_chat2graph_mcp_groups_become_services(toolctl: Toolctl, tmp_path: Path) -> None:
    config = tmp_path / "c2g.yml"
    config.write_text(
        "tools:\n"
        "  - {name: FileTool, type: MCP, mcp_transport_config: {transport_type: STDIO,"
        " command: npx, args: [server-filesystem, ., --token, sbp_0123456789abcdefXYZ0123],"
        " env: {API_TOKEN: abc123, MODE: x}}}\n"
        "  - {name: Web, type: MCP, mcp_transport_config: {transport_type: SSE,"
        " url: 'http://h/sse?key=k1k2k3k4k5'}}\n"
        "  - {name: Sock, type: MCP, mcp_transport_config: {transport_type: WEBSOCKET}}\n"
        "actions:\n  - {name: act, tools: [{name: FileTool}]}\n"
    )
    done = toolctl("import", "chat2graph", str(config), "-r", str(tmp_path / "reg"))
    assert done.returncode == 0, done.stderr
    assert "left out MCP server 'Sock': WEBSOCKET" in done.stderr
    assert (
        "secrets were not copied; export before running the MCP servers' tools: "
        "FILE_TOOL_API_TOKEN, FILE_TOOL_TOKEN, WEB_KEY" in done.stderr
    )  # one line for all of them
    service = (tmp_path / "reg/services/FileTool.toml").read_text()
    assert "abc123" not in service and 'MODE = "x"' in service
    assert "sbp_" not in service and '"${env:FILE_TOOL_TOKEN}"' in service
    web = (tmp_path / "reg/services/Web.toml").read_text()
    assert 'transport = "sse"' in web and "k1k2k3" not in web


def test_chat2graph_mcp_servers_keep_their_headers_and_chat2graph_s_defaults(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A Chat2Graph MCP server's headers (an Authorization among them) and timeout come
    across, each secret its own ${env:...}; a STDIO server without a command runs npx and
    one by URL without a url is at localhost:8931, as Chat2Graph has them (the headers were
    dropped without a word, and the stdio server was left out as if stdio were unknown)."""
    config = tmp_path / "c2g.yml"
    config.write_text(
        "tools:\n"
        "  - {name: Remote, type: MCP, mcp_transport_config: {transport_type: STREAMABLE_HTTP,"
        " url: 'http://localhost:9000/mcp', timeout: 30,"
        " headers: {Authorization: 'Bearer sk-live-abcdef1234567890', X-Tenant: acme}}}\n"
        "  - {name: Playwright, type: MCP, mcp_transport_config: {transport_type: STDIO,"
        " args: ['@playwright/mcp@latest']}}\n"
        "  - {name: Local, type: MCP, mcp_transport_config: {transport_type: SSE}}\n"
        "actions:\n  - {name: act, desc: d, tools: [{name: Remote}]}\n"
    )
    done = toolctl("import", "chat2graph", str(config), "-r", str(tmp_path / "reg"))
    assert done.returncode == 0, done.stderr
    assert "left out" not in done.stderr and "sk-live" not in done.stderr
    remote = tomllib.loads((tmp_path / "reg/services/Remote.toml").read_text())
    mcp = remote["service"][0]["mcp"]
    assert mcp["headers"] == {
        "Authorization": "Bearer ${env:REMOTE_AUTHORIZATION}", "X-Tenant": "acme"
    }  # fmt: skip
    assert mcp["connect_timeout"] == 30 and "REMOTE_AUTHORIZATION" in done.stderr
    playwright = tomllib.loads((tmp_path / "reg/services/Playwright.toml").read_text())
    assert playwright["service"][0]["mcp"]["command"] == ["npx", "@playwright/mcp@latest"]
    local = tomllib.loads((tmp_path / "reg/services/Local.toml").read_text())
    assert local["service"][0]["mcp"]["url"] == "http://localhost:8931"


def test_check_live_reports_drift_vanished_new_and_unreachable(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    argv = [sys.executable, str(PROBE)]
    reg = service_registry(tmp_path, {"probe": argv})
    assert (
        toolctl(
            "import", "mcp", "probe", "-r", str(reg), "--tool", "echo", "--tool", "fail"
        ).returncode
        == 0
    )
    clean = toolctl("check", "--live", "-r", str(reg))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "offers" in clean.stdout and "not imported" in clean.stdout  # hang, picture...
    text = (reg / "tools/probe.fail.toml").read_text()
    (reg / "tools/probe.fail.toml").write_text(text.replace('name = "fail"', 'name = "gone"'))
    document = {
        "service": [
            {"name": "probe", "mcp": {"command": argv, "env": {"PROBE_DESCRIPTION": "Changed."}}},
            {"name": "down", "mcp": {"command": ["/nonexistent/server"]}},
        ]
    }
    (reg / "services.toml").write_text(tomli_w.dumps(document))
    done = toolctl("check", "--live", "-r", str(reg))
    assert done.returncode == 3
    out = done.stdout
    assert (
        "error: MCP tool 'echo' of service 'probe' changed since it was pinned (description)" in out
    )
    assert "error: MCP tool 'gone' of service 'probe' vanished" in out
    assert "warning: MCP service 'down' is unreachable" in out
    strict = toolctl("check", "--live", "--strict", "-r", str(reg), "--json")
    problems = json.loads(strict.stdout)["problems"]
    assert {p["code"]: p["severity"] for p in problems}["mcp-unreachable"] == "error"


def test_disabled_tools_and_timeout_of_the_service_apply_to_import_mcp(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    document = {
        "service": [
            {
                "name": "probe",
                "mcp": {
                    "command": ["env", "PROBE_DESCRIPTION=${env:DESC}", sys.executable, str(PROBE)],
                    "disabled_tools": ["fail"],
                    "tool_timeout": 12,
                },
            },
            {"name": "off", "state": "disabled", "mcp": {"command": ["/nonexistent/server"]}},
            {"name": "only", "mcp": {"command": [sys.executable, str(PROBE)], "enabled_tools": []}},
        ]
    }
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/services.toml").write_text(tomli_w.dumps(document))
    reg = str(tmp_path / "reg")
    env = {"DESC": "Said by an argument."}  # ${env:} in a command item is filled in
    done = toolctl("import", "mcp", "probe", "-r", reg, "--tool", "echo", "--tool", "fail", env=env)
    assert done.returncode == 0, done.stderr
    assert "1 tool(s) written disabled, as service 'probe' says" in done.stderr
    fail = (tmp_path / "reg/tools/probe.fail.toml").read_text()
    assert 'state = "disabled"' in fail and "timeout = 12" in fail
    echo = (tmp_path / "reg/tools/probe.echo.toml").read_text()
    assert 'state = "' not in echo and 'description = "Said by an argument."' in echo
    refused = toolctl("run", "probe.fail", "-r", reg, "--arg", "message=x", env=env)
    assert refused.returncode == 2 and "is disabled, not active" in refused.stderr
    forced = toolctl(
        "run", "probe.fail", "-r", reg, "--arg", "message=x", "--allow-staging", env=env
    )
    assert forced.returncode == 1  # it ran, and failed as the probe's fail tool does
    assert toolctl("run", "probe.echo", "-r", reg, "--arg", "text=y", env=env).stdout == "y\n"
    only = toolctl("import", "mcp", "only", "-r", reg, "--tool", "echo", "--json")
    assert only.returncode == 0, only.stderr
    assert 'state = "disabled"' in (tmp_path / "reg/tools/only.echo.toml").read_text()
    live = toolctl("check", "--live", "-r", reg, env=env)
    assert "'off'" not in live.stdout  # a disabled service is not connected to


def test_a_tool_on_a_disabled_service_does_not_run(toolctl: Toolctl, tmp_path: Path) -> None:
    document = {
        "service": [{"name": "off", "state": "disabled", "mcp": {"command": ["x"]}}],
        "tool": [{"name": "off.t", "service": "off", "mcp": {"name": "t"}}],
    }
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/all.toml").write_text(tomli_w.dumps(document))
    done = toolctl("run", "off.t", "-r", str(tmp_path / "reg"))
    assert done.returncode == 2
    assert "runs on service 'off', which is disabled" in done.stderr


def test_import_mcp_of_a_file_says_what_takes_one(toolctl: Toolctl, tmp_path: Path) -> None:
    """`export --format mcp > tools.json; import mcp tools.json` reads as a round trip: the
    'not found' says the argument is a file, and where a client's config goes."""
    (tmp_path / "tools.json").write_text("{}")
    done = toolctl("import", "mcp", "tools.json", "-r", str(tmp_path))
    assert (done.returncode, done.stderr) == (
        4,
        "toolctl: error: service 'tools.json' not found; tools.json is a file: import mcp "
        "takes a registered MCP service's name; a client's config (mcpServers) is 'toolctl "
        "import mcp-config FILE'\n",
    )


def test_a_tool_the_server_lists_twice_is_refused_the_others_imported(
    toolctl: Toolctl, tmp_path: Path, probe_argv: list[str]
) -> None:
    """A server that lists one name twice: the first is imported with all the others, the
    second refused (exit 3, listed), rather than the whole import refused."""
    reg = service_registry(
        tmp_path, {"probe": probe_argv}, env={"probe": {"PROBE_DUPLICATE": "echo"}}
    )
    done = toolctl("import", "mcp", "probe", "-r", str(reg))
    assert done.returncode == 3, done.stderr
    assert "'echo': listed twice by the server" in done.stderr
    assert (reg / "tools/probe.echo.toml").is_file() and (reg / "tools/probe.fail.toml").is_file()
    # the first is the tool everywhere: a run and `check --live` took the last, and said
    # it "changed since it was pinned"
    ran = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=first")
    assert (ran.returncode, ran.stdout.strip()) == (0, "first"), ran.stderr
    live = toolctl("check", "--live", "-r", str(reg))
    assert "changed since it was pinned" not in live.stdout + live.stderr


def test_a_nul_in_a_servers_command_is_one_line_not_a_crash(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A client config whose command holds a NUL is imported as written; connecting to it
    was exit 70 (ValueError: embedded null byte): one line, exit 2."""
    (tmp_path / "nul.json").write_text('{"mcpServers": {"a": {"command": "x\\u0000y"}}}')
    reg = tmp_path / "reg"
    reg.mkdir()
    assert toolctl("import", "mcp-config", "nul.json", "-r", str(reg)).returncode == 0
    done = toolctl("import", "mcp", "a", "-r", str(reg))
    assert done.returncode == 2, done.stderr
    assert done.stderr.endswith(
        "MCP server 'a' cannot start: its command, environment or cwd holds a NUL character\n"
    ), done.stderr


def test_a_tool_whose_input_schema_is_not_an_object_is_refused_the_others_imported(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A listed tool whose inputSchema is a string was imported as a tool of no arguments
    (every call one its server refuses), without a word: refused, saying why (exit 3), and
    the server's other tools imported all the same. So are one whose text is not Unicode
    and one nested past reading (each made the whole import exit 70); annotations of the
    wrong type are left out (kept, they failed `mcp serve`'s whole `tools/list`). A call
    answered with a lone surrogate (exit 70, and `mcp serve` died of it) gets its escape."""
    from tests.mcp.conftest import BARE

    service = {"name": "b", "mcp": {"command": [sys.executable, str(BARE)],
                                    "env": {"BARE_CALL": "malformed"}}}  # fmt: skip
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/b.toml").write_text(tomli_w.dumps({"service": [service]}))
    done = toolctl("import", "mcp", "b", "-r", str(tmp_path / "reg"))
    assert done.returncode == 3, done.stderr
    assert "'broken': its inputSchema is not a JSON object" in done.stderr
    assert "'lone': it holds text that is not valid Unicode (a lone surrogate)" in done.stderr
    assert "'deep': it nests deeper than 64 levels" in done.stderr
    # a definition of megabytes (every call checked against it took ~20 s)
    assert "'huge': its definition is 1,28" in done.stderr
    assert "bytes, more than a tool's 262,144" in done.stderr
    # entries that are no tools are refused each (they refused the whole list, exit 5)
    assert "is not a tool: its name is int, not text" in done.stderr
    assert "is not a tool: it is a str, not an object" in done.stderr
    assert (tmp_path / "reg/tools/b.t.toml").is_file()
    for refused in ("broken", "lone", "deep", "huge"):
        assert not (tmp_path / f"reg/tools/b.{refused}.toml").exists()
    annotated = tomllib.loads((tmp_path / "reg/tools/b.annotated.toml").read_text())
    assert annotated["tool"][0]["mcp"]["annotations"] == {"readOnlyHint": True}
    ran = toolctl("run", "b.t", "--json", "-r", str(tmp_path / "reg"))
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["output"] == "bad \\ud800"
