"""One error style (toolctl/terminal/usage.py): usage errors as `toolctl: error:` lines with a
did-you-mean, and `run --json` answering every outcome with a result object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files

TOOLS = """
[[tool]]
name = "echo"
description = "Print the text"
[tool.local]
command = ["python3", "-c", "import sys; print(sys.stdin.read())"]
[[tool.arguments]]
name = "text"
required = true

[[tool]]
name = "fails"
[tool.local]
command = ["sh", "-c", "echo broken >&2; exit 3"]

[[tool]]
name = "sleepy"
timeout = 0.5
[tool.local]
command = ["sleep", "30"]
"""


def one_error_line(stderr: str) -> str:
    """The single line a usage error prints: no panel, no escapes, no usage block."""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert "\x1b" not in stderr and "╭" not in stderr and "Usage:" not in stderr
    assert lines[0].startswith("toolctl: error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["lsit"], "unknown command 'lsit' (did you mean 'list'?)"),
        (["run", "echo", "--vrbose"], "unknown option '--vrbose' (did you mean '--verbose'?)"),
        (["list", "--colour"], "unknown option '--colour'; see 'toolctl list -h'"),
        (
            ["--registry", "reg", "list"],
            "--registry is a command's option: put it after the command (toolctl COMMAND --registry)",
        ),
        (["--bogus", "list"], "unknown option '--bogus'; see 'toolctl -h'"),
        (["run"], "missing argument 'NAME'; see 'toolctl run -h'"),
        (["run", "x", "--timeout", "abc"], "invalid value for '--timeout': 'abc' is not a valid"),
        # a warning and exit 0, while a bad --pulsar-url or TOOLCTL_* value is exit 2
        (["list", "--announced", "maybe"], "bad Pulsar URL 'maybe': expected pulsar://HOST:PORT"),
        # a group's option before its subcommand was dropped without a word (exit 0)
        (
            ["history", "--json", "import", "t.jsonl"],
            "--json before 'import' is an option of 'history' alone; put it after 'import'",
        ),
        (
            ["history", "--tool", "x", "import", "t.jsonl"],
            "--tool before 'import' is an option of 'history' alone; 'import' does not take it",
        ),
        (
            ["graph", "--format", "json", "learn"],
            "--format before 'learn' is an option of 'graph' alone; 'learn' does not take it",
        ),
    ],
)
def test_usage_errors_are_one_line(toolctl: Toolctl, args: list[str], expected: str) -> None:
    done = toolctl(*args)
    assert done.returncode == 2
    assert expected in one_error_line(done.stderr)
    assert done.stdout == ""


def test_usage_errors_have_no_escapes_on_a_terminal_colour_setting(
    toolctl_process: Toolctl,
) -> None:
    done = toolctl_process("lsit", env={"NO_COLOR": "", "FORCE_COLOR": "1", "TERM": "xterm"})
    assert done.returncode == 2
    assert one_error_line(done.stderr) == (
        "toolctl: error: unknown command 'lsit' (did you mean 'list'?)"
    )


def test_arg_names_get_a_did_you_mean(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"reg/t.toml": TOOLS})
    done = toolctl("run", "echo", "--arg", "txt=hi", "-r", "reg")
    assert done.returncode == 2
    assert one_error_line(done.stderr).endswith("unknown argument 'txt' (did you mean 'text'?)")
    given = toolctl("run", "echo", "--args", '{"txt": "hi"}', "-r", "reg")
    assert given.returncode == 2
    assert "unknown argument 'txt' (did you mean 'text'?)" in given.stderr


def test_descriptor_fields_get_a_did_you_mean(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path,
        {
            "x.toml": """
            [[tool]]
            name = "x"
            descripton = "typo"
            [tool.local]
            comand = ["true"]
            """
        },
    )
    done = toolctl("check", "x.toml")
    assert done.returncode == 3
    out = done.stdout + done.stderr
    assert "tool 'x': unknown field 'descripton' (did you mean 'description'?)" in out
    assert "tool 'x': local: unknown field 'comand' (did you mean 'command'?)" in out
    assert "Extra inputs" not in out


def test_unregister_with_a_name_where_the_kind_goes(toolctl: Toolctl) -> None:
    done = toolctl("unregister", "sentiment")
    assert done.returncode == 2
    assert one_error_line(done.stderr) == (
        "toolctl: error: unregister takes KIND NAME, and 'sentiment' is not a kind "
        "(tool, service, action, group); e.g. toolctl unregister tool sentiment"
    )


def envelope(stdout: str) -> dict[str, object]:
    result = json.loads(stdout)
    assert isinstance(result, dict)
    assert set(result) >= {"success", "error", "error_code", "exit_code", "output", "data"}
    return result


@pytest.mark.parametrize(
    ("args", "code", "error_code", "message"),
    [
        (["run", "nope"], 4, "not_found", "tool 'nope' not found"),
        (["run", "echo", "--arg", "txt=hi"], 2, "invalid_arguments", "unknown argument 'txt'"),
        (["run", "echo"], 2, "invalid_arguments", "missing required argument: text"),
        (["run", "echo", "--timeout", "abc"], 2, "usage", "invalid value for '--timeout'"),
        (["run", "sleepy"], 124, "timed_out", "timeout and was killed"),
        (["run", "fails"], 1, "tool_failed", "exit status 3"),
    ],
)
def test_run_json_answers_every_outcome_with_a_result(
    tmp_path: Path,
    toolctl: Toolctl,
    args: list[str],
    code: int,
    error_code: str,
    message: str,
) -> None:
    write_files(tmp_path, {"reg/t.toml": TOOLS})
    done = toolctl(*args, "--json", "-r", "reg")
    assert done.returncode == code, done.stderr
    result = envelope(done.stdout)
    assert result["success"] is False
    assert result["error_code"] == error_code
    assert message in str(result["error"])
    if error_code != "tool_failed":  # the tool's own exit status stays the tool's
        assert result["exit_code"] == code
    ran = error_code in ("timed_out", "tool_failed")  # a call that ran says how, and how long
    assert result["transport"] == ("local" if ran else "")
    assert (float(str(result["duration_ms"])) >= 500) == (args[1] == "sleepy")


def test_json_taken_as_an_options_value_asks_for_no_result_object(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`--user --json` gives "--json" as the user: the failure is told on stderr alone, as
    without --json (the command line was scanned for it, and a JSON result printed)."""
    write_files(tmp_path, {"reg/t.toml": TOOLS})
    done = toolctl("run", "nope", "--user", "--json", "-r", "reg")
    assert done.returncode == 4
    assert done.stdout == ""
    assert "tool 'nope' not found" in done.stderr
    asked = toolctl("run", "nope", "--json", "-r", "reg")  # the next call in this process
    assert envelope(asked.stdout)["error_code"] == "not_found"


def test_batch_lines_carry_the_same_error_codes(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"reg/t.toml": TOOLS})
    lines = '{"text": "hi"}\n{"txt": "hi"}\nnot json\n'
    done = toolctl("run", "echo", "--batch", "-", "-r", "reg", input=lines)
    assert done.returncode == 1
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["success"] for r in results] == [True, False, False]
    assert "error_code" not in results[0]
    assert [r["error_code"] for r in results[1:]] == ["invalid_arguments", "invalid_arguments"]
    assert [r["exit_code"] for r in results[1:]] == [2, 2]


@pytest.mark.parametrize(
    ("args", "code"),
    [(["nope", "--batch", "-"], 4), (["echo", "--batch", "missing.jsonl"], 2)],
    ids=["unknown tool", "no such file"],
)
def test_a_batch_with_json_prints_only_result_lines(
    tmp_path: Path, toolctl: Toolctl, args: list[str], code: int
) -> None:
    """A batch's output is JSON Lines, a result per input line: what ends the whole batch
    is on stderr and in the exit code, never a pretty-printed object among the lines."""
    write_files(tmp_path, {"reg/t.toml": TOOLS})
    done = toolctl("run", *args, "--json", "-r", "reg", input='{"text": "hi"}\n')
    assert (done.returncode, done.stdout) == (code, ""), done.stderr
    assert done.stderr.startswith("toolctl: error: ")


def test_the_help_examples_that_read_work_on_the_sample_registry(toolctl: Toolctl) -> None:
    # what `toolctl help CMD` shows a new user in this checkout must not fail on its names
    import shlex

    from tests.conftest import ROOT
    from toolctl.terminal.help import EXAMPLES

    reading = ("list", "show", "recommend", "export", "where", "history", "stats")
    tried = 0
    for example in {line for lines in EXAMPLES.values() for line in lines}:
        words = shlex.split(example)
        if words[1] not in reading or words[1:3] == ["history", "import"]:
            continue
        done = toolctl(*words[1:], cwd=ROOT)
        assert done.returncode == 0, (example, done.stderr)
        tried += 1
    assert tried >= 10


@pytest.mark.parametrize(
    "line",
    [
        ["check", "--format", "github"],
        ["graph", "--format", "mermaid"],
        ["recommend", "--action", "a", "--format", "dot"],
        ["check", "--format", "text"],  # the default given: as silent a choice (it was)
        ["graph", "--format", "dot"],
        ["recommend", "--action", "a", "--format", "table"],
    ],
    ids=["check", "graph", "recommend", "check-default", "graph-default", "recommend-default"],
)
def test_json_with_another_format_is_a_usage_error(
    tmp_path: Path, toolctl: Toolctl, line: list[str]
) -> None:
    write_files(tmp_path, {"reg/t.toml": TOOLS})
    done = toolctl(*line, "--json", "-r", "reg")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"toolctl: error: --json and --format {line[-1]} cannot be combined\n"


def test_a_newline_in_what_an_error_quotes_cannot_forge_a_line(toolctl: Toolctl) -> None:
    done = toolctl("run", "nope\ntoolctl: check ok")
    assert done.returncode == 4
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("toolctl: error: tool 'nope\\ntoolctl: check ok' not found")


@pytest.mark.parametrize(
    ("variable", "value", "told"),
    [
        ("TOOLCTL_STRICT", "maybe", "expected 1 or 0 (true/false, yes/no, on/off)"),
        ("TOOLCTL_HISTORY", "sometimes", "expected 1 or 0 (true/false, yes/no, on/off)"),
        ("TOOLCTL_RECORD_ARGUMENTS", "2", "expected 1 or 0 (true/false, yes/no, on/off)"),
        ("TOOLCTL_LOG", "xml", "expected json or text"),
        ("TOOLCTL_HISTORY_MAX_CALLS", "abc", "expected a number above 0, at most 10**15"),
        ("TOOLCTL_HISTORY_MAX_DAYS", "-1", "expected a number above 0, at most 10**15"),
        ("TOOLCTL_HISTORY_MAX_CALLS", "9" * 23, "expected a number above 0, at most 10**15"),
        ("TOOLCTL_REGISTRY", ":", "names no directory; name one, or unset it"),
    ],
)
def test_a_variable_with_a_value_toolctl_cannot_read_is_a_usage_error(
    toolctl: Toolctl, variable: str, value: str, told: str
) -> None:
    done = toolctl("list", env={variable: value})
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"toolctl: error: {variable}={value!r}: {told}\n"


def test_on_and_off_read_in_any_case(toolctl: Toolctl) -> None:
    assert toolctl("list", env={"TOOLCTL_STRICT": "Off", "TOOLCTL_HISTORY": "YES"}).returncode == 0


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (["rm", "tool", "x"], "unknown command 'rm' (did you mean 'unregister'?)"),
        (["status"], "unknown command 'status' (did you mean 'service status'?)"),  # not stats
        (["install"], "unknown command 'install' (did you mean 'mcp install'?)"),
        (["mcp", "status"], "unknown command 'status'; see 'toolctl mcp -h'"),
        (["service", "stop", "x"], "unknown command 'stop' (did you mean 'down'?)"),
        (["service", "start", "x"], "unknown command 'start' (did you mean 'up'?)"),  # not status
        (["broker", "up"], "unknown command 'up' (did you mean 'start'?)"),
        (["trust", "rm", "KEY"], "unknown command 'rm' (did you mean 'remove'?)"),
        (["version"], "unknown command 'version' (did you mean '--version'?)"),
        (["run", "t", "who=Ada"], "(who=Ada) (did you mean --arg who=Ada?)"),
        (["run", "t", "--who", "Ada"], "unknown option '--who' (a tool's arguments go in --arg"),
        (["list", "--category"], "requires an argument; see 'toolctl list -h'"),
        (["--jsn", "list"], "'--jsn' (did you mean '--json'? it goes after the command: toolctl"),
        (["mcp", "install", "--client", "cursr"], "'windsurf' (did you mean 'cursor'?); see"),
    ],
)
def test_what_other_clis_would_take_gets_toolctls_way_said(
    toolctl: Toolctl, line: list[str], said: str
) -> None:
    done = toolctl(*line)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr


@pytest.mark.parametrize("line", [[], ["service"], ["mcp"], ["broker"], ["new"]])
def test_a_group_without_its_subcommand_is_a_usage_error_with_its_help(
    toolctl: Toolctl, line: list[str]
) -> None:
    """The help on stderr and exit 2, as uv does: stdout (where data goes) stays empty for
    a mistake (it had the help, and exit 2)."""
    done = toolctl(*line)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"Usage: toolctl {' '.join(line)}".rstrip() + " [OPTIONS]")
    assert "Examples:" in done.stderr


@pytest.mark.parametrize(
    "line", [["run", ""], ["show", " "], ["unregister", "tool", ""], ["service", "up", ""]]
)
def test_an_empty_name_is_a_usage_error(toolctl: Toolctl, line: list[str]) -> None:
    """`run "$TOOL"` with TOOL unset: a mistake on the command line (exit 2), not a name
    looked for in every file and not found (4), as `new tool ''` says."""
    done = toolctl(*line)
    assert (done.returncode, done.stdout) == (2, "")
    assert "name is empty" in done.stderr and done.stderr.count("\n") == 1


def test_concurrency_without_batch_is_refused(toolctl: Toolctl, tmp_path: Path) -> None:
    """It was ignored without a word: a single call has nothing to run at once."""
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/t.toml").write_text('[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\n')
    done = toolctl("run", "t", "-r", str(tmp_path / "reg"), "--concurrency", "4")
    assert (done.returncode, done.stdout) == (2, "")
    assert "--concurrency is how many --batch lines run at once" in done.stderr


def test_a_key_given_twice_in_args_or_a_batch_line_is_refused(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """Last-wins would run with a value another reader of the same text does not see."""
    tool = '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["cat"]\n'
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/t.toml").write_text(tool)
    reg = str(tmp_path / "reg")
    args = toolctl("run", "t", "-r", reg, "--args", '{"a": 1, "a": 2}')
    assert (args.returncode, args.stdout) == (2, "")
    assert "--args gives 'a' twice" in args.stderr
    line = toolctl("run", "t", "-r", reg, "--batch", "-", input='{"a": 1, "a": 2}\n')
    assert json.loads(line.stdout)["error"] == "line 1: gives 'a' twice"


def test_no_color_counts_when_it_holds_something(tmp_path: Path) -> None:
    """no-color.org: NO_COLOR set to an empty string turns nothing off (it turned colour
    off, as a value would); TERM=dumb does."""
    from toolctl.settings import Settings

    def color(**env: str) -> bool:
        return Settings.load(environ={"HOME": str(tmp_path), **env}, cwd=tmp_path).color

    assert color() and color(NO_COLOR="")
    assert not color(NO_COLOR="1") and not color(TERM="dumb")
