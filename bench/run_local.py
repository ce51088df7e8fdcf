"""`toolctl run` of a trivial local tool against a bare Python script launching the same tool.

Target (issue "Run tools by name"): toolctl's run costs at most 2.5x the bare script, measured
in one run, alternating the two.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from timing import alternate, report

TOOL = """
[[tool]]
name = "echo"
description = "a trivial tool: reads JSON on stdin, prints it"
[tool.local]
command = ["{python}", "{script}"]
[[tool.arguments]]
name = "text"
"""
SCRIPT = "import sys\nsys.stdout.write(sys.stdin.read())\n"
BARE = """
import json, subprocess, sys
done = subprocess.run([sys.executable, {script!r}], input=json.dumps({{"text": "hi"}}).encode(),
                      capture_output=True)
sys.stdout.write(done.stdout.decode())
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=31)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="toolctl-bench-run-"))
    try:
        script = work / "echo.py"
        script.write_text(SCRIPT)
        (work / "reg").mkdir()
        (work / "reg/echo.toml").write_text(TOOL.format(python=sys.executable, script=script))
        (work / "bare.py").write_text(BARE.format(script=str(script)))
        past = time.time() - 60  # written a minute ago: the cache trusts it at once
        for path in (work / "reg", work / "reg/echo.toml"):
            os.utime(path, (past, past))
        env = {"XDG_CACHE_HOME": str(work / "cache"), "NO_COLOR": "1"}
        times = alternate(
            {
                "bare python + subprocess": [sys.executable, str(work / "bare.py")],
                "toolctl run": [
                    str(Path(sys.executable).with_name("toolctl")),
                    "run",
                    "echo",
                    "--arg",
                    "text=hi",
                    "-r",
                    str(work / "reg"),
                ],
            },
            repeat=options.repeat,
            env=env,
        )
        base = times["bare python + subprocess"]
        report(
            "run a trivial local tool (median, ratio to the bare script)",
            [(k, f"{v:7.1f} ms   {v / base:.2f}x") for k, v in times.items()],
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
