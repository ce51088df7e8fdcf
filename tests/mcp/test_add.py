"""`toolctl mcp add NAME -- COMMAND` / `--url` (toolctl/interchange/mcp_add.py) with the
sample MCP server (plugins/textmcp, on the official SDK), and the upstream annotations its
tools carry into `mcp serve`'s tools/list."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import ROOT, Toolctl
from tests.mcp.conftest import PROBE
from tests.serve.serve_support import piped_mcp

SERVER = [sys.executable, str(ROOT / "plugins/textmcp/server.py")]


def test_add_registers_the_service_and_imports_its_tools(tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "reg").mkdir()
    done = toolctl("mcp", "add", "text", "-r", "reg", "--", *SERVER)
    assert done.returncode == 0, done.stderr
    assert "added service 'text'" in done.stderr
    assert "imported tool 'text.reverse'" in done.stderr
    run = toolctl("run", "text.reverse", "--arg", "text=abc", "-r", "reg")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "cba"
    again = toolctl("mcp", "add", "text", "-r", "reg", "--", *SERVER)
    assert again.returncode == 0, again.stderr
    assert "already imported" in again.stderr


def test_add_keeps_secrets_out_of_the_registry(tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "reg").mkdir()
    secret = "sk-" + "a1b2c3d4" * 5
    done = toolctl("mcp", "add", "text", "-r", "reg", "--env", f"API_KEY={secret}", "--", *SERVER)
    written = "".join(p.read_text() for p in (tmp_path / "reg").rglob("*.toml"))
    assert secret not in written and secret not in done.stdout + done.stderr
    assert "${env:TEXT_API_KEY}" in written
    assert "set TEXT_API_KEY before running its tools" in done.stderr
    # the tools are listed with the value given (in memory: the registry never holds it)
    assert done.returncode == 0, done.stderr
    assert "imported tool 'text.reverse'" in done.stderr
    # a later run reads it from the environment, and says so when it is not there
    unset = toolctl("run", "text.reverse", "--arg", "text=abc", "-r", "reg")
    assert unset.returncode == 2 and "TEXT_API_KEY is not set" in unset.stderr
    ran = toolctl(
        "run", "text.reverse", "--arg", "text=abc", "-r", "reg", env={"TEXT_API_KEY": secret}
    )
    assert (ran.returncode, ran.stdout) == (0, "cba\n"), ran.stderr
    # --json lists what to set, as `import mcp-config --json` does
    (tmp_path / "reg2").mkdir()
    as_json = toolctl("mcp", "add", "text", "-r", "reg2", "--env", f"API_KEY={secret}",
                      "--json", "--", *SERVER)  # fmt: skip
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["export"] == ["TEXT_API_KEY"]


def test_an_env_item_without_its_key_is_refused_without_echoing_it(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    (tmp_path / "reg").mkdir()
    secret = "sk-" + "e5f6a7b8" * 5
    done = toolctl("mcp", "add", "text", "-r", "reg", "--env", secret, "--", *SERVER)
    assert done.returncode == 2
    assert done.stderr.startswith("toolctl: error: --env expects KEY=VALUE; its item 1 has no KEY=")
    assert secret not in done.stdout + done.stderr
    assert not list((tmp_path / "reg").rglob("*.toml"))


def test_add_needs_a_command_or_a_url(tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "reg").mkdir()
    neither = toolctl("mcp", "add", "text", "-r", "reg")
    assert neither.returncode == 2
    assert neither.stderr.startswith("toolctl: error: give the server's command after --")
    both = toolctl("mcp", "add", "x", "-r", "reg", "--url", "http://127.0.0.1:9/mcp", "--", "y")
    assert both.returncode == 2


def test_upstream_annotations_are_served(tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "reg").mkdir()
    assert toolctl("mcp", "add", "text", "-r", "reg", "--", *SERVER).returncode == 0
    serve = [sys.executable, "-m", "toolctl", "mcp", "serve", "-r", str(tmp_path / "reg")]
    listed = piped_mcp(serve, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})[2]
    tools = listed["result"]["tools"]
    assert {t["name"]: t.get("annotations") for t in tools} == {
        "text.letter_count": {"readOnlyHint": True},
        "text.reverse": {"readOnlyHint": True},
    }
    exported = json.loads(toolctl("export", "--format", "mcp", "-r", "reg").stdout)
    assert exported["tools"] == tools


def test_connecting_shows_on_a_terminal(tmp_path: Path) -> None:
    """Connecting to the server (its start-up: an SDK import of most of a second) shows
    a spinner on the terminal, then the lines of what was added."""
    from tests.terminal import plain, run_on_terminal

    (tmp_path / "reg").mkdir()
    screen = run_on_terminal("mcp", "add", "text", "-r", "reg", "--", *SERVER, cwd=tmp_path)
    assert screen.returncode == 0, screen.text
    assert "connecting to MCP server 'text'…" in screen.text
    assert "toolctl: imported tool 'text.reverse'" in plain(screen.text)


def test_a_name_that_is_not_a_registry_name_is_refused(toolctl: Toolctl, tmp_path: Path) -> None:
    """`mcp add NAME` registers the service NAME: one that cannot be a name (empty, a path,
    a letter outside ASCII) is exit 2 saying why, not a service of another, made-up name."""
    (tmp_path / "reg").mkdir()
    for name, told in (
        ("", "a name cannot be empty"),
        ("../evil", "use letters, digits"),
        ("pr\u00f6be", "use letters, digits"),
    ):
        done = toolctl("mcp", "add", name, "-r", "reg", "--", *SERVER)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"toolctl: error: invalid service name {name!r}: {told}")
    assert not list((tmp_path / "reg").rglob("*.toml"))


def test_a_prefix_no_name_can_start_with_is_refused_once_and_first(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """A Cyrillic e (U+0435) in --prefix refused every tool of the server, one line each, after
    the service was registered."""
    (tmp_path / "reg").mkdir()
    done = toolctl("mcp", "add", "text", "-r", "reg", "--prefix", "\u0435vil.", "--", *SERVER)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("toolctl: error: invalid --prefix '\u0435vil.'; use letters")
    assert len(done.stderr.splitlines()) == 1
    assert not list((tmp_path / "reg").rglob("*.toml"))


def test_adding_a_server_with_resources_again_is_unchanged(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`import mcp` pins the server's resources and prompts into its service: the same
    server added again (or its client config imported again) was refused as defined
    "differently" (exit 3), its pins being what differed."""
    (tmp_path / "reg").mkdir()
    offer = tmp_path / "offer.txt"
    offer.write_text("")
    env = ("--env", f"PROBE_OFFER={offer}")
    probe = [sys.executable, str(PROBE)]
    first = toolctl("mcp", "add", "noted", "-r", "reg", *env, "--", *probe)
    assert first.returncode == 0, first.stderr
    assert "[service.mcp.pins" in (tmp_path / "reg/services/noted.toml").read_text()
    again = toolctl("mcp", "add", "noted", "-r", "reg", *env, "--", *probe)
    assert again.returncode == 0, again.stderr
    assert "unchanged service 'noted'" in again.stderr


def test_a_name_taken_by_another_server_gets_advice_that_works(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`mcp add` has no --replace: the refusal says what does work, and it does."""
    (tmp_path / "reg").mkdir()
    assert toolctl("mcp", "add", "text", "-r", "reg", "--", *SERVER).returncode == 0
    other = toolctl("mcp", "add", "text", "-r", "reg", "--", *SERVER, "--verbose")
    assert other.returncode == 3
    assert "--replace" not in other.stderr
    advice = (
        "'toolctl unregister service text --with-tools' first to change it, or pick another name"
    )
    assert advice in other.stderr
    assert toolctl("unregister", "service", "text", "--with-tools", "-r", "reg").returncode == 0
    again = toolctl("mcp", "add", "text", "-r", "reg", "--", *SERVER, "--verbose")
    assert again.returncode == 0, again.stderr


def test_a_server_that_cannot_start_stays_registered_and_says_both_ways_on(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """The service is kept (a server down now may answer later): the error says how to
    import its tools then, and how to remove it, and the removal works."""
    (tmp_path / "reg").mkdir()
    added = toolctl("mcp", "add", "bogus", "-r", "reg", "--", "toolctl-no-such-server")
    assert added.returncode == 5
    assert added.stderr.endswith(
        "service 'bogus' is registered: 'toolctl import mcp bogus' imports its tools once it "
        "answers ('toolctl unregister service bogus' removes it)\n"
    ), added.stderr
    assert toolctl("unregister", "service", "bogus", "-r", "reg").returncode == 0


RESOURCES_ONLY = """
import anyio, mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

server = Server("ll")


@server.list_tools()
async def tools():
    return [types.Tool(name="hello", description="Say hello",
                       inputSchema={"type": "object", "properties": {}})]


@server.call_tool()
async def call(name, arguments):
    return [types.TextContent(type="text", text="hello")]


@server.list_resources()
async def resources():
    return [types.Resource(uri="note://a", name="a")]


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""


def test_a_server_listing_resources_but_no_templates_is_added(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """The SDK's low-level Server with list_resources alone declares `resources` and
    answers resources/templates/list "method not found": `mcp add` imported no tool, exit
    1, and `check --live` called the server unreachable. It offers no templates."""
    (tmp_path / "reg").mkdir()
    (tmp_path / "ll.py").write_text(RESOURCES_ONLY)
    added = toolctl("mcp", "add", "ll", "-r", "reg", "--", sys.executable, str(tmp_path / "ll.py"))
    assert added.returncode == 0, added.stderr
    assert toolctl("run", "ll.hello", "-r", "reg").stdout == "hello\n"
    live = toolctl("check", "--live", "-r", "reg")
    assert live.returncode == 0 and "unreachable" not in live.stderr, live.stderr
    serve = [sys.executable, "-m", "toolctl", "mcp", "serve", "-r", str(tmp_path / "reg")]
    answers = piped_mcp(
        serve,
        {"jsonrpc": "2.0", "id": 2, "method": "resources/templates/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/list"},
    )  # the gateway's listing failed the same way
    assert answers[2]["result"]["resourceTemplates"] == [], answers[2]
    assert [r["uri"] for r in answers[3]["result"]["resources"]] == ["note://a"], answers[3]


def test_a_secret_given_again_elsewhere_and_a_bare_fragment_are_not_written(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """Each value was judged on its own: the key given with --env was written again where
    it stood in the command (an option no rule knows, part of an argument), though toolctl
    had just said it was a secret; a token as a URL's whole fragment was written too."""
    (tmp_path / "reg").mkdir()
    secret = "mypw4321"
    toolctl("mcp", "add", "s9", "-r", "reg", "--env", f"API_KEY={secret}", "--",
            *SERVER, "--k", secret, f"positional-{secret}")  # fmt: skip
    written = "".join(p.read_text() for p in (tmp_path / "reg").rglob("*.toml"))
    assert secret not in written, written
    assert '"--k",\n    "${env:S9_API_KEY}",\n    "positional-${env:S9_API_KEY}"' in written
    token = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123"
    config = {"mcpServers": {"g": {"url": f"http://127.0.0.1:9/mcp#{token}"}}}
    (tmp_path / "mcp.json").write_text(json.dumps(config))
    (tmp_path / "reg2").mkdir()
    imported = toolctl("import", "mcp-config", "mcp.json", "-r", "reg2")
    assert imported.returncode == 0, imported.stderr
    written = "".join(p.read_text() for p in (tmp_path / "reg2").rglob("*.toml"))
    assert token not in written and 'url = "http://127.0.0.1:9/mcp#${env:G_TOKEN}"' in written
