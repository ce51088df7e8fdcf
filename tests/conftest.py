"""Shared fixtures: an isolated environment per test and a way to call the real CLI.

Every test gets its own XDG cache/state/data directories, so caches, managed services and
crash reports never leak between tests or into the developer's home.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
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
    """Run a toolctl command line in this process, through the CLI's dispatch function.

    Cheaper than a subprocess by the interpreter's start-up, and the same code path as
    ``main`` but for the final ``os._exit``. Descriptors 0-2 are redirected to files for the
    call, so what a tool's child process writes straight to them is captured too; the
    working directory, the environment and the signal handlers are restored afterwards.
    Tests of signals and of process exit use ``toolctl_process`` instead.
    """

    def call(
        *args: str,
        cwd: Path | None = None,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        del timeout  # pytest-timeout bounds an in-process call
        return run_in_process(list(args), cwd or tmp_path, input, env)

    return call


@pytest.fixture
def toolctl_process(tmp_path: Path) -> Toolctl:
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


_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_in_process(
    args: list[str], cwd: Path, input: str | None, env: Mapping[str, str] | None
) -> subprocess.CompletedProcess[str]:
    from toolctl.cli import dispatch

    saved_environ = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_handlers = {number: signal.getsignal(number) for number in _SIGNALS}
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_fds = {fd: os.dup(fd) for fd in (0, 1, 2)}
    with (
        tempfile.TemporaryFile() as stdin,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        stdin.write((input or "").encode())
        stdin.seek(0)
        for fd, target in ((0, stdin), (1, out), (2, err)):
            os.dup2(target.fileno(), fd)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        try:
            os.environ.update(env or {})
            os.chdir(cwd)
            code = dispatch(args)
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            for fd, original in saved_fds.items():
                os.dup2(original, fd)
                os.close(original)
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_environ)
            for number, handler in saved_handlers.items():
                signal.signal(number, handler)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            ["toolctl", *args],
            code,
            out.read().decode("utf-8", errors="replace"),
            err.read().decode("utf-8", errors="replace"),
        )
