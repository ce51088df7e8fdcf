"""Shell completion (toolctl/cli/complete.py), through typer's completion entry point: the
real ``toolctl`` process with ``_TOOLCTL_COMPLETE`` set, as the shells' scripts call it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_files

REGISTRY = """
[[tool]]
name = "reverse"
description = "Reverse a text"
[tool.local]
command = ["rev"]
[[tool.arguments]]
name = "text"
description = "What to reverse"
[[tool.arguments]]
name = "times"
type = "integer"

[[tool]]
name = "report"
description = "Write a report"
[tool.local]
command = ["true"]

[[service]]
name = "reporting"
[service.http]
url = "http://127.0.0.1:9"

[[group]]
name = "writers"
tools = ["report"]
"""


def complete(tmp_path: Path, shell: str, words: str, **env: str) -> list[str]:
    """What ``toolctl`` answers a shell completing the last word of ``words``."""
    environment = {
        **os.environ,
        "TOOLCTL_REGISTRY": str(tmp_path / "reg"),
        "_TOOLCTL_COMPLETE": f"complete_{shell}",
        **env,
    }
    if shell == "bash":
        environment["COMP_WORDS"] = words
        environment["COMP_CWORD"] = str(len(words.split()) - (0 if words.endswith(" ") else 1))
    else:
        environment["_TYPER_COMPLETE_ARGS"] = words
        environment["_TYPER_COMPLETE_FISH_ACTION"] = "get-args"
    done = subprocess.run(
        [sys.executable, "-m", "toolctl"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return [line for line in done.stdout.splitlines() if line]


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    return write_files(tmp_path, {"reg/all.toml": REGISTRY})


def test_commands_and_options(tmp_path: Path, registry: Path) -> None:
    assert complete(tmp_path, "bash", "toolctl ru") == ["run"]
    assert "--arg" in complete(tmp_path, "bash", "toolctl run reverse --")
    assert "--install-completion" in complete(tmp_path, "bash", "toolctl --")


def test_tool_names_from_the_registry_in_force(tmp_path: Path, registry: Path) -> None:
    assert complete(tmp_path, "bash", "toolctl run ") == ["report", "reverse"]
    assert complete(tmp_path, "bash", "toolctl run rev") == ["reverse"]
    # a --registry on the line is the registry in force
    write_files(
        tmp_path,
        {"other/t.toml": '[[tool]]\nname = "elsewhere"\n[tool.local]\ncommand = ["true"]\n'},
    )
    other = complete(tmp_path, "bash", "toolctl run -r other ")
    assert other == ["elsewhere"]


def test_argument_names_after_arg(tmp_path: Path, registry: Path) -> None:
    assert complete(tmp_path, "bash", "toolctl run reverse --arg ") == ["text=", "times="]
    assert complete(tmp_path, "bash", "toolctl run reverse -a ti") == ["times="]
    assert complete(tmp_path, "bash", "toolctl run nosuch --arg ") == []


def test_kinds_and_names_of_other_kinds(tmp_path: Path, registry: Path) -> None:
    assert complete(tmp_path, "bash", "toolctl unregister ") == [
        "tool",
        "service",
        "action",
        "group",
    ]
    assert complete(tmp_path, "bash", "toolctl unregister service ") == ["reporting"]
    assert complete(tmp_path, "bash", "toolctl mcp serve --group ") == ["writers"]
    assert complete(tmp_path, "bash", "toolctl service up ") == ["reporting"]
    assert complete(tmp_path, "bash", "toolctl show rep") == ["report", "reporting"]


def test_every_name_a_command_takes_completes(tmp_path: Path, registry: Path) -> None:
    """Each place a command takes a name of the registry, a kind or a command completes
    (they completed nothing, and bash offered files)."""
    assert complete(tmp_path, "bash", "toolctl list s") == ["services"]
    assert complete(tmp_path, "bash", "toolctl show --kind g") == ["group"]
    assert complete(tmp_path, "bash", "toolctl history --tool rev") == ["reverse"]
    assert complete(tmp_path, "bash", "toolctl stats --tool rep") == ["report"]
    assert complete(tmp_path, "bash", "toolctl worker --tool rev") == ["reverse"]
    assert complete(tmp_path, "bash", "toolctl export -f mcp --group ") == ["writers"]
    assert complete(tmp_path, "bash", "toolctl graph --group w") == ["writers"]
    assert complete(tmp_path, "bash", "toolctl mcp login rep") == ["reporting"]
    assert complete(tmp_path, "bash", "toolctl import mcp rep") == ["reporting"]
    assert complete(tmp_path, "bash", "toolctl import trustgraph rep") == []  # files: the shell's
    assert complete(tmp_path, "bash", "toolctl help re") == ["register", "recommend"]
    assert complete(tmp_path, "bash", "toolctl service down ") == []  # nothing running
    processes = tmp_path / "home/state/toolctl/processes"
    processes.mkdir(parents=True)
    (processes / "reporting.json").write_text("{}")
    assert complete(tmp_path, "bash", "toolctl service status re") == ["reporting"]


def test_zsh_and_fish_get_descriptions(tmp_path: Path, registry: Path) -> None:
    zsh = complete(tmp_path, "zsh-described", "toolctl run rev")
    assert zsh == [
        "local -a _toolctl_values=('reverse:Reverse a text')",
        "_describe -t values value _toolctl_values",
    ]
    fish = complete(tmp_path, "fish", "toolctl run reverse --arg t")
    assert fish == ["text=\tWhat to reverse", "times="]


def test_an_unreadable_registry_completes_nothing(tmp_path: Path) -> None:
    assert complete(tmp_path, "bash", "toolctl run ") == []


@pytest.mark.parametrize(
    "words",
    ["toolctl run h", "toolctl run h --arg ", "toolctl show h", "toolctl unregister tool h"],
)
def test_broken_settings_complete_nothing_and_say_nothing(
    tmp_path: Path, registry: Path, words: str
) -> None:
    """A toolctl.toml that does not parse, a TOOLCTL_* value that means nothing: the
    commands say so (exit 2), but a shell asking for completions gets none, not the error
    printed under the prompt (``complete`` asserts exit 0 and an empty stderr)."""
    (tmp_path / "toolctl.toml").write_text("[registry\n")
    assert complete(tmp_path, "bash", words) == []
    (tmp_path / "toolctl.toml").unlink()
    assert complete(tmp_path, "bash", words, TOOLCTL_STRICT="maybe") == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shells_script(tmp_path: Path, shell: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolctl"],
        env={**os.environ, "_TOOLCTL_COMPLETE": f"source_{shell}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"_TOOLCTL_COMPLETE=complete_{shell}" in done.stdout


def test_show_completion_detects_the_shell(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m toolctl --show-completion"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "complete -o default -F _toolctl_completion toolctl" in done.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_itself_completes_through_the_script(tmp_path: Path, registry: Path) -> None:
    """The script --show-completion prints, sourced in a real bash, fills COMPREPLY."""
    script = subprocess.run(
        [sys.executable, "-m", "toolctl", "--show-completion", "bash"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    (tmp_path / "completion.bash").write_text(script)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "toolctl"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -m toolctl "$@"\n')
    launcher.chmod(0o755)
    probe = (
        "source completion.bash; COMP_WORDS=(toolctl run reverse --arg ''); COMP_CWORD=4; "
        "_toolctl_completion toolctl '' --arg; printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    done = subprocess.run(
        ["bash", "-c", probe],
        env={
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "TOOLCTL_REGISTRY": str(registry / "reg"),
        },
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["text=", "times="]


@pytest.mark.skipif(shutil.which("dash") is None, reason="no dash")
def test_completion_status_goes_to_stderr_and_a_shell_without_one_is_exit_2(
    tmp_path: Path,
) -> None:
    """`--install-completion` says where it installed on stderr (stdout holds data only),
    and a shell typer has no script for (dash, sh) is one `toolctl: error:` line, exit 2,
    naming those that have one; typer said it on stdout with exit 1."""
    env = {**os.environ, "HOME": str(tmp_path)}
    installed = subprocess.run(
        [sys.executable, "-m", "toolctl", "--install-completion", "bash"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert (installed.returncode, installed.stdout) == (0, ""), installed.stderr
    assert installed.stderr == (
        "toolctl: bash completion installed in .bash_completions/toolctl.sh; it works in a "
        "new shell\n"
    )
    assert (tmp_path / ".bash_completions" / "toolctl.sh").is_file()
    for option in ("--install-completion", "--show-completion"):
        refused = subprocess.run(
            ["dash", "-c", f"{sys.executable} -m toolctl {option}"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=tmp_path,
        )
        assert (refused.returncode, refused.stdout) == (2, "")
        assert refused.stderr == (
            "toolctl: error: shell 'dash' has no completion here: bash, zsh, fish, powershell "
            f"have one; name one: toolctl {option} bash\n"
        )


def _typed(tmp_path: Path, registry: Path, shell: str, keys: str) -> str:
    """The command line a real interactive ``shell`` (on a pseudo-terminal, completion
    installed by `toolctl --install-completion`) holds after ``keys``, a Tab among them:
    `echo @@` is put before it, and what the echo printed read back."""
    import pty
    import re
    import select
    import time

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    launcher = bin_dir / "toolctl"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -m toolctl "$@"\n')
    launcher.chmod(0o755)
    home = tmp_path / f"home-{shell}"
    home.mkdir()
    env = {
        "HOME": str(home),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "TOOLCTL_REGISTRY": str(registry / "reg"),
        "TERM": "dumb",
        "PS1": "$ ",
    }
    installed = subprocess.run(
        [str(launcher), "--install-completion", shell], env=env, capture_output=True, timeout=60
    )
    assert installed.returncode == 0, installed.stderr
    argv = ["bash", "--noprofile", "-i"] if shell == "bash" else ["zsh", "-i"]
    main, child = pty.openpty()
    process = subprocess.Popen(argv, stdin=child, stdout=child, stderr=child, env=env, cwd=home)
    os.close(child)
    seen = b""

    def read(seconds: float, until: bytes = b"") -> None:
        """What the shell writes, until it has been quiet a while after writing, or has
        written ``until`` (or ``seconds`` passed). Keys typed meanwhile wait their turn."""
        nonlocal seen
        end, heard = time.monotonic() + seconds, 0.0
        while (
            time.monotonic() < end
            and not (until and until in seen)
            and not (not until and heard and time.monotonic() - heard > 1.0)
        ):
            if select.select([main], [], [], 0.1)[0]:
                try:
                    seen += os.read(main, 65536)
                except OSError:
                    return
                heard = time.monotonic()

    try:
        read(10)  # the rc file: compinit, the script sourced
        *before_tabs, last = keys.split("\t")
        for part in before_tabs:
            os.write(main, part.encode() + b"\t")
            read(20)  # toolctl answers the shell
        os.write(main, last.encode())
        os.write(main, b"\x01echo @@\r")  # Ctrl-A: to the line's start (emacs keys)
        read(60, until=b"\n@@")
        os.write(main, b"exit\r")
        read(1)
    finally:
        process.kill()
        process.wait()
        os.close(main)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]", "", seen.decode(errors="replace"))
    found: list[str] = re.findall(r"(?m)^@@(.*?)\r?$", text.replace("\r\n", "\n"))
    assert found, text[-2000:]
    return found[-1]


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_a_real_shell_completes_an_argument_name_leaving_no_space_after_it(
    tmp_path: Path, registry: Path, shell: str
) -> None:
    """`run reverse --arg te<Tab>` in bash and zsh as installed: `text=`, the value typed
    right after it. typer's scripts put a space there (`text= X`, a broken command line),
    and its zsh file completed nothing at a new shell's first Tab."""
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} (scripts/setup-shells.sh installs it)")
    line = _typed(tmp_path, registry, shell, "toolctl run reverse --arg te\tX")
    assert line == "toolctl run reverse --arg text=X"
    assert _typed(tmp_path / "again", registry, shell, "toolctl ru\treverse") == (
        "toolctl run reverse"
    )


@pytest.mark.skipif(bool(shutil.which("pwsh") or shutil.which("powershell")), reason="PowerShell")
@pytest.mark.parametrize("shell", ["powershell", "pwsh"])
def test_powershell_not_installed_is_said_and_its_script_still_shown(
    tmp_path: Path, shell: str
) -> None:
    """Installing asks PowerShell where its profile is: without one here that was an
    internal error (exit 70); it is exit 5 naming the fix, and the script still prints."""
    env = {**os.environ, "HOME": str(tmp_path)}
    installed = subprocess.run(
        [sys.executable, "-m", "toolctl", "--install-completion", shell],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert (installed.returncode, installed.stdout) == (5, ""), installed.stderr
    assert installed.stderr == (
        f"toolctl: error: {shell} is not installed here: its profile cannot be found; add the "
        f"output of `toolctl --show-completion {shell}` to your profile\n"
    )
    shown = subprocess.run(
        [sys.executable, "-m", "toolctl", "--show-completion", shell],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert shown.returncode == 0 and "Register-ArgumentCompleter" in shown.stdout
