"""Starting points: `toolctl new tool` (a descriptor, and for a local tool its script) and
`toolctl init` (a project's ``toolctl.toml``).

Each descriptor holds the fields its runtime needs, commented for the person who edits
it, and works as written: a first tool is one command, an edit, `register` and `run`.
Nothing is ever overwritten.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from toolctl.errors import NameConflict, UsageError
from toolctl.names import name_problem
from toolctl.project import DEFAULT_REGISTRY, PROJECT_FILE, project_text
from toolctl.runtimes import TOOL_SECTIONS

RUNTIMES = TOOL_SECTIONS
"""The runtimes `new tool` scaffolds: those a tool names in a section of its own (Pulsar
tools go through a service: see the docs)."""

_HEAD = """\
# {name}: a toolctl tool ({runtime}). Edit it, then
#   toolctl check {file}
#   toolctl register {file}
#   toolctl run {name}{example}
# Every field: docs/reference/descriptors.md

[[tool]]
name = "{name}"
description = "Say hello to someone"   # what an agent reads to decide whether to call it
timeout = 10                           # seconds (default 60)
"""

_ARGUMENT = """
[[tool.arguments]]                     # one table per argument the caller supplies
name = "{argument}"
type = "string"                        # string, integer, number, boolean, object, array
description = "{description}"
required = false
default = "{default}"
"""

_SECTIONS = {
    "local": """
[tool.local]                           # a subprocess, started without a shell
command = ["python3", "{script}"]
cwd = "."                              # relative to this file; register keeps it pointing here
input = "json"                         # the arguments as one JSON object on stdin
""",
    "http": """
[tool.http]                            # one HTTP request per call
url = "http://127.0.0.1:8000/{name}"   # change to your endpoint
method = "POST"                        # POST sends the arguments as a JSON body, GET as a query
""",
    "container": """
[tool.container]                       # `podman run` / `docker run`, no network, read-only root
image = "docker.io/library/busybox:latest"   # toolctl never pulls: `podman pull` it first
command = ["echo", "Hello, {{who}}!"]  # each {{argument}} fills one argv item, never a shell
input = "none"                         # arguments go into the command, not to stdin
""",
    "mcp": """
service = "{name}-server"              # the MCP server below runs this tool
[tool.mcp]
name = "echo"                          # the server's own name for the tool
""",
}

_MCP_SERVICE = """
# The MCP server. `toolctl import mcp {name}-server` lists every tool it offers and
# writes each with a pin of its definition, so a server that changes a tool is refused.
[[service]]
name = "{name}-server"
description = "The MCP reference server (needs Node.js for npx)"
[service.mcp]
command = ["npx", "-y", "@modelcontextprotocol/server-everything"]
"""

_SCRIPT = '''\
#!/usr/bin/env python3
"""{name}: a toolctl tool. toolctl sends the arguments as one JSON object on stdin; what
this prints on stdout is the result (plain text, or JSON that `run --json` parses); a
non-zero exit status means the tool failed."""

import json
import sys

arguments = json.load(sys.stdin)
print(f"Hello, {{arguments['who']}}!")
'''


@dataclass(frozen=True)
class Created:
    """The files a scaffold wrote, and how to run what it made."""

    files: list[Path]
    run: str
    warning: str | None = None
    """Your tool of that name is in force: `register` will refuse this one but with
    --replace (which updates yours)."""


def new_tool(name: str, runtime: str, directory: Path) -> Created:
    """Write ``NAME.toml`` (and ``NAME.py`` for a local tool) into ``directory``."""
    problem = name_problem(name)
    if problem is not None:
        raise UsageError(f"invalid tool name {name!r}", hint=problem)
    if runtime not in RUNTIMES:
        raise UsageError(f"unknown runtime '{runtime}': expected one of {', '.join(RUNTIMES)}")
    descriptor = directory / f"{name}.toml"
    script = directory / f"{_module_name(name)}.py"
    files = {descriptor: _descriptor(name, runtime, script.name)}
    if runtime == "local":
        files[script] = _SCRIPT.format(name=name)
    _refuse_existing(files)
    taken = _taken(name)
    if taken is not None and not taken[1]:  # `register` would refuse it, whatever is done
        raise NameConflict(f"{taken[0]}; nothing was written", hint="pick another name")
    for path, text in files.items():
        _write_new(path, text)
    if runtime == "local":
        script.chmod(0o755)
    warning = taken[0] if taken is not None else None
    return Created(list(files), f"toolctl run {name}{_example(runtime)}", warning)


def _taken(name: str) -> tuple[str, bool] | None:
    """Why `register` will refuse a new tool NAME, when a tool of that name (or a look-alike)
    is in force already on the search path here, and whether ``register --replace`` would
    take it (the tool is in the directory it writes to); None when it will not refuse, or
    when the registry cannot be read (scaffolding goes on: `register` will say)."""
    from toolctl.errors import ToolctlError
    from toolctl.registry.index import Registry
    from toolctl.registry.writer import target_directory
    from toolctl.settings import Settings

    try:
        settings = Settings.load()
        registry = Registry.open(settings)
        held = registry.confusable_with("tool", name) or next(
            iter(registry.definitions("tool", name)), None
        )
        ours = held is not None and Path(held.file).is_relative_to(target_directory(settings))
    except (ToolctlError, OSError):
        return None
    if held is None:
        return None
    where = f"({held.file}:{held.line})"
    refused = "`toolctl register` would refuse it"
    if held.name != name:
        return f"tool '{held.name}' {where} looks like '{name}': {refused}", False
    if not ours:  # in another directory of the search path: --replace would be refused
        return f"tool '{name}' is in force already {where}: {refused}", False
    return (
        f"tool '{name}' is in force already {where}: `toolctl register` will refuse this "
        "one; rename it, or `toolctl register --replace` to update yours",
        True,
    )


def _descriptor(name: str, runtime: str, script: str) -> str:
    example = _example(runtime)
    text = _HEAD.format(name=name, runtime=runtime, file=f"{name}.toml", example=example)
    if runtime == "mcp":
        text = text.replace("Say hello to someone", "Echo a message back (the server's echo)")
    text += _SECTIONS[runtime].format(name=name, script=script)
    if runtime == "mcp":
        text += _ARGUMENT.format(
            argument="message", description="What to echo", default="Hello from MCP"
        )
        return text + _MCP_SERVICE.format(name=name)
    return text + _ARGUMENT.format(argument="who", description="Who to greet", default="world")


def _example(runtime: str) -> str:
    return " --arg message=hi" if runtime == "mcp" else " --arg who=you"


def _module_name(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _refuse_existing(files: dict[Path, str]) -> None:
    for path in files:
        if os.path.lexists(path):
            raise UsageError(
                f"{path} already exists; nothing was written",
                hint="pick another name or move that file away",
            )


def _write_new(path: Path, text: str) -> None:
    try:
        with open(path, "x") as handle:
            handle.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _ignore_lock(registry: Path) -> None:
    """A ``.gitignore`` in a project's registry directory for the lock `register` takes
    there (it showed in `git status`), unless one is there; it also keeps the directory in
    a clone before it holds a tool (git keeps no empty directory)."""
    from toolctl.registry.writer import LOCK_NAME

    if not os.path.lexists(registry / ".gitignore"):
        _write_new(registry / ".gitignore", f"# the lock `toolctl register` takes\n{LOCK_NAME}\n")


@dataclass(frozen=True)
class Initialised:
    """What `toolctl init` found or made."""

    file: Path
    registry: Path
    created: bool
    made: tuple[Path, ...] = ()
    """In a project already: its registry directories that were missing, made now."""
    outer: Path | None = None
    """A new project made inside another: the other's toolctl.toml, which it hides below."""


def init_project(directory: Path) -> Initialised:
    """Make ``directory`` a project: ``toolctl.toml`` and its registry directory; a
    directory that does not exist is created first (with its parents), as `git init DIR`
    and `uv init DIR` do. A directory that is a project already keeps its file; the
    registry directories it names inside it are made if missing (git keeps no empty
    directory: a fresh clone of a project with no tool yet has none)."""
    file = directory / PROJECT_FILE
    registry = directory / DEFAULT_REGISTRY
    if os.path.lexists(file):
        from toolctl.project import read_project, trusted_owner

        if not trusted_owner(file):  # it stays ignored: "nothing changed" left no project
            raise UsageError(
                f"{file} exists, but another user owns it, so toolctl ignores it",
                hint=f"if it is yours, `chown $USER {file}`; else remove it, then init again",
            )

        registries = read_project(file).registries
        inside = directory.resolve()
        missing = tuple(
            d for d in registries if not os.path.lexists(d) and d.resolve().is_relative_to(inside)
        )
        for each in missing:
            try:
                each.mkdir(parents=True)
            except OSError as exc:
                raise UsageError(f"cannot create {each}: {exc.strerror or exc}") from None
            _ignore_lock(each)
        return Initialised(file, registries[0], created=False, made=missing)
    if os.path.lexists(directory) and not directory.is_dir():
        raise UsageError(f"{directory} is not a directory: a project is a directory")
    from toolctl.arguments import is_text, printable_os

    where = str(directory.absolute())
    if not is_text(where):  # its registry could never be read (registry.require_directories)
        raise UsageError(
            f"{printable_os(where)} is not a UTF-8 path: a registry there cannot be used",
            hint="rename it, or make the project in another directory",
        )
    # the directories first; a failure removes those it made: no half project is left
    made = [d for d in (registry, *registry.parents) if not os.path.lexists(d)]  # deepest first
    try:
        try:
            registry.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create {registry}: {exc.strerror or exc}") from None
        _write_new(file, project_text())
        _ignore_lock(registry)
    except BaseException:
        for made_dir in made:
            with contextlib.suppress(OSError):
                made_dir.rmdir()
        raise
    outer = next(
        (p / PROJECT_FILE for p in directory.absolute().parents if (p / PROJECT_FILE).is_file()),
        None,
    )
    return Initialised(file, registry, created=True, outer=outer)
