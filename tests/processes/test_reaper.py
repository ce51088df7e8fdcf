"""The sweep that ends the last call in flight kills what the calls left, and only that.

Real processes throughout: ``Reaping`` is entered as ``Caller`` enters it around each
call, and the processes a call "leaves" are real ``sleep`` children of this process.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.serve.serve_support import wait_for
from toolctl.processes.reaper import Reaping
from toolctl.settings import Settings

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


@pytest.fixture(autouse=True)
def own_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """These sweeps are toolctl's own process's (a library host's are tagged only)."""
    from toolctl.processes import reaper

    monkeypatch.setattr(reaper, "OWN_PROCESS", True)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_call_that_begins_while_the_last_one_is_swept_keeps_its_processes(
    settings: Settings,
) -> None:
    # a server's next call can begin while the call before it is being swept: the sweep
    # must not take the new call's tool for a leftover (it killed it in ~50 ms)
    for _ in range(8):
        _begin_while_swept(settings)


def _begin_while_swept(settings: Settings) -> None:
    first = Reaping(settings)
    first.__enter__()
    left = [subprocess.Popen(["sleep", "60"]) for _ in range(60)]
    sweeping = threading.Thread(target=first.__exit__, args=(None, None, None))
    sweeping.start()
    deadline = time.monotonic() + 30
    while _running(left[-1].pid):  # not wait_for: its 50 ms naps outlast the sweep
        assert time.monotonic() < deadline, "the sweep never began"
    with Reaping(settings):
        tool = subprocess.Popen(["sleep", "60"])
        sweeping.join(timeout=60)
        assert _running(tool.pid), "the sweep of the call before killed this call's tool"
        assert not any(_running(child.pid) for child in left)
    assert wait_for(lambda: not _running(tool.pid), seconds=30)  # its own sweep did
    for child in [*left, tool]:
        child.poll()  # reaped by the sweep: nothing left for Popen to wait for
