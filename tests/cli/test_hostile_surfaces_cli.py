"""Issue #24 from the command line: hostile lock files, adjacent placeholders, non-finite
numbers in a tool's answer and quarantined look-alikes, each one line or documented output."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Toolctl, write_files

OK = '[[tool]]\nname = "ok"\ndescription = "fine"\n[tool.local]\ncommand = ["true"]\n'


def one_line(result: object, code: int) -> None:
    stderr = getattr(result, "stderr", "")
    assert getattr(result, "returncode", None) == code, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert stderr.startswith("toolctl: error: ") and stderr.count("\n") == 1, stderr


@pytest.mark.parametrize("contents", [False, True], ids=["empty", "full"])
def test_lock_over_a_folder_is_one_line_and_leaves_no_temp_file(
    tmp_path: Path, toolctl: Toolctl, contents: bool
) -> None:
    registry = write_files(tmp_path / "reg", {"a.toml": OK})
    (registry / "toolctl.lock").mkdir()
    if contents:
        (registry / "toolctl.lock" / "x").write_text("x")
    result = toolctl("lock", "-r", str(registry))
    one_line(result, 3)
    assert "toolctl.lock" in result.stderr
    assert not [p for p in os.listdir(registry) if p.endswith(".tmp")]


@pytest.mark.parametrize("command", ["lock", "register"])
def test_a_write_lock_that_is_a_folder_is_one_line(
    tmp_path: Path, toolctl: Toolctl, command: str
) -> None:
    registry = write_files(tmp_path / "reg", {"a.toml": OK})
    (registry / ".toolctl.lock").mkdir()
    other = write_files(tmp_path, {"new.toml": OK.replace('"ok"', '"new"')}) / "new.toml"
    args = ["lock", "-r", str(registry)]
    if command == "register":
        args = ["register", "-r", str(registry), str(other)]
    result = toolctl(*args)
    one_line(result, 3)
    assert ".toolctl.lock" in result.stderr


SORTER = """
[[tool]]
name = "sorter"
description = "sort a file"
[tool.local]
command = ["sort", "{template}"]
input = "none"
[[tool.arguments]]
name = "dir"
type = "string"
required = false
[[tool.arguments]]
name = "file"
type = "string"
"""


@pytest.mark.parametrize("template", ["{dir}{file}", "{file}{dir}", "{dir}{dir}{file}"])
def test_adjacent_placeholders_cannot_inject_an_option(
    tmp_path: Path, toolctl: Toolctl, template: str
) -> None:
    registry = write_files(tmp_path / "reg", {"s.toml": SORTER.replace("{template}", template)})
    result = toolctl("run", "-r", str(registry), "sorter", "--arg", "file=-o./PWNED")
    one_line(result, 2)
    assert "'file' starts with '-'" in result.stderr
    assert not (tmp_path / "PWNED").exists()


def test_a_literal_prefix_before_placeholders_is_the_templates_choice(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    text = SORTER.replace("{template}", "--output=./{dir}{file}")
    registry = write_files(tmp_path / "reg", {"s.toml": text})
    (tmp_path / "in").write_text("b\na\n")
    result = toolctl("run", "-r", str(registry), "sorter", "--arg", "file=OUT")
    assert result.returncode != 2, result.stderr


NAN_TOOL = f"""
[[tool]]
name = "nan"
description = "Answers numbers JSON has not"
[tool.local]
command = ["{sys.executable}", "-c", "print('{{\\"a\\": NaN, \\"b\\": [Infinity, -Infinity, 1e999], \\"c\\": 1.5}}')"]
input = "none"
"""


def strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


MAPPED = {"a": "NaN", "b": ["Infinity", "-Infinity", "Infinity"], "c": 1.5}


def test_run_json_and_batch_never_print_nan(tmp_path: Path, toolctl: Toolctl) -> None:
    registry = write_files(tmp_path / "reg", {"n.toml": NAN_TOOL})
    result = toolctl("run", "-r", str(registry), "nan", "--json")
    assert result.returncode == 0, result.stderr
    assert strict_json(result.stdout)["data"] == MAPPED
    batch = toolctl("run", "-r", str(registry), "nan", "--batch", "-", input="{}\n{}\n")
    assert batch.returncode == 0, batch.stderr
    answers = [strict_json(line) for line in batch.stdout.splitlines()]
    assert len(answers) == 2 and all(a["data"] == MAPPED for a in answers), answers


PICKY = """
[[tool]]
name = "picky"
description = "Takes a word the pattern likes"
[tool.local]
command = ["true"]
input = "none"
[tool.parameters]
type = "object"
properties = { word = { type = "string", pattern = "PATTERN" } }
"""


def test_argument_patterns_match_in_linear_time(tmp_path: Path, toolctl: Toolctl) -> None:
    registry = write_files(tmp_path / "reg", {"p.toml": PICKY.replace("PATTERN", "^(a+)+$")})
    result = toolctl("run", "-r", str(registry), "picky", "--arg", "word=" + "a" * 40 + "!")
    one_line(result, 2)
    assert "must match pattern" in result.stderr
    assert toolctl("run", "-r", str(registry), "picky", "--arg", "word=aaa").returncode == 0


def test_a_pattern_re2_cannot_run_breaks_its_file(tmp_path: Path, toolctl: Toolctl) -> None:
    registry = write_files(tmp_path / "reg", {"p.toml": PICKY.replace("PATTERN", "(a)\\\\1")})
    result = toolctl("check", "-r", str(registry))
    assert result.returncode == 3, result.stderr
    assert "linear-time" in result.stdout + result.stderr


def test_show_marks_a_quarantined_look_alike(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path,
        {
            "r1/a.toml": OK.replace('"ok"', '"read-file"'),
            "r2/b.toml": OK.replace('"ok"', '"Read_File"'),
        },
    )
    path = ["-r", "r1", "-r", "r2"]
    shown = toolctl("show", "Read_File", *path)
    assert shown.returncode == 0, shown.stderr
    assert "QUARANTINED" in shown.stdout.splitlines()[0]
    assert "confusable with 'read-file' (r1/a.toml:1)" in shown.stdout
    as_json = json.loads(toolctl("show", "Read_File", *path, "--json").stdout)
    assert as_json["quarantined"] == {
        "confusable_with": "read-file",
        "file": "r1/a.toml",
        "line": 1,
    }
    holder = json.loads(toolctl("show", "read-file", *path, "--json").stdout)
    assert holder["quarantined"] is None


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
@pytest.mark.parametrize(
    ("line", "told"),
    [
        (["run", "echo", "--args", "@/dev/zero"], "--args file /dev/zero is larger than 64 MiB"),
        (["run", "echo", "--batch", "/dev/zero"], "--batch line 1 is longer than 64 MiB"),
        (["import", "trustgraph", "/dev/zero"], "/dev/zero is larger than 64 MiB"),
        (["import", "mcp-config", "/dev/zero"], "/dev/zero is larger than 64 MiB"),
    ],
    ids=["--args @FILE", "--batch FILE", "import FILE", "import mcp-config FILE"],
)
def test_an_input_that_never_ends_is_refused_at_a_bound(
    toolctl: Toolctl, tmp_path: Path, line: list[str], told: str
) -> None:
    """What toolctl holds whole (an --args file, a --batch line, a file to import) is read
    up to 64 MiB: /dev/zero took all the memory there was, then exit 70."""
    write_files(
        tmp_path,
        {"reg/e.toml": '[[tool]]\nname = "echo"\n[tool.local]\ncommand = ["cat"]\n'},
    )
    done = toolctl(*line, "-r", str(tmp_path / "reg"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"toolctl: error: {told}"), done.stderr


def test_batch_with_dry_run_is_refused_and_runs_nothing(toolctl: Toolctl, tmp_path: Path) -> None:
    """`--batch FILE --dry-run` ran every line for real (results, history rows): a dry run
    must run nothing, so the pair is a usage error."""
    marker = tmp_path / "ran"
    write_files(
        tmp_path,
        {
            "reg/t.toml": f'[[tool]]\nname = "touch"\n[tool.local]\ncommand = ["touch", '
            f'"{marker}"]\ninput = "none"\n'
        },
    )
    done = toolctl("run", "touch", "--batch", "-", "--dry-run", "-r", "reg", input="{}\n")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "toolctl: error: --dry-run shows one call's plan; drop --batch (or --dry-run)\n"
    )
    assert not marker.exists()


def test_args_at_sign_alone_names_no_file(toolctl: Toolctl, tmp_path: Path) -> None:
    write_files(tmp_path, {"reg/e.toml": '[[tool]]\nname = "e"\n[tool.local]\ncommand = ["cat"]\n'})
    done = toolctl("run", "e", "--args", "@", "-r", "reg")
    assert (done.returncode, done.stderr) == (
        2,
        "toolctl: error: --args @ names no file: --args @FILE\n",
    )
