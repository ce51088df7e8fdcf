"""Shared fixtures: an isolated environment per test and a way to call the real CLI.

Every test gets its own XDG cache/state/data directories, so caches, managed services and
crash reports never leak between tests or into the developer's home.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    home = tmp_path / "home"
    for variable, folder in (
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_DATA_HOME", "data"),
    ):
        monkeypatch.setenv(variable, str(home / folder))
    for variable in list(os.environ):
        if variable.startswith("TOOLCTL_") and variable not in {
            "TOOLCTL_REQUIRE_ENGINES",
            "TOOLCTL_CONTAINER_ENGINE",
        }:
            monkeypatch.delenv(variable)
    monkeypatch.setenv("NO_COLOR", "1")
    return {k: v for k, v in os.environ.items()}


def write_files(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``{relative path: text}`` below root (text is dedented); returns root."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


Toolctl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def toolctl(tmp_path: Path) -> Toolctl:
    """Run the real ``toolctl`` command (``python -m toolctl``) in a subprocess."""

    def call(
        *args: str,
        cwd: Path | None = None,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        environment = {**os.environ, **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "toolctl", *args],
            cwd=cwd or tmp_path,
            input=input,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return call
