"""`check` catches what cannot run (placeholders, executables, cwd, container images) and
`check FILE...` checks descriptor files against the registry in force, writing nothing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files

LITERAL = """
[[tool]]
name = "say"
description = "echo a text"
[tool.local]
command = ["echo", "{text}"]
input = "none"
"""

CANNOT_RUN = """
[[tool]]
name = "ghost"
description = "an executable nobody installed"
[tool.local]
command = ["no-such-program-anywhere", "x"]

[[tool]]
name = "lost"
description = "a working directory that is gone"
[tool.local]
command = ["true"]
cwd = "gone"

[[tool]]
name = "relative"
description = "a script beside the file, not executable"
[tool.local]
command = ["./script.sh"]
cwd = "."

[[tool]]
name = "shell"
description = "a shell's own ${HOME} is not a placeholder; {{braces}} are literal"
[tool.local]
command = ["sh", "-c", "echo ${HOME} {{braces}} {{text}}"]
input = "none"

[[service]]
name = "api"
description = "a managed service whose program is missing"
[service.http]
start = ["no-such-server", "--port", "{port}"]
"""


def test_a_placeholder_naming_no_argument_is_an_error(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"reg/say.toml": LITERAL})
    done = toolctl("check", "-r", "reg")
    assert done.returncode == 3
    assert (
        "reg/say.toml:5: error: tool 'say': {text} names no argument, so `run` would pass it "
        "on as it is: declare the argument, or write {{ and }} for a brace"
    ) in done.stdout
    fixed = LITERAL + '[[tool.arguments]]\nname = "text"\n'
    write_files(tmp_path, {"reg/say.toml": fixed})
    assert toolctl("check", "--strict", "-r", "reg").returncode == 0


def test_what_cannot_run_here_is_a_warning_and_an_error_when_strict(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, {"reg/tools.toml": CANNOT_RUN, "reg/script.sh": "echo hi\n"})
    done = toolctl("check", "-r", "reg", "--json")
    assert done.returncode == 0, done.stdout
    problems = [
        (p["code"], p["severity"], p["message"]) for p in json.loads(done.stdout)["problems"]
    ]
    # each at the line of what is wrong: the command, the cwd (not the entry's header)
    lines = [p["line"] for p in json.loads(done.stdout)["problems"]]
    assert lines == [5, 12, 18, 32]
    assert problems == [
        (
            "executable",
            "warning",
            "tool 'ghost': cannot run its command: 'no-such-program-anywhere' is not on PATH",
        ),
        (
            "cwd",
            "warning",
            "tool 'lost': working directory reg/gone does not exist "  # as text shows it
            "(a relative cwd is relative to the file that defines it)",
        ),
        (
            "executable",
            "warning",
            "tool 'relative': cannot run its command: reg/script.sh is not an executable file",
        ),
        (
            "executable",
            "warning",
            "service 'api': cannot run its command: 'no-such-server' is not on PATH",
        ),
    ]
    strict = toolctl("check", "--strict", "-r", "reg")
    assert strict.returncode == 3
    assert strict.stdout.count(": error: ") == 4
    (tmp_path / "reg" / "script.sh").chmod(0o755)
    (tmp_path / "reg" / "gone").mkdir()
    fewer = json.loads(toolctl("check", "-r", "reg", "--json").stdout)
    assert [p["code"] for p in fewer["problems"]] == ["executable", "executable"]
    # the PATH that counts is the caller's (and a descriptor's own env may set one)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("no-such-program-anywhere", "no-such-server"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    assert toolctl("check", "--strict", "-r", "reg", env={"PATH": path}).returncode == 0


CONTAINERS = """
[[tool]]
name = "here"
description = "the sample image, present locally"
[tool.container]
image = "localhost/toolctl-busybox:latest"
command = ["true"]

[[tool]]
name = "absent"
description = "an image nobody pulled"
[tool.container]
image = "localhost/toolctl-never-built:1"
command = ["true"]
"""


def engine_or_skip() -> str:
    for name in ("podman", "docker"):
        if shutil.which(name):
            return name
    if os.environ.get("TOOLCTL_REQUIRE_ENGINES") == "1":
        pytest.fail("no container engine")
    pytest.skip("no container engine")


def test_a_container_image_not_present_locally_is_a_warning(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    engine_or_skip()
    write_files(tmp_path, {"reg/c.toml": CONTAINERS})
    done = toolctl("check", "-r", "reg", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    problems = [(p["code"], p["message"]) for p in report["problems"]]
    if problems and "toolctl-busybox" in problems[0][1]:
        pytest.skip("the sample image is not built (scripts/setup-podman.sh)")
    assert problems == [
        (
            "image",
            "tool 'absent': image localhost/toolctl-never-built:1 is not present locally "
            "(toolctl never pulls: pull or build it first)",
        )
    ]
    assert report["notes"] == []
    assert toolctl("check", "--strict", "-r", "reg").returncode == 3


def test_without_an_engine_images_are_not_checked_and_it_says_so(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, {"reg/c.toml": CONTAINERS})
    empty = tmp_path / "nothing-on-path"
    empty.mkdir()
    done = toolctl("check", "--strict", "-r", "reg", env={"PATH": str(empty)})
    assert done.returncode == 0, done.stdout
    assert "toolctl: container images not checked: no container engine" in done.stderr


TAKEN = """
[[tool]]
name = "word-count"
description = "in the registry"
[tool.local]
command = ["true"]

[[service]]
name = "svc"
description = "a Pulsar service in force"
[service.pulsar]
request_queue = "non-persistent://tg/request/svc"
response_queue = "non-persistent://tg/response/svc"
"""

CANDIDATES = """
[[tool]]
name = "word-count"
description = "a different definition of a name in force"
[tool.local]
command = ["true"]

[[tool]]
name = "Word_Count2"
description = "fine"
[tool.local]
command = ["true"]

[[tool]]
name = "uses-svc"
description = "names a service in force"
service = "svc"

[[tool]]
name = "uses-nothing"
description = "names a service nowhere"
service = "nowhere"

[[group]]
name = "mine"
tools = ["uses-svc", "word-count", "missing"]
"""


def test_check_files_against_the_registry_in_force_writes_nothing(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, {"reg/taken.toml": TAKEN, "new.toml": CANDIDATES})
    before = sorted(str(p) for p in tmp_path.rglob("*") if p.is_file())
    done = toolctl("check", "new.toml", "-r", "reg")
    assert done.returncode == 3
    lines = done.stdout.splitlines()
    assert lines == [
        "new.toml:1: warning: tool 'word-count' differs from the one in force at "
        "reg/taken.toml:1: `register --replace` would update it",
        "new.toml:21: error: tool 'uses-nothing' names unknown service 'nowhere'",
        "new.toml:25: error: group 'mine' names unknown tool 'missing'",
    ]
    assert done.stderr.endswith(
        "check failed: 2 error(s), 1 warning(s) in 1 file(s), 5 definition(s)\n"
    )
    assert sorted(str(p) for p in tmp_path.rglob("*") if p.is_file() and "cache" not in str(p)) == [
        p for p in before if "cache" not in p
    ]
    # a name in force held by a directory register does not write to is refused outright
    write_files(tmp_path, {"mine/.keep": ""})
    elsewhere = toolctl("check", "new.toml", "-r", "mine", "-r", "reg")
    assert "new.toml:1: error: tool 'word-count' is already defined in reg/taken.toml:1" in (
        elsewhere.stdout
    )


def test_check_files_finds_look_alikes_and_clashes(tmp_path: Path, toolctl: Toolctl) -> None:
    alike = '[[tool]]\nname = "Word.Count"\n[tool.local]\ncommand = ["true"]\n'
    twice = '[[tool]]\nname = "x"\n[tool.local]\ncommand = ["true"]\n' * 2
    same = TAKEN.split("[[service]]")[0]
    write_files(
        tmp_path,
        {"reg/taken.toml": TAKEN, "alike.toml": alike, "twice.toml": twice, "same.toml": same},
    )
    done = toolctl("check", "alike.toml", "twice.toml", "-r", "reg")
    assert done.returncode == 3
    assert (
        "alike.toml:1: error: tool 'Word.Count' is confusable with 'word-count' (reg/taken.toml:1)"
    ) in done.stdout
    assert (  # register refuses the two: an error, not a shadow's warning
        "twice.toml:5: error: tool 'x' clashes with 'x' (twice.toml:1) in the same batch"
    ) in done.stdout
    write_files(tmp_path, {"empty.toml": "# nothing yet\n"})
    empty = toolctl("check", "empty.toml", "-r", "reg")
    assert empty.returncode == 3  # register says it defines nothing (exit 2)
    assert "empty.toml:1: error: defines nothing" in empty.stdout
    unchanged = toolctl("check", "same.toml", "--strict", "-r", "reg")
    assert unchanged.returncode == 0, unchanged.stdout  # register would leave it unchanged
    syntax = toolctl("check", "broken.toml", "-r", "reg")
    assert syntax.returncode == 2 and "no such descriptor file: broken.toml" in syntax.stderr
    write_files(tmp_path, {"broken.toml": "[[tool]\n"})
    broken = toolctl("check", "broken.toml", "-r", "reg")
    assert broken.returncode == 3 and "broken.toml:1: error: TOML syntax error" in broken.stdout


def test_check_a_file_inside_the_registry_is_the_registry_check_of_that_file(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(
        tmp_path,
        {"reg/a.toml": TAKEN, "reg/b.toml": LITERAL, "reg/c.toml": TAKEN.split("[[service]]")[0]},
    )
    only_b = toolctl("check", "reg/b.toml", "-r", "reg")
    assert only_b.returncode == 3
    assert all(line.startswith("reg/b.toml:") for line in only_b.stdout.splitlines())
    only_c = toolctl("check", "reg/c.toml", "-r", "reg")
    assert only_c.returncode == 0
    assert "reg/c.toml:1: warning: tool 'word-count' is shadowed by reg/a.toml:1" in only_c.stdout
    # a symlink in the registry to a file elsewhere is the registry's: its warning is kept
    write_files(
        tmp_path, {"out/d.toml": '[[tool]]\nname = "d"\n[tool.local]\ncommand = ["true"]\n'}
    )
    (tmp_path / "reg/link.toml").symlink_to(tmp_path / "out/d.toml")
    linked = toolctl("check", "reg/link.toml", "-r", "reg")
    assert "reg/link.toml:1: warning: symlink leaves the registry directory" in linked.stdout


def test_a_cwd_that_is_a_file_is_not_a_directory(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path,
        {"reg/t.toml": '[[tool]]\nname = "c"\n[tool.local]\ncommand = ["true"]\ncwd = "t.toml"\n'},
    )
    ran = toolctl("run", "c", "-r", "reg")  # it cannot run here, as a program not installed
    assert (ran.returncode, ran.stderr) == (
        5,
        "toolctl: error: tool 'c': working directory reg/t.toml is not a directory; moved? "
        "register it again from where it is now (toolctl register --replace FILE), or fix "
        "its cwd\n",
    )
    checked = toolctl("check", "-r", "reg")
    assert "working directory reg/t.toml is not a directory" in checked.stdout


def test_an_env_reference_that_names_no_variable_is_an_error(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(
        tmp_path,
        {
            "reg/t.toml": '[[tool]]\nname = "e"\n[tool.local]\ncommand = ["true"]\n'
            'env = { A = "${env:}", B = "sk-secret ${env:A B}", C = "${env:GOOD}" }\n'
        },
    )
    done = toolctl("check", "-r", "reg")
    assert done.returncode == 3 and "sk-secret" not in done.stdout
    assert done.stdout.splitlines() == [
        f"reg/t.toml:5: error: tool 'e': local.env.{key} holds a ${{env:...}} reference that "
        "names no variable: write ${env:NAME}, NAME of letters, digits and _"
        for key in "AB"
    ]


def test_an_env_reference_in_a_command_is_an_error(tmp_path: Path, toolctl: Toolctl) -> None:
    """A command does not expand ${env:NAME} (a command line is readable by every user of
    the machine): a local or container command, or a service's start, that holds one is
    an error naming where to put the secret; an MCP server's command expands it."""
    write_files(
        tmp_path,
        {
            "reg/t.toml": '[[tool]]\nname = "a"\n[tool.local]\n'
            'command = ["echo", "--token=${env:MY_TOKEN}"]\ninput = "none"\n'
            '[[tool]]\nname = "b"\n[tool.container]\nimage = "alpine"\n'
            'command = ["${env:IMG_KEY}"]\n'
            '[[service]]\nname = "s"\n[service.http]\nstart = ["serve", "{port}", "${env:K}"]\n'
            '[[service]]\nname = "m"\n[service.mcp]\ncommand = ["true", "${env:M}"]\n'
            # PowerShell's own ${env:NAME}, of a variable the tool is given: no error
            '[[tool]]\nname = "ps"\n[tool.local]\n'
            'command = ["pwsh", "-Command", "echo ${env:API_TOKEN} ${env:HOME}"]\n'
            'env = { API_TOKEN = "${env:API_TOKEN}" }\npass_env = ["HO*"]\n'
            # another program given the variable still gets the text: an error
            '[[tool]]\nname = "cu"\n[tool.local]\n'
            'command = ["curl", "-H", "Authorization: Bearer ${env:GH}"]\n'
            'env = { GH = "${env:GH}" }\n'
        },
    )
    done = toolctl("check", "-r", "reg", env={"MY_TOKEN": "x", "IMG_KEY": "y", "K": "z", "GH": "g"})
    errors = [line for line in done.stdout.splitlines() if ": error: " in line]
    assert done.returncode == 3
    assert errors == [
        f"reg/t.toml:{line}: error: {who}: {where} holds ${{env:{name}}}, which a command does "
        f'not expand: pass the secret in env instead (env = {{ {name} = "${{env:{name}}}" }}) '
        "and read it there"
        for line, who, where, name in (
            (4, "tool 'a'", "local.command.1", "MY_TOKEN"),  # each at its command's line
            (10, "tool 'b'", "container.command.0", "IMG_KEY"),
            (28, "tool 'cu'", "local.command.2", "GH"),
            (14, "service 's'", "http.start.2", "K"),
        )
    ]


TYPED = """
[[tool]]
name = "count"
description = "echo a count"
[tool.local]
command = ["echo", "{n}"]
input = "none"
[[tool.arguments]]
name = "n"
type = "integer"
required = false
{values}
"""


@pytest.mark.parametrize(
    ("values", "told"),
    [
        ('enum = ["1", "2"]', "enum value '1' is not of type integer"),
        ('default = "3"', "default '3' is not of type integer"),
        ("default = true", "default True is not of type integer"),
        ("enum = [1, 2]\ndefault = 3", "default 3 is not one of enum [1, 2]"),
    ],
)
def test_an_enum_or_default_no_call_could_pass_is_an_error(
    tmp_path: Path, toolctl: Toolctl, values: str, told: str
) -> None:
    write_files(tmp_path, {"reg/count.toml": TYPED.replace("{values}", values)})
    done = toolctl("check", "-r", "reg")
    assert done.returncode == 3
    # line 7: the argument's [[tool.arguments]] header, where the enum and default are
    assert f"reg/count.toml:7: error: tool 'count': arguments.0: {told}" in done.stdout


def test_an_enum_and_default_of_the_declared_type_pass_and_run(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(
        tmp_path, {"reg/count.toml": TYPED.replace("{values}", "enum = [1, 2]\ndefault = 2")}
    )
    assert toolctl("check", "--strict", "-r", "reg").returncode == 0
    done = toolctl("run", "count", "-r", "reg")
    assert (done.returncode, done.stdout) == (0, "2\n")


def test_a_file_named_twice_is_checked_and_registered_once(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`check a.toml ./a.toml` (a shell glob and a name, a link to it) said the file's tool
    clashed with itself "in the same batch"; `register` refused it the same way."""
    write_files(tmp_path, {"a.toml": '[[tool]]\nname = "a"\n[tool.local]\ncommand = ["true"]\n'})
    (tmp_path / "reg").mkdir()
    (tmp_path / "link.toml").symlink_to(tmp_path / "a.toml")
    done = toolctl("check", "a.toml", "./a.toml", "link.toml", "-r", "reg")
    assert done.returncode == 0, done.stdout
    assert "in 1 file(s), 1 definition(s)" in done.stderr
    registered = toolctl("register", "a.toml", "./a.toml", "-r", "reg")
    assert registered.returncode == 0, registered.stderr


def test_pass_env_names_variables_and_never_shows_a_bad_entry(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """pass_env takes names, * for any characters; '*' alone (the whole environment) is
    refused, and a bad entry is named by its position only: `KEY=sk-...`, a secret
    written where a name goes, must not land in a CI log."""
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
    write_files(
        tmp_path,
        {
            "reg/t.toml": '[[tool]]\nname = "a"\n[tool.local]\ncommand = ["true"]\n'
            f'pass_env = ["AWS_*", "OPENAI_KEY={secret}"]\n'
            '[[tool]]\nname = "b"\n[tool.local]\ncommand = ["true"]\npass_env = ["*"]\n'
        },
    )
    for format in ("text", "json", "github", "sarif"):
        done = toolctl("check", "-r", "reg", "--format", format)
        assert done.returncode == 3 and secret not in done.stdout + done.stderr
    lines = toolctl("check", "-r", "reg").stdout.splitlines()
    assert lines == [
        "reg/t.toml:5: error: tool 'a': local.pass_env.1: give a variable's name, * standing "
        "for any characters (AWS_*)",
        "reg/t.toml:10: error: tool 'b': local.pass_env.0: '*' alone would pass the whole "
        "environment: name what it needs",
    ]


def test_a_finding_is_at_the_line_of_what_is_wrong(tmp_path: Path, toolctl: Toolctl) -> None:
    """A secret written out, a missing program, a placeholder naming no argument: each at
    the line of its key (a table's, a dotted key's, an inline table's), so a CI annotation
    lands on it; never at the entry's header, and the secret is never shown."""
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
    write_files(
        tmp_path,
        {
            "reg/t.toml": "[[tool]]\n"  # 1
            'name = "dotted"\n'
            'description = "keys written dotted"\n'
            'local.command = ["echo", "{missing}"]\n'  # 4
            f'local.env = {{ OPENAI_API_KEY = "{secret}" }}\n'  # 5
            "\n"
            "[[tool]]\n"  # 7
            'name = "tabled"\n'
            'description = "a table of its own"\n'
            "[tool.local]\n"
            'command = ["no-such-program-anywhere"]\n'  # 11
            "[tool.local.env]\n"
            'PATH_HINT = "fine"\n'
            f'API_TOKEN = "{secret}"\n'  # 14
            "\n"
            "[[tool]]\n"  # 16
            'name = "web"\n'
            'description = "a URL with a password"\n'
            "[tool.http]\n"
            'method = "GET"\n'
            f'url = "https://user:{secret}@example.com/x"\n'  # 21
        },
    )
    done = toolctl("check", "-r", "reg", "--json")
    assert secret not in done.stdout + done.stderr
    found = {(p["code"], p["line"]) for p in json.loads(done.stdout)["problems"]}
    assert found == {
        ("placeholder", 4),
        ("secret", 5),
        ("executable", 11),
        ("secret", 14),
        ("secret", 21),
    }


def test_files_repeating_one_definition_are_checked_and_registered_once(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """Two files that give the same definition (a shared block copied): `check` finds no
    clash and `register` writes it once, as `register a; register b` would; a name the two
    files define differently is still refused, every pair named."""
    tool = '[[tool]]\nname = "{}"\ndescription = "{}"\n[tool.local]\ncommand = ["true"]\n'
    write_files(
        tmp_path,
        {
            "a.toml": tool.format("same", "one") + tool.format("other", "a's"),
            "b.toml": tool.format("same", "one") + tool.format("other", "b's"),
            "c.toml": tool.format("same", "one"),
        },
    )
    (tmp_path / "reg").mkdir()
    checked = toolctl("check", "a.toml", "c.toml", "-r", "reg")
    assert checked.returncode == 0, checked.stdout
    registered = toolctl("register", "a.toml", "c.toml", "-r", "reg")
    assert registered.returncode == 0, registered.stderr
    assert sorted(p.name for p in (tmp_path / "reg").rglob("*.toml")) == ["other.toml", "same.toml"]
    differ = toolctl("check", "a.toml", "b.toml", "-r", "reg")
    assert differ.returncode == 3
    assert "b.toml:6: error: tool 'other' clashes with 'other' (a.toml:6)" in differ.stdout


def test_an_argument_inside_code_a_shell_or_interpreter_runs_is_warned_of(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`sh -c "echo {text}"` runs the argument's value as shell code (`hi; id` runs id), as
    `python -c "print('{text}')"` runs it as Python: a warning (an error under --strict) at
    that item's line; `sh -c 'echo "$1"' sh {text}` passes it as an argument and is fine."""
    tool = (
        '[[tool]]\nname = "{}"\ndescription = "x"\n[tool.local]\ncommand = {}\ninput = "none"\n'
        '[[tool.arguments]]\nname = "text"\n\n'
    )
    write_files(
        tmp_path,
        {
            "reg/t.toml": tool.format("bad", '["sh", "-c", "echo {text}"]')
            + tool.format("login", '["bash", "-lc", "grep {text} /etc/hosts"]')
            + tool.format("py", '["python3.12", "-c", "print(\'{text}\')"]')
            + tool.format("good", '["sh", "-c", "echo \\"$1\\"", "sh", "{text}"]')
            + tool.format("flag", '["grep", "-c", "{text}", "/etc/hosts"]')
            # a script's or a module's own -c (a config): not code the program runs
            + tool.format("script", '["python3", "tool.py", "-c", "{text}"]')
            + tool.format("bashscript", '["bash", "run.sh", "-c", "{text}"]')
            + tool.format("module", '["python3", "-m", "mytool", "-c", "{text}"]')
        },
    )
    done = toolctl("check", "-r", "reg", "--json")
    assert done.returncode == 0, done.stdout
    found = [(p["code"], p["line"]) for p in json.loads(done.stdout)["problems"]]
    assert [f for f in found if f[0] == "shell"] == [("shell", 5), ("shell", 14), ("shell", 23)]
    strict = toolctl("check", "-r", "reg", "--strict")
    assert strict.returncode == 3 and strict.stdout.count(": error: ") == 3


def test_two_services_on_one_request_queue_are_told(tmp_path: Path, toolctl: Toolctl) -> None:
    """Each service's workers subscribe as SERVICE-request: two services on one queue made
    every call run twice (the caller took the first answer), and `check --strict` said
    nothing."""
    service = """
[[service]]
name = "{name}"
[service.pulsar]
request_queue = "{queue}"
response_queue = "non-persistent://tg/response/{name}"
"""
    write_files(tmp_path, {"reg/a.toml": service.format(name="counter-a", queue="request:tg:c"),
                           "reg/b.toml": service.format(
                               name="counter-b", queue="non-persistent://tg/request/c")})  # fmt: skip
    done = toolctl("check", "-r", "reg")
    assert done.returncode == 0, done.stdout
    assert (
        "reg/b.toml:1: warning: service 'counter-b' sends to the request queue of service "
        "'counter-a' ("
    ) in done.stdout
    assert "non-persistent://tg/request/c: the workers of both take every call" in done.stdout
    assert toolctl("check", "--strict", "-r", "reg").returncode == 3
