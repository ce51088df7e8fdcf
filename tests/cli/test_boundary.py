"""The CLI boundary: commands raise toolctl's errors; each ends in one line and its exit code."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Toolctl, write_files

ORPHAN = """
[[tool]]
name = "orphan"
service = "gone"
[tool.http]
path = "/x"

[[tool]]
name = "fails"
[tool.local]
command = ["sh", "-c", "echo broken >&2; exit 3"]
"""


def test_a_tool_naming_a_missing_service_is_a_registry_error(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, {"reg/t.toml": ORPHAN})
    done = toolctl("run", "orphan", "-r", "reg")
    assert done.returncode == 3
    assert "tool 'orphan' names unknown service 'gone'" in done.stderr
    assert "run 'toolctl check'" in done.stderr


def test_a_failed_tool_is_said_once(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"reg/t.toml": ORPHAN})
    done = toolctl("run", "fails", "-r", "reg")
    assert done.returncode == 1
    assert done.stderr.count("error:") == 1
    assert "the tool failed: exit status 3" in done.stderr
    # with --json too: the result on stdout for the script, the reason on stderr for a person
    as_json = toolctl("run", "fails", "-r", "reg", "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["error"] == "exit status 3"
    assert as_json.stderr.count("error:") == 1
    assert "the tool failed: exit status 3" in as_json.stderr


def test_a_failed_check_prints_its_findings_and_nothing_more(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, {"reg/t.toml": ORPHAN})
    done = toolctl("check", "-r", "reg")
    assert done.returncode == 3
    assert "names unknown service 'gone'" in done.stdout
    assert "toolctl: error:" not in done.stderr
