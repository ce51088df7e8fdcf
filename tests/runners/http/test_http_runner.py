"""The HTTP runner loads httpx without httpx's own command line (rich, pygments, click)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from toolctl.imports import skip_httpx_cli
skip_httpx_cli()
import httpx
assert httpx.Client is not None
print(sorted(m for m in ("rich", "pygments", "click") if m in sys.modules))
try:
    httpx.main()
except RuntimeError as exc:
    print("main:", exc)
"""


def test_httpx_loads_without_its_command_line() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "[]"
    assert lines[1].startswith("main: httpx's command line is not loaded inside toolctl")
