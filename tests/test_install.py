"""The README's install commands, each in a fresh home, give a `toolctl` that works from
any directory with the user registry: issue 20's "done when".

Each way the README's Install section shows (uv, pipx, pip into a virtual environment, a
wheel built once) runs as written in a copy of this checkout (the package files, tracked
and new ones not yet tracked, as a clean clone has them; the build leaves nothing in the
checkout). Then, from an empty directory: `toolctl new tool hello`, `toolctl register`,
and from `/`, `toolctl run hello`. The installers reach PyPI for what their caches lack;
their own caches are used (not the test's empty home), as on a user's second install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

SHIPPED = ["pyproject.toml", "README.md", "toolctl"]
MARK = "<!-- doctest: skip tests/test_install.py"


def install_blocks() -> list[list[str]]:
    """The README's install blocks, each a list of commands (comments dropped)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.findall(re.escape(MARK) + r"[^\n]*\n```sh\n(.*?)```", text, re.S)
    return [
        [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]
        for block in found
    ]


def ways() -> list[list[str]]:
    """The first block's lines are alternatives; the second block is one sequence."""
    alternatives, *sequences = install_blocks()
    return [[line] for line in alternatives] + sequences


def copy_package(target: Path) -> Path:
    """The files `pip install .` builds from, as a clean clone has them."""
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


def test_the_readme_shows_uv_pipx_pip_and_a_wheel() -> None:
    shown = [" ".join(way) for way in ways()]
    assert any(way.startswith("uv tool install .") for way in shown), shown
    assert any(way.startswith("pipx install .") for way in shown), shown
    assert any(way.startswith("pip install .") for way in shown), shown
    assert any("wheel" in way and "dist/" in way for way in shown), shown


@pytest.mark.timeout(900)
@pytest.mark.parametrize("way", ways(), ids=lambda way: way[-1].split()[0] + "-" + str(len(way)))
def test_an_install_gives_a_toolctl_that_works_from_anywhere(
    tmp_path: Path, way: list[str]
) -> None:
    tools = Path(sys.executable).parent  # uv and pipx come with the dev environment
    for command in {line.split()[0] for line in way} - {"python3"}:
        if shutil.which(command, path=f"{tools}{os.pathsep}{os.environ['PATH']}") is None:
            pytest.fail(f"{command} is not installed: `make install` puts it in .venv")
    clone = copy_package(tmp_path / "toolctl")
    home = tmp_path / "home"
    bin_dirs = [home / ".local" / "bin"]
    if any(line.startswith("pip install") for line in way):  # "the environment you are in"
        subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "env")], check=True)
        bin_dirs.insert(0, tmp_path / "env" / "bin")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("TOOLCTL_", "VIRTUAL_ENV"))},
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PIP_CACHE_DIR": str(Path.home() / ".cache" / "pip"),
        "UV_CACHE_DIR": str(Path.home() / ".cache" / "uv"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PATH": os.pathsep.join([*map(str, bin_dirs), str(tools), os.environ["PATH"]]),
    }
    for line in way:
        done = subprocess.run(
            ["bash", "-c", line], cwd=clone, env=env, capture_output=True, text=True, timeout=840
        )
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"

    found = shutil.which("toolctl", path=env["PATH"])
    assert found is not None and Path(found).parent == bin_dirs[0], found
    if any(line.startswith("pip install") for line in way):  # PEP 561: a library user's
        typed = (tmp_path / "env").glob("lib/python*/site-packages/toolctl/py.typed")
        assert list(typed), "the installed package has no py.typed"  # mypy checks its calls

    def toolctl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["toolctl", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
        )

    empty = tmp_path / "empty"
    empty.mkdir()
    for args in (["new", "tool", "hello"], ["register"]):
        done = toolctl(*args, cwd=empty)
        assert done.returncode == 0, done.stderr
    ran = toolctl("run", "hello", cwd=Path("/"))
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "Hello, world!\n", "")
    where = json.loads(toolctl("where", "--json", cwd=Path("/")).stdout)
    assert where["register_writes_to"] == str(home / ".local/share/toolctl/registry")
    assert where["project"] is None
