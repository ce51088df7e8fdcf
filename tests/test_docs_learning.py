"""Every command docs/learning.md shows runs, and prints what the guide shows of its output.

Each ``$ toolctl ...`` line of a ``console`` block runs in a directory holding ``registry/``
(the tools of tests/learning/support.py) and ``chat.jsonl``, in the guide's order. A shown
output line must equal the real one; a line with ``...`` must match up to it; a line that is
only ``...`` ends the comparison.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, Toolctl, write_files
from tests.learning.support import registry_toml, write_transcripts

GUIDE = ROOT / "docs" / "learning.md"


def examples() -> list[tuple[list[str], list[str]]]:
    """(command line, shown output lines) for every ``$ toolctl`` line of the guide."""
    found: list[tuple[list[str], list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", GUIDE.read_text(), re.DOTALL):
        for line in block.splitlines():
            if line.startswith("$ "):
                found.append((shlex.split(line[2:]), []))
            else:
                found[-1][1].append(line)
    return found


def test_the_guide_shows_commands() -> None:
    commands = [" ".join(c[:3]) for c, _ in examples()]
    assert "toolctl graph evaluate" in commands and "toolctl graph learn" in commands
    assert any(c.startswith("toolctl recommend --after") for c in commands)


def test_every_command_of_the_guide_runs(toolctl: Toolctl, tmp_path: Path) -> None:
    write_files(tmp_path / "registry", {"tools.toml": registry_toml()})
    write_transcripts(tmp_path / "chat.jsonl")
    for command, shown in examples():
        if "svg" in command and shutil.which("dot") is None:
            if os.environ.get("TOOLCTL_REQUIRE_ENGINES") == "1":
                pytest.fail("Graphviz 'dot' is absent; TOOLCTL_REQUIRE_ENGINES=1 needs it")
            continue
        done = toolctl(*command[1:], cwd=tmp_path)
        assert done.returncode == 0, (command, done.stderr)
        actual = (done.stdout or done.stderr).splitlines()
        for expected, line in zip(shown, actual, strict=False):
            if expected == "...":
                break
            if "..." in expected:
                assert line.startswith(expected.split("...")[0]), (command, line)
            else:
                assert line == expected, (command, line)
