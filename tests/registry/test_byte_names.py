"""Registry files, folders and paths whose names are not UTF-8 (issue #24, item 1):
skipped with a warning naming the path, a one-line error for a registry path, never exit 70."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Toolctl, examples, write_files
from toolctl.records.crash import write_crash_report as _write_crash_report

TOOL = """
[[tool]]
name = "{name}"
description = "A tool"
[tool.local]
command = ["true"]
input = "none"
"""


def test_a_file_and_a_folder_named_in_bytes_are_skipped_with_a_warning(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    registry = write_files(tmp_path / "reg", {"good.toml": TOOL.format(name="good")})
    (tmp_path / "reg").joinpath(os.fsdecode(b"f\xff.toml")).write_text(TOOL.format(name="bad"))
    inner = (tmp_path / "reg").joinpath(os.fsdecode(b"d\xfe"))
    inner.mkdir()
    (inner / "x.toml").write_text(TOOL.format(name="hidden"))
    for _ in range(2):  # built, then from the cache: the warning holds
        result = toolctl("list", "-r", str(registry))
        assert result.returncode == 0, result.stderr
        assert "good" in result.stdout and "bad" not in result.stdout
        assert "hidden" not in result.stdout
        assert "reg/f\\xff.toml: the name is not UTF-8 (skipped)" in result.stderr
        assert "reg/d\\xfe: the name is not UTF-8 (skipped)" in result.stderr


def test_a_registry_path_in_bytes_is_one_line(tmp_path: Path, toolctl_process: Toolctl) -> None:
    directory = os.fsencode(tmp_path) + b"/reg\xff"
    os.mkdir(directory)
    result = toolctl_process("list", "-r", os.fsdecode(directory))
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "reg\\xff is not a UTF-8 path" in result.stderr


def test_the_crash_reporter_writes_a_report_about_bytes(tmp_path: Path) -> None:
    name = os.fsdecode(b"f\xff")
    try:
        raise RuntimeError(name)
    except RuntimeError:
        path = _write_crash_report(["list", "-r", name])
    text = Path(path).read_text()
    assert "toolctl list -r f\\udcff" in text and "RuntimeError" in text


NAME_BYTES = st.binary(min_size=1, max_size=12).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
)


@settings(
    max_examples=examples(30),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(names=st.lists(NAME_BYTES, min_size=1, max_size=4, unique=True), folder=st.booleans())
def test_any_bytes_as_names_never_crash_a_listing(
    names: list[bytes], folder: bool, toolctl: Toolctl
) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        write_files(root, {"good.toml": TOOL.format(name="good")})
        for name in names:
            target = os.path.join(os.fsencode(root), name + (b"" if folder else b".toml"))
            if os.path.exists(target):
                continue
            if folder:
                os.mkdir(target)
                with open(os.path.join(target, b"t.toml"), "w") as out:
                    out.write(TOOL.format(name="inner"))
            else:
                with open(target, "w") as out:
                    out.write("not toml [")
        result = toolctl("list", "-r", str(root), "--json")
        assert result.returncode == 0, result.stderr
        assert "internal error" not in result.stderr
    finally:
        shutil.rmtree(root)
