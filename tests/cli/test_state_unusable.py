"""A state or data directory toolctl cannot use (a path through a file, a read-only disk) is one
line and exit 74, naming the directory and the variable that moves it: never exit 70."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files

SERVICE = """
[[service]]
name = "api"
[service.http]
start = ["python3", "-m", "http.server", "{port}"]

[[tool]]
name = "get"
service = "api"
[tool.http]
path = "/"
method = "GET"
"""


@pytest.mark.parametrize(
    "command",
    [
        ["run", "get", "-r", "reg"],
        ["run", "get", "-r", "reg", "--json"],
        ["service", "up", "api", "-r", "reg"],
        ["broker", "start", "--detach"],
    ],
    ids=["run", "run-json", "service-up", "broker"],
)
def test_a_state_directory_through_a_file_is_exit_74_in_one_line(
    toolctl: Toolctl, tmp_path: Path, command: list[str]
) -> None:
    write_files(tmp_path, {"reg/t.toml": SERVICE, "plain-file": "x"})
    state = tmp_path / "plain-file" / "state"
    done = toolctl(*command, cwd=tmp_path, env={"XDG_STATE_HOME": str(state)})
    assert done.returncode == 74, done.stderr
    [line] = done.stderr.splitlines()
    # (shown relative to the working directory, as every path toolctl prints)
    assert line.startswith("toolctl: error: cannot use plain-file/state/toolctl/")
    assert line.endswith("set XDG_STATE_HOME to another directory") and "internal" not in line
    if "--json" in command:
        assert json.loads(done.stdout)["error_code"] == "output_lost"


@pytest.mark.parametrize(
    "command", [["register", "t.toml"], ["lock"], ["list"], ["run", "t"], ["check"]]
)
def test_a_user_registry_through_a_file_is_exit_74_naming_xdg_data_home(
    toolctl: Toolctl, tmp_path: Path, command: list[str]
) -> None:
    """`register` into a user registry that cannot be made says so (not that its lock
    file is the trouble), as exit 74 naming the variable that moves it, as for state; and
    so does every command reading it (`list` said "no tools", `run` "not found")."""
    write_files(tmp_path, {"t.toml": '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\n'})
    write_files(tmp_path, {"plain-file": "x"})
    done = toolctl(*command, cwd=tmp_path, env={"XDG_DATA_HOME": str(tmp_path / "plain-file")})
    assert done.returncode == 74, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(
        "toolctl: error: cannot use plain-file/toolctl/registry: Not a directory"
    )
    assert line.endswith("set XDG_DATA_HOME to another directory")


def test_where_says_a_user_registry_through_a_file_is_refused(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    write_files(tmp_path, {"plain-file": "x"})
    done = toolctl("where", cwd=tmp_path, env={"XDG_DATA_HOME": str(tmp_path / "plain-file")})
    assert done.returncode == 0, done.stderr
    assert "(user, a path through a file: commands refuse it)" in done.stdout
    assert "register writes to: (nowhere" in done.stdout


def test_a_relative_xdg_directory_is_ignored(toolctl: Toolctl, tmp_path: Path) -> None:
    """The XDG Base Directory spec: a relative path is invalid and ignored, else toolctl's
    files would land below whatever directory a command runs in."""
    home = tmp_path / "home"
    relative = {name: f"rel-{name}" for name in ("XDG_STATE_HOME", "XDG_DATA_HOME",
                                                  "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}  # fmt: skip
    where = toolctl("where", "--json", cwd=tmp_path, env={"HOME": str(home), **relative})
    assert where.returncode == 0, where.stderr
    found = json.loads(where.stdout)
    assert found["state_dir"] == str(home / ".local/state/toolctl")
    assert found["data_dir"] == str(home / ".local/share/toolctl")
    assert found["cache_dir"] == str(home / ".cache/toolctl")
    assert found["user_config"] == str(home / ".config/toolctl/config.toml")
    write_files(
        tmp_path, {"reg/t.toml": '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\n'}
    )
    ran = toolctl("run", "t", "-r", "reg", cwd=tmp_path, env={"HOME": str(home), **relative})
    assert ran.returncode == 0, ran.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("rel-")]
    assert (home / ".local/state/toolctl/history.sqlite3").exists()


def test_a_state_directory_through_a_file_is_no_empty_history(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """`history` and `stats` said "no calls" (exit 0) while every call's record was lost,
    and the warnings showed Python's "[Errno 17] File exists: '...'"."""
    write_files(tmp_path, {"reg/t.toml": SERVICE, "state/toolctl": "a file, not a directory"})
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    for command in (["history"], ["stats"], ["history", "--json"]):
        done = toolctl(*command, cwd=tmp_path, env=env)
        assert done.returncode == 74, done.stdout + done.stderr
        [line] = done.stderr.splitlines()
        assert line.startswith("toolctl: error: cannot read the run history at state/toolctl/")
        assert line.endswith("Not a directory; set XDG_STATE_HOME to a directory toolctl can use")
    write_files(
        tmp_path,
        {
            "reg/local.toml": '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\ninput = "none"\n'
        },
    )
    ran = toolctl("run", "t", "-r", "reg", cwd=tmp_path, env=env)
    assert ran.returncode == 0
    assert "cannot be written (File exists)" in ran.stderr and "[Errno" not in ran.stderr
