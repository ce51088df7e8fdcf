"""The command itself: version, help, usage errors, and what a crashed write leaves behind."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Toolctl, write_files


def test_version(toolctl: Toolctl) -> None:
    for flag in ("--version", "-V"):
        done = toolctl(flag)
        assert done.returncode == 0
        assert done.stdout.startswith("toolctl ")


def test_help_lists_every_command(toolctl: Toolctl) -> None:
    from toolctl.cli.app import COMMAND_MODULES

    done = toolctl("--help")
    assert done.returncode == 0
    for name in COMMAND_MODULES:
        assert f" {name} " in done.stdout, name


def test_usage_errors_exit_2(toolctl: Toolctl) -> None:
    unknown = toolctl("frobnicate")
    assert unknown.returncode == 2
    missing = toolctl("run")
    assert missing.returncode == 2
    bad_option = toolctl("list", "--colour")
    assert bad_option.returncode == 2
    for done in (unknown, missing, bad_option):
        assert "Traceback" not in done.stderr


def test_a_crashed_write_leaves_nothing_that_counts(tmp_path: Path, toolctl: Toolctl) -> None:
    # What a writer killed between writing its temporary file and linking it leaves behind.
    write_files(tmp_path, {"reg/tools/.half.4242.tmp": '[[tool]]\nname = "half"\n'})
    write_files(
        tmp_path, {"new.toml": '[[tool]]\nname = "whole"\n[tool.local]\ncommand = ["true"]\n'}
    )
    assert toolctl("check", "--strict", "-r", "reg").returncode == 0  # not read: hidden, not .toml
    assert toolctl("register", "new.toml", "-r", "reg").returncode == 0
    left = sorted(p.name for p in (tmp_path / "reg/tools").iterdir())
    assert left == ["whole.toml"]  # the next writer, holding the lock, removed it
