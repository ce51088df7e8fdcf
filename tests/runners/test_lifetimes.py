"""No process left behind: timeouts, Ctrl-C and SIGTERM end everything a call started.

Real processes throughout: the tools start grandchildren in sessions of their own
(``setsid``, ``nohup sh -c '... &'``), which a process-group kill cannot reach; the
tests look for them in /proc afterwards. An HTTP tool whose server drips its answer
checks that the timeout bounds the whole call.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files
from toolctl.records.transcripts import history_transcripts
from toolctl.settings import Settings

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


def markers() -> tuple[str, str, str]:
    """Three sleep durations no other process on the machine uses."""
    base = random.randrange(10**6, 10**7)
    return tuple(f"{9000 + n}.{base}" for n in range(3))  # type: ignore[return-value]


def spawner(marks: tuple[str, str, str], *, then: str) -> str:
    """A tool that leaves two grandchildren in sessions of their own, then does ``then``."""
    first, second, last = marks
    script = (
        f"setsid sleep {first} & nohup sh -c 'sleep {second} &' >/dev/null 2>&1; "
        f"sleep 0.3; {then.format(last=last)}"
    )
    return f"""
[[tool]]
name = "spawner"
timeout = 60
[tool.local]
command = ["sh", "-c", "{script}", "{{n}}"]
input = "none"
[[tool.arguments]]
name = "n"
required = false
"""


def survivors(marks: tuple[str, str, str]) -> list[str]:
    """Command lines of running processes that carry one of the markers."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                line = handle.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z" and any(mark in line for mark in marks):
            found.append(f"{entry}: {line}")
    return found


def gone(marks: tuple[str, str, str]) -> list[str]:
    """The survivors once those being killed have had a moment to go (empty is good)."""
    deadline = time.monotonic() + 5
    while (left := survivors(marks)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def running(marks: tuple[str, str, str], count: int) -> list[str]:
    """The processes carrying the marks, once ``count`` of them run (or 5 s have passed)."""
    deadline = time.monotonic() + 5
    while len(found := survivors(marks)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def start(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", *args, "-r", str(tmp_path / "reg")],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(child: subprocess.Popen[str], signum: int) -> tuple[int, str]:
    try:
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait()
    return child.returncode, stderr


def test_a_timeout_leaves_no_grandchild_behind(tmp_path: Path, toolctl_process: Toolctl) -> None:
    marks = markers()
    write_files(tmp_path, {"reg/t.toml": spawner(marks, then="sleep {last}")})
    done = toolctl_process("run", "spawner", "--timeout", "1.5", "-r", "reg")
    assert done.returncode == 124, done.stderr
    assert gone(marks) == []


def test_a_tool_that_ends_leaves_no_grandchild_behind(
    tmp_path: Path, toolctl_process: Toolctl
) -> None:
    marks = markers()
    write_files(tmp_path, {"reg/t.toml": spawner(marks, then="echo done")})
    done = toolctl_process("run", "spawner", "-r", "reg")
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    assert gone(marks) == []


@pytest.mark.parametrize(
    ("signum", "code", "word"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_a_signal_leaves_no_grandchild_behind(
    tmp_path: Path, signum: int, code: int, word: str
) -> None:
    marks = markers()
    write_files(tmp_path, {"reg/t.toml": spawner(marks, then="echo started; sleep {last}")})
    child = start(tmp_path, "spawner")
    assert child.stdout is not None
    assert child.stdout.readline() == "started\n"
    # the tool, its last sleep and both grandchildren (the sleep starts just after the echo)
    assert len(running(marks, 4)) == 4
    returncode, stderr = finish(child, signum)
    assert returncode == code, stderr
    assert f"{word}; the tool's processes were killed" in stderr
    assert gone(marks) == []


def test_sigterm_ends_a_batch_and_everything_its_calls_started(tmp_path: Path) -> None:
    marks = markers()
    then = "touch started.$0; sleep {last}"
    write_files(tmp_path, {"reg/t.toml": spawner(marks, then=then)})
    (tmp_path / "lines.jsonl").write_text("".join(f'{{"n": "{n}"}}\n' for n in range(3)))
    child = start(tmp_path, "spawner", "--batch", "lines.jsonl", "--concurrency", "3")
    deadline = time.monotonic() + 30
    while len(list(tmp_path.glob("started.*"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(list(tmp_path.glob("started.*"))) == 3
    returncode, stderr = finish(child, signal.SIGTERM)
    assert returncode == 143, stderr
    assert "terminated" in stderr
    assert gone(marks) == []


def test_a_second_signal_ends_at_once_and_still_leaves_nothing(tmp_path: Path) -> None:
    """A second Ctrl-C ends a batch at once (130), while the first is still ending its
    calls: it used to leave every call's tool (one that ignores the signal) and their
    grandchildren running, nobody's children any more."""
    marks = markers()
    then = "trap '' TERM INT; touch started.$0; sleep {last}"
    write_files(tmp_path, {"reg/t.toml": spawner(marks, then=then)})
    (tmp_path / "lines.jsonl").write_text("".join(f'{{"n": "{n}"}}\n' for n in range(3)))
    child = start(tmp_path, "spawner", "--batch", "lines.jsonl", "--concurrency", "3")
    deadline = time.monotonic() + 30
    while len(list(tmp_path.glob("started.*"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    time.sleep(0.05)  # the first one is ending the calls
    returncode, _ = finish(child, signal.SIGINT)
    assert returncode == 130
    assert gone(marks) == []


@pytest.mark.parametrize(
    ("signum", "code", "word", "error_code"),
    [
        (signal.SIGINT, 130, "interrupted", "interrupted"),
        (signal.SIGTERM, 143, "terminated", "terminated"),
        (signal.SIGHUP, 129, "hung up", "hung_up"),  # recorded as `error` (exit 70's) once
        (signal.SIGQUIT, 131, "quit", "quit"),
    ],
)
def test_a_stopped_batch_loses_no_result_and_records_its_calls_as_stopped(
    tmp_path: Path, toolctl_process: Toolctl, signum: int, code: int, word: str, error_code: str
) -> None:
    """Lines that ended before the signal keep their results, in order, however long a
    line before them ran; the calls the signal ended are told and recorded as stopped (not
    as failures of the tool); no line taken goes without its result line."""
    mark = markers()[0]
    tool = """
    [[tool]]
    name = "nap"
    [tool.local]
    command = ["sh", "-c", "touch started.$1; sleep $0; echo slept $0", "{secs}", "{n}"]
    input = "none"
    [[tool.arguments]]
    name = "secs"
    [[tool.arguments]]
    name = "n"
    type = "integer"
    """
    write_files(tmp_path, {"reg/t.toml": tool})
    naps = ["0.1", mark, "0.2", mark, "0.1"]  # lines 2 and 4 run until stopped
    (tmp_path / "lines.jsonl").write_text(
        "".join(f'{{"secs": "{secs}", "n": {n}}}\n' for n, secs in enumerate(naps, start=1))
    )
    child = start(tmp_path, "nap", "--batch", "lines.jsonl", "--concurrency", "3")
    deadline = time.monotonic() + 30
    while len(list(tmp_path.glob("started.*"))) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # lines 3 and 5 have ended
    child.send_signal(signum)
    try:
        stdout, stderr = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == code, stderr
    assert stderr == f"toolctl: error: {word}; the batch's calls were stopped\n"
    assert gone((mark, mark, mark)) == []
    results = [json.loads(line) for line in stdout.splitlines()]
    assert [r.get("output") or r["error"] for r in results] == [
        "slept 0.1",
        f"line 2: {word}; the call was stopped",
        "slept 0.2",
        f"line 4: {word}; the call was stopped",
        "slept 0.1",
    ]
    assert [(r["exit_code"], r.get("error_code")) for r in results[1::2]] == [
        (code, error_code)
    ] * 2
    assert all(r["duration_ms"] > 400 for r in results[1::2])  # the time they ran
    history = toolctl_process("history", "--json")
    calls = json.loads(history.stdout)["calls"]
    assert sorted((c["outcome"], c["exit_code"]) for c in calls) == sorted(
        [("ok", 0)] * 3 + [("interrupted", code)] * 2
    ), history.stderr
    # learning from use does not take them for failures of the tool: their success is unknown
    [session] = history_transcripts(Settings.load())
    assert sorted((c.success for c in session.calls), key=str) == [None, None, True, True, True]


# -- HTTP: the timeout bounds the whole call, however the answer arrives -------------------


def _serve(listener: socket.socket, gap: float, stop: threading.Event) -> None:
    """Answer each connection with headers, then a body that never ends: a byte per gap."""

    def drip(connection: socket.socket) -> None:
        with connection:
            try:
                connection.recv(65536)
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                )
                while not stop.is_set():
                    connection.sendall(b"1\r\nx\r\n" if gap else b"400\r\n" + b"y" * 1024 + b"\r\n")
                    time.sleep(gap)
            except OSError:
                pass

    while not stop.is_set():
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=drip, args=(connection,), daemon=True).start()


@pytest.fixture(params=[0.2, 0.0], ids=["drips", "floods"])
def endless_server(request: pytest.FixtureRequest) -> Iterator[str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(listener, request.param, stop), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


def test_an_endless_http_answer_times_out(
    tmp_path: Path, toolctl_process: Toolctl, endless_server: str
) -> None:
    write_files(
        tmp_path,
        {
            "reg/t.toml": f'[[tool]]\nname = "endless"\ntimeout = 1\n[tool.http]\nurl = "{endless_server}/"\n'
        },
    )
    done = toolctl_process("run", "endless", "-r", "reg", timeout=30)
    assert done.returncode == 124, done.stderr
    assert f"POST {endless_server}/ got no answer within 1 s" in done.stderr


def test_the_same_signal_twice_at_once_is_one_stop(tmp_path: Path) -> None:
    """GNU `timeout -s INT` signals the command, then its process group: toolctl gets
    SIGINT twice within microseconds. That is one stop (every taken line keeps its result
    line, and the batch is told stopped), not a second signal's end at once."""
    mark = markers()[0]
    tool = f"""
    [[tool]]
    name = "nap"
    [tool.local]
    command = ["sh", "-c", "touch started.$0; sleep {mark}", "{{n}}"]
    input = "none"
    [[tool.arguments]]
    name = "n"
    type = "integer"
    """
    write_files(tmp_path, {"reg/t.toml": tool})
    (tmp_path / "lines.jsonl").write_text("".join(f'{{"n": {n}}}\n' for n in range(1, 4)))
    child = start(tmp_path, "nap", "--batch", "lines.jsonl", "--concurrency", "3")
    deadline = time.monotonic() + 30
    while len(list(tmp_path.glob("started.*"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        child.send_signal(signal.SIGINT)
        time.sleep(0.005)  # as `timeout` sends them: the first one is being handled
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 130, stderr
    assert stderr == "toolctl: error: interrupted; the batch's calls were stopped\n"
    results = [json.loads(line)["error"] for line in stdout.splitlines()]
    assert results == [f"line {n}: interrupted; the call was stopped" for n in (1, 2, 3)]
    assert gone((mark, mark, mark)) == []


def test_what_a_batch_line_leaves_is_killed_as_the_line_ends(tmp_path: Path) -> None:
    """A `--batch` line whose tool leaves `setsid sleep` behind: killed as that line ends,
    while a long line still runs (it lived until the whole batch ended)."""
    left, held = markers()[:2]
    tool = f"""
    [[tool]]
    name = "mixed"
    [tool.local]
    command = ["sh", "-c", "if [ $0 = leave ]; then setsid sleep {left} >/dev/null 2>&1 & touch left.done; else sleep {held}; fi", "{{how}}"]
    input = "none"
    [[tool.arguments]]
    name = "how"
    """
    write_files(tmp_path, {"reg/t.toml": tool})
    (tmp_path / "lines.jsonl").write_text('{"how": "hold"}\n{"how": "leave"}\n')
    child = start(tmp_path, "mixed", "--batch", "lines.jsonl", "--concurrency", "2")
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "left.done").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1)  # the leaving line has ended
        sleeps = [line.split(": ", 1)[1] for line in survivors((left, held, held))]
        outlived = [line for line in sleeps if line.startswith(f"sleep {left}")]
        still = [line for line in sleeps if line.startswith(f"sleep {held}")]
    finally:
        finish(child, signal.SIGINT)
    assert still, "the long line lost its process"
    assert outlived == [], "what the ended line left outlived it while the batch ran"
