"""Cancelling one call from another thread (``Caller.call(..., cancel=Cancel())``).

Real processes: the tool sleeps in a process group of its own; cancelling the call kills
it and the call raises Interrupted, while a call on another thread of the same runner
goes on to its result.
"""

from __future__ import annotations

import contextlib
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_files
from toolctl.calls import Caller, resolve
from toolctl.calls.cancel import Cancel
from toolctl.errors import Interrupted
from toolctl.registry.index import Registry
from toolctl.settings import Settings

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


def registry(tmp_path: Path, mark: str) -> Settings:
    write_files(
        tmp_path / "registry",
        {
            "tools.toml": f"""
            [[tool]]
            name = "nap"
            timeout = 60
            [tool.local]
            command = ["sleep", "{mark}"]
            input = "none"

            [[tool]]
            name = "hello"
            [tool.local]
            command = ["sh", "-c", "sleep 0.5; echo hello"]
            input = "none"
            """
        },
    )
    return Settings.load([tmp_path / "registry"])


def sleeping(mark: str) -> list[int]:
    """Pids of live processes whose command line carries ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, ValueError, IndexError):
            continue
        if mark in line and state != b"Z":
            found.append(int(entry.name))
    return found


def test_cancel_kills_the_calls_process_and_raises_interrupted(tmp_path: Path) -> None:
    mark = f"{9000 + random.randrange(10**5)}.{random.randrange(10**6)}"
    settings = registry(tmp_path, mark)
    cancel = Cancel()
    outcome: dict[str, object] = {}

    registry_ = Registry.open(settings)
    # resolved here, as a server does: a Registry is not shared between threads
    nap_tool, hello_tool = resolve(registry_, "nap"), resolve(registry_, "hello")
    with Caller(settings, registry_) as caller:

        def nap() -> None:
            try:
                outcome["result"] = caller.call(nap_tool, cancel=cancel)
            except Interrupted as exc:
                outcome["error"] = exc

        def hello() -> None:
            outcome["hello"] = caller.call(hello_tool)

        threads = [threading.Thread(target=nap), threading.Thread(target=hello)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 20
        while not sleeping(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleeping(mark), "the tool never started"
        cancel.cancel()
        for thread in threads:
            thread.join(30)

    assert isinstance(outcome.get("error"), Interrupted), outcome
    assert "cancelled" in str(outcome["error"])
    assert not sleeping(mark)
    assert outcome["hello"].output == "hello"  # type: ignore[attr-defined]


def test_a_cancelled_call_does_not_start(tmp_path: Path) -> None:
    mark = f"{9000 + random.randrange(10**5)}.{random.randrange(10**6)}"
    settings = registry(tmp_path, mark)
    cancel = Cancel()
    cancel.cancel()
    with Caller(settings, Registry.open(settings)) as caller, pytest.raises(Interrupted):
        caller.call("nap", cancel=cancel)
    assert not sleeping(mark)


def test_what_a_call_leaves_is_killed_as_it_ends_while_others_run(tmp_path: Path) -> None:
    """A server is never idle when calls keep coming: what a call left in a session of its
    own (``setsid``) is killed as that call ends, not at a sweep that never comes; the
    call still running keeps its processes."""
    long_mark = f"{9000 + random.randrange(10**5)}.{random.randrange(10**6)}"
    left_mark = f"{9000 + random.randrange(10**5)}.{random.randrange(10**6)}"
    write_files(
        tmp_path / "registry",
        {
            "tools.toml": f"""
            [[tool]]
            name = "nap"
            timeout = 60
            [tool.local]
            command = ["sleep", "{long_mark}"]
            input = "none"

            [[tool]]
            name = "leaver"
            [tool.local]
            command = ["sh", "-c", "setsid sleep {left_mark} >/dev/null 2>&1 & echo left"]
            input = "none"
            """
        },
    )
    settings = Settings.load([tmp_path / "registry"])
    registry_ = Registry.open(settings)
    nap, leaver = resolve(registry_, "nap"), resolve(registry_, "leaver")
    cancel = Cancel()
    with Caller(settings, registry_) as caller:
        napping = threading.Thread(target=lambda: _quietly(caller, nap, cancel))
        napping.start()
        deadline = time.monotonic() + 20
        while not sleeping(long_mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleeping(long_mark), "the long call never started"
        assert caller.call(leaver).output == "left"
        deadline = time.monotonic() + 5
        while sleeping(left_mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        left, still = sleeping(left_mark), sleeping(long_mark)
        cancel.cancel()
        napping.join(30)
    assert left == [], "what the call left outlived it while another call ran"
    assert still, "the call still running lost its process"


def _quietly(caller: Caller, tool: Any, cancel: Cancel) -> None:
    with contextlib.suppress(Interrupted):
        caller.call(tool, cancel=cancel)


def test_closing_the_caller_interrupts_a_call_in_flight_and_refuses_the_next(
    tmp_path: Path,
) -> None:
    """A call another thread makes when its Caller is closed ends Interrupted (exit 130),
    not as a tool that failed ("exit status -9", recorded as one); a closed Caller makes
    no call (it reopened its runners in silence), as httpx's closed Client."""
    mark = f"{9000 + random.randrange(10**5)}.{random.randrange(10**6)}"
    settings = registry(tmp_path, mark)
    registry_ = Registry.open(settings)
    nap_tool = resolve(registry_, "nap")
    outcome: dict[str, object] = {}
    caller = Caller(settings, registry_)

    def nap() -> None:
        try:
            outcome["result"] = caller.call(nap_tool)
        except Interrupted as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=nap)
    thread.start()
    deadline = time.monotonic() + 20
    while not sleeping(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleeping(mark), "the tool never started"
    caller.close()
    thread.join(30)
    error = outcome.get("error")
    assert isinstance(error, Interrupted) and error.exit_code == 130, outcome
    assert "Caller was closed" in str(error) and not sleeping(mark)
    with pytest.raises(RuntimeError, match="closed"):
        caller.call("hello")
