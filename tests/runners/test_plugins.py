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

    def run(self, tool, arguments, context):
        greeting = tool.data["options"]["greeting"]
        return ToolResult(True, f"{greeting}, {arguments['name']}!", transport="greet")

    def describe(self, tool, arguments, context):
        return {"transport": "greet", "greeting": tool.data["options"]["greeting"]}

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


def install_plugin(site: Path) -> None:
    write_files(
        site,
        {
            "toolctl_greet.py": PLUGIN,
            "toolctl_greet-0.1.dist-info/METADATA": (
                "Metadata-Version: 2.1\nName: toolctl-greet\nVersion: 0.1\n"
            ),
            "toolctl_greet-0.1.dist-info/entry_points.txt": (
                "[toolctl.runners]\ngreet = toolctl_greet:GreetRunner\n"
            ),
        },
    )


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
