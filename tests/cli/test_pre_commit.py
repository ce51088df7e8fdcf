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
