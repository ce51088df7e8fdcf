"""Option injection into a container's command (issue 9, item L), under a real podman."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files

IMAGE = "localhost/toolctl-busybox:latest"

REGISTRY = f"""
[[tool]]
name = "ct-cat"
[tool.container]
image = "{IMAGE}"
command = ["cat", "{{file}}"]
input = "none"
[[tool.arguments]]
name = "file"

[[tool]]
name = "ct-echo-flag"
[tool.container]
image = "{IMAGE}"
command = ["echo", "{{flag}}", "done"]
input = "none"
[[tool.arguments]]
name = "flag"
allow_option = true

[[tool]]
name = "ct-ls-dashdash"
[tool.container]
image = "{IMAGE}"
command = ["ls", "-d", "--", "{{path}}"]
input = "none"
[[tool.arguments]]
name = "path"
"""


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    write_files(tmp_path, {"reg/tools.toml": REGISTRY})
    return tmp_path / "reg"


def test_an_option_value_never_reaches_the_container(
    podman: str, toolctl: Toolctl, registry: Path
) -> None:
    for value in ("--help", "-n", "-"):
        done = toolctl("run", "ct-cat", "--arg", f"file={value}", "-r", str(registry))
        assert done.returncode == 2, (value, done.stdout, done.stderr)
        assert "'file'" in done.stderr and "allow_option" in done.stderr
        assert "BusyBox" not in done.stdout + done.stderr


def test_allow_option_and_double_dash_in_a_container(
    podman: str, toolctl: Toolctl, registry: Path
) -> None:
    done = toolctl("run", "ct-echo-flag", "--arg", "flag=-n", "-r", str(registry))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done"  # echo took -n: no newline
    done = toolctl("run", "ct-ls-dashdash", "--arg", "path=-x", "-r", str(registry))
    assert done.returncode == 1  # ls looked for a file named -x: not an option
    assert "-x" in done.stderr
