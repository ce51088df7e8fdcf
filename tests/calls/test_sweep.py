"""What the call path reaps: only what calls left behind, never a library user's children."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import write_files
from toolctl import calls
from toolctl.registry.index import Registry
from toolctl.settings import Settings

TOOL = """
[[tool]]
name = "noop"
[tool.local]
command = ["true"]
input = "none"
"""


def test_a_callers_children_started_outside_calls_survive(tmp_path: Path) -> None:
    write_files(tmp_path / "registry", {"tools.toml": TOOL})
    settings = Settings.load([tmp_path / "registry"])
    registry = Registry.open(settings)
    mine = []
    try:
        with calls.Caller(settings, registry):  # closed without a call
            mine.append(subprocess.Popen(["sleep", "60"]))
        with calls.Caller(settings, registry) as caller:
            assert caller.call("noop").success
            mine.append(subprocess.Popen(["sleep", "60"]))  # after the call ended
        assert [child.poll() for child in mine] == [None, None]
    finally:
        for child in mine:
            child.kill()
            child.wait()


SLOW = """
[[tool]]
name = "slow"
[tool.local]
command = ["sleep", "1"]
input = "none"

[[tool]]
name = "leaves"
description = "leaves a child in a session of its own, then answers"
[tool.local]
command = ["sh", "-c", "setsid sleep 60 > /dev/null 2>&1 & echo $!"]
input = "none"
"""


def test_an_agents_own_children_during_a_call_are_its_own(tmp_path: Path) -> None:
    """In a library host the sweep that ended the last call killed the processes the agent
    started meanwhile (its `sh -c 'sleep 2; exit 3'` came back -9) and took its children's
    exit statuses (`Popen.wait()` said 0 for an exit 7). Only what carries a call's tag is
    killed now, and the host is a subreaper only while calls run."""
    import threading
    import time

    write_files(tmp_path / "registry", {"tools.toml": SLOW})
    settings = Settings.load([tmp_path / "registry"])
    registry = Registry.open(settings)
    failed = subprocess.Popen(["sh", "-c", "exit 7"])  # ended before the call: its status
    time.sleep(0.2)
    own: dict[str, object] = {}

    def agent_runs_its_own() -> None:
        done = subprocess.run(["sh", "-c", "sleep 2; echo finished; exit 3"],
                              capture_output=True, text=True)  # fmt: skip
        own["run"] = (done.returncode, done.stdout.strip())

    with calls.Caller(settings, registry) as caller:
        mine = threading.Thread(target=agent_runs_its_own)
        call = threading.Thread(target=lambda: own.setdefault("call", caller.call("slow")))
        call.start()
        time.sleep(0.3)
        mine.start()
        call.join()
        mine.join()
    assert own["run"] == (3, "finished")
    assert failed.wait() == 7
    assert _subreaper() == 0  # the host's later orphans are init's again
    # what a call leaves in a session of its own still dies with it
    with calls.Caller(settings, registry) as caller:
        left = int(caller.call("leaves").output.strip())
    for _ in range(100):
        try:
            state = Path(f"/proc/{left}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            break
        if state == "Z":
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the call's setsid child outlived it")


def _subreaper() -> int:
    """PR_GET_CHILD_SUBREAPER of this process."""
    import ctypes

    flag = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(37, ctypes.byref(flag), 0, 0, 0)
    return flag.value
