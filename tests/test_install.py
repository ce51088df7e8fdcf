"""`pip install` of this checkout into a fresh virtual environment gives a working
`toolctl`, used from any directory with the user registry: issue 20's "done when".

The package files (tracked, and new ones not yet tracked) are copied out first, so the
build leaves nothing in the checkout. pip reaches PyPI for what its cache lacks; its own
cache is used (not a test's empty XDG_CACHE_HOME), so a second run costs what a user's
second install does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

SHIPPED = ["pyproject.toml", "README.md", "toolctl"]


def copy_package(target: Path) -> Path:
    """The files `pip install .` builds from, as a clean clone would have them."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *SHIPPED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in listed:
        source = ROOT / name
        if "__pycache__" in name or not source.is_file():
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name)
    return target


@pytest.mark.timeout(900)
def test_pip_install_gives_a_toolctl_that_works_from_anywhere(tmp_path: Path) -> None:
    source = copy_package(tmp_path / "clone")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    home = tmp_path / "home"
    env = {
        **os.environ,
        "PIP_CACHE_DIR": str(Path.home() / ".cache" / "pip"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("VIRTUAL_ENV", None)
    installed = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", str(source)],
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    shown = subprocess.run(
        [str(venv / "bin" / "pip"), "show", "toolctl-cli"], env=env, capture_output=True, text=True
    )
    assert "Name: toolctl-cli" in shown.stdout

    def toolctl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["toolctl", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
        )

    empty = tmp_path / "empty"
    empty.mkdir()
    assert shutil.which("toolctl", path=env["PATH"]) == str(venv / "bin" / "toolctl")
    for args in (["new", "tool", "hello"], ["register"]):
        done = toolctl(*args, cwd=empty)
        assert done.returncode == 0, done.stderr
    ran = toolctl("run", "hello", cwd=Path("/"))
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "Hello, world!\n", "")
    where = json.loads(toolctl("where", "--json", cwd=Path("/")).stdout)
    assert where["register_writes_to"] == str(home / "data" / "toolctl" / "registry")
    assert where["project"] is None
