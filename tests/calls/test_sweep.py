"""What the call path reaps: only what calls left behind, never a library user's children."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import write_files
from toolctl import calls
from toolctl.registry.index import Registry
from toolctl.settings import Settings

TOOL = """
[[tool]]
name = "noop"
[tool.local]
command = ["true"]
input = "none"
"""


def test_a_callers_children_started_outside_calls_survive(tmp_path: Path) -> None:
    write_files(tmp_path / "registry", {"tools.toml": TOOL})
    settings = Settings.load([tmp_path / "registry"])
    registry = Registry.open(settings)
    mine = []
    try:
        with calls.Caller(settings, registry):  # closed without a call
            mine.append(subprocess.Popen(["sleep", "60"]))
        with calls.Caller(settings, registry) as caller:
            assert caller.call("noop").success
            mine.append(subprocess.Popen(["sleep", "60"]))  # after the call ended
        assert [child.poll() for child in mine] == [None, None]
    finally:
        for child in mine:
            child.kill()
            child.wait()
