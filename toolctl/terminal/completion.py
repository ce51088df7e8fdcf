"""`toolctl --install-completion [SHELL]` and `--show-completion [SHELL]` in toolctl's style.

Typer's own options print their status on stdout and answer a shell they have no script
for (``sh``, ``dash``) with a line on stdout and exit 1. Here the script is the only thing
on stdout (`--show-completion >> ~/.bashrc` stays a script), the status is a ``toolctl:``
line on stderr, and a shell without completion is a usage error (exit 2) naming those
that have one. fish's and PowerShell's scripts, and their installing, are typer's; bash's
and zsh's are toolctl's own (BASH_SCRIPT, ZSH_SCRIPT): typer's put a space after a value
to go on typing (`--arg text= `, a broken command line), its zsh file completed nothing
at the first Tab of a shell, and installing it set a `zstyle` for every command.

Below them, the completers the commands' options name: what a shell is offered for a value
being typed (names from the registry in force, a tool's argument names).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl.errors import UsageError

if TYPE_CHECKING:
    from toolctl.settings import Settings

OPTIONS = ("--install-completion", "--show-completion")
SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
PROG = "toolctl"
COMPLETE_VAR = "_TOOLCTL_COMPLETE"


BASH_SCRIPT = """\
_toolctl_completion() {
    local IFS=$'\\n'
    COMPREPLY=( $( env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD=$COMP_CWORD \\
                   _TOOLCTL_COMPLETE=complete_bash $1 ) )
    # a value to go on typing (`--arg text=`): no space after it
    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]]; then
        compopt -o nospace 2>/dev/null
    fi
    return 0
}

complete -o default -F _toolctl_completion toolctl
"""
ZSH_SCRIPT = """\
#compdef toolctl

_toolctl() {
  eval "$(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" \\
              _TOOLCTL_COMPLETE=complete_zsh-described toolctl)"
}

if [[ "${funcstack[1]}" == "_toolctl" ]]; then
  _toolctl "$@"  # autoloaded from $fpath at the first Tab: that Tab completes too
else
  compdef _toolctl toolctl
fi
"""
ZSH_RC_LINE = "fpath+=~/.zfunc; autoload -Uz compinit; compinit"


def completion(args: list[str]) -> int:
    """Answer ``--install-completion [SHELL]`` or ``--show-completion [SHELL]``."""
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
        render.write_stdout(script_for(shell).rstrip("\n") + "\n")
        return 0
    path = _install(shell)
    render.note(f"{shell} completion installed in {path}; it works in a new shell")
    return 0


def script_for(shell: str) -> str:
    """The completion script of ``shell``: toolctl's own for bash and zsh."""
    if shell in _OWN:
        return _OWN[shell][0]
    from typer._completion_shared import get_completion_script

    script: str = get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell)
    return script


_OWN = {
    "bash": (BASH_SCRIPT, ".bash_completions/toolctl.sh", ".bashrc"),
    "zsh": (ZSH_SCRIPT, ".zfunc/_toolctl", ".zshrc"),
}
"""The scripts toolctl writes itself: each one's file under HOME, and the rc file that
loads it (a line added once, nothing else changed)."""


def _install(shell: str) -> Path:
    """Write ``shell``'s script where the shell finds it and the rc line loading it once;
    the path written. (bash and zsh as typer installs them, but for the zstyle.)"""
    if shell not in _OWN:
        return _installed_by_typer(shell)
    script, where, rc = _OWN[shell]
    home = Path.home()
    path = home / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script)
    line = f"source '{path}'" if shell == "bash" else ZSH_RC_LINE
    rc_path = home / rc
    text = rc_path.read_text() if rc_path.is_file() else ""
    if line not in text.splitlines():
        rc_path.write_text(f"{text.rstrip()}\n{line}\n".lstrip("\n"))
    return path


def _installed_by_typer(shell: str) -> Path:
    """fish's and PowerShell's script, installed as typer does: PowerShell itself is asked
    where its profile is, so one that is not here is said (it was an internal error)."""
    import shutil
    import subprocess

    from typer._completion_shared import install

    from toolctl.errors import TransportUnavailable

    if shell in ("powershell", "pwsh") and shutil.which(shell) is None:
        raise TransportUnavailable(
            f"{shell} is not installed here: its profile cannot be found",
            hint=f"add the output of `toolctl --show-completion {shell}` to your profile",
        )
    try:
        path: Path = install(shell=shell, prog_name=PROG, complete_var=COMPLETE_VAR)[1]
    except (OSError, subprocess.SubprocessError) as exc:
        raise TransportUnavailable(
            f"cannot install {shell} completion: {getattr(exc, 'strerror', None) or exc}",
            hint=f"add the output of `toolctl --show-completion {shell}` where {shell} reads it",
        ) from None
    return path


def answering() -> None:
    """Ready the answer to zsh's script (``complete_zsh-described``): called when a shell
    asks for completions, before the command line is parsed."""
    from typer._click.shell_completion import add_completion_class  # typer's own click
    from typer._completion_classes import ZshComplete

    class Described(ZshComplete):
        """Each value with its description, through zsh's ``_describe``; a value to go on
        typing (``text=``) with no space after it. Nothing at all: files, as typer."""

        name = "zsh-described"

        def complete(self) -> str:
            args, incomplete = self.get_completion_args()
            items = self.get_completions(args, incomplete)
            if not items:
                return "_files"
            groups: dict[bool, list[str]] = {False: [], True: []}
            for item in items:
                value = str(item.value).replace("\\", "\\\\").replace(":", "\\:")
                described = " ".join(str(item.help).split()) if item.help else ""
                entry = f"{value}:{described}" if described else value
                groups[str(item.value).endswith("=")].append(_zsh_quoted(entry))
            lines = []
            for open_ended, entries in groups.items():
                if entries:
                    suffix = " -S ''" if open_ended else ""
                    lines.append(f"local -a _toolctl_values=({' '.join(entries)})")
                    lines.append(f"_describe -t values value _toolctl_values{suffix}")
            return "\n".join(lines)

    add_completion_class(Described, Described.name)


def _zsh_quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


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


def complete_list_kinds(incomplete: str) -> list[str]:
    """`list KIND`: the kinds as `list` names them."""
    return [k for k in ("tools", "services", "actions", "groups") if k.startswith(incomplete)]


def complete_running(ctx: Any, incomplete: str) -> list[str]:
    """`service down|status NAME`: what toolctl runs in the background now."""
    from toolctl.processes import ProcessTable

    settings = _completion_settings(ctx)
    if settings is None:
        return []
    try:
        names = ProcessTable(settings).names()
    except OSError:
        return []
    return sorted(name for name in names if name.startswith(incomplete))


def complete_commands(incomplete: str) -> list[tuple[str, str]]:
    """`help COMMAND`: toolctl's commands, each with what it does."""
    from toolctl.terminal.help import SUMMARIES

    return [(name, about) for name, about in SUMMARIES.items() if " " not in name
            and name.startswith(incomplete)]  # fmt: skip


def complete_import_source(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """`import mcp SERVICE`: the services; the other formats take files (the shell's own)."""
    if str(ctx.params.get("format") or "") != "mcp":
        return []
    completed: list[tuple[str, str]] = complete_services(ctx, incomplete)
    return completed
