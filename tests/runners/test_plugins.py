"""A third-party runtime: a package registering a runner under `toolctl.runners` just works."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Toolctl, write_files

PLUGIN = '''
"""A runtime from outside toolctl: greets whoever the arguments name."""
from toolctl.runners.base import ToolResult


class GreetRunner:
    def __init__(self, settings):
        self.settings = settings

    def run(self, call):
        greeting = call.tool.data["options"]["greeting"]
        return ToolResult(True, f"{greeting}, {call.arguments['name']}!", transport="greet")

    def describe(self, call):
        return {"transport": "greet", "greeting": call.tool.data["options"]["greeting"]}

    def close(self):
        pass
'''

REGISTRY = """
[[tool]]
name = "greeter"
runtime = "greet"
options = { greeting = "Good morning" }
[[tool.arguments]]
name = "name"

[[tool]]
name = "orphan"
runtime = "teleport"
"""


def install_plugin(
    site: Path, distribution: str = "toolctl_greet", module: str = PLUGIN, runtime: str = "greet"
) -> None:
    """A distribution in ``site`` registering ``runtime`` under toolctl.runners."""
    write_files(
        site,
        {
            f"{distribution}.py": module,
            f"{distribution}-0.1.dist-info/METADATA": (
                f"Metadata-Version: 2.1\nName: {distribution.replace('_', '-')}\nVersion: 0.1\n"
            ),
            f"{distribution}-0.1.dist-info/entry_points.txt": (
                f"[toolctl.runners]\n{runtime} = {distribution}:GreetRunner\n"
            ),
        },
    )


RIVAL = PLUGIN.replace("{greeting}, ", "hijacked: {greeting}, ")


def test_a_plugin_runtime_runs_through_the_same_lookup(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    install_plugin(tmp_path / "site")
    write_files(tmp_path, {"reg/tools.toml": REGISTRY})
    env = {"PYTHONPATH": str(tmp_path / "site")}
    done = toolctl_process("run", "greeter", "--arg", "name=Ada", "-r", "reg", "--json", env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["output"] == "Good morning, Ada!" and result["transport"] == "greet"
    listed = json.loads(toolctl_process("list", "--runtime", "greet", "--json", "-r", "reg").stdout)
    assert [t["name"] for t in listed] == ["greeter"]


def test_a_runtime_nobody_provides_is_exit_5(tmp_path: Path, toolctl_process: Toolctl) -> None:
    write_files(tmp_path, {"reg/tools.toml": REGISTRY})
    done = toolctl_process("run", "orphan", "-r", "reg")
    assert done.returncode == 5
    assert "no runner for runtime 'teleport'" in done.stderr
    assert "local" in done.stderr  # the installed runners are listed


def test_builtin_runtime_names_are_not_plugin_runtimes(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    write_files(tmp_path, {"reg/tools.toml": '[[tool]]\nname = "x"\nruntime = "local"\n'})
    done = toolctl_process("check", "-r", "reg")
    assert done.returncode == 3
    assert "write [tool.local]" in done.stdout


def test_two_plugins_registering_one_runtime_first_wins_visibly(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    """pluggy's contract: the first registered wins, and the duplicate is named, not hidden.

    First means: earlier on sys.path, then by distribution name within one directory, so
    the answer never depends on the order a directory lists its files.
    """
    install_plugin(tmp_path / "first", "toolctl_greet")
    install_plugin(tmp_path / "second", "aaa_greet", RIVAL)  # sorts first by name
    install_plugin(tmp_path / "first", "zzz_greet", RIVAL)  # same directory, later by name
    write_files(tmp_path, {"reg/tools.toml": REGISTRY})
    env = {"PYTHONPATH": f"{tmp_path / 'first'}:{tmp_path / 'second'}"}
    for _ in range(2):  # the second run answers from the entry-point cache: same verdict
        done = toolctl_process("run", "greeter", "--arg", "name=Ada", "-r", "reg", env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "Good morning, Ada!\n"
        assert "runtime 'greet' is registered more than once" in done.stderr
        assert "toolctl-greet (toolctl_greet:GreetRunner) is used" in done.stderr
        assert "zzz-greet (zzz_greet:GreetRunner)" in done.stderr
        assert "aaa-greet (aaa_greet:GreetRunner) ignored" in done.stderr


def test_a_plugin_cannot_take_over_a_builtin_runtime(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    install_plugin(tmp_path / "site", "aaa_local", RIVAL, runtime="local")
    write_files(
        tmp_path,
        {"reg/tools.toml": '[[tool]]\nname = "hi"\n[tool.local]\ncommand = ["echo", "hi"]\n'},
    )
    done = toolctl_process("run", "hi", "-r", "reg", env={"PYTHONPATH": str(tmp_path / "site")})
    assert (done.returncode, done.stdout) == (0, "hi\n")
    assert "toolctl-cli (toolctl.runners.local:LocalRunner) is used" in done.stderr
    assert "aaa-local (aaa_local:GreetRunner) ignored" in done.stderr


def test_a_broken_plugin_is_exit_5_naming_its_package(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    broken = "raise ImportError('needs libgreet.so')\n"
    install_plugin(tmp_path / "site", "toolctl_greet", broken)
    write_files(tmp_path, {"reg/tools.toml": REGISTRY})
    done = toolctl_process(
        "run", "greeter", "-r", "reg", env={"PYTHONPATH": str(tmp_path / "site")}
    )
    assert done.returncode == 5
    assert "failed to load: ImportError: needs libgreet.so" in done.stderr
    assert "toolctl-greet" in done.stderr and "Traceback" not in done.stderr


def test_a_runner_of_the_old_interface_is_named_not_crashed(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    old = "class GreetRunner:\n    def __init__(self, settings):\n        pass\n"
    install_plugin(tmp_path / "site", "toolctl_greet", old)
    write_files(tmp_path, {"reg/tools.toml": REGISTRY})
    done = toolctl_process(
        "run", "greeter", "-r", "reg", env={"PYTHONPATH": str(tmp_path / "site")}
    )
    assert done.returncode == 5
    assert "does not implement Runner: it needs run(call) and close()" in done.stderr
