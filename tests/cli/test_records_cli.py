"""`toolctl history`, `toolctl stats`, `history import` and what `run` leaves in the history."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Toolctl, write_files

PY = sys.executable
TOOLS = f"""
[[tool]]
name = "echo"
description = "Answers its arguments"
[tool.local]
command = ["{PY}", "-c", "import sys; sys.stdout.write(sys.stdin.read())"]
[[tool.arguments]]
name = "text"
[[tool.arguments]]
name = "password"
required = false

[[tool]]
name = "leaky"
description = "Prints the secret it is given"
[tool.local]
command = ["{PY}", "-c", "import os; print('key is', os.environ['KEY'])"]
input = "none"
env = {{ KEY = "${{env:LEAKY_SECRET}}" }}

[[tool]]
name = "fail"
description = "Always fails"
[tool.local]
command = ["{PY}", "-c", "import sys; sys.exit('no')"]
input = "none"
"""


@pytest.fixture
def reg(tmp_path: Path) -> str:
    write_files(tmp_path, {"reg/tools.toml": TOOLS})
    return str(tmp_path / "reg")


def calls(toolctl: Toolctl, *args: str) -> list[dict[str, Any]]:
    done = toolctl("history", "--json", *args)
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)["calls"]
    return found


def test_every_run_leaves_a_row(toolctl: Toolctl, reg: str) -> None:
    assert toolctl("run", "echo", "-a", "text=one", "-r", reg).returncode == 0
    assert toolctl("run", "fail", "-r", reg).returncode == 1
    assert toolctl("run", "echo", "-a", "text=two", "-r", reg).returncode == 0
    assert toolctl("run", "echo", "-a", "nope=1", "-r", reg).returncode == 2  # refused
    assert toolctl("run", "nothere", "-r", reg).returncode == 4  # no tool: no row
    found = calls(toolctl)
    assert [(c["tool"], c["outcome"], c["exit_code"]) for c in found] == [
        ("echo", "invalid", 2),
        ("echo", "ok", 0),
        ("fail", "failed", 1),
        ("echo", "ok", 0),
    ]
    assert found[0]["error"] == "InvalidArguments"
    found = found[1:]
    first = found[-1]
    assert first["caller"] == "cli" and first["runtime"] == "local"
    assert first["bytes_in"] == len('{"text":"one"}') and first["bytes_out"] > 0
    assert len(first["trace_id"]) == 32 and first["duration_ms"] > 0
    assert "arguments" not in first and "output" not in first
    assert found[1]["error"] == "tool_failed"
    assert [c["tool"] for c in calls(toolctl, "--outcome", "failed")] == ["fail"]
    assert len(calls(toolctl, "--tool", "echo", "--limit", "1")) == 1
    assert calls(toolctl, "--since", "1h")[1:] == found and calls(toolctl, "--until", "1h") == []
    # with the arguments kept, the kind stays first (it was replaced by the message)
    assert toolctl("run", "fail", "-r", reg, "--record-arguments").returncode == 1
    assert calls(toolctl, "--limit", "1")[0]["error"].startswith("tool_failed: ")


def test_stats_per_tool_and_a_histogram(toolctl: Toolctl, reg: str) -> None:
    for _ in range(3):
        toolctl("run", "echo", "-a", "text=x", "-r", reg)
    toolctl("run", "fail", "-r", reg)
    report = json.loads(toolctl("stats", "--json").stdout)
    assert report["calls"] == 4
    echo, fail = report["tools"]
    assert (echo["tool"], echo["calls"], echo["success_rate"]) == ("echo", 3, 1.0)
    assert (fail["tool"], fail["calls"], fail["success_rate"]) == ("fail", 1, 0.0)
    assert echo["p50"] <= echo["p95"] <= echo["p99"] <= echo["slowest"]
    assert sum(b["calls"] for b in report["histogram"]) == 4
    shown = toolctl("stats")
    assert shown.returncode == 0
    assert shown.stdout.splitlines()[0].split() == [
        "TOOL", "RUNTIME", "CALLS", "OK", "P50", "MS", "P95", "MS", "P99", "MS", "SLOWEST", "MS"
    ]  # fmt: skip
    assert "latency" in shown.stdout and "#" in shown.stdout
    assert json.loads(toolctl("stats", "--json", "--tool", "fail").stdout)["calls"] == 1
    # a filter repeated is a call of either (it kept the last one given)
    both = json.loads(toolctl("stats", "--json", "--tool", "fail", "--tool", "echo").stdout)
    assert both["calls"] == 4
    assert [c["tool"] for c in calls(toolctl, "--outcome", "ok", "--outcome", "failed")] == [
        "fail", "echo", "echo", "echo"
    ]  # fmt: skip


def test_no_history_yet_and_history_off(toolctl: Toolctl, reg: str, tmp_path: Path) -> None:
    assert calls(toolctl) == []
    assert "no calls recorded yet" in toolctl("stats").stderr
    done = toolctl("run", "echo", "-a", "text=x", "-r", reg, env={"TOOLCTL_HISTORY": "0"})
    assert done.returncode == 0
    assert calls(toolctl) == []
    assert not list((tmp_path / "home").rglob("history.sqlite3"))


def test_bad_filters_are_usage_errors(toolctl: Toolctl) -> None:
    for args, text in (
        (("--since", "yesterday"), "--since 'yesterday'"),
        (("--outcome", "great"), "unknown outcome 'great'"),
        (("--caller", "me"), "unknown caller 'me'"),
        (("--caller", "cli", "--caller", "me"), "unknown caller 'me'"),
        (("--outcome", "ok", "--outcome", "great"), "unknown outcome 'great'"),
        (("--since", ""), "--since '': expected a span ago"),
        (("--since", "2026-11-30", "--until", "2026-11-29"), "is after --until"),
    ):
        done = toolctl("history", *args)
        assert done.returncode == 2 and text in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_program_s_own_caller_name_is_a_filter(
    toolctl: Toolctl, reg: str, tmp_path: Path
) -> None:
    """A program using the library names its caller in its Origin: `history --caller` and
    `stats --caller` select its calls; a caller neither toolctl's nor recorded is refused."""
    program = f"""
from toolctl.calls import Caller
from toolctl.records import Origin
from toolctl.records.journal import flush_all
from toolctl.registry import open_registry
from toolctl.reporting import QUIET
from toolctl.settings import Settings

settings = Settings.load([{reg!r}])
with open_registry(settings, QUIET) as registry:
    with Caller(settings, registry, origin=Origin("my-agent", "s1")) as caller:
        assert caller.call("echo", {{"text": "hi"}}).success
flush_all()
"""
    done = subprocess.run([PY, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = calls(toolctl, "--caller", "my-agent")
    assert [(c["tool"], c["caller"], c["session"]) for c in found] == [("echo", "my-agent", "s1")]
    stats = toolctl("stats", "--caller", "my-agent", "--json")
    assert json.loads(stats.stdout)["calls"] == 1, stats.stderr
    refused = toolctl("history", "--caller", "my-agnet")
    assert refused.returncode == 2 and "unknown caller 'my-agnet'" in refused.stderr


def test_arguments_and_output_only_when_asked_and_masked(toolctl: Toolctl, reg: str) -> None:
    env = {"LEAKY_SECRET": "s3cr3t-value-42"}
    toolctl("run", "leaky", "-r", reg, env=env)
    toolctl("run", "echo", "-a", "text=hi", "-a", "password=p4ss", "-r", reg)
    assert all("arguments" not in c and "output" not in c for c in calls(toolctl))
    toolctl("run", "leaky", "-r", reg, "--record-arguments", env=env)
    toolctl("run", "echo", "-a", "text=hi", "-a", "password=p4ss", "-r", reg,
            env={"TOOLCTL_RECORD_ARGUMENTS": "1"})  # fmt: skip
    echo, leaky = calls(toolctl, "--limit", "2")
    assert json.loads(echo["arguments"]) == {"password": "***", "text": "hi"}
    assert "p4ss" not in echo["output"] and '"text": "hi"' in echo["output"]
    assert leaky["output"] == "key is ***" and "s3cr3t" not in json.dumps(leaky)


def test_a_batch_is_one_session(toolctl: Toolctl, reg: str) -> None:
    lines = "".join(json.dumps({"text": str(n)}) + "\n" for n in range(3))
    bad = lines + '{"text": 1}\nnot json\n'  # a refused line is recorded, a broken one not
    toolctl("run", "echo", "--batch", "-", "-r", reg, "--concurrency", "2", input=bad)
    assert [c["exit_code"] for c in calls(toolctl, "--outcome", "invalid")] == [2]
    toolctl("run", "echo", "--batch", "-", "-r", reg, input=lines, env={"TOOLCTL_SESSION": "s1"})
    found = calls(toolctl, "--caller", "batch")
    sessions = [c["session"] for c in found]
    assert len(found) == 7 and sessions[:3] == ["s1"] * 3
    assert len(set(sessions[3:])) == 1 and sessions[3].startswith("batch-")
    assert len(calls(toolctl, "--session", "s1")) == 3


def test_a_full_disk_costs_one_warning_and_the_call_goes_on(
    toolctl_process: Toolctl, reg: str, tmp_path: Path
) -> None:
    past = time.time() - 60  # written a minute ago: the warm index is trusted, not rebuilt
    for path in (Path(reg), Path(reg) / "tools.toml"):
        os.utime(path, (past, past))
    assert toolctl_process("run", "echo", "-a", "text=warm", "-r", reg).returncode == 0

    def small_files() -> None:  # writing past 2 KiB fails as on a full disk (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    done = subprocess.run(
        [PY, "-m", "toolctl", "run", "echo", "-a", "text=hi", "-r", reg],
        capture_output=True, text=True, cwd=tmp_path, preexec_fn=small_files, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == '{"text": "hi"}\n'
    (line,) = done.stderr.splitlines()
    assert line.startswith("toolctl: warning: the run history at ") and "TOOLCTL_HISTORY=0" in line


TRANSCRIPTS = [
    {
        "id": "conv-1",
        "messages": [
            {"role": "user", "content": "weather in Paris, then book"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "book", "arguments": '{"api_key": "k"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c2", "content": '{"error": "no seats"}'},
        ],
    },
    {
        "messages": [
            {"role": "assistant", "function_call": {"name": "get_weather", "arguments": "{}"}}
        ]
    },
]


def test_history_import_reads_chat_transcripts_as_sessions(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    source = tmp_path / "chats.jsonl"
    source.write_text("\n".join(json.dumps(t) for t in TRANSCRIPTS) + "\n")
    done = toolctl("history", "import", str(source), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"calls": 3, "sessions": 2}
    found = calls(toolctl, "--caller", "import")
    assert [(c["tool"], c["outcome"]) for c in reversed(found)] == [
        ("get_weather", "ok"),
        ("book", "failed"),
        ("get_weather", "ok"),
    ]
    sessions = [c["session"] for c in reversed(found)]
    assert sessions[:2] == ["conv-1", "conv-1"]
    # a conversation without an id: FILE:LINE, then # and a digest of its calls
    assert re.fullmatch(rf"{re.escape(str(source))}:2#[0-9a-f]{{8}}", sessions[2])
    assert all("arguments" not in c for c in found)
    assert toolctl("history", "import", str(source)).returncode == 0  # again: replaced
    assert len(calls(toolctl, "--caller", "import")) == 3
    assert json.loads(toolctl("stats", "--json").stdout)["tools"][0]["tool"] == "book"


def test_history_import_refuses_a_file_with_a_bad_line(toolctl: Toolctl, tmp_path: Path) -> None:
    source = tmp_path / "chats.jsonl"
    source.write_text(json.dumps(TRANSCRIPTS[0]) + "\nnot json\n")
    refused = toolctl("history", "import", str(source))
    assert refused.returncode == 2 and "chats.jsonl:2: not JSON" in refused.stderr
    assert calls(toolctl) == []  # nothing half-imported
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    refused = toolctl("history", "import", str(empty))
    assert refused.returncode == 2 and "no conversation" in refused.stderr
    assert toolctl("history", "import", str(tmp_path / "none.jsonl")).returncode == 2


@pytest.mark.parametrize(
    "command",
    [
        ("history", "import"),
        ("graph", "learn", "--out", "learned.toml", "--from-transcripts"),
        ("graph", "evaluate"),
    ],
)
def test_a_transcript_that_never_ends_a_line_is_refused_at_64_mib(
    toolctl: Toolctl, command: tuple[str, ...]
) -> None:
    """`/dev/zero` was read until memory ran out (22 GB in 30 s, deaf to SIGTERM), or was
    an internal error (70) under a memory limit."""
    refused = toolctl(*command, "/dev/zero")
    assert refused.returncode == 2, refused.stderr
    assert "/dev/zero:1: a line over 64 MiB" in refused.stderr, refused.stderr


def test_a_lowered_bound_that_removes_calls_says_so(
    toolctl: Toolctl, toolctl_process: Toolctl, reg: str
) -> None:
    """TOOLCTL_HISTORY_MAX_CALLS=5 for one command (a typo for 500000) removed all but five
    calls of the history without a word."""
    for _ in range(12):
        assert toolctl("run", "fail", "-r", reg).returncode == 1
    bounded = {"TOOLCTL_HISTORY_MAX_CALLS": "5"}
    done = toolctl_process("run", "fail", "-r", reg, env=bounded)
    assert "older calls were removed from it" in done.stderr, done.stderr
    assert "keeps 5 calls of 90 days at most" in done.stderr
    assert len(calls(toolctl, "--limit", "100")) == 5
    again = toolctl_process("run", "fail", "-r", reg, env=bounded)
    assert "removed" not in again.stderr, again.stderr  # the bound kept, as always
    quiet = [toolctl_process("run", "fail", "-r", reg).stderr for _ in range(3)]
    assert not any("removed" in err for err in quiet)


def test_history_import_replaces_only_what_an_import_wrote(
    toolctl: Toolctl, reg: str, tmp_path: Path
) -> None:
    """A conversation whose id is a session of real calls: re-importing it replaces the
    imported calls alone; the calls that ran are never lost."""
    for _ in range(2):
        done = toolctl("run", "fail", "-r", reg, env={"TOOLCTL_SESSION": "prod-audit"})
        assert done.returncode == 1
    source = tmp_path / "chats.jsonl"
    source.write_text(json.dumps(TRANSCRIPTS[0]).replace('"conv-1"', '"prod-audit"') + "\n")
    for _ in range(2):  # the second import replaces the first's calls
        done = toolctl("history", "import", str(source))
        assert done.returncode == 0, done.stderr
    found = calls(toolctl, "--session", "prod-audit")
    assert sorted(c["caller"] for c in found) == ["cli", "cli", "import", "import"]
    source.write_text(json.dumps({"id": "prod-audit", "messages": []}) + "\n")
    assert toolctl("history", "import", str(source)).returncode == 0  # no calls in it now
    assert [c["caller"] for c in calls(toolctl, "--session", "prod-audit")] == ["cli", "cli"]


def test_a_failed_history_import_keeps_what_the_last_one_wrote(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """Importing a conversation again replaces its calls in one transaction: when the new
    rows cannot be written, the old ones are still there."""
    source = tmp_path / "chats.jsonl"
    source.write_text(json.dumps(TRANSCRIPTS[0]) + "\n")
    assert toolctl("history", "import", str(source)).returncode == 0
    with sqlite3.connect(history_file(tmp_path)) as db:  # a write that fails, as a full disk
        db.execute(
            "CREATE TRIGGER full BEFORE INSERT ON calls BEGIN SELECT RAISE(ABORT, 'full'); END"
        )
    refused = toolctl("history", "import", str(source))
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) <= 2, refused.stderr
    with sqlite3.connect(history_file(tmp_path)) as db:
        db.execute("DROP TRIGGER full")
    assert [c["session"] for c in calls(toolctl, "--caller", "import")] == ["conv-1", "conv-1"]


def history_file(tmp_path: Path) -> Path:
    return tmp_path / "home" / "state" / "toolctl" / "history.sqlite3"


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _newer(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version=2")


def _foreign_database(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE important(x)")
        db.execute("INSERT INTO important VALUES (1)")


@pytest.mark.parametrize(
    ("make", "told"),
    [
        (_fifo, "it is not a regular file"),
        (_newer, "written by a newer toolctl (history version 2, this one reads 1)"),
        (_foreign_database, "it is not a toolctl history (another program's database)"),
    ],
)
def test_a_history_path_toolctl_cannot_use_is_told_and_never_written(
    toolctl_process: Toolctl, reg: str, tmp_path: Path, make: Any, told: str
) -> None:
    """A FIFO there hung `history`, `stats` and `run` past every signal; a history of a
    newer version or another program's database read as "no calls recorded yet", and the
    next run wrote toolctl's tables into it."""
    path = history_file(tmp_path)
    path.parent.mkdir(parents=True)
    if make is not _fifo:
        toolctl_process("run", "fail", "-r", reg)  # a history of calls, then changed
        path.unlink()
        for part in path.parent.glob("history.sqlite3-*"):
            part.unlink()
    make(path)
    before = None if make is _fifo else path.read_bytes()
    for command in (("history",), ("stats",)):
        done = toolctl_process(*command, timeout=20)
        assert done.returncode == 74 and told in done.stderr, done.stderr
    ran = toolctl_process("run", "echo", "-a", "text=x", "-r", reg, timeout=20)
    assert ran.returncode == 0 and told in ran.stderr, ran.stderr
    if before is not None:
        assert path.read_bytes() == before


@pytest.mark.parametrize(
    "change",
    [
        "duration_ms = 'abc'",
        "time = 1e300",
        "time = 'x'",
        "exit_code = 1.5",
        "duration_ms = -1",
        "tool = NULL",
    ],
)
def test_odd_rows_in_the_history_are_skipped_with_one_warning(
    toolctl: Toolctl, reg: str, tmp_path: Path, change: str
) -> None:
    """A row with values toolctl never writes (another program, a hand edit) is skipped,
    counted in one warning; the others are shown; never an internal error (70)."""
    for _ in range(3):
        toolctl("run", "fail", "-r", reg)
    with sqlite3.connect(history_file(tmp_path)) as db:
        db.execute("CREATE TABLE copy AS SELECT * FROM calls")  # no NOT NULL: NULL goes in
        db.execute("DROP TABLE calls")
        db.execute("ALTER TABLE copy RENAME TO calls")
        db.execute(f"UPDATE calls SET {change} WHERE rowid IN (1, 2)")
    for command in (["history"], ["history", "--json"], ["stats"], ["stats", "--json"]):
        done = toolctl(*command)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stderr.splitlines() == [
            "toolctl: warning: skipped 2 row(s) of the run history at "
            f"{history_file(tmp_path).relative_to(tmp_path)} with values toolctl does not write"
        ], command
    assert len(calls(toolctl)) == 1
    assert json.loads(toolctl("stats", "--json").stdout)["calls"] == 1
    learned = toolctl("graph", "learn", "-r", reg, "-o", str(tmp_path / "learned.toml"))
    assert learned.returncode == 0, learned.stderr
    assert "toolctl: warning: skipped 2 row(s) of the run history at " in learned.stderr


def test_text_that_toolctl_stored_oddly_is_shown_as_best_it_can(
    toolctl: Toolctl, reg: str, tmp_path: Path
) -> None:
    """A BLOB or text that is not UTF-8 where toolctl writes text is decoded as best it can."""
    for _ in range(3):
        toolctl("run", "fail", "-r", reg)
    with sqlite3.connect(history_file(tmp_path)) as db:
        db.execute("UPDATE calls SET tool = x'6661696cff' WHERE id = 1")  # a BLOB
        db.execute("UPDATE calls SET tool = CAST(x'ff41' AS TEXT) WHERE id = 2")
        db.execute("UPDATE calls SET session = x'7331', trace_id = 5 WHERE id = 3")
    done = toolctl("history", "--json")
    assert done.returncode == 0 and done.stderr == ""
    found = json.loads(done.stdout)["calls"]
    assert [c["tool"] for c in found] == ["fail", "\ufffdA", "fail\ufffd"]
    assert (found[0]["session"], found[0]["trace_id"]) == ("s1", "5")
    assert toolctl("stats").returncode == 0


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_history_file_is_one_line_and_exit_74(
    toolctl: Toolctl, reg: str, tmp_path: Path, damage: str
) -> None:
    """A history file that is not a database (or no longer one) cannot be read: one line
    naming the file, exit 74 (a file toolctl keeps failed it), never 1 (a tool failed)."""
    path = history_file(tmp_path)
    shown = str(path.relative_to(tmp_path))  # paths under the working directory: relative
    if damage == "garbage":
        path.parent.mkdir(parents=True)
        path.write_bytes(b"garbage")
    else:
        for _ in range(3):
            toolctl("run", "echo", "-a", f"text={'x' * 3000}", "-r", reg, "--record-arguments")
        with sqlite3.connect(path) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the log folded into the file
        with path.open("r+b") as file:
            file.truncate(8192)
    for command in (["history"], ["stats", "--json"], ["history", "import", "-"]):
        done = toolctl(*command, input=json.dumps(TRANSCRIPTS[0]) + "\n")
        assert done.returncode == 74, (command, done.stderr)
        [told] = done.stderr.splitlines()
        assert told.startswith("toolctl: error: cannot ") and shown in told, told
        assert "move the file away to start a new history" in told
    for name in ("history", "stats"):
        assert "74 the history file cannot be read" in toolctl(name, "--help").stdout


def test_stats_says_when_no_call_matches_the_filters(toolctl: Toolctl, reg: str) -> None:
    assert "no calls recorded yet" in toolctl("stats", "--tool", "nope").stderr
    toolctl("run", "fail", "-r", reg)
    done = toolctl("stats", "--tool", "nope")
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr == "toolctl: no calls match the filters (see 'toolctl stats --help')\n"


def test_the_history_reads_back_as_transcripts(toolctl: Toolctl, reg: str, tmp_path: Path) -> None:
    """What learns from use reads the history as sessions of calls (toolctl.transcripts)."""
    from toolctl.records.transcripts import history_transcripts
    from toolctl.settings import Settings

    source = tmp_path / "chats.jsonl"
    source.write_text(json.dumps(TRANSCRIPTS[0]) + "\n")
    toolctl("history", "import", str(source), "--record-arguments")
    toolctl("run", "echo", "-a", "text=x", "-r", reg)
    (imported, single) = history_transcripts(Settings.load())
    assert imported.id == "conv-1"
    assert [(c.tool, c.success, c.call_id) for c in imported.calls] == [
        ("get_weather", True, "c1"),
        ("book", False, "c2"),
    ]
    assert imported.calls[0].arguments == {"city": "Paris"}
    assert imported.calls[1].arguments == {"api_key": "***"}
    assert [c.tool for c in single.calls] == ["echo"]


def test_history_import_keeps_the_answers_masked_with_record_arguments(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """`--record-arguments` says "arguments and answers": the answers were never kept."""
    secret = "sk-" + "q1w2e3r4" * 4
    source = tmp_path / "chat.jsonl"
    source.write_text(json.dumps({"id": "s1", "messages": [
        {"role": "user", "content": "log in"},
        {"role": "assistant", "tool_calls": [{"id": "a1", "type": "function", "function": {
            "name": "login", "arguments": json.dumps({"password": "hunter2-hunter2"})}}]},
        {"role": "tool", "tool_call_id": "a1",
         "content": json.dumps({"token": secret, "echo": "hunter2-hunter2", "msg": "welcome"})},
    ]}) + "\n")  # fmt: skip
    assert toolctl("history", "import", str(source), "--record-arguments").returncode == 0
    [call] = json.loads(toolctl("history", "--json").stdout)["calls"]
    assert "welcome" in call["output"] and call["bytes_out"] > 0
    assert secret not in call["output"] and "hunter2-hunter2" not in call["output"]
    assert "hunter2" not in call["arguments"]
    plain = tmp_path / "plain.jsonl"
    plain.write_text(source.read_text().replace('"s1"', '"s2"'))
    assert toolctl("history", "import", str(plain)).returncode == 0  # without: not kept
    assert (
        "output"
        not in json.loads(toolctl("history", "--json", "--session", "s2").stdout)["calls"][0]
    )


def test_history_import_masks_before_its_cut_and_cuts_the_arguments(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """An answer cut at 64 KiB was cut before it was masked: a `"password": "..."` across
    the cut kept its beginning. And the arguments were kept whole (300 KB), where a row
    keeps 64 KiB of each, as `run` does."""
    password = "Pa55w0rdVerySecretValue123"
    start = '{"password": "'
    answer = "y" * (64 * 1024 - len(start) - 10) + start + password + '", "ok": 1}'
    source = tmp_path / "cut.jsonl"
    source.write_text(json.dumps({"id": "cut", "messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "tool_calls": [{"id": "a1", "type": "function", "function": {
            "name": "echo", "arguments": json.dumps({"q": "z" * 300_000})}}]},
        {"role": "tool", "tool_call_id": "a1", "content": answer},
    ]}) + "\n")  # fmt: skip
    assert toolctl("history", "import", str(source), "--record-arguments").returncode == 0
    [call] = json.loads(toolctl("history", "--json").stdout)["calls"]
    assert password[:4] not in call["output"], call["output"][-30:]
    assert len(call["output"]) <= 64 * 1024 and len(call["arguments"]) == 64 * 1024


class _Headers(BaseHTTPRequestHandler):
    seen: list[str] = []  # noqa: RUF012 - the test's record of requests

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(self.headers.get("traceparent") or "")
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def header_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Headers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_an_http_tool_gets_the_calls_traceparent(
    toolctl: Toolctl, tmp_path: Path, header_server: str
) -> None:
    write_files(
        tmp_path,
        {"web/t.toml": f'[[tool]]\nname = "web"\n[tool.http]\nurl = "{header_server}/x"\n'},
    )
    _Headers.seen.clear()
    assert toolctl("run", "web", "-r", str(tmp_path / "web")).returncode == 0
    (call,) = calls(toolctl)
    assert _Headers.seen == [f"00-{call['trace_id']}-{call['span_id']}-01"]
    assert os.environ.get("TRACEPARENT") is None  # the test process itself is untouched


def test_eight_toolctl_processes_record_at_once(toolctl: Toolctl, reg: str, tmp_path: Path) -> None:
    lines = "".join(json.dumps({"text": str(n)}) + "\n" for n in range(40))
    batches = [
        subprocess.Popen(
            [PY, "-m", "toolctl", "run", "echo", "--batch", "-", "-r", reg, "--concurrency", "4"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "TOOLCTL_SESSION": f"p{n}"},
        )
        for n in range(8)
    ]
    for batch in batches:
        _, err = batch.communicate(lines, timeout=120)
        assert batch.returncode == 0 and err == "", err
    found = calls(toolctl, "--limit", "1000")
    assert len(found) == 320
    assert {s: sum(c["session"] == s for c in found) for s in {c["session"] for c in found}} == {
        f"p{n}": 40 for n in range(8)
    }


def test_sixteen_runs_at_once_behind_a_long_write_lose_no_record(
    toolctl: Toolctl, reg: str, tmp_path: Path
) -> None:
    """Sixteen `toolctl run` processes end while another writer holds the history for
    longer than a write waited before (2 s; a `history import` of a big file on a busy
    machine), then all write at once: each run exits 0 without a warning, and every
    call's record is there (they were lost, "database is locked")."""
    assert toolctl("run", "echo", "-a", "text=first", "-r", reg).returncode == 0
    path = Path(os.environ["XDG_STATE_HOME"]) / "toolctl" / "history.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the one writer, until it commits
    runs = [
        subprocess.Popen(
            [PY, "-m", "toolctl", "run", "echo", "-a", f"text={n}", "-r", reg],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "TOOLCTL_SESSION": f"s{n}"},
        )
        for n in range(16)
    ]
    try:
        for run in runs:  # its result is out: it is writing its record, or waiting to
            assert run.stdout is not None and run.stdout.readline()
        time.sleep(3)  # the long write goes on past the 2 s a run used to wait
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0 and err == "", err
    sessions = sorted(c.get("session", "") for c in calls(toolctl, "--limit", "100"))
    assert sessions == sorted(["", *(f"s{n}" for n in range(16))])


def test_a_signal_while_the_record_waits_says_the_record_is_lost(
    toolctl: Toolctl, reg: str, tmp_path: Path
) -> None:
    """The result is out and the run waits for another writer's lock: SIGTERM ends it
    (143, as any stopped command), and says that its call's record is lost (it said
    nothing, and the call had no row)."""
    assert toolctl("run", "echo", "-a", "text=first", "-r", reg).returncode == 0
    path = Path(os.environ["XDG_STATE_HOME"]) / "toolctl" / "history.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        run = subprocess.Popen(
            [PY, "-m", "toolctl", "run", "echo", "-a", "text=waits", "-r", reg, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        assert run.stdout is not None
        result = "".join(iter(run.stdout.readline, "}\n"))  # the result is out
        assert '"success": true' in result, result
        time.sleep(0.5)  # its record waits for the lock
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert run.returncode == 143
    assert err == (
        "toolctl: warning: stopped while the run history waited for another writer: "
        "1 call record(s) lost\n"
    )


def test_history_import_keeps_apart_what_it_cannot_tell_from_another(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """Two conversations without an id read from stdin one after the other were both
    session `-:1`, so the second import deleted the first's calls; a file that is not
    UTF-8 was stored with its bytes as U+FFFD; U+2028 inside a string split a line; one id
    on two lines merged two conversations; a lone surrogate in a tool's name was exit 70."""

    def chat(*tools: str, id: str | None = None) -> str:
        called = [
            {"id": str(n), "type": "function", "function": {"name": t, "arguments": "{}"}}
            for n, t in enumerate(tools)
        ]
        document: dict[str, object] = {"messages": [{"role": "assistant", "tool_calls": called}]}
        if id is not None:
            document["id"] = id
        return json.dumps(document)

    assert toolctl("history", "import", "-", input=chat("echo", "fail") + "\n").returncode == 0
    assert toolctl("history", "import", "-", input=chat("hang") + "\n").returncode == 0
    assert sorted(c["tool"] for c in calls(toolctl)) == ["echo", "fail", "hang"]
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(chat("caf\u00e9").encode("latin-1").replace(b"\\u00e9", b"\xe9") + b"\n")
    refused = toolctl("history", "import", str(latin))
    assert refused.returncode == 2 and "is not UTF-8 text" in refused.stderr, refused.stderr
    pasted = tmp_path / "pasted.jsonl"
    line = chat("echo")[:-1] + ', "note": "a\u2028b"}'
    pasted.write_text(json.dumps(json.loads(line), ensure_ascii=False) + "\n")
    assert toolctl("history", "import", str(pasted)).returncode == 0
    twice = tmp_path / "twice.jsonl"
    twice.write_text(chat("echo", id="same") + "\n" + chat("fail", id="same") + "\n")
    done = toolctl("history", "import", str(twice))
    assert done.returncode == 2 and "twice.jsonl:2: conversation id 'same' is also on line 1" in (
        done.stderr
    )
    lone = tmp_path / "lone.jsonl"
    lone.write_text(chat("ecXho").replace("ecXho", r"ec\udfffho") + "\n")  # JSON's escape
    done = toolctl("history", "import", str(lone))
    assert done.returncode == 2, done.stderr
    assert "lone.jsonl:1: a conversation id, tool name or call id is not valid Unicode" in (
        done.stderr
    )
    assert len(calls(toolctl)) == 4  # nothing of the refused files


def test_masking_costs_a_line_not_its_square_and_masks_across_the_cut(
    toolctl: Toolctl, reg: str
) -> None:
    """With --record-arguments, masking a long word cost the square of its length (16,000
    letters: 23 s, on the call's path; a 1 MiB body held `serve` for hours). And output is
    cut at 64 KiB: cut before it was masked, a secret across the cut kept its beginning."""
    import threading

    from toolctl.records.masking import mask_text

    masked: list[str] = []
    worker = threading.Thread(target=lambda: masked.append(mask_text("A" * 2_000_000)))
    worker.start()
    worker.join(timeout=120)
    assert masked == ["A" * 2_000_000], "masking a long word did not end"
    secret = "Zk8sQ2mN4pW7rT1v"
    probe = toolctl("run", "echo", "-a", "text=X", "-r", reg)
    start = probe.stdout.index("X")  # where the text begins in what echo answers
    text = "a" * (64 * 1024 - start - 6) + secret  # its 7th character is past the cut
    done = toolctl("run", "echo", "-a", f"text={text}", "-a", f"password={secret}", "-r", reg,
                   "--record-arguments")  # fmt: skip
    assert done.returncode == 0, done.stderr
    stored = calls(toolctl, "--limit", "1")[0]["output"]
    assert len(stored) == 64 * 1024 and secret[:6] not in stored[-40:], stored[-40:]
    # many secrets before a long cut: masking shortens the text (16 characters to 3 each),
    # which brought the beginning of one split at the cut back under 64 KiB, kept
    many = (secret + " ") * 5000 + "b" * 3000 + secret * 3
    done = toolctl("run", "echo", "-a", f"text={many}", "-a", f"password={secret}", "-r", reg,
                   "--record-arguments")  # fmt: skip
    assert done.returncode == 0, done.stderr
    stored = calls(toolctl, "--limit", "1")[0]["output"]
    assert secret[:4] not in stored and "***" in stored, stored[-40:]


def test_masked_start_never_keeps_a_secret_split_by_its_cut() -> None:
    """A long text full of secrets, one split by the cut at each of its characters: no
    beginning of it is kept, whatever masking did to the text's length before it."""
    from toolctl.records.masking import mask_text, masked_start

    secret = "s3cr3tVALUEzq81nm4pTKa9wQ7yH2fLcX0"
    limit, past = 1000, 64
    head = (secret + " ") * 25  # 875 characters, 100 once masked
    for split in range(1, len(secret)):
        pad = "x" * (limit + past - len(head) - split)  # the secret's `split` first before it
        text = head + pad + secret * 3
        kept = masked_start(text, limit, {secret}, past=past)
        assert len(kept) <= limit and secret[:split] not in kept.replace("***", ""), split
        old = mask_text(text[: limit + past], {secret})[:limit]  # as it was cut before
        assert split < 3 or secret[:split] in old  # the leak this guards against


def test_learning_counts_no_call_the_tool_never_answered_as_its_failure(
    toolctl: Toolctl, reg: str
) -> None:
    """Calls refused for their arguments (nothing ran) were weighed as failures of the
    tool: an agent's bad calls sank a good tool. Only `failed` and `timeout` count."""
    lines = '{"text": "a"}\n{}\n{}\n{"text": "b"}\n'
    toolctl("run", "echo", "--batch", "-", "-r", reg, input=lines)
    assert [c["outcome"] for c in calls(toolctl)].count("invalid") == 2
    learned = toolctl("graph", "learn", "--out", "-", "-r", reg)
    assert learned.returncode == 0, learned.stderr
    assert "echo = { calls = 4, failed = 0," in learned.stdout, learned.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_call_whose_output_was_lost_is_recorded_so(tmp_path: Path) -> None:
    """Streamed output to a full disk: exit 74 and outcome `output_lost`, not `error`
    (the word for a bug in toolctl)."""
    write_files(tmp_path, {"text/t.toml": f"""
        [[tool]]
        name = "says"
        [tool.local]
        command = ["{PY}", "-c", "print('some text')"]
        input = "none"
        """})  # fmt: skip
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" -m toolctl run says -r text >/dev/full', PY],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 74, done.stderr
    history = subprocess.run(
        [PY, "-m", "toolctl", "history", "--json"], capture_output=True, text=True, timeout=60
    )
    [call] = json.loads(history.stdout)["calls"]
    assert (call["outcome"], call["exit_code"]) == ("output_lost", 74)


def test_a_history_linked_to_nothing_is_no_empty_history(toolctl: Toolctl) -> None:
    """`history` said "no calls recorded yet" (exit 0) over a symlink to nothing, where
    every run warned that it could not write there: it is exit 74 naming the file."""
    path = Path(os.environ["XDG_STATE_HOME"]) / "toolctl" / "history.sqlite3"
    path.parent.mkdir(parents=True)
    path.symlink_to("/nonexistent/x.sqlite3")
    done = toolctl("history")
    assert (done.returncode, done.stdout) == (74, ""), done.stderr
    assert "cannot read the run history at" in done.stderr and "a symlink to nothing" in done.stderr
