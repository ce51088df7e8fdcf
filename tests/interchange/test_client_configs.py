"""`toolctl import mcp-config` on client configs shaped like the real ones (written for these
tests, one per dialect, in ``data/clients``): every dialect read, no secret copied wherever
it stood, settings kept, client variables resolved, nothing dropped without a word."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Toolctl

DATA = Path(__file__).parent / "data/clients"
FILES = sorted(p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file())
SHAPES_ONLY = [
    "AKIAIOSFODNN7EXAMPLE",  # an AWS key id: AWS_ACCESS_KEY_ID names an id, the shape says key
    "Zx9Kq2Lm8Np4Rt6Vw1Yb3Cd5Ef7Gh0Jk",  # entropy, after a flag ("--license") with no hint
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",  # a JWT in a header ("X-Session") with no hint
    "BSAtestonlyQw3rTy7UiOp9AsDfGhJkL0",
]


def secrets_in(text: str) -> set[str]:
    """Every test secret in a file: the TESTONLY tokens and the ones above."""
    found = set(re.findall(r"[A-Za-z0-9_.:-]*TESTONLY[A-Za-z0-9_-]*", text))
    return found | {s for s in SHAPES_ONLY if s in text}


@pytest.fixture
def clients(tmp_path: Path) -> Path:
    shutil.copytree(DATA, tmp_path / "clients")
    return tmp_path / "clients"


def imported(toolctl: Toolctl, reg: Path, *files: Path) -> tuple[Any, dict[str, dict[str, Any]]]:
    done = toolctl("import", "mcp-config", *map(str, files), "-r", str(reg), "--json")
    services = {}
    for path in sorted((reg / "services").glob("*.toml")):
        for table in tomllib.loads(path.read_text())["service"]:
            services[table["name"]] = table
    return done, services


def test_every_dialect_imports_and_no_secret_is_written(
    toolctl: Toolctl, clients: Path, tmp_path: Path
) -> None:
    planted = set().union(*(secrets_in((DATA / f).read_text()) for f in FILES))
    assert len(planted) >= 25  # one in each place: env, headers, args, URLs, docker -e...
    for relative in FILES:
        reg = tmp_path / "reg" / relative.replace("/", "_")
        done = toolctl("import", "mcp-config", str(clients / relative), "-r", str(reg))
        assert done.returncode in (0, 3), done.stderr
        assert "Traceback" not in done.stderr
        written = "".join(p.read_text() for p in reg.rglob("*.toml"))
        assert written, relative
        shown = written + done.stdout + done.stderr
        leaked = {s for s in planted if s in shown}
        assert not leaked, f"{relative}: {leaked}"
        assert "testonly" not in shown.lower(), relative  # not even a part of one
        assert toolctl("check", "-r", str(reg)).returncode == 0, relative


def test_claude_desktop_secrets_by_name_and_shape_each_get_their_own_variable(
    toolctl: Toolctl, clients: Path, tmp_path: Path
) -> None:
    done, services = imported(
        toolctl, tmp_path / "reg", clients / "claude-desktop/claude_desktop_config.json"
    )
    assert done.returncode == 0, done.stderr
    env = services["gdrive"]["mcp"]["env"]
    assert env["NODE_ENV"] == "production"  # a setting stays a value
    assert env["GOOGLE_CLIENT_ID"].endswith(".apps.googleusercontent.com")
    # two servers, two different secrets under one key: two variables
    assert env["GOOGLE_CLIENT_SECRET"] == "${env:GDRIVE_GOOGLE_CLIENT_SECRET}"
    gmail = services["gmail"]["mcp"]["env"]
    assert gmail["GOOGLE_CLIENT_SECRET"] == "${env:GMAIL_GOOGLE_CLIENT_SECRET}"
    assert gmail["FASTMCP_LOG_LEVEL"] == "ERROR"
    assert services["supabase"]["mcp"]["command"][-2:] == [
        "--access-token",
        "${env:SUPABASE_ACCESS_TOKEN}",
    ]
    assert "--project-ref=abcdefghijklmnopqrst" in services["supabase"]["mcp"]["command"]
    docker = services["github-docker"]["mcp"]["command"]
    assert (
        "GITHUB_PERSONAL_ACCESS_TOKEN=${env:GITHUB_DOCKER_GITHUB_PERSONAL_ACCESS_TOKEN}" in docker
    )
    assert "SLACK_BOT_TOKEN=${env:GITHUB_DOCKER_SLACK_BOT_TOKEN}" in docker
    assert "GITHUB_TOOLSETS" in docker  # -e NAME alone passes a variable through: kept
    postgres = services["postgres"]["mcp"]["command"][-1]
    assert postgres == "postgresql://analyst:${env:POSTGRES_PASSWORD}@localhost:5432/sales"
    aws = services["aws-docs"]["mcp"]["env"]
    assert aws == {
        "AWS_ACCESS_KEY_ID": "${env:AWS_DOCS_AWS_ACCESS_KEY_ID}",
        "AWS_REGION": "eu-west-1",
        "KEY_PATH": "/home/me/.ssh/id_ed25519",
    }
    assert services["exa"]["mcp"]["command"][-2:] == [
        "--tools=web_search",
        "--api-key=${env:EXA_API_KEY}",
    ]
    assert services["remote-bridge"]["mcp"]["command"][-2:] == [
        "--header",
        "Authorization: Bearer ${env:REMOTE_BRIDGE_AUTHORIZATION}",
    ]
    report = json.loads(done.stdout)
    assert "GITHUB_PERSONAL_ACCESS_TOKEN" in report["export"]
    assert len(report["export"]) == 11


def test_one_summary_line_lists_the_variables_to_set(
    toolctl: Toolctl, clients: Path, tmp_path: Path
) -> None:
    done = toolctl(
        "import", "mcp-config", str(clients / "project/.mcp.json"), "-r", str(tmp_path / "r")
    )
    assert done.returncode == 0, done.stderr
    summary = [line for line in done.stderr.splitlines() if "set before running" in line]
    assert summary == [
        "toolctl: set before running their tools (not copied): CONTEXT7_API_KEY "
        "DATABASE_URL LINEAR_AUTHORIZATION SENTRY_TOKEN"
    ]
    assert "export SENTRY_TOKEN=...   # server 'sentry', header Authorization" in done.stdout


def test_claude_code_references_keep_the_non_secret_parts(
    toolctl: Toolctl, clients: Path, tmp_path: Path
) -> None:
    done, services = imported(toolctl, tmp_path / "reg", clients / "project/.mcp.json")
    assert done.returncode == 0, done.stderr
    sentry = services["sentry"]["mcp"]
    assert sentry["headers"] == {"Authorization": "Bearer ${env:SENTRY_TOKEN}"}
    assert sentry["transport"] == "http"
    linear = services["linear"]["mcp"]
    assert linear["transport"] == "sse"
    assert linear["headers"]["Authorization"] == "Bearer ${env:LINEAR_AUTHORIZATION}"
    assert services["db"]["mcp"]["command"][-1] == "${env:DATABASE_URL}"
    assert "has a default toolctl does not apply; DATABASE_URL must be set" in done.stderr
    assert services["db"]["mcp"]["env"] == {"LOG_LEVEL": "info"}


def test_vscode_jsonc_inputs_and_workspace_folder(
    toolctl: Toolctl, clients: Path, tmp_path: Path
) -> None:
    done, services = imported(toolctl, tmp_path / "reg", clients / "project/.vscode/mcp.json")
    assert done.returncode == 0, done.stderr
    github = services["github"]["mcp"]
    assert github["headers"] == {"Authorization": "Bearer ${env:GITHUB_TOKEN}"}
    assert services["perplexity"]["mcp"]["env"] == {"PERPLEXITY_API_KEY": "${env:PERPLEXITY_KEY}"}
    files = services["files"]["mcp"]["command"]
    assert files[-1] == str(clients / "project")  # the folder holding .vscode/
    assert services["legacy"]["mcp"] == {"url": "http://localhost:8931/sse", "transport": "sse"}
    text = toolctl(
        "import", "mcp-config", str(clients / "project/.vscode/mcp.json"),
        "-r", str(tmp_path / "again"),
    ).stdout  # fmt: skip
    assert (
        "export GITHUB_TOKEN=...   # server 'github', header Authorization: VS Code input "
        "'github-token' (a password): GitHub Personal Access Token" in text
    )
    assert "'envFile' not imported: toolctl does not read env files" in done.stderr
    assert "${input:" not in (tmp_path / "reg/services/github.toml").read_text()


def test_gemini_url_is_sse_and_http_url_streamable(
    toolctl: Toolctl, clients: Path, tmp_path: Path
) -> None:
    done, services = imported(toolctl, tmp_path / "reg", clients / "project/.gemini/settings.json")
    assert done.returncode == 0, done.stderr
    assert "read as Gemini CLI" in done.stderr
    assert services["legacy-sse"]["mcp"] == {
        "url": "http://localhost:8080/sse",
        "transport": "sse",
        "tool_timeout": 30.0,  # 30000 ms
    }
    remote = services["remote"]["mcp"]
    assert remote["transport"] == "http"
    assert remote["headers"] == {"Authorization": "Bearer ${env:REMOTE_TOKEN}"}
    assert remote["enabled_tools"] == ["fetch", "search"]
    local = services["local"]
    assert local["description"] == "Project tools"
    assert local["mcp"]["env"] == {
        "API_KEY": "${env:MY_API_TOKEN}",
        "DATABASE_URL": "sqlite:///data.db",
    }
    assert local["mcp"]["cwd"] == str(clients / "project/mcp-servers/python")
    assert local["mcp"]["disabled_tools"] == ["dangerous_tool"]
    assert "'trust' not imported: toolctl never asks before a call" in done.stderr


def test_codex_toml(toolctl: Toolctl, clients: Path, tmp_path: Path) -> None:
    done, services = imported(toolctl, tmp_path / "reg", clients / "home/.codex/config.toml")
    assert done.returncode == 0, done.stderr
    context7 = services["context7"]["mcp"]
    assert context7["connect_timeout"] == 20 and context7["tool_timeout"] == 45
    assert context7["env"] == {"CONTEXT7_API_KEY": "${env:CONTEXT7_API_KEY}", "LOG": "warn"}
    assert services["figma"]["mcp"]["headers"] == {
        "X-Figma-Region": "us-east-1",
        "X-Team": "${env:FIGMA_TEAM}",
        "Authorization": "Bearer ${env:FIGMA_OAUTH_TOKEN}",
    }
    chrome = services["chrome_devtools"]
    assert chrome["state"] == "disabled"
    assert chrome["mcp"]["enabled_tools"] == ["open", "screenshot"]
    assert chrome["mcp"]["disabled_tools"] == ["open"]
    assert services["shell"]["mcp"]["env"] == {"LANG": "${env:LANG}"}
    assert services["shell"]["mcp"]["connect_timeout"] == 5


def test_continue_yaml(toolctl: Toolctl, clients: Path, tmp_path: Path) -> None:
    path = clients / "project/.continue/mcpServers/playwright.yaml"
    done, services = imported(toolctl, tmp_path / "reg", path)
    assert done.returncode == 0, done.stderr
    assert services["browser-search"]["title"] == "Browser search"
    assert services["Tavily"]["mcp"]["env"] == {"TAVILY_API_KEY": "${env:TAVILY_API_KEY}"}
    docs = services["remote-docs"]["mcp"]
    assert docs["transport"] == "sse"
    assert docs["headers"] == {"Authorization": "Bearer ${env:REMOTE_DOCS_AUTHORIZATION}"}
    assert services["Streaming"]["mcp"]["connect_timeout"] == 20  # 20000 ms


def test_zed_context_servers_old_and_new(toolctl: Toolctl, clients: Path, tmp_path: Path) -> None:
    done, services = imported(toolctl, tmp_path / "reg", clients / "project/.zed/settings.json")
    assert done.returncode == 0, done.stderr
    assert services["old-style"]["state"] == "disabled"
    assert services["old-style"]["mcp"]["command"] == ["/usr/local/bin/my-context-server", "run"]
    assert services["old-style"]["mcp"]["env"] == {"SECRET_KEY": "${env:OLD_STYLE_SECRET_KEY}"}
    assert "left out server 'postgres-context-server': a Zed extension starts it" in done.stderr
    assert services["remote"]["mcp"]["url"] == "https://zed.example.com/mcp"


def test_cline_roo_kiro_windsurf_states_tools_and_timeouts(
    toolctl: Toolctl, clients: Path, tmp_path: Path
) -> None:
    done, roo = imported(toolctl, tmp_path / "roo", clients / "project/.roo/mcp.json")
    assert done.returncode == 0, done.stderr
    assert roo["local-tools"]["mcp"]["tool_timeout"] == 120  # seconds in Roo Code
    assert roo["local-tools"]["mcp"]["disabled_tools"] == ["delete_file"]
    assert roo["local-tools"]["mcp"]["cwd"] == str(clients / "project/servers/local-tools")
    assert roo["remote"]["state"] == "disabled"
    assert (
        "'alwaysAllow' not imported" in done.stderr and "'watchPaths' not imported" in done.stderr
    )
    done, kiro = imported(toolctl, tmp_path / "kiro", clients / "project/.kiro/settings/mcp.json")
    assert kiro["api-server"]["mcp"]["tool_timeout"] == 90  # milliseconds in Kiro
    assert kiro["api-server"]["mcp"]["headers"]["X-Custom-Header"] == "value"
    assert kiro["aws-docs"]["mcp"]["env"]["AWS_PROFILE"] == "${env:AWS_PROFILE}"
    assert "'autoApprove' not imported" in done.stderr
    path = clients / "home/.codeium/windsurf/mcp_config.json"
    done, windsurf = imported(toolctl, tmp_path / "windsurf", path)
    assert windsurf["github"]["state"] == "disabled"
    assert windsurf["github"]["mcp"]["disabled_tools"] == ["delete_repository", "push_files"]
    assert windsurf["figma"]["mcp"]["url"] == "https://mcp.figma.com/mcp"
    assert "transport" not in windsurf["figma"]["mcp"]  # serverUrl: either, found at run time


def test_one_bad_server_never_refuses_the_others(
    toolctl: Toolctl, clients: Path, tmp_path: Path
) -> None:
    done, services = imported(toolctl, tmp_path / "reg", clients / "cline/cline_mcp_settings.json")
    assert done.returncode == 3
    assert sorted(services) == ["events", "remote", "weather"]
    assert services["weather"]["mcp"]["tool_timeout"] == 120
    assert services["events"]["mcp"] == {
        "url": "https://cline.example.com/sse?token=${env:EVENTS_TOKEN}",
        "transport": "sse",
    }
    assert services["remote"]["mcp"]["transport"] == "http"
    assert "server 'broken': neither 'command' (stdio) nor 'url'" in done.stderr
    assert "1 server(s) not imported (3 imported)" in done.stderr


def test_cursor_urls_keep_what_is_not_secret(
    toolctl: Toolctl, clients: Path, tmp_path: Path
) -> None:
    done, services = imported(toolctl, tmp_path / "reg", clients / "project/.cursor/mcp.json")
    assert done.returncode == 0, done.stderr
    assert services["smithery-exa"]["mcp"]["url"] == (
        "https://server.smithery.ai/exa/mcp?api_key=${env:SMITHERY_EXA_API_KEY}"
        "&profile=quiet-owl-3x1"
    )
    assert services["zapier"]["mcp"]["url"] == (
        "https://actions.zapier.com/mcp/${env:ZAPIER_SECRET}/sse"
    )
    notes = services["notes"]["mcp"]
    assert notes["command"][1] == str(clients / "project/tools/notes-server.js")
    assert notes["command"][2:] == ["--license", "${env:NOTES_LICENSE}"]
    assert notes["env"]["NOTES_DIR"] == str(clients / "project/notes")
    assert services["jwt-api"]["mcp"]["headers"] == {"X-Session": "${env:JWT_API_X_SESSION}"}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("mcp.json", "{ not json at all", "tried JSON and JSONC (Claude Desktop"),
        ("config.toml", "[mcp_servers.x\ncommand=", "TOML (Codex) and YAML (Continue)"),
        ("c.yaml", "mcpServers: [\n", "not an MCP client config toolctl can read"),
        ("settings.json", '{"theme": "x"}', "'context_servers' (Zed) or 'mcp_servers' (Codex)"),
    ],
)
def test_an_unreadable_file_is_one_line_naming_what_was_tried(
    toolctl: Toolctl, tmp_path: Path, name: str, text: str, message: str
) -> None:
    (tmp_path / name).write_text(text)
    done = toolctl("import", "mcp-config", str(tmp_path / name), "-r", str(tmp_path / "reg"))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert done.stderr.count("toolctl: error:") == 1 and "Traceback" not in done.stderr


def test_claude_code_user_file_with_project_servers(
    toolctl: Toolctl, clients: Path, tmp_path: Path
) -> None:
    done, services = imported(toolctl, tmp_path / "reg", clients / "home/.claude.json")
    assert done.returncode == 0, done.stderr
    assert sorted(services) == ["memory", "stripe"]
    assert services["memory"]["mcp"]["command"][0] == "npx"  # the user-scope one came first
    assert "left out server 'memory' of project /home/me/work/api: the name is taken" in (
        done.stderr
    )
    assert services["stripe"]["mcp"]["command"][-1] == "--api-key=${env:STRIPE_API_KEY}"


def test_a_client_placeholder_left_in_a_descriptor_is_an_error(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """What the importer resolves, `check` refuses when it is written by hand (or was left
    by an older import): the server would receive '${input:token}' as text."""
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/s.toml").write_text(
        '[[service]]\nname = "gh"\n[service.mcp]\nurl = "https://h/mcp"\n'
        'headers = { Authorization = "Bearer ${input:token}" }\n'
    )
    done = toolctl("check", "-r", str(tmp_path / "reg"))
    assert done.returncode == 3
    assert "'${input:token}' is an MCP client's placeholder, which toolctl does not fill" in (
        done.stdout + done.stderr
    )


def test_the_same_server_in_two_clients_configs_is_imported_once(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """The how-to's own `import mcp-config ~/.cursor/mcp.json .vscode/mcp.json`: a server
    in both, the same, is imported once (the whole import was refused); one of that name
    that differs is refused alone, and every other server is imported."""
    files = {
        "c.json": {"dup": {"command": "echo"}, "a1": {"command": "echo"}},
        "d.json": {"dup": {"command": "echo"}, "b1": {"command": "echo"}},
        "e.json": {"DUP": {"command": "cat"}, "e1": {"command": "echo"}},
    }
    for name, servers in files.items():
        (tmp_path / name).write_text(json.dumps({"mcpServers": servers}))
    done, services = imported(toolctl, tmp_path / "reg", *(tmp_path / n for n in files))
    assert done.returncode == 3, done.stderr
    assert sorted(services) == ["a1", "b1", "dup", "e1"]
    assert services["dup"]["mcp"]["command"] == ["echo"]
    assert "server 'dup' is also in" in done.stderr
    assert "e.json: server 'DUP' differs from 'dup' of c.json" in done.stderr


def test_a_remote_server_one_file_types_and_the_other_does_not_is_the_same(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """Cursor writes no `type` for a remote server, VS Code needs `"type": "http"`: the same
    server, imported once with the transport named; one that differs says in what."""
    remote = {"url": "https://mcp.example/mcp"}
    (tmp_path / "cursor.json").write_text(json.dumps({"mcpServers": {"remote": remote}}))
    vscode = {"servers": {"remote": {**remote, "type": "http"}}}
    (tmp_path / "mcp.json").write_text(json.dumps(vscode))
    other = {"mcpServers": {"remote": {"url": "https://elsewhere.example/mcp"}}}
    (tmp_path / "other.json").write_text(json.dumps(other))
    files = [tmp_path / n for n in ("cursor.json", "mcp.json")]
    done, services = imported(toolctl, tmp_path / "reg", *files)
    assert done.returncode == 0, done.stderr
    assert services["remote"]["mcp"]["transport"] == "http"
    clash, _ = imported(toolctl, tmp_path / "reg2", files[0], tmp_path / "other.json")
    assert clash.returncode == 3
    assert "differs from 'remote' of" in clash.stderr and "(mcp.url)" in clash.stderr


def test_a_refused_servers_secret_is_not_asked_for(toolctl: Toolctl, tmp_path: Path) -> None:
    """The server refused (another of its name differs) had its secret given a variable
    before it was refused: only the variables of the servers imported are to be set."""
    first = {"api": {"command": "echo", "env": {"API_KEY": "sk-first-0123456789abcdef"}}}
    second = {"api": {"command": "cat", "env": {"API_KEY": "sk-second-0123456789abcdef"}}}
    (tmp_path / "a.json").write_text(json.dumps({"mcpServers": first}))
    (tmp_path / "b.json").write_text(json.dumps({"mcpServers": second}))
    done = toolctl("import", "mcp-config", "a.json", "b.json", "-r", "reg", "--json")
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["export"] == ["API_KEY"]
    assert "API_KEY_2" not in done.stdout + done.stderr


def test_a_configs_escape_sequences_never_reach_the_terminal(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """The `export NAME=...   # where` lines on stdout carry a server's name, an env key and
    a VS Code input's description, all from the file: an ESC, a BEL (an OSC 52 clipboard
    write) and a bidirectional override are visible escapes there, as on stderr."""
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "inputs": [
                    {"type": "promptString", "id": "t", "description": "x\x1b]52;c;SGk=\x07 \u202e"}
                ],
                "servers": {
                    "s\x1b[2Jx": {"command": "a", "env": {"K\x1b[1mEY": "${input:t}"}},
                    "n": {
                        "command": "b",
                        "env": {"X\nrm -rf ~ #_TOKEN": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
                    },
                },
            }
        )
    )
    done = toolctl("import", "mcp-config", str(config), "-r", str(tmp_path / "reg"))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout
    assert "\u202e" not in done.stdout
    assert done.stdout.splitlines()[1] == (
        "export T=...   # server 's\\x1b[2Jx', env K\\x1b[1mEY: VS Code input 't': "
        "x\\x1b]52;c;SGk=\\x07 \\u202e"
    )
    assert len(done.stdout.splitlines()) == 2  # a newline in a name is no line of its own
    assert "env X\\nrm -rf ~ #_TOKEN" in done.stdout.splitlines()[0]


def test_a_project_server_named_by_a_relative_path_is_started_in_its_project(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """Claude Code starts a project's servers in the project: `python server.py` was
    imported without a cwd, and ran only from that folder (the file not found elsewhere)."""
    project = tmp_path / "project"
    (project / "dist").mkdir(parents=True)
    (project / "server.py").write_text("")
    (project / "dist/index.js").write_text("")
    servers = {
        "rel": {"command": "python3", "args": ["server.py"]},
        "dotted": {"command": "node", "args": ["./dist/index.js", "--port", "1"]},
        "npx": {"command": "npx", "args": ["-y", "@upstash/context7-mcp"]},
        "given": {"command": "python3", "args": ["server.py"], "cwd": "dist"},
    }
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    done, services = imported(toolctl, tmp_path / "reg", project / ".mcp.json")
    assert done.returncode == 0, done.stderr
    here = str(project.resolve())
    assert services["rel"]["mcp"]["cwd"] == here
    assert services["dotted"]["mcp"]["cwd"] == here
    assert "cwd" not in services["npx"]["mcp"]  # nothing of the project's named
    assert services["given"]["mcp"]["cwd"] == str((project / "dist").resolve())


def test_a_server_whose_name_the_registry_holds_otherwise_leaves_the_others_imported(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """Importing a config again after a server was added to it: one server changed since
    (or named as a registered service) refused the whole file, the new one with it."""
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps({"mcpServers": {"a": {"command": "echo", "args": ["1"]}}}))
    servers = {"a": {"command": "echo", "args": ["2"]}, "b": {"command": "echo", "args": ["3"]}}
    second.write_text(json.dumps({"mcpServers": servers}))
    assert imported(toolctl, tmp_path / "reg", first)[0].returncode == 0
    done, services = imported(toolctl, tmp_path / "reg", second)
    assert done.returncode == 3, done.stderr
    assert sorted(services) == ["a", "b"] and services["a"]["mcp"]["command"][-1] == "1"
    refused = json.loads(done.stdout)["refused"]
    assert len(refused) == 1 and refused[0].startswith("server 'a': service 'a' is already")


def test_what_crashed_an_import_is_one_unreadable_server_and_the_others_import(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A URL whose host is no name (`api..example.com`, a label over 63 characters) or that
    holds a control character, a one-string command whose quote never closes, a 400-digit
    timeout, a cwd under an unknown user's home or holding a NUL: each server is listed as
    not imported (exit 3) and the others import; they crashed the whole import (exit 70)."""
    servers = {
        "good": {"command": "uvx", "args": ["srv"]},
        "dots": {"url": "https://api..example.com/mcp"},
        "long": {"url": f"http://{'a' * 64}.example/mcp"},
        "ctl": {"url": "http://127.0.0.1:9/mcp\x01"},
        "quote": {"command": "npx -y srv --api-key 'abc"},
        "huge": {"command": "srv", "timeout": 10**400},
        "nul": {"command": "srv", "cwd": "a\x00b"},
        "tilde": {"command": "srv", "cwd": "~nosuchuser-xyz/srv"},
    }
    text = json.dumps({"mcpServers": servers}).replace(str(10**400), "1" + "0" * 400)
    (tmp_path / "c.json").write_text(text)
    done = toolctl("import", "mcp-config", "c.json", "-r", "reg")
    assert done.returncode == 3, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    imported = sorted(p.stem for p in (tmp_path / "reg/services").glob("*.toml"))
    assert imported == ["good", "tilde"]  # ~nosuchuser-xyz is a directory name like another
    for name in ("dots", "long", "ctl", "quote", "huge", "nul"):
        assert f"server '{name}'" in done.stderr, name
    listed = toolctl("list", "-r", "~nosuchuser-xyz/reg")
    assert listed.returncode == 2 and "internal error" not in listed.stderr
