"""`toolctl run` of a trivial local tool against a bare Python script launching the same tool.

Target (issue 14): toolctl's run costs at most 1.5x the bare script, measured in one run,
alternating the commands: wall time, and CPU time (steadier on a busy machine). Measured
alongside, so that the ratio can be read against what no toolctl can go below while typer
is its CLI library:

* the floor: the same bare script that first imports typer (``import typer`` is most of
  toolctl's own start-up, and the tool's spawn and Python's start are in the bare script);
* ``python -c "import typer"`` and ``python -c pass`` on their own;
* the same ``toolctl run`` with its run history off (TOOLCTL_HISTORY=0): the ratio on/off
  is what writing the call's history row costs a run.

toolctl runs byte-compiled, as an installed package is (``compileall`` first: the
environment may set PYTHONDONTWRITEBYTECODE, and compiling toolctl's modules at every
start is ~30 ms that no installed copy pays). ``--baseline DIR`` runs another checkout's
``toolctl`` package too (a byte-compiled copy of it, e.g. of /work/main), side by side.

Usage::

    python bench/run_local.py [--repeat 31] [--baseline /work/main]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from timing import alternate_cpu, report

ROOT = Path(__file__).resolve().parent.parent
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
BARE_NAME = "bare python + subprocess"
FLOOR_NAME = "floor: bare + import typer"
NO_HISTORY = "toolctl run, TOOLCTL_HISTORY=0"


def compiled_copy(checkout: Path, work: Path) -> Path:
    """A byte-compiled copy of ``checkout``'s toolctl package; the directory to put on sys.path."""
    place = work / "baseline"
    shutil.copytree(checkout / "toolctl", place / "toolctl", ignore=shutil.ignore_patterns("*.pyc"))
    compileall.compile_dir(place / "toolctl", quiet=1)
    return place


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=31)
    parser.add_argument("--baseline", metavar="DIR", help="another checkout to compare with")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="toolctl-bench-run-"))
    try:
        compileall.compile_dir(ROOT / "toolctl", quiet=1)
        script = work / "echo.py"
        script.write_text(SCRIPT)
        (work / "reg").mkdir()
        (work / "reg/echo.toml").write_text(TOOL.format(python=sys.executable, script=script))
        (work / "bare.py").write_text(BARE.format(script=str(script)))
        (work / "floor.py").write_text("import typer\n" + BARE.format(script=str(script)))
        past = time.time() - 60  # written a minute ago: the cache trusts it at once
        for path in (work / "reg", work / "reg/echo.toml"):
            os.utime(path, (past, past))
        toolctl = str(Path(sys.executable).with_name("toolctl"))
        run = [toolctl, "run", "echo", "--arg", "text=hi", "-r", str(work / "reg")]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            'python -c "import typer"': [sys.executable, "-c", "import typer"],
            BARE_NAME: [sys.executable, str(work / "bare.py")],
            FLOOR_NAME: [sys.executable, str(work / "floor.py")],
            "toolctl run": run,
            NO_HISTORY: run,
        }
        state = {"XDG_STATE_HOME": str(work / "state")}  # the bench's own run history
        envs = {
            "toolctl run": {"XDG_CACHE_HOME": str(work / "cache"), **state},
            NO_HISTORY: {"XDG_CACHE_HOME": str(work / "cache"), **state, "TOOLCTL_HISTORY": "0"},
        }
        if options.baseline:
            commands["toolctl run (baseline)"] = run
            envs["toolctl run (baseline)"] = {
                "PYTHONPATH": str(compiled_copy(Path(options.baseline).resolve(), work)),
                "XDG_CACHE_HOME": str(work / "cache-baseline"),
                **state,
            }
        load = os.getloadavg()
        wall, cpu = alternate_cpu(commands, repeat=options.repeat, env={"NO_COLOR": "1"}, envs=envs)
        after = os.getloadavg()
        for title, times in (("wall time", wall), ("CPU time (user + system, with children)", cpu)):
            base, floor = times[BARE_NAME], times[FLOOR_NAME]
            report(
                f"run a trivial local tool, {title} (median; ratio to bare script, to floor)",
                [
                    (k, f"{v:7.1f} ms   {v / base:.2f}x   {v / floor:.2f}x")
                    for k, v in times.items()
                ],
            )
            on, off = times["toolctl run"], times[NO_HISTORY]
            print(f"  run history on / off: {on / off:.3f}")
        print(f"\n  load average (1 min) {load[0]:.2f} before, {after[0]:.2f} after")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
