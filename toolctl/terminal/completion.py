"""`toolctl --install-completion [SHELL]` and `--show-completion [SHELL]` in toolctl's style.

Typer's own options print their status on stdout and answer a shell they have no script
for (``sh``, ``dash``) with a line on stdout and exit 1. Here the script is the only thing
on stdout (`--show-completion >> ~/.bashrc` stays a script), the status is a ``toolctl:``
line on stderr, and a shell without completion is a usage error (exit 2) naming those
that have one. The scripts and the installing are typer's.
"""

from __future__ import annotations

from toolctl.errors import UsageError

OPTIONS = ("--install-completion", "--show-completion")
SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
PROG = "toolctl"
COMPLETE_VAR = "_TOOLCTL_COMPLETE"


def completion(args: list[str]) -> int:
    """Answer ``--install-completion [SHELL]`` or ``--show-completion [SHELL]``."""
    from typer._completion_shared import get_completion_script, install

    from toolctl.terminal import render

    option, given = args[0], args[1:]
    if len(given) > 1:
        raise UsageError(f"{option} takes one SHELL at most, got {' '.join(given)}")
    shell = given[0] if given else _detected()
    if shell not in SHELLS:
        told = f"shell {shell!r} has" if shell else "cannot tell which shell runs toolctl: it"
        raise UsageError(
            f"{told} no completion here: {', '.join(SHELLS[:4])} have one",
            hint=f"name one: toolctl {option} bash",
        )
    if option == "--show-completion":
        script = get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell)
        render.write_stdout(script.rstrip("\n") + "\n")
        return 0
    shell, path = install(shell=shell, prog_name=PROG, complete_var=COMPLETE_VAR)
    render.note(f"{shell} completion installed in {path}; it works in a new shell")
    return 0


def _detected() -> str | None:
    """The shell toolctl runs under, as typer tells it (the parent process, else $SHELL)."""
    from typer._completion_shared import _get_shell_name

    name: str | None = _get_shell_name()
    return name
