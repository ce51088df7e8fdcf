"""`mcp install --client` (toolctl/interchange/client_install.py, jsonc_edit.py): the entry
merged into each client's config file, what was there kept, atomically, with a backup."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import json5
import pytest

from tests.conftest import Toolctl, write_files
from tests.serve.serve_support import piped_mcp
from toolctl.interchange.jsonc_edit import JsoncError, set_member

VSCODE = """// the workspace's MCP servers
{
  "inputs": [
    {"id": "token", "type": "promptString", "password": true},  // asked once
  ],
  /* the servers */
  "servers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},
  },
}
"""

CLIENT_FILES = {
    "claude-desktop": ("home/.config/Claude/claude_desktop_config.json", "mcpServers"),
    "claude-code": ("work/.mcp.json", "mcpServers"),
    "cursor": ("home/.cursor/mcp.json", "mcpServers"),
    "vscode": ("work/.vscode/mcp.json", "servers"),
    "windsurf": ("home/.codeium/windsurf/mcp_config.json", "mcpServers"),
}


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home and a project of their own; the project's registry is the one in force."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    write_files(
        tmp_path / "work",
        {
            "toolctl.toml": '[registry]\npaths = ["registry"]\n',
            "registry/t.toml": '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\n'
            '[[group]]\nname = "g"\ntools = ["t"]\n',
        },
    )
    return tmp_path


@pytest.mark.parametrize("client", sorted(CLIENT_FILES))
def test_each_client_gets_an_entry_in_its_own_file(
    places: Path, toolctl: Toolctl, client: str
) -> None:
    relative, key = CLIENT_FILES[client]
    path = places / relative
    write_files(places, {relative: json.dumps({key: {"other": {"command": "other-server"}}})})
    done = toolctl("mcp", "install", "--client", client, "--group", "g", cwd=places / "work")
    assert done.returncode == 0, done.stderr
    assert "added server 'toolctl' in" in done.stderr
    config = json5.loads(path.read_text())
    assert config[key]["other"] == {"command": "other-server"}  # other servers kept
    entry = config[key]["toolctl"]
    assert (entry.get("type") == "stdio") == (client == "vscode")
    if client in ("claude-code", "vscode"):  # the project's file, in git: nothing of here
        assert (entry["command"], entry["args"]) == ("toolctl", ["mcp", "serve", "--group", "g"])
        assert entry.get("cwd") == ("${workspaceFolder}" if client == "vscode" else None)
        assert "runs `toolctl mcp serve` from PATH in the project" in done.stderr
    else:
        assert Path(entry["command"]).is_absolute()
        args = entry["args"]
        assert args[args.index("mcp") :][:4] == ["mcp", "serve", "--group", "g"]
        assert str((places / "work/registry").resolve()) in args
    backup = path.with_name(path.name + ".bak")
    assert json.loads(backup.read_text()) == {key: {"other": {"command": "other-server"}}}


def test_the_entry_starts_a_server_that_serves_the_selection(
    places: Path, toolctl: Toolctl
) -> None:
    """The command written runs: `mcp serve` with those arguments lists the group's tool."""
    toolctl("mcp", "install", "--client", "cursor", "--group", "g", cwd=places / "work")
    entry = json.loads((places / "home/.cursor/mcp.json").read_text())["mcpServers"]["toolctl"]
    tools_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    listed = piped_mcp([entry["command"], *entry["args"]], tools_list, cwd="/")[2]
    assert [t["name"] for t in listed.get("result", {}).get("tools", [])] == ["t"], listed


def test_a_projects_shared_entry_serves_the_project_from_its_directory(
    places: Path, toolctl: Toolctl
) -> None:
    """The portable entry (no path of this machine) starts a server that serves the
    project's registry when the client runs it in the project, as Claude Code does."""
    toolctl("mcp", "install", "--client", "claude-code", "--group", "g", cwd=places / "work")
    entry = json.loads((places / "work/.mcp.json").read_text())["mcpServers"]["toolctl"]
    assert entry["command"] == "toolctl"
    tools_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    argv = [sys.executable, "-m", "toolctl", *entry["args"]]  # toolctl, as PATH would find it
    listed = piped_mcp(argv, tools_list, cwd=str(places / "work"))[2]
    assert [t["name"] for t in listed.get("result", {}).get("tools", [])] == ["t"], listed


def test_an_explicit_registry_or_a_file_outside_the_project_keeps_absolute_paths(
    places: Path, toolctl: Toolctl
) -> None:
    work = places / "work"
    elsewhere = places / "elsewhere.json"
    for extra in (["--registry", "registry"], ["--config", str(elsewhere)]):
        done = toolctl("mcp", "install", "--client", "claude-code", *extra, "--print", cwd=work)
        assert done.returncode == 0, done.stderr
        entry = json.loads(done.stdout)["mcpServers"]["toolctl"]
        assert Path(entry["command"]).is_absolute() and "--registry" in entry["args"], extra


def test_vscode_comments_and_trailing_commas_are_kept(places: Path, toolctl: Toolctl) -> None:
    path = write_files(places, {"work/.vscode/mcp.json": VSCODE}) / "work/.vscode/mcp.json"
    done = toolctl("mcp", "install", "--client", "vscode", cwd=places / "work")
    assert done.returncode == 0, done.stderr
    text = path.read_text()
    for kept in ("// the workspace's MCP servers", "/* the servers */", "// asked once"):
        assert kept in text
    config = json5.loads(text)
    assert config["servers"]["github"]["url"] == "https://api.githubcopilot.com/mcp/"
    assert config["servers"]["toolctl"]["type"] == "stdio"
    assert config["inputs"][0]["id"] == "token"
    again = toolctl("mcp", "install", "--client", "vscode", "--tool", "t", cwd=places / "work")
    assert "replaced server 'toolctl'" in again.stderr
    config = json5.loads(path.read_text())
    assert "--tool" in config["servers"]["toolctl"]["args"]
    assert list(config["servers"]) == ["github", "toolctl"]
    assert "/* the servers */" in path.read_text()


def test_a_files_byte_order_mark_and_crlf_line_ends_are_kept(
    places: Path, toolctl: Toolctl
) -> None:
    """A config saved on Windows (CRLF, maybe a UTF-8 byte-order mark) is edited and
    written back so (it was refused "does not hold a JSON object", or rewritten with LF)."""
    path = places / "home/.cursor/mcp.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        b'\xef\xbb\xbf{\r\n  "mcpServers": {\r\n    "a": {"command": "x"}\r\n  }\r\n}\r\n'
    )
    done = toolctl("mcp", "install", "--client", "cursor", cwd=places / "work")
    assert done.returncode == 0, done.stderr
    written = path.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf{\r\n")
    assert b"\n" not in written.replace(b"\r\n", b"")  # no bare LF: every line end CRLF
    assert list(json.loads(written.decode("utf-8-sig"))["mcpServers"]) == ["a", "toolctl"]


def test_print_writes_nothing(places: Path, toolctl: Toolctl) -> None:
    done = toolctl("mcp", "install", "--client", "claude-desktop", "--print", cwd=places / "work")
    assert done.returncode == 0, done.stderr
    assert "toolctl" in json.loads(done.stdout)["mcpServers"]
    assert "Claude Desktop reads it from" in done.stderr
    assert not (places / "home/.config/Claude").exists()


def test_a_file_that_is_not_json_is_left_alone(places: Path, toolctl: Toolctl) -> None:
    path = write_files(places, {"home/.cursor/mcp.json": "[1, 2"}) / "home/.cursor/mcp.json"
    done = toolctl("mcp", "install", "--client", "cursor", cwd=places / "work")
    assert done.returncode == 2
    assert done.stderr.startswith("toolctl: error: ")
    assert path.read_text() == "[1, 2"
    assert not path.with_name("mcp.json.bak").exists()


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ('{"mcpServers": {}} trailing', "it is not JSON or JSONC"),
        ('{"mcpServers": {"a": tru}}', "it is not JSON or JSONC"),
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "it is nested too deep"),
        (b'{"mcpServers": {"a": "\xff"}}', "it is not UTF-8 text"),
    ],
)
def test_a_config_that_is_not_json_as_a_whole_is_one_line_and_left_alone(
    places: Path, toolctl: Toolctl, text: str | bytes, told: str
) -> None:
    path = places / "home/.cursor/mcp.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    before = path.read_bytes()
    done = toolctl("mcp", "install", "--client", "cursor", cwd=places / "work")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and told in done.stderr, done.stderr[:300]
    assert path.read_bytes() == before
    assert not path.with_name("mcp.json.bak").exists()


def test_a_symlinked_config_is_written_through_and_a_device_is_refused(
    places: Path, toolctl: Toolctl
) -> None:
    real = write_files(places, {"dotfiles/cursor.json": '{"mcpServers": {}}'}) / "dotfiles"
    link = places / "link.json"
    link.symlink_to(real / "cursor.json")
    done = toolctl(
        "mcp", "install", "--client", "cursor", "--config", str(link), cwd=places / "work"
    )
    assert done.returncode == 0, done.stderr
    assert link.is_symlink()  # the link stays; the file it points to has the entry
    assert "toolctl" in json.loads((real / "cursor.json").read_text())["mcpServers"]
    fifo = places / "fifo"
    os.mkfifo(fifo)  # not a regular file, as /dev/null is not (which a test must not risk)
    for target in (str(fifo), str(places)):
        refused = toolctl("mcp", "install", "--client", "cursor", "--config", target, cwd=places)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.startswith("toolctl: error: cannot write "), refused.stderr
        assert ": it is " in refused.stderr and refused.stderr.count("\n") == 1
    assert fifo.is_fifo()


@pytest.mark.parametrize(
    "text",
    [
        '{"mcpServers": {"x": {"command": "a"}}, "mcpServers": {"y": {"command": "b"}}}',
        '{"mcpServers": {"x": {"command": "a"},}, // JSONC\n "mcpServers": {}}',
    ],
)
def test_a_key_given_twice_is_refused_not_edited(places: Path, toolctl: Toolctl, text: str) -> None:
    """The editor would change the first of two ``mcpServers`` and a client reads the last
    (as JSON.parse and json.load do): the entry would never be seen. Refused, the file
    left as it was."""
    config = places / "c.json"
    config.write_text(text)
    done = toolctl("mcp", "install", "--client", "cursor", "--config", str(config), cwd=places)
    assert (done.returncode, done.stderr) == (
        2,
        "toolctl: error: c.json: cannot edit it: it gives 'mcpServers' twice in one "
        "object; fix the file, or --print\n",
    )
    assert config.read_text() == text and not (places / "c.json.bak").exists()


def test_the_backup_replaces_a_symlink_never_writes_through_it(
    places: Path, toolctl: Toolctl
) -> None:
    """A cloned project may bring `.mcp.json.bak` as a symlink to ~/.bashrc: the old config
    is kept by a rename over the link (the link goes, its target is untouched); a directory
    there is refused before anything is written."""
    work = places / "work"
    victim = write_files(places, {"victim": "export IMPORTANT=1\n"}) / "victim"
    config = work / "c.json"
    config.write_text('{"mcpServers": {}}')
    (work / "c.json.bak").symlink_to(victim)
    done = toolctl("mcp", "install", "--client", "cursor", "--config", str(config), cwd=work)
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "export IMPORTANT=1\n"
    assert not (work / "c.json.bak").is_symlink()
    assert (work / "c.json.bak").read_text() == '{"mcpServers": {}}'
    other = work / "d.json"
    other.write_text("{}")
    (work / "d.json.bak").mkdir()
    refused = toolctl("mcp", "install", "--client", "cursor", "--config", str(other), cwd=work)
    assert (refused.returncode, refused.stderr) == (
        2,
        "toolctl: error: d.json.bak is a directory, where the old file would be kept; move "
        "it away\n",
    )
    assert other.read_text() == "{}"


def test_an_unknown_client_is_a_usage_error(places: Path, toolctl: Toolctl) -> None:
    done = toolctl("mcp", "install", "--client", "emacs", cwd=places / "work")
    assert done.returncode == 2
    assert "invalid value for '--client'" in done.stderr


@pytest.mark.parametrize(
    ("selection", "says"),
    [
        (["--group", "gg"], "group 'gg' not found; did you mean: g?"),
        (["--tool", "tt"], "tool 'tt' not found"),
        (["--action", "summarise"], "action 'summarise' not found"),
        (["--group", "g", "--tool", "nope"], "tool 'nope' not found"),
    ],
)
def test_a_selection_that_does_not_exist_is_refused_and_nothing_written(
    places: Path, toolctl: Toolctl, selection: list[str], says: str
) -> None:
    """The entry would start a server that exits at once (`mcp serve` refuses the name),
    which a client reports only in its own logs: refused here, before anything is written."""
    done = toolctl("mcp", "install", "--client", "cursor", *selection, cwd=places / "work")
    assert done.returncode == 4, done.stderr
    assert done.stderr.startswith(f"toolctl: error: {says}")
    assert not (places / "home/.cursor").exists()


def test_a_registry_directory_that_does_not_exist_is_refused(
    places: Path, toolctl: Toolctl
) -> None:
    missing = places / "work/regsitry"
    done = toolctl(
        "mcp", "install", "--client", "cursor", "--registry", str(missing), cwd=places / "work"
    )
    assert done.returncode == 2, done.stderr
    assert "registry directory regsitry does not exist" in done.stderr
    assert not (places / "home/.cursor").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {"s": {"k": 1}}),
        ("{}", {"s": {"k": 1}}),
        ('{"a": [1, {"b": "}"}]}', {"a": [1, {"b": "}"}], "s": {"k": 1}}),
        ('{"s": {"k": 0, "j": 2}}', {"s": {"k": 1, "j": 2}}),
        ('{"s": {"x": "a\\"b"} // c\n}', {"s": {"x": 'a"b', "k": 1}}),
    ],
)
def test_set_member(text: str, expected: object) -> None:
    assert json5.loads(set_member(text, ["s"], "k", 1)) == expected


def test_set_member_refuses_what_it_cannot_edit() -> None:
    for text in ("[]", '{"s": []}', '{"s": {', '{"s" 1}'):
        with pytest.raises(JsoncError):
            set_member(text, ["s"], "k", 1)


def test_a_name_no_client_can_show_is_refused(places: Path, toolctl: Toolctl) -> None:
    """`--name ''` (or a newline in it) wrote an entry no client can list: exit 2."""
    config = places / "work" / "c.json"
    for name in ("", " ", "a\nb"):
        done = toolctl(
            "mcp", "install", "--client", "cursor", "--config", str(config), "--name", name,
            cwd=places / "work",
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "a server's name is text to show" in done.stderr
    assert not config.exists()


def test_the_same_entry_again_is_unchanged_and_writes_nothing(
    places: Path, toolctl: Toolctl
) -> None:
    """It said "replaced" and rewrote the file, its .bak taking the place of the user's
    own earlier backup."""
    first = toolctl("mcp", "install", "--client", "cursor", "--group", "g", cwd=places / "work")
    assert first.returncode == 0, first.stderr
    again = toolctl("mcp", "install", "--client", "cursor", "--group", "g", cwd=places / "work")
    assert again.returncode == 0, again.stderr
    assert "unchanged: server 'toolctl'" in again.stderr
    assert not (places / "home/.cursor/mcp.json.bak").exists()


def test_the_command_written_is_the_toolctl_on_path_not_where_its_link_leads(
    places: Path, tmp_path: Path
) -> None:
    """`uv tool install` puts ~/.local/bin/toolctl, a link into uv's own directory: the
    entry named where the link led, a path an upgrade may move. It names the link."""
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "toolctl").symlink_to(Path(sys.executable).parent / "toolctl")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["toolctl", "mcp", "install", "--client", "cursor", "--group", "g", "--print", "--json"],
        cwd=places / "work", env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert str(bin_dir / "toolctl") in done.stdout


def test_servers_commented_out_in_an_empty_object_are_kept(places: Path, toolctl: Toolctl) -> None:
    """Disabling every server by commenting it out left `"servers": { // ... }`; adding an
    entry replaced what stood between the braces, the comments with it."""
    vscode = (
        '{\n  "servers": {\n    // "github": {"type": "http", "url": "https://x/mcp/"}\n'
        '    /* "old": {"command": "python"} */\n  },\n  "inputs": []\n}\n'
    )
    path = write_files(places, {"work/.vscode/mcp.json": vscode}) / "work/.vscode/mcp.json"
    done = toolctl("mcp", "install", "--client", "vscode", cwd=places / "work")
    assert done.returncode == 0, done.stderr
    text = path.read_text()
    assert '// "github": {"type": "http", "url": "https://x/mcp/"}' in text
    assert '/* "old": {"command": "python"} */' in text
    assert list(json5.loads(text)["servers"]) == ["toolctl"]


@pytest.mark.parametrize(
    ("text", "said"),
    [  # JSON5 reads each, the editor (JSON with comments) otherwise
        ('{\n  // note\r"mcpServers": {"keep": {"command": "x"}},\n  "other": 1\n}\n', "follow"),
        ('{\n  // note\u2028"mcpServers": {"keep": {"command": "x"}}\n}\n', "follow"),
        ("{\"note\": 'a \"mcpServers\": {} b', \"mcpServers\": {\"keep\": {\"command\": \"x\"}}}",
         "follow"),
        ('{"mcpServers": {"\\x41": {"command": "x"}}}', "a key it cannot read as JSON"),
        ('{"mcpServers": {"a\tb": {"command": "x"}}}', "a key it cannot read as JSON"),
    ],
)  # fmt: skip
def test_a_file_the_editor_reads_otherwise_is_refused_not_edited(
    places: Path, toolctl: Toolctl, text: str, said: str
) -> None:
    """A line comment ending at a lone CR or U+2028 (where JSON5 ends it) hid the real
    `mcpServers` from the editor: a second one was appended, which the client takes, and
    every other server was lost, "added" all the same; a single-quoted string had the entry
    written into it; a key in JSON5's own escapes was exit 70. Each is refused, the file left
    as it was."""
    config = places / "c.json"
    config.write_text(text)
    done = toolctl("mcp", "install", "--client", "cursor", "--config", str(config), cwd=places)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("toolctl: error: c.json: cannot edit it: ") and said in (
        done.stderr
    )
    assert config.read_bytes() == text.encode() and not (places / "c.json.bak").exists()


@pytest.mark.parametrize("client", ["claude-code", "vscode"])
def test_a_projects_config_linked_out_of_the_project_is_not_written_through(
    places: Path, toolctl: Toolctl, client: str
) -> None:
    """A cloned repository may bring `.mcp.json` (or `.vscode/mcp.json`) as a link to any
    of your files: it was written through, an empty file made JSON, its .bak beside it."""
    outside = places / "home/.profile"
    outside.parent.mkdir(parents=True)
    outside.write_text("")
    relative = ".mcp.json" if client == "claude-code" else ".vscode/mcp.json"
    link = places / "work" / relative
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    done = toolctl("mcp", "install", "--client", client, cwd=places / "work")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        f"toolctl: error: {relative} is a link to {outside}, outside the project: not written"
    ), done.stderr
    assert outside.read_text() == "" and not (places / "home/.profile.bak").exists()


def test_installs_at_once_into_one_file_lose_no_entry(places: Path) -> None:
    """Eight `mcp install` processes into one config at once: each entry is there after
    (each read the file the others had not written yet, and all but the last were lost)."""
    import subprocess

    config = places / "home/.cursor/mcp.json"
    write_files(places, {"home/.cursor/mcp.json": '{"mcpServers": {"other": {"command": "x"}}}'})
    names = [f"server-{n}" for n in range(8)]
    install = [sys.executable, "-m", "toolctl", "mcp", "install", "--client", "cursor"]
    started = [
        subprocess.Popen(
            [*install, "--name", name, "--group", "g"],
            cwd=places / "work",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    errors = [process.communicate(timeout=60)[1] for process in started]
    assert [process.returncode for process in started] == [0] * len(names), errors
    servers = json.loads(config.read_text())["mcpServers"]
    assert sorted(servers) == sorted([*names, "other"])
