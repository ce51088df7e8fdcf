"""Finding promtool (scripts/install-promtool.sh) for the tests that check /metrics with it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def promtool() -> str:
    """promtool's path: $TOOLCTL_PROMTOOL, the script's cache, or PATH; else the test skips
    (fails where TOOLCTL_REQUIRE_ENGINES=1, as in CI)."""
    candidates = [
        os.environ.get("TOOLCTL_PROMTOOL") or "",
        str(Path.home() / ".cache/toolctl/bin/promtool"),
        shutil.which("promtool") or "",
    ]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    reason = "promtool is not installed: run scripts/install-promtool.sh"
    if os.environ.get("TOOLCTL_REQUIRE_ENGINES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def check_metrics(exposition: bytes) -> subprocess.CompletedProcess[str]:
    """``promtool check metrics`` on an exposition: exit 0 and no output when it is clean."""
    return subprocess.run(
        [promtool(), "check", "metrics"],
        input=exposition.decode(),
        capture_output=True,
        text=True,
        timeout=60,
    )
