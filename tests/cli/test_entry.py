"""The command itself: version, help, usage errors, Ctrl-C while it starts, and what a
crashed write leaves behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files


def test_version(toolctl: Toolctl) -> None:
    for flag in ("--version", "-V"):
        done = toolctl(flag)
        assert done.returncode == 0
        assert done.stdout.startswith("toolctl ")


def test_help_lists_every_command(toolctl: Toolctl) -> None:
    from toolctl.cli.app import COMMAND_MODULES

    done = toolctl("--help")
    assert done.returncode == 0
    for name in COMMAND_MODULES:
        assert f" {name} " in done.stdout, name


def test_help_lists_each_command_once_in_its_section_with_a_whole_summary(
    toolctl: Toolctl,
) -> None:
    """`toolctl -h` cut every docstring's first sentence mid-word ("Remove the file that
    defines KIND NAME (only a file holding..."), in the order the modules happened to be
    installed. Each command and subcommand has a summary that fits 80 columns whole, and
    the root lists each command once, under a section, as gh does."""
    from toolctl.cli.app import COMMAND_MODULES, command
    from toolctl.terminal.help import SECTIONS, SUMMARIES, SUMMARY_WIDTH

    def paths(cmd: object, path: str) -> list[str]:
        subs = getattr(cmd, "commands", None) or {}
        below = [p for name, sub in subs.items() for p in paths(sub, f"{path} {name}".strip())]
        return [path, *below] if path else below

    assert sorted(paths(command([]), "")) == sorted(SUMMARIES)
    assert all(len(s) <= SUMMARY_WIDTH and not s.endswith(".") for s in SUMMARIES.values())
    placed = [name for _, names in SECTIONS for name in names]
    assert sorted(placed) == sorted([*COMMAND_MODULES, "help"])
    text = toolctl("--help", env={"COLUMNS": "80"}).stdout
    for title, names in SECTIONS:
        block = text.split(f"\n{title}:\n", 1)[1].split("\n\n", 1)[0]
        assert [line.split()[0] for line in block.splitlines()] == list(names), title
        assert [line.split(None, 1)[1] for line in block.splitlines()] == [
            SUMMARIES[name] for name in names
        ], title
    assert max(len(line) for line in text.splitlines()) <= 80
    listed = toolctl("mcp", "-h", env={"COLUMNS": "80"}).stdout
    assert f"  add      {SUMMARIES['mcp add']}\n" in listed, listed


def test_usage_errors_exit_2(toolctl: Toolctl) -> None:
    unknown = toolctl("frobnicate")
    assert unknown.returncode == 2
    missing = toolctl("run")
    assert missing.returncode == 2
    bad_option = toolctl("list", "--colour")
    assert bad_option.returncode == 2
    for done in (unknown, missing, bad_option):
        assert "Traceback" not in done.stderr


def test_a_crashed_write_leaves_nothing_that_counts(tmp_path: Path, toolctl: Toolctl) -> None:
    # What a writer killed between writing its temporary file and linking it leaves behind.
    write_files(tmp_path, {"reg/tools/.half.4242.tmp": '[[tool]]\nname = "half"\n'})
    write_files(
        tmp_path, {"new.toml": '[[tool]]\nname = "whole"\n[tool.local]\ncommand = ["true"]\n'}
    )
    assert toolctl("check", "--strict", "-r", "reg").returncode == 0  # not read: hidden, not .toml
    assert toolctl("register", "new.toml", "-r", "reg").returncode == 0
    left = sorted(p.name for p in (tmp_path / "reg/tools").iterdir())
    assert left == ["whole.toml"]  # the next writer, holding the lock, removed it


# A real Ctrl-C at a chosen moment of start-up: a finder on sys.meta_path sends SIGINT to
# the process when the module named is about to be imported. With "ipaddress", the signal
# lands inside a class's __set_name__, which Python 3.11 wraps in a RuntimeError.
_CTRL_C_AT_IMPORT = """
import os, signal, sys

class Wrapped:
    def __set_name__(self, owner, name):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10**6):
            pass

class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == sys.argv[1]:
            sys.meta_path.remove(self)
            if name == "ipaddress":
                type("Owner", (), {"field": Wrapped()})
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**6):
                pass
        return None

sys.meta_path.insert(0, CtrlC())
from toolctl.cli import main
main(sys.argv[2:])
"""


@pytest.mark.parametrize(
    ("module", "where"),
    [
        ("typing", "while the entry point's module loads"),
        ("toolctl.terminal", "while the command's modules load"),
        ("ipaddress", "inside a class's __set_name__ (wrapped in RuntimeError)"),
    ],
)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_ctrl_c_while_toolctl_starts_is_told_in_one_line_with_130(
    tmp_path: Path, module: str, where: str, as_json: bool
) -> None:
    line = ["run", "nothing", "--registry", str(tmp_path)] + ["--json"] * as_json
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_AT_IMPORT, module, *line],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (130, "toolctl: error: interrupted\n"), where
    if as_json:
        assert '"exit_code": 130' in done.stdout
    else:
        assert done.stdout == ""


@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["PYTHONUNBUFFERED", "buffered"])
def test_a_reader_gone_mid_write_is_141_whatever_the_buffering(
    tmp_path: Path, unbuffered: str
) -> None:
    """`toolctl run big --json | (sleep 1; head -c 10)` with PYTHONUNBUFFERED=1 (set on
    many CI machines): stdout is then a raw file, whose one write takes what the pipe
    takes when its reader goes, and Python dropped the rest silently: exit 0, the output
    lost. A reader gone mid-write is 141, as without it."""
    tool = ('[[tool]]\nname = "big"\n[tool.local]\ncommand = ["{python}", "-c", '
            '"import sys; sys.stdout.write(\'x\' * 3000000)"]\ninput = "none"\n')  # fmt: skip
    write_files(tmp_path, {"reg/t.toml": tool.format(python=sys.executable)})
    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
    child = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", "big", "--json", "-r", "reg"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert child.stdout is not None
    assert child.stdout.read(10) == b'{\n  "data"'  # a reader that takes a little, then goes
    child.stdout.close()
    _, err = child.communicate(timeout=60)
    assert (child.returncode, err) == (141, b"")


@pytest.mark.parametrize(
    "line",
    [["export", "--format", "mcp"], ["list"], ["run", "many", "--batch", "-"]],
    ids=["export", "list", "batch"],
)
def test_a_reader_gone_before_the_output_is_141_every_time(tmp_path: Path, line: list[str]) -> None:
    # the read end is closed before toolctl writes a byte: as `toolctl ... | head -0`
    write_files(
        tmp_path,
        {
            "reg/t.toml": "".join(
                f'[[tool]]\nname = "many{n or ""}"\ndescription = "{"x" * 500}"\n'
                '[tool.local]\ncommand = ["true"]\ninput = "none"\n'
                for n in range(200)
            )
        },
    )
    for _ in range(3):
        child = subprocess.Popen(
            [sys.executable, "-m", "toolctl", *line, "--registry", "reg"],
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert child.stdout is not None
        child.stdout.close()
        _, err = child.communicate(b"{}\n" * 50, timeout=60)
        assert (child.returncode, err) == (141, b"")


def test_a_removed_working_directory_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    script = 'mkdir gone && cd gone && rmdir ../gone && exec "$0" -m toolctl "$@"'
    for line in (["run", "nope"], ["init"], ["list"]):
        done = subprocess.run(
            ["sh", "-c", script, sys.executable, *line],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr == (
            "toolctl: error: the working directory is gone (No such file or directory); "
            "cd to one that exists\n"
        )


@pytest.mark.parametrize(
    ("redirect", "code", "told"),
    [
        (">&-", 0, ""),  # a closed stdout takes the output as /dev/null would
        ("2>&-", 4, None),  # a closed stderr: the exit code still says what happened
        ("<&-", 4, "toolctl: error: tool 'nope' not found"),
        (">/dev/full", 74, "toolctl: error: cannot write: No space left on device\n"),
    ],
)
def test_closed_and_full_standard_streams_are_told_by_the_exit_code(
    tmp_path: Path, redirect: str, code: int, told: str | None
) -> None:
    if redirect == ">/dev/full" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    line = "where" if code in (0, 74) else "run nope"  # (an empty `list` writes no stdout)
    done = subprocess.run(
        ["sh", "-c", f'exec "$0" -m toolctl {line} {redirect}', sys.executable],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    if told is not None:
        assert told in done.stderr


@pytest.mark.parametrize("line", ["--version", "where", "list --json"])
def test_a_full_disk_is_told_once_in_one_line_with_74(tmp_path: Path, line: str) -> None:
    """Output that cannot be written is said once on stderr, and by exit 74, `--version`
    (answered before anything loads) included."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    done = subprocess.run(
        ["sh", "-c", f'exec "$0" -m toolctl {line} >/dev/full', sys.executable],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (
        74,
        "toolctl: error: cannot write: No space left on device\n",
    )


NOT_UTF8 = b"\xff".decode("utf-8", "surrogateescape")
"""A byte that is not UTF-8 on the command line, as Python keeps it (a lone surrogate)."""


@pytest.mark.parametrize(
    "line",
    [
        ["run", NOT_UTF8],
        ["run", NOT_UTF8, "--json"],
        ["show", NOT_UTF8],
        ["unregister", "tool", NOT_UTF8],
        ["service", "up", NOT_UTF8],
        ["recommend", "--action", NOT_UTF8],
        ["graph", "-g", NOT_UTF8],
        ["history", "--tool", NOT_UTF8],
        ["stats", "--tool", NOT_UTF8],
        ["export", "--format", "openai", "--group", NOT_UTF8],
    ],
    ids=lambda line: " ".join(line).replace(NOT_UTF8, "xff"),
)
def test_a_name_that_is_not_utf8_is_a_usage_error_not_a_crash(
    toolctl: Toolctl, tmp_path: Path, line: list[str]
) -> None:
    """A byte that is not UTF-8 in a name (a terminal in Latin-1 typing 'é') reaches SQLite
    or a URL, which take text only: the argument is told, exit 2, never exit 70."""
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    chat = {"messages": [{"role": "assistant", "tool_calls": [call]}]}
    (tmp_path / "chat.jsonl").write_text(json.dumps(chat) + "\n")
    assert toolctl("history", "import", "chat.jsonl").returncode == 0  # a history to read
    done = toolctl(*line)
    assert done.returncode == 2, done.stderr
    told = f"argument {line.index(NOT_UTF8) + 1} of the command line is not UTF-8 text"
    if "--json" in line:
        assert told in json.loads(done.stdout)["error"]
    else:
        assert done.stderr.startswith(f"toolctl: error: {told}; ") and done.stderr.count("\n") == 1


def test_an_argument_that_is_not_utf8_is_named_never_shown(toolctl: Toolctl) -> None:
    """`-e API_KEY=<bytes>sk-...` from a terminal in Latin-1: the argument is named by its
    place and its key, never shown (it echoed the secret)."""
    secret = f"{NOT_UTF8}FUZZhunter2"
    done = toolctl("mcp", "add", "x", "-e", f"API_KEY={secret}", "--", "srv")
    assert done.returncode == 2 and "FUZZhunter2" not in done.stderr + done.stdout
    assert "argument 5 (API_KEY=...) of the command line is not UTF-8 text" in done.stderr


def test_a_working_directory_that_is_not_utf8_is_told(tmp_path: Path, toolctl: Toolctl) -> None:
    """`init` refuses a directory whose path is not UTF-8 (no registry there could be
    read), and `register` there is one line, exit 2: the descriptor's directory cannot be
    written into the TOML it registers."""
    odd = tmp_path / f"dir{NOT_UTF8}"
    odd.mkdir()
    done = toolctl("init", cwd=odd)
    assert done.returncode == 2 and "is not a UTF-8 path" in done.stderr, done.stderr
    assert not (odd / "toolctl.toml").exists()
    assert toolctl("new", "tool", "q", cwd=odd).returncode == 0
    done = toolctl("register", "q.toml", cwd=odd)
    assert done.returncode == 2, done.stderr
    assert "the working directory" in done.stderr and "is not a UTF-8 path" in done.stderr


@pytest.mark.parametrize(
    "line",
    [
        ["list", "-r", "x" * 300],
        ["check", "x" * 300 + ".toml"],
        ["init", "x" * 300],
        ["import", "trustgraph", "x" * 300],
    ],
    ids=["list -r", "check FILE", "init DIR", "import FILE"],
)
def test_a_file_name_too_long_is_a_usage_error_not_a_crash(
    toolctl: Toolctl, line: list[str]
) -> None:
    """A path whose name is over the file system's 255 bytes is refused by the system
    wherever toolctl opens or makes it: one line, exit 2, never exit 70."""
    done = toolctl(*line)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "internal error" not in done.stderr
    assert "too long" in done.stderr, done.stderr


FLOOD = (
    '[[tool]]\nname = "flood"\ntimeout = 60\n[tool.local]\ncommand = ["{python}", "-c", '
    '"import sys\\nfor i in range(100000): sys.stdout.write(\\"x\\" * 99 + \\"\\\\n\\")"]\n'
    'input = "none"\n'
)


@pytest.mark.parametrize(
    ("redirect", "code"), [("| head -c 10 >/dev/null", 141), (">/dev/full", 74)]
)
def test_streamed_output_that_cannot_be_written_ends_the_run_with_its_code(
    tmp_path: Path, redirect: str, code: int
) -> None:
    """A tool's output streamed to a reader that went away (`| head`) or to a full disk:
    the rest is dropped, the tool finishes, and the run ends 141 or 74. The reading thread
    died with a traceback and the tool, its pipe full, waited out its timeout (exit 124)."""
    if redirect.startswith(">/dev/full") and not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    write_files(tmp_path, {"reg/t.toml": FLOOD.replace("{python}", sys.executable)})
    script = f'"$0" -m toolctl run flood -r reg {redirect}; echo "exit ${{PIPESTATUS[0]}}" >&2'
    done = subprocess.run(
        ["bash", "-c", script, sys.executable],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert "Traceback" not in done.stderr and f"exit {code}\n" in done.stderr, done.stderr
    if code == 74:
        assert "toolctl: error: cannot write: No space left on device" in done.stderr


def test_a_tool_whose_reader_went_away_is_ended_as_a_pipeline_would_be(tmp_path: Path) -> None:
    """`toolctl run flood | head -1` kept the tool (`yes`) running to its timeout, 600 s
    here, then told and recorded a timeout. As SIGPIPE ends `yes | head -1`, the tool is
    ended once its output can go nowhere: exit 141, recorded as interrupted."""
    marker = f"flood-{os.getpid()}-{time.monotonic_ns()}"
    write_files(
        tmp_path,
        {"reg/t.toml": f'[[tool]]\nname = "yes"\ntimeout = 600\n[tool.local]\n'
         f'command = ["yes", "{marker}"]\ninput = "none"\n'},
    )  # fmt: skip
    script = '"$0" -m toolctl run yes -r reg | head -1; echo "exit ${PIPESTATUS[0]}" >&2'
    done = subprocess.run(
        ["bash", "-c", script, sys.executable],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,  # far less than the tool's 600 s
    )
    assert (done.stdout, done.stderr) == (f"{marker}\n", "exit 141\n")
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 1
    history = subprocess.run(
        [sys.executable, "-m", "toolctl", "history", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    [call] = json.loads(history.stdout)["calls"]
    assert (call["outcome"], call["exit_code"]) == ("interrupted", 141)


def test_a_batch_to_a_full_disk_is_74_and_says_so(tmp_path: Path) -> None:
    """The result lines of a --batch go out in bursts from a thread: a full disk there was
    taken for a reader gone away (141, nothing said). It is 74, said, as everywhere else."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    write_files(
        tmp_path,
        {"reg/t.toml": '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\ninput = "none"\n'},
    )
    (tmp_path / "lines.jsonl").write_text("{}\n" * 300)
    script = '"$0" -m toolctl run t -r reg --batch lines.jsonl --concurrency 8 >/dev/full'
    done = subprocess.run(
        ["sh", "-c", script, sys.executable], cwd=tmp_path, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        74,
        "toolctl: error: cannot write: No space left on device\n",
    )


def test_a_signal_while_the_records_are_written_ends_at_once_without_a_traceback(
    tmp_path: Path,
) -> None:
    """Once a command is over, it writes its history row, waiting up to 30 s for another
    writer's lock: a Ctrl-C then printed a traceback (Python's own handler was back), and
    was not heard until SQLite's wait ended (it waits in C, where no handler runs)."""
    import signal

    write_files(
        tmp_path,
        {"reg/t.toml": '[[tool]]\nname = "nap"\n[tool.local]\ncommand = ["sleep", "60"]\n'},
    )
    run = [sys.executable, "-m", "toolctl", "run", "nap", "-r", "reg"]
    subprocess.run([*run, "--timeout", "0.1"], cwd=tmp_path, capture_output=True)  # the file
    database = next((tmp_path / "home").rglob("history.sqlite3"))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time\n"
         "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "db.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(20)",
         str(database)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        child = subprocess.Popen(run, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        child.send_signal(signal.SIGINT)  # the call ends; the row waits for the lock
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
        assert holder.poll() is None  # ended while the lock was still held, not after it
    finally:
        holder.kill()
        holder.wait()
    assert child.returncode == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def test_a_stderr_that_cannot_be_written_keeps_the_exit_code(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """A full disk behind stderr made every error exit 1 ("the tool failed") with
    Python's own complaint, and a success that warned too: the diagnostic is lost, the
    exit code kept, as gh and uv keep it."""
    write_files(
        tmp_path, {"reg/t.toml": '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\n'}
    )
    with open("/dev/full", "w") as full:

        def code(*args: str) -> int:
            argv = [sys.executable, "-m", "toolctl", *args]
            return subprocess.run(argv, stderr=full, cwd=tmp_path, timeout=60).returncode

        assert code("lsit") == 2
        assert code("run", "nope", "-r", "reg") == 4
        assert code("run", "t", "--timeout", "0", "-r", "reg") == 2
        # a warning (a file that is not TOML is skipped, said on stderr), and exit 0
        (tmp_path / "reg/bad.toml").write_text("[[tool]\n")
        assert "warning" in toolctl("list", "-r", "reg").stderr
        assert code("list", "-r", "reg") == 0


def test_paths_below_the_working_directory_are_shortened_never_inside_a_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From `/`, every `//` in a message was cut ("pulsar:127.0.0.1:6650"), and a path
    below the working directory inside a URL or another path was cut too."""
    from toolctl.terminal.render import relativise

    monkeypatch.chdir("/")
    said = "cannot reach pulsar://127.0.0.1:6650 from /etc/x; see http://h/x"
    assert relativise(said) == said
    monkeypatch.chdir(tmp_path)
    here = str(tmp_path)
    assert relativise(f"no such file: {here}/a.toml") == "no such file: a.toml"
    assert relativise(f"'{here}/a.toml' and ({here}/b)") == "'a.toml' and (b)"
    for whole in (f"file://{here}/a", f"/mnt{here}/a", f"x{here}/a"):
        assert relativise(whole) == whole
