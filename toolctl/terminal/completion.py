"""`toolctl --install-completion [SHELL]` and `--show-completion [SHELL]` in toolctl's style.

Typer's own options print their status on stdout and answer a shell they have no script
for (``sh``, ``dash``) with a line on stdout and exit 1. Here the script is the only thing
on stdout (`--show-completion >> ~/.bashrc` stays a script), the status is a ``toolctl:``
line on stderr, and a shell without completion is a usage error (exit 2) naming those
that have one. The scripts and the installing are typer's.

Below them, the completers the commands' options name: what a shell is offered for a value
being typed (names from the registry in force, a tool's argument names).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolctl.errors import UsageError

if TYPE_CHECKING:
    from toolctl.settings import Settings

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


# -- the values being typed: names from the registry in force -------------------------------
# What typer calls for a value being typed, only while a shell asks for completions
# (``_TOOLCTL_COMPLETE`` set): the registry is read then, never when a command runs.
def _completion_settings(ctx: Any) -> Settings | None:
    """What completion reads, or None when settings cannot be had (a broken toolctl.toml,
    a bad TOOLCTL_* value): a shell asking for completions gets none, never an error."""
    from toolctl.errors import ToolctlError
    from toolctl.settings import Settings

    try:
        return Settings.load(ctx.params.get("registry") or ())
    except (ToolctlError, OSError):
        return None


def _complete_names(kind: str) -> Any:
    def complete(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
        from toolctl.registry.query import complete_names

        settings = _completion_settings(ctx)
        return [] if settings is None else complete_names(settings, kind, incomplete)

    complete.__name__ = f"complete_{kind}"
    return complete


complete_tools = _complete_names("tool")
complete_services = _complete_names("service")
complete_actions = _complete_names("action")
complete_groups = _complete_names("group")


def complete_arguments(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """``--arg NAME=``: the argument names of the tool named on the line so far."""
    from toolctl.registry.query import complete_arguments as arguments_of

    # `run NAME --arg <TAB>`: click stops parsing at the --arg that lacks its value, before
    # NAME is assigned, and leaves NAME among the context's extra args
    tool = ctx.params.get("name") or next(iter(ctx.args), None)
    settings = _completion_settings(ctx)
    if not tool or "=" in incomplete or settings is None:
        return []
    return arguments_of(settings, tool, incomplete)


def complete_kinds(incomplete: str) -> list[str]:
    return [k for k in ("tool", "service", "action", "group") if k.startswith(incomplete)]


def complete_anything(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """`show NAME`: names of every kind (of ``--kind`` when given)."""
    from toolctl.registry.query import complete_names

    kind = ctx.params.get("kind")
    chosen = [kind.rstrip("s")] if kind else ["tool", "service", "action", "group"]
    settings = _completion_settings(ctx)
    if settings is None:
        return []
    return sorted({item for k in chosen for item in complete_names(settings, k, incomplete)})


def complete_of_kind(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """`unregister KIND NAME`: names of the kind given before."""
    from toolctl.registry.query import complete_names

    kind = str(ctx.params.get("kind") or "").rstrip("s")
    settings = _completion_settings(ctx)
    if kind not in ("tool", "service", "action", "group") or settings is None:
        return []
    return complete_names(settings, kind, incomplete)
