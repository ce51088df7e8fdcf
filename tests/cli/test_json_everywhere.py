"""`--json` on every command that reports what it did: the data alone on stdout, as one
JSON document a script can read, and the notes a person reads gone (warnings stay on
stderr). Commands that run until stopped and `export` (whose output is a format) are the
exceptions, named here."""

from __future__ import annotations

import json
from pathlib import Path

import typer.main

from tests.conftest import Toolctl
from toolctl.cli.app import COMMAND_MODULES, build_app

WITHOUT_JSON = {
    "mcp serve": "runs until stdin closes, speaking MCP on stdout",
    "export": "its output is the --format asked for",
}


def test_every_command_that_reports_takes_json() -> None:
    app = typer.main.get_command(build_app(list(dict.fromkeys(COMMAND_MODULES.values()))))
    lacking: list[str] = []

    def walk(command: object, path: list[str]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])
            return
        options = {o for p in command.params for o in getattr(p, "opts", ())}  # type: ignore[attr-defined]
        if "--json" not in options and " ".join(path) not in WITHOUT_JSON:
            lacking.append(" ".join(path))

    walk(app, [])
    assert lacking == []


def data(done: object) -> object:
    """The one JSON document on stdout, and nothing else there."""
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    return json.loads(done.stdout)  # type: ignore[attr-defined]


def test_init_new_register_unregister(toolctl: Toolctl, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    made = toolctl("init", str(project), "--json")
    assert data(made) == {"created": True, "file": "project/toolctl.toml", "made": [],
                          "registry": "project/registry"}  # fmt: skip
    assert made.stderr == ""
    again = data(toolctl("init", str(project), "--json"))
    assert again == {"created": False, "file": "project/toolctl.toml", "made": [],
                     "registry": "project/registry"}  # fmt: skip

    new = toolctl("new", "tool", "greet", "--json", cwd=project)
    assert data(new) == {"name": "greet", "runtime": "local", "files": ["greet.toml", "greet.py"],
                         "run": "toolctl run greet --arg who=you"}  # fmt: skip
    assert new.stderr == ""
    assert data(toolctl("register", "--json", cwd=project))[0]["name"] == "greet"  # type: ignore[index]

    gone = toolctl("unregister", "tool", "greet", "--json", cwd=project)
    assert data(gone) == {"kind": "tool", "name": "greet", "file": "registry/tools/greet.toml",
                          "in_force": None, "tools": []}  # fmt: skip
    assert gone.stderr == ""


def test_unregister_names_the_shadowed_definition_now_in_force(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for where in (first, second):
        where.mkdir()
        (where / "echo.toml").write_text(
            '[[tool]]\nname = "echo"\ndescription = "Echo."\n[tool.local]\ncommand = ["cat"]\n'
        )
    search = ("-r", str(first), "-r", str(second))
    gone = data(toolctl("unregister", "tool", "echo", "--json", *search))
    assert gone == {"kind": "tool", "name": "echo", "file": "first/echo.toml",
                    "in_force": {"file": "second/echo.toml", "line": 1}, "tools": []}  # fmt: skip


def test_keygen_and_trust_add(toolctl: Toolctl, tmp_path: Path) -> None:
    made = toolctl("keygen", str(tmp_path / "signing.key"), "--json")
    key = data(made)
    assert key["file"] == "signing.key"  # type: ignore[index]
    assert key["public_key"].startswith("ed25519:")  # type: ignore[index]
    (tmp_path / "registry").mkdir()
    trusted = toolctl("trust", "add", key["public_key"], "--services", "joke-*", "--json",  # type: ignore[index]
                      "-r", str(tmp_path / "registry"))  # fmt: skip
    assert data(trusted) == {"key": key["public_key"], "services": "joke-*",  # type: ignore[index]
                             "file": "registry/trust.toml", "added": True}  # fmt: skip
    assert trusted.stderr == ""
    again = toolctl("trust", "add", key["public_key"], "--services", "joke-*", "--json",  # type: ignore[index]
                    "-r", str(tmp_path / "registry"))  # fmt: skip
    assert data(again)["added"] is False  # type: ignore[index]


def test_service_down_says_what_it_stopped(toolctl: Toolctl) -> None:
    nothing = data(toolctl("service", "down", "--all", "--json"))
    assert nothing == []
    unknown = toolctl("service", "down", "nowhere", "--json")
    assert unknown.returncode == 4 and unknown.stdout == ""


def test_mcp_install(toolctl: Toolctl, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    (tmp_path / "registry").mkdir()
    args = ("mcp", "install", "--client", "cursor", "--config", str(config),
            "-r", str(tmp_path / "registry"), "--json")  # fmt: skip
    added = data(toolctl(*args))
    assert (added["action"], added["client"], added["name"], added["file"]) == (  # type: ignore[index]
        "added",
        "cursor",
        "toolctl",
        "mcp.json",
    )
    assert added["entry"] == json.loads(config.read_text())["mcpServers"]["toolctl"]  # type: ignore[index]
    assert added["backup"] is None  # type: ignore[index]
    again = data(toolctl(*args))
    assert again["action"] == "unchanged"  # type: ignore[index]
    printed = data(toolctl(*args, "--print"))
    assert (printed["action"], printed["entry"]) == ("printed", added["entry"])  # type: ignore[index]
