"""Where the registry lives: the project found walking up, the user registry, the config
files, and what wins over what (toolctl.project, through Settings)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files
from toolctl.errors import UsageError
from toolctl.settings import Settings

PROJECT = """
[registry]
paths = ["tools", "../shared"]

[defaults]
pulsar_url = "pulsar://project:6650"
timeout = 120
"""


def load(cwd: Path, *registry: str, **environ: str) -> Settings:
    return Settings.load(registry, environ={**os.environ, **environ}, cwd=cwd)


def test_a_project_is_found_from_its_subdirectories(tmp_path: Path) -> None:
    write_files(tmp_path, {"p/toolctl.toml": PROJECT})
    deep = tmp_path / "p" / "a" / "b"
    deep.mkdir(parents=True)
    settings = load(deep)
    assert settings.project is not None and settings.project.file == tmp_path / "p/toolctl.toml"
    user = Path(os.environ["XDG_DATA_HOME"]) / "toolctl" / "registry"
    assert settings.search_path == (tmp_path / "p/tools", tmp_path / "shared", user)
    assert settings.sources == ("project", "project", "user")
    assert settings.config_files == (tmp_path / "p/toolctl.toml",)
    assert (settings.pulsar_url, settings.default_timeout) == ("pulsar://project:6650", 120.0)


def test_outside_a_project_the_user_registry_alone(tmp_path: Path) -> None:
    settings = load(tmp_path)
    assert settings.project is None
    assert settings.search_path == (settings.user_registry,)
    assert settings.sources == ("user",)
    assert settings.user_registry == Path(os.environ["XDG_DATA_HOME"]) / "toolctl/registry"


def test_flags_and_the_environment_win_over_the_project(tmp_path: Path) -> None:
    write_files(tmp_path, {"toolctl.toml": PROJECT})
    by_flag = load(tmp_path, "elsewhere")
    assert by_flag.search_path == (tmp_path / "elsewhere",)
    assert by_flag.sources == ("--registry",)
    assert by_flag.project is not None  # still in force for its defaults
    by_variable = load(tmp_path, TOOLCTL_REGISTRY=f"{tmp_path}/a{os.pathsep}{tmp_path}/b")
    assert by_variable.search_path == (tmp_path / "a", tmp_path / "b")
    assert by_variable.sources == ("TOOLCTL_REGISTRY", "TOOLCTL_REGISTRY")
    assert load(tmp_path, TOOLCTL_PULSAR_URL="pulsar://env:1").pulsar_url == "pulsar://env:1"


def test_user_defaults_under_project_defaults(tmp_path: Path) -> None:
    config = tmp_path / "config"
    write_files(
        config,
        {"toolctl/config.toml": '[defaults]\ncontainer_engine = "podman"\ntimeout = 5\n'},
    )
    write_files(tmp_path, {"p/toolctl.toml": PROJECT})
    inside = load(tmp_path / "p", XDG_CONFIG_HOME=str(config))
    assert (inside.container_engine, inside.default_timeout) == ("podman", 120.0)
    assert inside.config_files == (tmp_path / "p/toolctl.toml", config / "toolctl/config.toml")
    outside = load(tmp_path, XDG_CONFIG_HOME=str(config))
    assert (outside.container_engine, outside.default_timeout) == ("podman", 5.0)
    assert outside.pulsar_url == "pulsar://localhost:6650"


def test_a_project_may_leave_the_user_registry_out(tmp_path: Path) -> None:
    write_files(tmp_path, {"toolctl.toml": "[registry]\nuser = false\n"})
    settings = load(tmp_path)
    assert settings.search_path == (tmp_path / "registry",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[registry]\npath = ['x']\n", "unknown key 'path' in [registry]; did you mean 'paths'?"),
        ("[registy]\n", "unknown table [registy]; did you mean 'registry'?"),
        ("[registry]\npaths = 'x'\n", "registry.paths must be a list of directory names"),
        ("[defaults]\ntimeout = -1\n", "defaults.timeout must be seconds above 0"),
        ("[defaults]\ntimeout = true\n", "defaults.timeout must be seconds above 0"),
        ("[registry\n", "TOML syntax error"),
        ("[defaults]\ntimeout = " + "9" * 5000 + "\n", "TOML value error: Exceeds the limit"),
        ("[registry]\npaths = " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply to read"),
        ('[registry]\npaths = ["a\\u0000b"]\n', "registry.paths must be a list of directory"),
    ],
)
def test_a_broken_project_file_is_a_usage_error(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "toolctl.toml").write_text(text)
    with pytest.raises(UsageError) as caught:
        load(tmp_path)
    assert message in str(caught.value)
    assert str(tmp_path / "toolctl.toml") in str(caught.value)


def test_a_project_file_another_user_owns_is_ignored(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("giving a file to another user takes root")
    write_files(tmp_path, {"toolctl.toml": PROJECT})
    os.chown(tmp_path / "toolctl.toml", 4242, -1)
    settings = load(tmp_path)
    assert settings.project is None
    assert settings.ignored_project == tmp_path / "toolctl.toml"
    assert settings.search_path == (settings.user_registry,)


def test_init_where_another_users_project_file_is_refused_with_the_fix(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`init` said "exists already; nothing changed", and left no project (the file stays
    ignored); `list` warned without saying what to do."""
    if os.getuid() != 0:
        pytest.skip("giving a file to another user takes root")
    write_files(tmp_path, {"toolctl.toml": PROJECT})
    os.chown(tmp_path / "toolctl.toml", 4242, -1)
    done = toolctl("init", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert "toolctl.toml exists, but another user owns it, so toolctl ignores it" in done.stderr
    assert "chown $USER" in done.stderr
    listed = toolctl("list", cwd=tmp_path)
    assert "another user owns it (if it is yours, chown it to you; else remove it)" in (
        listed.stderr
    )


def test_a_removed_working_directory_is_outside_any_project(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    previous = os.getcwd()
    os.chdir(gone)
    try:
        gone.rmdir()
        settings = Settings.load()
    finally:
        os.chdir(previous)
    assert settings.project is None
