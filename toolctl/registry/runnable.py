"""What `check` finds that would stop a definition from running, on this machine.

* a ``{placeholder}`` in a command that names no argument (an error: `run` would pass the
  text ``{name}`` on as it is);
* a ``{placeholder}`` inside a shell's ``-c`` script or an interpreter's ``-c``/``-e`` code
  (a warning, an error under --strict: its value would be run as code);
* a ``${env:...}`` reference that names no variable (``${env:}``, ``${env:A B}``, one never
  closed): an error, as `run` would refuse it;
* a secret written in an ``env`` or ``headers`` table, a URL or a command rather than
  passed as ``${env:NAME}``: a warning (an error under --strict), as the file holds it;
* a ``${env:NAME}`` in a local or container command or a service's ``start``: an error, as
  it reaches the program as written (a secret goes in ``env``; an MCP server's command
  expands them, as the configurations it is imported from do; PowerShell reads its own);
* a command whose executable is not on PATH (or, given as a path, not there);
* a ``cwd`` that does not exist;
* a container image that the engine does not hold locally (asked of the engine's local
  store only: nothing is pulled, no network is touched).

The last three depend on the machine `check` runs on, so they are warnings (errors under
--strict) and never stored in the index. The image question goes to the container runtime,
which the registry does not import: the caller passes an ``ImageLookup``.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from toolctl.arguments import PLACEHOLDER
from toolctl.findings import Finding, Severity
from toolctl.registry.lint import field_line
from toolctl.registry.loader import Definition

SECRET = "secret"
"""The code of a secret written in a descriptor (``_written_secrets``): a warning, an error
under --strict."""
MACHINE_CODES = frozenset({"executable", "cwd", "image"})
"""Codes of the problems that depend on this machine: warnings, errors under --strict."""


class ImageLookup(Protocol):
    """Whether the engine (the descriptor's, else the one in force) holds ``image``
    locally; None when no engine answers (the check is skipped, with ``note``)."""

    note: str | None

    def __call__(self, image: str, engine: str | None) -> bool | None: ...


def runnable_problems(
    definitions: Iterable[Definition],
    environ: Mapping[str, str],
    images: ImageLookup | None = None,
) -> list[Finding]:
    """A finding for every definition that cannot run as written, in order."""
    found: list[Finding] = []
    paths: dict[tuple[str, str], str | None] = {}
    for definition in definitions:
        if definition.data.get("state") == "disabled":
            continue  # never run: whether it could is nobody's concern
        found += _env_references(definition)
        found += _written_secrets(definition)
        for section, key in _COMMANDS.get(definition.kind, ()):
            table = definition.data.get(section)
            if not isinstance(table, dict) or not table.get(key):
                continue
            command = list(table[key])
            if section != "mcp":  # an MCP server's command expands them (configs do so)
                found += _unexpanded(definition, (section, key), command, table)
            if definition.kind == "tool":
                found += _placeholders(definition, (section, key), command)
            base = Path(os.path.abspath(definition.file)).parent
            cwd = _cwd(definition, section, table, base, found)
            if section == "container":
                found += _image(definition, table, images)
            else:
                found += _executable(
                    definition, (section, key), command, cwd, table, environ, paths
                )
    return found


_COMMANDS = {
    "tool": (("local", "command"), ("container", "command")),
    "service": (("http", "start"), ("mcp", "command")),
}
"""(section, key) of each command a definition may give, by kind."""


Loc = tuple[str | int, ...]
"""Where in a definition a finding is: a key path, as pydantic gives one (``lint.field_line``
turns it into the line of that key, else the entry's header)."""


def _finding(level: Severity, definition: Definition, code: str, loc: Loc, message: str) -> Finding:
    return Finding(level, code, definition.file, field_line(definition, loc), message)


def _warning(definition: Definition, code: str, loc: Loc, message: str) -> Finding:
    return _finding("warning", definition, code, loc, message)


def _label(definition: Definition) -> str:
    return f"{definition.kind} '{definition.name}'"


def _cwd(
    definition: Definition,
    section: str,
    table: Mapping[str, Any],
    base: Path,
    found: list[Finding],
) -> Path | None:
    """The directory the command runs in (None: the caller's); a missing one is reported."""
    value = table.get("cwd")
    if not isinstance(value, str):
        return None
    directory = Path(os.path.normpath(base / value))
    if not directory.is_dir():
        missing = "is not a directory" if directory.exists() else "does not exist"
        message = (
            f"{_label(definition)}: working directory {directory} {missing} "
            "(a relative cwd is relative to the file that defines it)"
        )
        found.append(_warning(definition, "cwd", (section, "cwd"), message))
    return directory


_ENV_REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def _env_references(definition: Definition) -> list[Finding]:
    """An error for each value holding ``${env:`` that is not a whole ``${env:NAME}``,
    named by its key path (the value itself may hold a secret)."""
    found = []
    for loc, value in _strings(definition.data, ()):
        if value.count("${env:") != len(_ENV_REFERENCE.findall(value)):
            message = (
                f"{_label(definition)}: {_dotted(loc)} holds a ${{env:...}} reference that "
                "names no variable: write ${env:NAME}, NAME of letters, digits and _"
            )
            found.append(_finding("error", definition, "env", loc, message))
    return found


def _unexpanded(
    definition: Definition, at: Loc, command: list[str], table: Mapping[str, Any]
) -> list[Finding]:
    """An error for each command item holding ``${env:NAME}``: it would reach the program
    as written (a secret on a command line is readable by every user of the machine, so
    only ``env`` takes one). Not for PowerShell, whose own syntax it is, reading a NAME
    the section's ``env`` or ``pass_env`` gives it."""
    given = table.get("env")
    env: Mapping[str, Any] = given if isinstance(given, dict) else {}
    passed = [p for p in table.get("pass_env") or () if isinstance(p, str)]
    program = os.path.basename(str(command[0])).lower() if command else ""
    powershell = program.removesuffix(".exe") in ("pwsh", "powershell")
    found = []
    for index, item in enumerate(command):
        names = [
            name
            for name in (_ENV_REFERENCE.findall(item) if isinstance(item, str) else [])
            if not powershell
            or (name not in env and not any(fnmatch.fnmatchcase(name, p) for p in passed))
        ]
        if names:
            message = (
                f"{_label(definition)}: {_dotted((*at, index))} holds ${{env:{names[0]}}}, "
                "which a command does not expand: pass the secret in env instead (env = { "
                f'{names[0]} = "${{env:{names[0]}}}" }}) and read it there'
            )
            found.append(_finding("error", definition, "env", (*at, index), message))
    return found


_SECRET_MAPS = ("env", "headers")
"""The tables of a runtime section whose values a secret is passed in."""


def _written_secrets(definition: Definition) -> list[Finding]:
    """A warning for each value of an ``env`` or ``headers`` table, URL or command that
    holds a secret written out (``toolctl.secret_names.hide_written``: by its name, a URL's
    password, a token's prefix) rather than a ``${env:NAME}`` reference: the registry, a
    file to commit and share, holds it. Named by key path, never shown."""
    from toolctl.secret_names import hide_written_args, written_secret

    found = []
    for section, table in definition.data.items():
        if not isinstance(table, dict):
            continue
        places: list[Loc] = [
            (section, name, key)
            for name in _SECRET_MAPS
            if isinstance(table.get(name), dict)
            for key, value in table[name].items()
            if isinstance(value, str) and written_secret(key, value)
        ]
        url = table.get("url")
        if isinstance(url, str) and written_secret(None, url):
            places.append((section, "url"))
        for key in ("command", "start"):
            items = table.get(key)
            if isinstance(items, list) and hide_written_args(items) != items:
                places.append((section, key))
        for loc in places:
            message = (
                f"{_label(definition)}: {_dotted(loc)} holds a secret written out: give it as "
                "${env:NAME} and export NAME, so no registry file holds it"
            )
            found.append(_warning(definition, SECRET, loc, message))
    config = definition.data.get("config")  # a tool's service config, sent as it is written
    for key, value in (config if isinstance(config, dict) else {}).items():
        if isinstance(value, str) and written_secret(key, value):
            message = (
                f"{_label(definition)}: config.{key} holds a secret written out, which the "
                "registry holds and the service is sent as it is: have the service read it "
                "from its own environment"
            )
            found.append(_warning(definition, SECRET, ("config", key), message))
    return found


def _strings(value: Any, loc: Loc) -> Iterable[tuple[Loc, str]]:
    """Every string below ``value`` with its key path, in document order."""
    if isinstance(value, str):
        yield loc, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*loc, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*loc, index))


def _dotted(loc: Loc) -> str:
    """A key path as a message names it: ``local.env.API_KEY``, ``local.command.1``."""
    return ".".join(str(part) for part in loc)


SHELL = "shell"
"""The code of a ``{placeholder}`` inside a shell's ``-c`` script or an interpreter's code:
a warning (an error under --strict)."""
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish", "busybox"})
_INTERPRETERS = frozenset({"python", "python3", "node", "perl", "ruby", "php", "pwsh", "deno"})


def _code_item(command: list[str]) -> int | None:
    """The index of the item a shell runs as a script (``sh -c SCRIPT``, ``bash -lc``) or
    an interpreter as code (``python -c``, ``node -e``), if any."""
    program = os.path.basename(str(command[0])).lower().removesuffix(".exe") if command else ""
    program = re.sub(r"[0-9.]+$", "", program) if program.startswith("python") else program
    for index, item in enumerate(command[1:-1], start=1):
        if not isinstance(item, str) or not item.startswith("-") or item == "-m":
            return None  # a script or a module (`python3 tool.py -c CONFIG`): its own options
        if item.startswith("--") and item != "--eval":
            continue
        if (program in _SHELLS and "c" in item[1:]) or (
            program in _INTERPRETERS and item in ("-c", "-e", "-Command", "--eval")
        ):
            return index + 1
    return None


def _placeholders(definition: Definition, at: Loc, command: list[str]) -> list[Finding]:
    declared = set(definition.data.get("schema", {}).get("properties", {}))
    found = []
    code = _code_item(command)
    for index, item in enumerate(command):
        for match in PLACEHOLDER.finditer(item):
            name = match.group(1)
            if match.start() and item[match.start() - 1] == "$":
                continue  # ${NAME}: a shell's or a script's own, not toolctl's
            if name is not None and name in declared and index == code:
                message = (
                    f"{_label(definition)}: {{{name}}} is inside the code {command[0]!r} runs "
                    f"(item {index}): its value is run as code (`; rm -rf ~` would run); "
                    "pass it as an argument after the code and read it there "
                    f'(["sh", "-c", "echo \\"$1\\"", "sh", "{{{name}}}"])'
                )
                found.append(_finding("warning", definition, SHELL, (*at, index), message))
                continue
            if name is None or name in declared:
                continue
            inside = "" if match.group(0) == item else f" (in command item {item!r})"
            message = (
                f"{_label(definition)}: {{{name}}}{inside} names no argument, so `run` would "
                "pass it on as it is: declare the argument, or write {{ and }} for a brace"
            )
            found.append(_finding("error", definition, "placeholder", (*at, index), message))
    return found


def _executable(
    definition: Definition,
    at: Loc,
    command: list[str],
    cwd: Path | None,
    table: Mapping[str, Any],
    environ: Mapping[str, str],
    cache: dict[tuple[str, str], str | None],
) -> list[Finding]:
    program = command[0]
    if PLACEHOLDER.search(program) or "${env:" in program:
        return []  # known only when the tool runs
    if os.sep in program:
        path = Path(program) if os.path.isabs(program) else (cwd or Path.cwd()) / program
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return []
        where = f"{path} is not an executable file"
    else:
        search = _search_path(table, environ)
        if (program, search) not in cache:
            cache[(program, search)] = shutil.which(program, path=search)
        if cache[(program, search)] is not None:
            return []
        where = f"'{program}' is not on PATH"
    message = f"{_label(definition)}: cannot run its command: {where}"
    return [_warning(definition, "executable", (*at, 0), message)]


def _search_path(table: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    """The PATH the command is looked up on: the descriptor's own ``env`` may set it."""
    own = (table.get("env") or {}).get("PATH")
    if isinstance(own, str) and "${env:" not in own:
        return own
    return environ.get("PATH", os.defpath)


def _image(
    definition: Definition, table: Mapping[str, Any], images: ImageLookup | None
) -> list[Finding]:
    if images is None:
        return []
    image = str(table["image"])
    if images(image, table.get("engine")) is not False:
        return []
    message = (
        f"{_label(definition)}: image {image} is not present locally (toolctl never pulls: "
        f"pull or build it first)"
    )
    return [_warning(definition, "image", ("container", "image"), message)]
