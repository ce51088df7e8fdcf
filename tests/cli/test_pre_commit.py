"""The `toolctl-check` hook of .pre-commit-hooks.yaml, run by the real pre-commit on a
temporary git repository: pre-commit installs this checkout in an environment of its own
(``language: python``) and runs the hook, which fails on a broken registry and passes on a
fixed one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, write_files

PRE_COMMIT = Path(sys.executable).parent / "pre-commit"

pytestmark = [
    pytest.mark.skipif(not PRE_COMMIT.exists(), reason="pre-commit is not installed"),
    pytest.mark.skipif(shutil.which("git") is None, reason="no git"),
    pytest.mark.timeout(600),
]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, timeout=60)


def test_the_hook_fails_a_broken_registry_and_passes_a_fixed_one(tmp_path: Path) -> None:
    repo = write_files(
        tmp_path / "project",
        {
            "toolctl.toml": '[registry]\npaths = ["registry"]\n',
            "registry/x.toml": """
            [[tool]]
            name = "x"
            descripton = "a typo"
            [tool.local]
            command = ["true"]
            """,
        },
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PRE_COMMIT_COLOR": "never",
    }

    def hook() -> subprocess.CompletedProcess[str]:
        # try-repo: the hooks of this checkout as it is (uncommitted changes included)
        return subprocess.run(
            [str(PRE_COMMIT), "try-repo", str(ROOT), "toolctl-check", "--all-files"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=540,
        )

    broken = hook()
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "toolctl check" in broken.stdout and "Failed" in broken.stdout
    assert "exit code: 3" in broken.stdout
    assert "unknown field 'descripton' (did you mean 'description'?)" in broken.stdout

    (repo / "registry/x.toml").write_text(
        '[[tool]]\nname = "x"\ndescription = "fixed"\n[tool.local]\ncommand = ["true"]\n'
    )
    git(repo, "add", "-A")
    fixed = hook()
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Passed" in fixed.stdout

    # a commit that only deletes a descriptor another one names: pre-commit matches no
    # deleted file against `files`, so the hook was skipped and the broken registry went in
    (repo / "registry/g.toml").write_text('[[group]]\nname = "g"\ntools = ["x"]\n')
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "both")
    git(repo, "rm", "-q", "registry/x.toml")
    staged = subprocess.run(
        [str(PRE_COMMIT), "try-repo", str(ROOT), "toolctl-check"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    assert staged.returncode == 1, staged.stdout + staged.stderr
    assert "Skipped" not in staged.stdout and "exit code: 3" in staged.stdout


def test_the_config_docs_how_to_ci_writes_runs_the_hook(tmp_path: Path) -> None:
    """docs/how-to/ci.md's pre-commit block, run as shown from a project's root with toolctl
    cloned in ~/toolctl: the config it writes names that clone and a commit of it (no
    placeholder to fill in), and pre-commit fetches the hook from there and runs it."""
    from tests.test_docs import blocks

    shown = [
        b.body
        for b in blocks((ROOT / "docs/how-to/ci.md").read_text(encoding="utf-8"))
        if b.lang == "sh" and "pre-commit install" in b.body
    ]
    assert len(shown) == 1, shown
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(
        ["git", "clone", "-q", str(ROOT), str(home / "toolctl")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    repo = write_files(
        tmp_path / "project",
        {
            "toolctl.toml": '[registry]\npaths = ["registry"]\n',
            "registry/x.toml": '[[tool]]\nname = "x"\ndescripton = "a typo"\n'
            '[tool.local]\ncommand = ["true"]\n',
        },
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{PRE_COMMIT.parent}{os.pathsep}{os.environ['PATH']}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PRE_COMMIT_COLOR": "never",
    }
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", shown[0]],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    config = (repo / ".pre-commit-config.yaml").read_text()
    assert f"repo: {ROOT}" in config or f"repo: {ROOT.resolve()}" in config, config
    assert "OWNER" not in config
    assert (repo / ".git/hooks/pre-commit").exists()
    assert done.returncode == 1, done.stdout + done.stderr  # the broken registry fails it
    assert "unknown field 'descripton' (did you mean 'description'?)" in done.stdout
