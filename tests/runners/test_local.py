"""`toolctl run` of local tools: real subprocesses, real exit codes, real process groups."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files
from toolctl.processes.table import is_alive

PY = sys.executable

REGISTRY = f"""
[[tool]]
name = "echo-json"
description = "Echo the arguments back as data"
[tool.local]
command = ["{PY}", "-c", "import json, sys; print(json.dumps(json.load(sys.stdin)))"]
[[tool.arguments]]
name = "text"
[[tool.arguments]]
name = "count"
type = "integer"
required = false
[[tool.arguments]]
name = "loud"
type = "boolean"
required = false

[[tool]]
name = "argv"
description = "Print each argv item on its own line"
[tool.local]
command = ["{PY}", "-c", "import sys; print(*sys.argv[1:], sep='\\\\n')", "{{text}}", "x{{n}}y"]
input = "none"
[[tool.arguments]]
name = "text"
[[tool.arguments]]
name = "n"
type = "integer"
required = false

[[tool]]
name = "fail"
[tool.local]
command = ["{PY}", "-c", "import sys; print('partial'); sys.stderr.write('boom: disk on fire\\\\n'); sys.exit(3)"]
input = "none"

[[tool]]
name = "result"
[tool.local]
command = ["{PY}", "-c", "print('{{\\"success\\": false, \\"output\\": \\"half\\", \\"error\\": \\"no luck\\"}}')"]
input = "none"

[[tool]]
name = "sleepy"
timeout = 1
[tool.local]
command = ["{PY}", "-c", "import os, subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); open(sys.argv[1], 'w').write(str(p.pid)); print('started', flush=True); time.sleep(60)", "{{pidfile}}"]
input = "none"
[[tool.arguments]]
name = "pidfile"

[[tool]]
name = "touch"
description = "Creates a marker file: proves whether it ran"
[tool.local]
command = ["{PY}", "-c", "import sys; open(sys.argv[1], 'w').write('ran')", "{{marker}}"]
input = "none"
[[tool.arguments]]
name = "marker"
[[tool.arguments]]
name = "size"
type = "integer"

[[tool]]
name = "secret"
[tool.local]
command = ["{PY}", "-c", "import os; print(os.environ['API_TOKEN'][::-1])"]
input = "none"
env = {{ API_TOKEN = "${{env:MY_SECRET}}" }}

[[tool]]
name = "missing-binary"
[tool.local]
command = ["definitely-not-installed-xyz"]

[[tool]]
name = "nap-echo"
[tool.local]
command = ["{PY}", "-c", "import sys, time; time.sleep(float(sys.argv[1])); print(sys.argv[1])", "{{pause}}"]
input = "none"
[[tool.arguments]]
name = "pause"
type = "number"

[[tool]]
name = "stream"
[tool.local]
command = ["{PY}", "-c", "import sys, time; print('first', flush=True); time.sleep(float(sys.argv[1])); print('second')", "{{pause}}"]
input = "none"
[[tool.arguments]]
name = "pause"
type = "number"
"""


@pytest.fixture
def reg(tmp_path: Path) -> Path:
    write_files(tmp_path, {"reg/tools.toml": REGISTRY})
    return tmp_path / "reg"


def test_success_prints_output_and_exits_0(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl(
        "run",
        "echo-json",
        "--arg",
        "text=hi",
        "--arg",
        "count=3",
        "--arg",
        "loud=true",
        "-r",
        str(reg),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"text": "hi", "count": 3, "loud": True}


def test_json_result_has_the_toolresult_shape(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl("run", "echo-json", "--args", '{"text": "hi"}', "--json", "-r", str(reg))
    result = json.loads(done.stdout)
    assert result["success"] is True and result["exit_code"] == 0
    assert result["data"] == {"text": "hi"} and result["transport"] == "local"
    assert result["duration_ms"] > 0


def test_args_from_file_and_stdin(reg: Path, tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "args.json").write_text('{"text": "from file"}')
    from_file = toolctl("run", "echo-json", "--args", "@args.json", "-r", str(reg))
    assert json.loads(from_file.stdout) == {"text": "from file"}
    from_stdin = toolctl("run", "echo-json", "--args", "-", "-r", str(reg), input='{"text": "in"}')
    assert json.loads(from_stdin.stdout) == {"text": "in"}
    overridden = toolctl(
        "run", "echo-json", "--args", '{"text": "a"}', "--arg", "text=b", "-r", str(reg)
    )
    assert json.loads(overridden.stdout) == {"text": "b"}


def test_shell_metacharacters_arrive_literally(reg: Path, toolctl: Toolctl) -> None:
    nasty = "a; rm -rf / && $(touch pwned) `id` | cat > x 'q' \"dq\" *"
    done = toolctl("run", "argv", "--arg", f"text={nasty}", "--arg", "n=5", "-r", str(reg))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [nasty, "x5y"]
    assert not (reg.parent / "pwned").exists()


def test_a_missing_optional_argument_drops_its_item(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl("run", "argv", "--arg", "text=only", "-r", str(reg))
    assert done.stdout.splitlines() == ["only", "xy"]


def test_non_zero_exit_is_exit_1_with_the_tools_stderr(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl("run", "fail", "-r", str(reg))
    assert done.returncode == 1
    assert done.stdout == "partial\n"
    assert "boom: disk on fire" in done.stderr
    assert "exit status 3" in done.stderr
    as_json = json.loads(toolctl("run", "fail", "--json", "-r", str(reg)).stdout)
    assert as_json["success"] is False and as_json["exit_code"] == 3


def test_a_toolresult_answer_with_success_false_fails(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl("run", "result", "-r", str(reg))
    assert done.returncode == 1
    assert done.stdout == "half\n"
    assert "no luck" in done.stderr


def test_timeout_kills_the_whole_process_group(reg: Path, tmp_path: Path, toolctl: Toolctl) -> None:
    pidfile = tmp_path / "grandchild.pid"
    done = toolctl("run", "sleepy", "--arg", f"pidfile={pidfile}", "-r", str(reg))
    assert done.returncode == 124
    assert "timeout" in done.stderr and "killed" in done.stderr
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while is_alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_alive(grandchild)


def test_timeout_option_overrides_the_descriptor(
    reg: Path, tmp_path: Path, toolctl: Toolctl
) -> None:
    done = toolctl("run", "stream", "--arg", "pause=3", "--timeout", "0.5", "-r", str(reg))
    assert done.returncode == 124


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--arg", "marker=M", "--arg", "size=big"],
            "argument 'size' expects an integer, got 'big'",
        ),
        (["--arg", "size=1"], "missing required argument: marker"),
        (["--args", '{"marker": "M", "size": 1, "colour": "red"}'], "unknown argument: colour"),
        (["--args", '{"marker": 5, "size": 1}'], "argument 'marker' must be string"),
        (["--args", "[1]"], "--args must be a JSON object"),
        (["--args", "{not json"], "--args is not valid JSON"),
        (["--arg", "nonsense"], "--arg expects KEY=VALUE"),
    ],
)
def test_bad_arguments_exit_2_and_the_tool_never_runs(
    reg: Path, tmp_path: Path, toolctl: Toolctl, args: list[str], message: str
) -> None:
    marker = tmp_path / "marker"
    args = [a.replace("M", str(marker)) if "marker" in a else a for a in args]
    done = toolctl("run", "touch", *args, "-r", str(reg))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert not marker.exists()
    assert "Traceback" not in done.stderr


def test_unknown_tool_exits_4_with_suggestions(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl("run", "echo_json", "-r", str(reg))
    assert done.returncode == 4
    assert "did you mean: echo-json?" in done.stderr


def test_missing_executable_exits_5(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl("run", "missing-binary", "-r", str(reg))
    assert done.returncode == 5
    assert "executable 'definitely-not-installed-xyz' not found" in done.stderr


def test_a_whole_number_for_an_integer_reaches_the_tool_as_an_integer(
    reg: Path, toolctl: Toolctl
) -> None:
    """JSON Schema takes 1.0 for an integer: the tool was handed "x1.0y" and "count": 1.0."""
    argv = toolctl("run", "argv", "--args", '{"text": "t", "n": 3.0}', "-r", str(reg))
    assert argv.stdout == "t\nx3y\n", argv.stderr
    echoed = toolctl("run", "echo-json", "--args", '{"text": "t", "count": 2.0}', "-r", str(reg))
    assert echoed.stdout == '{"text": "t", "count": 2}\n', echoed.stderr
    assert (
        toolctl("run", "argv", "--args", '{"text": "t", "n": 3.5}', "-r", str(reg)).returncode == 2
    )


def test_a_script_that_is_not_executable_says_how_to_run_it(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    (tmp_path / "hello.py").write_text("print('hi')\n")  # not chmod +x
    tool = '[[tool]]\nname = "hello"\n[tool.local]\ncommand = ["./hello.py"]\ninput = "none"\n'
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/t.toml").write_text(tool)
    done = toolctl("run", "hello", "-r", "reg", cwd=tmp_path)
    assert done.returncode == 5
    assert done.stderr == (
        "toolctl: error: executable './hello.py' is not executable; chmod +x ./hello.py, or "
        'run it through its interpreter (command = ["python3", "./hello.py", ...])\n'
    )


def test_secrets_pass_through_and_are_never_printed(reg: Path, toolctl: Toolctl) -> None:
    env = {"MY_SECRET": "hunter2-secret", "TOOLCTL_LOG": "json"}
    done = toolctl("run", "secret", "-v", "-r", str(reg), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "terces-2retnuh\n"
    assert "hunter2" not in done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines()]
    assert [e["event"] for e in events] == ["start", "done"]
    assert events[1]["success"] is True and events[1]["tool"] == "secret"
    dry = toolctl("run", "secret", "--dry-run", "--json", "-r", str(reg), env=env)
    assert json.loads(dry.stdout)["env"] == {"API_TOKEN": "***"}
    assert "hunter2" not in dry.stdout + dry.stderr
    unset = toolctl("run", "secret", "-r", str(reg))
    assert unset.returncode == 2
    assert "environment variable MY_SECRET is not set" in unset.stderr


def test_dry_run_runs_nothing(reg: Path, tmp_path: Path, toolctl: Toolctl) -> None:
    marker = tmp_path / "marker"
    done = toolctl(
        "run",
        "touch",
        "--arg",
        f"marker={marker}",
        "--arg",
        "size=1",
        "--dry-run",
        "--json",
        "-r",
        str(reg),
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["argv"][-1] == str(marker)
    assert not marker.exists()


def test_output_streams_before_the_tool_ends(reg: Path, tmp_path: Path) -> None:
    child = subprocess.Popen(
        [PY, "-m", "toolctl", "run", "stream", "--arg", "pause=3", "-r", str(reg)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "first\n"
        assert child.poll() is None  # still running: the line came early
        assert child.wait(timeout=30) == 0
        assert child.stdout.read() == "second\n"
    finally:
        child.kill()
        child.wait()


def test_ctrl_c_kills_the_tool_and_exits_130(reg: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    child = subprocess.Popen(
        [
            PY,
            "-m",
            "toolctl",
            "run",
            "sleepy",
            "--timeout",
            "60",
            "--arg",
            f"pidfile={pidfile}",
            "-r",
            str(reg),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "started\n"
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=30) == 130
        assert "interrupted" in (child.stderr.read() if child.stderr else "")
        grandchild = int(pidfile.read_text())
        deadline = time.monotonic() + 5
        while is_alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not is_alive(grandchild)
    finally:
        child.kill()
        child.wait()


def test_batch_keeps_input_order_and_reports_failures(reg: Path, toolctl: Toolctl) -> None:
    lines = [json.dumps({"text": f"line {n}", "count": n}) for n in range(12)]
    lines.insert(3, "not json")
    lines.insert(7, json.dumps({"text": 7}))
    done = toolctl(
        "run",
        "echo-json",
        "--batch",
        "-",
        "--concurrency",
        "4",
        "-r",
        str(reg),
        input="\n".join(lines) + "\n\n",
    )
    assert done.returncode == 1
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == 14
    assert results[3]["success"] is False and "line 4: not a JSON object" in results[3]["error"]
    assert (
        results[7]["success"] is False and "argument 'text' must be string" in results[7]["error"]
    )
    good = [r["data"] for r in results if r["success"]]
    assert good == [{"text": f"line {n}", "count": n} for n in range(12)]


def test_batch_of_good_lines_exits_0(reg: Path, tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "in.jsonl").write_text('{"text": "a"}\n{"text": "b"}\n')
    done = toolctl("run", "echo-json", "--batch", "in.jsonl", "-r", str(reg))
    assert done.returncode == 0
    assert [json.loads(x)["data"]["text"] for x in done.stdout.splitlines()] == ["a", "b"]


def test_sample_tools_run_from_any_directory(tmp_path: Path, toolctl: Toolctl) -> None:
    root = Path(__file__).resolve().parents[2]
    done = toolctl(
        "run",
        "word-count",
        "--arg",
        "text=one two three",
        "-r",
        str(root / "registry"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "3 words, 1 lines, 13 characters\n"
    assert os.getcwd()  # the test's own cwd is untouched


def test_batch_order_holds_when_later_lines_finish_first(reg: Path, toolctl: Toolctl) -> None:
    pauses = [(8 - n) * 0.05 for n in range(8)]  # the first line is the slowest
    lines = [json.dumps({"pause": p}) for p in pauses]
    done = toolctl(
        "run",
        "nap-echo",
        "--batch",
        "-",
        "--concurrency",
        "8",
        "-r",
        str(reg),
        input="\n".join(lines) + "\n",
    )
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [float(r["output"]) for r in results] == pauses


def test_an_array_argument_takes_one_item_per_repeated_arg(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(
        tmp_path,
        {
            "reg/lists.toml": f"""
[[tool]]
name = "lists"
[tool.parameters]
type = "object"
properties.ids = {{ type = "array", items = {{ type = "integer" }} }}
properties.names = {{ type = "array" }}
properties.text = {{ type = "string" }}
[tool.local]
command = ["{PY}", "-c", "import json, sys; print(json.dumps(json.load(sys.stdin)))"]
"""
        },
    )
    reg = tmp_path / "reg"

    def run(*pairs: str) -> subprocess.CompletedProcess[str]:
        return toolctl("run", "lists", *(f"--arg={pair}" for pair in pairs), "-r", str(reg))

    assert json.loads(run("ids=1", "ids=2", "names=a", "names=[b]").stdout) == {
        "ids": [1, 2],
        "names": ["a", "[b]"],
    }
    assert json.loads(run("ids=[3, 4]").stdout) == {"ids": [3, 4]}  # once: the whole value
    for pairs, said in [
        (("text=a", "text=b"), "argument 'text' is given 2 times; give it once"),
        (("ids=1", "ids=two"), "argument 'ids' expects an integer, got 'two'"),
    ]:
        refused = run(*pairs)
        assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr
        assert refused.stderr.count("\n") == 1 and said in refused.stderr


def test_an_arguments_table_declares_an_arrays_item_type(tmp_path: Path, toolctl: Toolctl) -> None:
    """``items`` in ``[[tool.arguments]]`` (a name, or JSON Schema's one-type table): the
    repeated ``--arg`` values are converted to it; a default or enum of other items and
    ``items`` on a non-array are refused when the file is read."""
    tool = f"""
[[tool]]
name = "sum"
[tool.local]
command = ["{PY}", "-c", "import json, sys; print(json.dumps(json.load(sys.stdin)))"]
[[tool.arguments]]
name = "nums"
type = "array"
items = {{ type = "number" }}
[[tool.arguments]]
name = "tags"
type = "array"
items = "string"
default = ["a"]
"""
    write_files(tmp_path, {"reg/sum.toml": tool})
    reg = str(tmp_path / "reg")
    done = toolctl("run", "sum", "--arg", "nums=1", "--arg", "nums=2.5", "-r", reg)
    assert json.loads(done.stdout) == {"nums": [1, 2.5], "tags": ["a"]}, done.stderr
    exported = json.loads(toolctl("export", "--format", "mcp", "-r", reg).stdout)
    properties = exported["tools"][0]["inputSchema"]["properties"]
    assert properties["nums"]["items"] == {"type": "number"}
    for wrong, said in [
        ('default = ["a"]', "default = [1]"),
        ('items = "string"', 'items = "string"\nenum = [[2]]'),
        ('type = "array"\nitems = "string"', 'type = "string"\nitems = "string"'),
    ]:
        write_files(tmp_path, {"reg/sum.toml": tool.replace(wrong, said)})
        checked = toolctl("check", "-r", reg)
        assert checked.returncode == 3, checked.stdout
    assert "items declares an array's items; type is string" in checked.stdout


def test_a_key_given_twice_to_env_or_elicit_is_refused(tmp_path: Path, toolctl: Toolctl) -> None:
    reg = tmp_path / "reg"
    reg.mkdir()
    added = toolctl("mcp", "add", "twice", "-e", "K=1", "-e", "K=2", "-r", str(reg), "--", PY, "-V")
    assert (added.returncode, added.stderr) == (
        2,
        "toolctl: error: --env gives 'K' twice (its items 1 and 2)\n",
    )
    assert list(reg.iterdir()) == []


@pytest.mark.parametrize(
    ("answer", "success", "error"),
    [
        ({"success": False, "error": "disk full"}, False, "disk full"),
        ({"success": "false", "error": "disk full"}, True, None),  # no result: data
        ({"success": "yes", "output": 5, "error": {"x": 1}}, True, None),
        ({"output": "hi", "error": {"x": 1}}, True, None),
    ],
)
def test_only_a_well_typed_result_is_taken_as_the_result(
    tmp_path: Path, toolctl: Toolctl, answer: dict[str, object], success: bool, error: str | None
) -> None:
    write_files(
        tmp_path,
        {
            "answer.json": json.dumps(answer),
            "reg/t.toml": f'[[tool]]\nname = "says"\n[tool.local]\ninput = "none"\n'
            f'command = ["cat", "{tmp_path / "answer.json"}"]\n',
        },
    )
    done = toolctl("run", "says", "--json", "-r", str(tmp_path / "reg"))
    result = json.loads(done.stdout)
    assert (result["success"], result["error"], done.returncode) == (success, error, 1 - success)
    if success:
        assert result["data"] == answer


def test_a_timed_out_tools_output_so_far_is_in_its_result(tmp_path: Path, toolctl: Toolctl) -> None:
    """`run --json` (and a --batch line) of a tool its timeout ended keeps what it printed
    before, as a failed exit keeps it; a secret it was passed and printed is masked."""
    tool = """
[[tool]]
name = "slowish"
timeout = 1
[tool.local]
command = ["sh", "-c", "echo started with $KEY; sleep 30"]
input = "none"
env = { KEY = "${env:SLOW_KEY}" }
"""
    write_files(tmp_path, {"reg/t.toml": tool})
    env = {"SLOW_KEY": "sekret-value-123"}
    done = toolctl("run", "slowish", "-r", str(tmp_path / "reg"), "--json", env=env)
    assert done.returncode == 124, done.stderr
    result = json.loads(done.stdout)
    assert (result["error_code"], result["output"]) == ("timed_out", "started with ***")
    lines = toolctl(
        "run", "slowish", "-r", str(tmp_path / "reg"), "--batch", "-", input="{}\n", env=env
    )
    assert json.loads(lines.stdout)["output"] == "started with ***"


def test_a_local_tool_gets_only_the_environment_it_needs(tmp_path: Path, toolctl: Toolctl) -> None:
    """A local tool sees PATH, HOME, the locale and such, and what its descriptor passes
    with ``env``; never the rest of the caller's environment (a server's bearer token, an
    API key in the shell), as a stdio MCP server does not."""
    tool = f"""
[[tool]]
name = "envdump"
[tool.local]
command = ["{PY}", "-c", "import json, os; print(json.dumps(dict(os.environ)))"]
input = "none"
env = {{ PASSED = "${{env:MY_PASSED}}", PLAIN = "literal" }}
pass_env = ["AWS_PROFILE", "SSH_*", "NOT_SET_HERE"]
"""
    write_files(tmp_path, {"reg/t.toml": tool})
    env = {
        "MY_PASSED": "given-on-purpose",
        "SERVE_TOKEN": "0123456789abcdef",
        "AWS_SECRET_ACCESS_KEY": "zzz-not-for-tools",
        "LC_MESSAGES": "C",
        "https_proxy": "http://proxy.example:3128",
        "TOOLCTL_PROCESS_TAG": "tag-of-a-background-process",
        "TOOLCTL_HISTORY": "0",  # toolctl's own settings: a tool that runs toolctl
        "TOOLCTL_SERVE_TOKEN": "a --token-env variable is not one of them",
        "AWS_PROFILE": "dev",
        "SSH_AUTH_SOCK": "/tmp/agent.sock",
        "AWS_REGION": "not passed: pass_env names AWS_PROFILE alone",
    }
    done = toolctl("run", "envdump", "-r", str(tmp_path / "reg"), env=env)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert (seen["PASSED"], seen["PLAIN"]) == ("given-on-purpose", "literal")
    assert "SERVE_TOKEN" not in seen and "AWS_SECRET_ACCESS_KEY" not in seen
    assert "MY_PASSED" not in seen  # passed under the name the descriptor gives it
    assert seen["PATH"] == os.environ["PATH"] and seen["HOME"] == os.environ["HOME"]
    assert (seen["LC_MESSAGES"], seen["https_proxy"]) == ("C", "http://proxy.example:3128")
    # what `service down` finds a background server's processes by, and a call's own tag
    assert seen["TOOLCTL_PROCESS_TAG"] == "tag-of-a-background-process"
    assert "TOOLCTL_CALL" in seen and seen["TOOLCTL_HISTORY"] == "0"
    assert "TOOLCTL_SERVE_TOKEN" not in seen
    # pass_env: by name or glob, when set (NOT_SET_HERE is not, and is no error)
    assert (seen["AWS_PROFILE"], seen["SSH_AUTH_SOCK"]) == ("dev", "/tmp/agent.sock")
    assert "AWS_REGION" not in seen and "NOT_SET_HERE" not in seen


def test_a_tool_a_signal_killed_says_which_with_a_shells_exit_code(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """A tool that died of SIGSEGV was "exit status -11", and `exit_code` -11 in `--json`,
    a batch line and a server's body (Python's way, no one else's): 139, as a shell says it,
    and the signal by name."""
    tool = (
        '[[tool]]\nname = "segv"\n[tool.local]\n'
        'command = ["/bin/sh", "-c", "echo before; kill -SEGV $$"]\ninput = "none"\n'
    )
    registry = str(write_files(tmp_path / "reg", {"t.toml": tool}))
    done = toolctl("run", "segv", "-r", registry)
    assert (done.returncode, done.stdout) == (1, "before\n")
    assert done.stderr == "toolctl: error: the tool failed: killed by SIGSEGV\n"
    result = json.loads(toolctl("run", "segv", "--json", "-r", registry).stdout)
    assert (result["exit_code"], result["error"]) == (139, "killed by SIGSEGV")


def test_log_lines_that_start_with_a_bracket_are_streamed_not_held(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """Output starting with `[` or `{` was taken for one JSON answer: `[INFO] ...` log lines
    were held to the end, and cut at max_output though they were streamed to a pipe. Two
    characters tell JSON from a log line; JSON is still read as data."""
    tools = (
        '[[tool]]\nname = "logs"\n[tool.local]\ninput = "none"\n'
        'command = ["python3", "-c", "print(\'[INFO] \' + \'x\' * 100)"]\n\n'
        '[[tool]]\nname = "json"\n[tool.local]\ninput = "none"\n'
        'command = ["python3", "-c", "print(\'[1, 2]\')"]\n'
    )
    registry = str(write_files(tmp_path / "reg", {"t.toml": tools}))
    logs = toolctl("run", "logs", "--max-output", "10", "-r", registry)
    assert (logs.returncode, logs.stdout) == (0, "[INFO] " + "x" * 100 + "\n"), logs.stderr
    data = json.loads(toolctl("run", "json", "--json", "-r", registry).stdout)
    assert data["data"] == [1, 2]
