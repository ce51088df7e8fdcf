"""Fixtures for the container runtime tests: a real podman and the busybox test image.

CI builds both with scripts/setup-podman.sh before the tests; here they are only checked.
Without them the tests skip with the reason, unless TOOLCTL_REQUIRE_ENGINES=1 makes that a
failure. Every test tool's name starts with ``ct-``, so its containers are named
``toolctl-ct-...``; whatever of those a test left behind is removed at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

IMAGE = "localhost/toolctl-busybox:latest"
PREFIX = "toolctl-ct-"


def _require() -> bool:
    return os.environ.get("TOOLCTL_REQUIRE_ENGINES", "").strip().lower() in {"1", "true", "yes"}


def _default_containers_conf(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point CONTAINERS_CONF at the file setup-podman.sh writes, unless it is already set."""
    if os.environ.get("CONTAINERS_CONF"):
        return
    home = os.environ.get("HOME") or str(Path.home())
    conf = os.environ.get("TOOLCTL_CONTAINERS_CONF") or f"{home}/.config/toolctl/containers.conf"
    if Path(conf).is_file():
        monkeypatch.setenv("CONTAINERS_CONF", conf)


def _podman_problem(podman: str | None) -> str | None:
    """Why podman cannot run the test image here, or None when it can."""
    if podman is None:
        return "podman is not installed (run scripts/setup-podman.sh)"
    answers = _call([podman, "version", "--format", "{{.Server.Version}}"])
    if answers.returncode != 0:
        return f"podman does not answer: {answers.stderr.strip()}"
    if _call([podman, "image", "exists", IMAGE]).returncode != 0:
        return f"image {IMAGE} is missing (run scripts/setup-podman.sh)"
    smoke = _call([podman, "run", "--rm", "-i", "--pull", "never", IMAGE, "cat"], "ok")
    if smoke.stdout != "ok":
        return (
            f"podman cannot run containers here: {smoke.stderr.strip()} "
            "(run scripts/setup-podman.sh and export CONTAINERS_CONF)"
        )
    return None


def _call(argv: list[str], input: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, input=input, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="session")
def podman() -> Iterator[str]:
    """podman's path, once it answers and runs the test image; else skip (or fail)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _default_containers_conf(monkeypatch)
        path = shutil.which("podman")
        problem = _podman_problem(path)
        if problem is not None:
            if _require():
                pytest.fail(f"{problem}; TOOLCTL_REQUIRE_ENGINES=1 needs a working engine")
            pytest.skip(problem)
        assert path is not None
        yield path
        leftovers = leftover_containers(path, PREFIX)
        if leftovers:
            _call([path, "rm", "--force", "--time", "0", *leftovers])


@pytest.fixture(autouse=True)
def use_podman(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests drive podman, whatever the developer's TOOLCTL_CONTAINER_ENGINE says."""
    monkeypatch.setenv("TOOLCTL_CONTAINER_ENGINE", "podman")


def leftover_containers(podman: str, prefix: str) -> list[str]:
    """Names of the containers, running or not, whose name starts with ``prefix``."""
    listed = _call([podman, "ps", "--all", "--filter", f"name=^{prefix}", "--format", "{{.Names}}"])
    assert listed.returncode == 0, listed.stderr
    return [name for name in listed.stdout.split() if name.startswith(prefix)]


@pytest.fixture
def leftovers(podman: str) -> Callable[[str], list[str]]:
    """``leftovers("toolctl-ct-x-")``: the containers a test left behind under that prefix."""
    return lambda prefix: leftover_containers(podman, prefix)
