"""The import rule of DESIGN.md "Architecture", checked statically (with ast, nothing imported).

    cli/, serve/                 on top (cli may import serve; serve never imports cli)
    terminal/                    what a terminal shows, for cli/ alone (nothing else imports it)
    calls/                       under them
    the rooms                    registry/, graph.py, interchange/, learning/, runners/,
                                 pulsar/, mcp/, processes/, records/: among themselves only
                                 along ROOMS
    the foundation               errors, settings, models, runtimes, names, arguments,
                                 findings, tool_state, descriptor_env, imports, transcripts,
                                 reporting and the package root (``__version__``)

The front door is thin: a command parses, makes one use-case call, renders. So cli/ may
import from the rooms only the modules in USE_CASES (the use-case functions, and the types
of what they return); the rest of what it calls is calls/ and serve/. No command module
imports another (a command module is one of ``cli.app.COMMAND_MODULES`` or SUBCOMMANDS,
which only its group's module imports; what they share lives in the others,
``cli/common.py`` above all, and in ``terminal/``). An import circle is found between
modules, ``from toolctl.serve import rest`` importing the module rest.

A module may import its own room, anything lower, and the rooms listed for it; nothing
that runs back up. The rule holds for *every* import: a lazy import inside a function
and an import under ``TYPE_CHECKING`` count like a top-level one, because a lazy import
that runs up is still a dependency that runs up (it only hides it from start-up time).
Lazy imports are for start-up cost, never an escape hatch. Runners found through entry
points (``importlib``) are data, not imports, and are not checked. ``python -m toolctl``
(``__main__``) imports cli/. A new top-level module must be placed in a layer here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT
from toolctl.cli.app import COMMAND_MODULES

PACKAGE = ROOT / "toolctl"
FOUNDATION = {
    "toolctl",
    "errors",
    "settings",
    "models",
    "runtimes",
    "names",
    "arguments",
    "findings",
    "descriptor_env",
    "schemas",
    "tool_state",
    "imports",
    "transcripts",
    "project",
    "reporting",
    "signing",
    "urls",
    "secret_names",
    "targets",
}
ROOMS: dict[str, set[str]] = {
    "graph": set(),
    "processes": set(),
    "records": set(),  # history, metrics, traces: under everything that makes calls
    # check --live: what MCP servers offer now, asked of mcp/ with the entries it resolved
    # (mcp/ never imports the registry, so the edge runs one way)
    "registry": {"graph", "mcp", "pulsar"},  # announced tools are read from a Pulsar topic
    # (registry.announced; pulsar/ never imports the registry, so the edge runs one way)
    "interchange": {"registry", "graph", "mcp"},  # `import mcp` lists a server's tools
    "learning": {"registry", "graph", "records"},  # next-tool scores over the tools in
    # force, learned from transcripts or the run history
    "pulsar": {"processes", "records"},  # the embedded broker and detached workers are
    # launched; a worker records the calls it serves
    "mcp": {"processes"},  # kept MCP sessions are background processes; never the registry
    # a runner wraps its client; never the registry: a resolved tool carries what it needs
    "runners": {"processes", "pulsar", "mcp"},
}
TOP = {
    "__main__": {"cli"},
    "cli": {"serve", "calls", "terminal"},
    "serve": {"calls"},
    "terminal": {"calls"},  # shows what calls give (a result, a plan, a batch)
    "calls": set(),
}
USE_CASES = {
    "toolctl.registry",  # open_registry (run, before its calls)
    "toolctl.registry.check",  # check
    "toolctl.registry.lockfile",  # lock
    "toolctl.registry.query",  # list, show
    "toolctl.registry.toolkit",  # graph, recommend
    "toolctl.registry.writer",  # register, unregister
    "toolctl.registry.locations",  # where
    "toolctl.registry.scaffold",  # init, new tool
    "toolctl.registry.announced_view",  # adopt, trust add
    "toolctl.interchange.flows",  # export, import
    "toolctl.interchange.client_install",  # mcp install
    "toolctl.interchange.mcp_add",  # mcp add
    "toolctl.pulsar.broker",  # broker start, status, stop
    "toolctl.processes.lifetime",  # run's signals (the servers' are in serve/)
    "toolctl.learning.usecases",  # graph learn, graph evaluate, recommend --after
    "toolctl.learning.draw",  # graph --learned, --format svg|png: DOT, Graphviz
    "toolctl.records.reports",  # history, stats
    "toolctl.records.transcripts",  # history import
    "toolctl.records",  # write_all: the calls' records written at exit (cli/__init__)
    "toolctl.records.crash",  # an unexpected bug's report (cli/__init__)
    "toolctl.processes.reaper",  # the entry point's process is toolctl's own (cli/__init__)
    # the type of what open_registry returns
    "toolctl.registry.index",
}
"""What cli/ may import from the rooms: every command's work is one of these calls."""
SUBCOMMANDS = {
    "toolctl.cli.learn": "toolctl.cli.graph",
    "toolctl.cli.mcp_clients": "toolctl.cli.mcp",
}
"""Command modules a group's module installs into its group, and that group's module."""
COMMANDS = {f"toolctl.cli.{name}" for name in COMMAND_MODULES.values()} | SUBCOMMANDS.keys()
"""The command modules: each installs commands of its own and imports no other (but a
group's module its SUBCOMMANDS)."""


def room_of(module: str) -> str:
    """``toolctl.pulsar.client`` -> ``pulsar``; ``toolctl`` -> ``toolctl``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "toolctl"


def allowed(source: str, target: str) -> bool:
    """Whether room ``source`` may import room ``target``."""
    if source == target or target in FOUNDATION:
        return True
    if source in FOUNDATION:
        return False
    if source in ROOMS:
        return target in ROOMS[source]
    if source == "cli" and target != "__main__":
        return True
    if source in ("serve", "calls", "terminal"):
        return target in ROOMS or target in TOP[source]
    return source == "__main__" and target == "cli"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import in the file, wherever it is."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return imports_in(path.read_text(), package)


def imports_in(text: str, package: str, *, modules: bool = False) -> list[tuple[int, str]]:
    """(line, toolctl module) of every import in ``text``, a module of ``package``.

    ``from X import Y`` counts as importing X (it runs X), unless Y is a module of the
    toolctl root (``from toolctl import arguments``), or with ``modules`` any module or
    package of toolctl (``from toolctl.pulsar import broker``: the front door's rule)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from toolctl import arguments` imports the module toolctl.arguments
            found += [
                (node.lineno, f"{base}.{alias.name}")
                if _is_module(base, alias.name, anywhere=modules)
                else (node.lineno, base)
                for alias in node.names
            ]
    return [(line, name) for line, name in found if name.split(".")[0] == "toolctl"]


def _is_module(base: str, name: str, *, anywhere: bool) -> bool:
    """Whether ``from base import name`` imports a module or package of toolctl (a room
    imported by its package, ``from toolctl import registry``, counts as the room)."""
    if not anywhere and base != "toolctl":
        return False
    folder = ROOT.joinpath(*base.split("."))
    return (folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists()


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_room_is_placed() -> None:
    rooms = {room_of(module_name(path)) for path in SOURCES}
    unplaced = rooms - FOUNDATION - ROOMS.keys() - TOP.keys()
    assert not unplaced, f"place these in a layer in tests/test_layers.py: {sorted(unplaced)}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_import_runs_back_up(path: Path) -> None:
    source = room_of(module_name(path))
    where = str(path.relative_to(ROOT))
    wrong = [
        f"{where}:{line}: {source} imports {name}"
        for line, name in imports(path)
        if not allowed(source, room_of(name))
    ]
    assert not wrong, "\n".join(wrong)


def front_door_allows(module: str, target: str) -> bool:
    """Whether cli module ``module`` may import ``target`` (see the module docstring)."""
    room = room_of(target)
    if room == "cli":
        if module in ("toolctl.cli", "toolctl.cli.app") or target not in COMMANDS:
            return True
        return SUBCOMMANDS.get(target) == module
    return room in FOUNDATION or room in ("calls", "serve", "terminal") or target in USE_CASES


CLI = [path for path in SOURCES if room_of(module_name(path)) == "cli"]


@pytest.mark.parametrize("path", CLI, ids=lambda p: str(p.relative_to(ROOT)))
def test_commands_call_use_cases_and_not_each_other(path: Path) -> None:
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {module} imports {name}"
        for line, name in imports_in(path.read_text(), package, modules=True)
        if not front_door_allows(module, name)
    ]
    assert not wrong, "\n".join(wrong)


def test_every_module_installing_commands_is_a_command_module() -> None:
    """A module with ``install`` is a command module, so the rule above sees it."""
    installing = {module_name(p) for p in CLI if "\ndef install(" in p.read_text()}
    assert installing == COMMANDS


def test_every_use_case_the_front_door_may_import_is_imported() -> None:
    """USE_CASES stays the list of what cli/ calls, no wider."""
    used = set()
    for path in CLI:
        module = module_name(path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for _, name in imports_in(path.read_text(), package, modules=True):
            used |= {name, name.rpartition(".")[0]}
    assert USE_CASES - used == set()


def test_the_front_door_rule_catches_a_command_importing_another_or_a_room() -> None:
    assert not front_door_allows("toolctl.cli.serve", "toolctl.cli.learn")
    assert front_door_allows("toolctl.cli.graph", "toolctl.cli.learn")
    assert not front_door_allows("toolctl.cli.serve", "toolctl.cli.mcp")
    assert not front_door_allows("toolctl.cli.broker", "toolctl.cli.service")
    assert not front_door_allows("toolctl.cli.service", "toolctl.processes.services")
    assert not front_door_allows("toolctl.cli.importing", "toolctl.runners.mcp")
    assert front_door_allows("toolctl.cli.serve", "toolctl.serve.http")
    assert front_door_allows("toolctl.cli.check", "toolctl.registry.check")
    assert front_door_allows("toolctl.cli.app", "toolctl.terminal.help")
    assert front_door_allows("toolctl.cli.service", "toolctl.terminal.views")
    assert not allowed("serve", "terminal")
    assert not allowed("registry", "terminal")


def test_the_rule_sees_a_room_imported_by_its_package() -> None:
    found = imports_in("from toolctl import registry\nfrom .. import cli\n", "toolctl.runners")
    assert found == [(1, "toolctl.registry"), (2, "toolctl.cli")]


def test_the_rule_catches_a_lazy_import_that_runs_up() -> None:
    text = (
        "from . import table\nif TYPE_CHECKING:\n    from toolctl import names\n"
        "def later():\n    from toolctl.runners.base import ToolResult\n"
    )
    found = imports_in(text, "toolctl.processes")
    assert found == [(1, "toolctl.processes"), (3, "toolctl.names"), (5, "toolctl.runners.base")]
    assert [allowed("processes", room_of(name)) for _, name in found] == [True, True, False]
    assert allowed("runners", "processes") and not allowed("pulsar", "runners")
    assert not allowed("runners", "registry") and not allowed("mcp", "registry")
    assert not allowed("serve", "cli") and not allowed("errors", "registry")


def module_graph() -> dict[str, set[str]]:
    """Each toolctl module and the toolctl modules it imports (any import, anywhere)."""
    modules = {module_name(path): path for path in SOURCES}

    def target(name: str) -> str:
        while name not in modules:  # `from toolctl.x import thing`: the module x
            name = name.rpartition(".")[0]
        return name

    def imported(path: Path) -> list[tuple[int, str]]:
        module = module_name(path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        # `from toolctl.serve import rest` imports the module rest, not only its package
        return imports_in(path.read_text(), package, modules=True)

    return {
        module: {target(name) for _, name in imported(path)} - {module}
        for module, path in modules.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected parts of two modules or more."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in order:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], order[other])
        if low[module] == order[module]:
            part: list[str] = []
            while not part or part[-1] != module:
                part.append(stack.pop())
            if len(part) > 1:
                found.append(sorted(part))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return sorted(found)


KNOWN_CIRCLES = [
    ["toolctl.interchange.client_configs", "toolctl.interchange.client_servers"],
    ["toolctl.records.otel", "toolctl.records.tracing"],
]
"""Circles that are still there, to be broken (never to be added to)."""


def test_no_new_import_circle() -> None:
    assert [c for c in circles(module_graph()) if c not in KNOWN_CIRCLES] == []


def test_circles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
