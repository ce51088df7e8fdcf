"""The suite's own configuration (pyproject's ``[tool.pytest.ini_options]``), run on a
test file of its own: what must fail a test does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

DIES = """
import threading

def test_a_thread_dies() -> None:
    def broken() -> None:
        raise RuntimeError("the thread died")

    thread = threading.Thread(target=broken)
    thread.start()
    thread.join()
"""


def test_an_unhandled_exception_in_a_thread_fails_the_test(tmp_path: Path) -> None:
    (tmp_path / "test_dies.py").write_text(DIES)
    config = str(ROOT / "pyproject.toml")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", config,
         "--rootdir", str(tmp_path), str(tmp_path / "test_dies.py")],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout
    assert "1 failed" in done.stdout and "the thread died" in done.stdout
