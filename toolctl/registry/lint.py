"""Problems that only show across definitions: shadows, confusables, dangling references.

Pure: takes every definition in precedence order, returns findings (``toolctl.findings``).
`check` prints them; the index stores them so ``--strict`` can refuse a registry with
errors at no extra cost.

"Actions nothing links to": toolctl has no operators binding start actions (Chat2Graph
does), so any action may be a start and "unreachable from every start" cannot be decided.
What is certainly wrong is an *isolated* action: no other action has a Next edge to it,
and it has no Call or Next edge of its own (a self-loop does not count). It is a warning,
never an error: an entry action with edges of its own is normal.
"""

from __future__ import annotations

import functools
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from toolctl.findings import Finding
from toolctl.names import KINDS, fold
from toolctl.registry.loader import Definition
from toolctl.runtimes import BY_NAME, TOOL_SECTIONS

SHADOW = "shadow"
"""Code of the one finding that is a warning normally and an error under --strict."""
CONFUSABLE, SERVICE, GRAPH, GROUP = "confusable", "service", "graph", "group"
"""The codes of the other rules: a name confusable with an earlier one, a tool and its
service, an action's edges (and isolation), a group's members."""


def _where(definition: Definition) -> str:
    return f"{definition.file}:{definition.line}"


def winners(definitions: Iterable[Definition]) -> dict[tuple[str, str], Definition]:
    """First definition of each (kind, name): the one toolctl uses."""
    first: dict[tuple[str, str], Definition] = {}
    for definition in definitions:
        first.setdefault((definition.kind, definition.name), definition)
    return first


def in_force(definitions: Iterable[Definition]) -> dict[tuple[str, str], Definition]:
    """The winners minus the quarantined: a winner whose name is confusable with an earlier
    winner's (``Read_File`` after ``read-file``) is never run, listed or exported."""
    first = winners(definitions)
    holders: dict[tuple[str, str], Definition] = {}
    kept: dict[tuple[str, str], Definition] = {}
    for (kind, name), definition in first.items():
        if holders.setdefault((kind, fold(name)), definition) is definition:
            kept[(kind, name)] = definition
    return kept


class InForce(Protocol):
    """The definitions in force of one kind by name: a dict, or the index asked lazily."""

    def get(self, name: str, /) -> Definition | None: ...


def resolve_runtime(tool: Mapping[str, Any], services: InForce) -> str | None:
    """The runtime a tool runs on; a bare ``service =`` tool runs on its service's runtime
    (``transport`` in a service's data, as ``show --json`` prints it)."""
    if tool.get("runtime"):
        return str(tool["runtime"])
    service = services.get(tool.get("service") or "")
    return str(service.data["transport"]) if service else None


SHADOWS, CONFUSABLES, SERVICES, EDGES, GROUPS, ISOLATED = range(6)
"""The kinds of cross-definition finding, in the order `lint` reports them: the index
keeps each finding with its kind and definition so that a re-index of one file can
recompute the findings of a few definitions and still list them in this order."""


class Attached(NamedTuple):
    """A cross-definition finding with the kind of rule that found it and the definition it
    is on."""

    category: int
    definition: Definition
    finding: Finding


def lint(
    definitions: list[Definition], kept: dict[tuple[str, str], Definition] | None = None
) -> list[Finding]:
    """Every cross-definition finding, in a stable order; ``kept`` is
    ``in_force(definitions)`` when the caller has it already."""
    return [found.finding for found in lint_attached(definitions, kept)]


def lint_attached(
    definitions: list[Definition], kept: dict[tuple[str, str], Definition] | None = None
) -> list[Attached]:
    """``lint``, each problem with its category and the definition it is on."""
    first = winners(definitions)
    found: list[Attached] = []
    for definition in definitions:
        winner = first[(definition.kind, definition.name)]
        if winner is not definition:
            found.append(Attached(SHADOWS, definition, shadow(definition, winner)))
    seen: dict[tuple[str, str], Definition] = {}
    for (kind, name), definition in first.items():
        holder = seen.setdefault((kind, fold(name)), definition)
        if holder is not definition:
            found.append(Attached(CONFUSABLES, definition, confusable(definition, holder)))
    by_kind: dict[str, dict[str, Definition]] = {k: {} for k in KINDS}
    for (kind, name), definition in (in_force(definitions) if kept is None else kept).items():
        by_kind[kind][name] = definition
    linked = linked_actions(by_kind["action"].values())
    for definitions_in_force in by_kind.values():
        for definition in definitions_in_force.values():
            found += in_force_problems(
                definition, by_kind["service"], by_kind["tool"], by_kind["action"]
            )
    for action in by_kind["action"].values():
        found += isolated(action, action.name in linked)
    found.sort(key=lambda a: a.category)  # stable: each category keeps its order
    return found


def shadow(definition: Definition, winner: Definition) -> Finding:
    """The warning on a definition that an earlier one of its name shadows."""
    message = (
        f"{definition.kind} '{definition.name}' is shadowed by {_where(winner)} "
        "(the first definition wins; this one is never used)"
    )
    return Finding("warning", SHADOW, definition.file, definition.line, message)


def confusable(definition: Definition, holder: Definition) -> Finding:
    """The error on a first definition whose name folds to an earlier winner's."""
    message = (
        f"{definition.kind} '{definition.name}' is confusable with '{holder.name}' "
        f"({_where(holder)}); it is quarantined (never run, listed or exported): "
        "rename one of them"
    )
    return _error(definition, CONFUSABLE, message)


def in_force_problems(
    definition: Definition,
    services: InForce,
    tools: Container[str],
    actions: Container[str],
) -> list[Attached]:
    """The findings of a definition in force with what it names (services, tools,
    actions), given what is in force; the isolation of actions is ``isolated``'s."""
    if definition.kind == "tool":
        return [Attached(SERVICES, definition, f) for f in _tool_service(definition, services)]
    if definition.kind == "action":
        return [Attached(EDGES, definition, f) for f in _action_edges(definition, tools, actions)]
    if definition.kind == "group":
        return [
            Attached(
                GROUPS,
                definition,
                _error(
                    definition,
                    GROUP,
                    f"group '{definition.name}' names unknown tool '{name}'",
                    ("tools",),
                ),
            )
            for name in definition.data["tools"]
            if name not in tools
        ]
    return []


def _error(
    definition: Definition, code: str, message: str, loc: Sequence[str | int] = ()
) -> Finding:
    """An error at the line of ``loc`` in the definition (``service``, ``("next", 1)``),
    else at its header."""
    return Finding("error", code, definition.file, field_line(definition, loc), message)


def field_line(definition: Definition, loc: Sequence[str | int]) -> int:
    """The line of ``loc`` in a definition's entry (``keylines.key_line``), its header's
    when there is none or its file cannot be read again."""
    if not loc:
        return definition.line
    from toolctl.registry.keylines import key_line

    text = _text(definition.file)
    return key_line(text, definition.kind, definition.line, loc) if text else definition.line


def _text(file: str) -> str | None:
    """A registry file's text, read once per version of it (a finding is rare; a file with
    many has its text read once)."""
    import os

    try:
        st = os.stat(file)
    except OSError:
        return None
    return _read(file, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@functools.lru_cache(maxsize=8)
def _read(file: str, size: int, mtime: int, ctime: int) -> str | None:
    del size, mtime, ctime  # the cache's key: another version of the file is read again
    try:
        with open(file, encoding="utf-8-sig") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _tool_service(tool: Definition, services: InForce) -> list[Finding]:
    name = tool.data.get("service")
    if not name:
        return []
    service = services.get(name)
    if service is None:
        message = f"tool '{tool.name}' names unknown service '{name}'"
        return [_error(tool, SERVICE, message, ("service",))]
    found = []
    runtime = service.data["transport"]
    own = [section for section in TOOL_SECTIONS if tool.data.get(section)]
    for section in own:
        if section != runtime:
            message = f"tool '{tool.name}' has [tool.{section}] but service '{name}' is {runtime}"
            found.append(_error(tool, SERVICE, message, (section,)))
    needs = BY_NAME[runtime].tool_needs if runtime in BY_NAME else ""
    if needs and runtime not in own:
        message = (
            f"tool '{tool.name}' uses {runtime.upper()} service '{name}': "
            f"add [tool.{runtime}] {needs}"
        )
        found.append(_error(tool, SERVICE, message))
    params = (service.data.get(runtime) or {}).get("config_params")
    if params is not None:
        config = tool.data.get("config") or {}
        for param in params:
            if param["required"] and param["name"] not in config:
                message = (
                    f"tool '{tool.name}' misses config param '{param['name']}' "
                    f"that service '{name}' requires"
                )
                found.append(_error(tool, SERVICE, message, ("config",)))
        declared = {p["name"] for p in params}
        for key in sorted(set(config) - declared):
            message = (
                f"tool '{tool.name}' sets config '{key}' that service '{name}' does not declare"
            )
            line = field_line(tool, ("config", key))
            found.append(Finding("warning", SERVICE, tool.file, line, message))
    return found


def _action_edges(
    action: Definition, tools: Container[str], actions: Container[str]
) -> list[Finding]:
    found = []
    for index, edge in enumerate(action.data["tools"]):
        if edge["tool"] not in tools:
            message = f"action '{action.name}' calls unknown tool '{edge['tool']}'"
            found.append(_error(action, GRAPH, message, ("tools", index)))
        found += _score(action, f"call edge to '{edge['tool']}'", edge["score"], ("tools", index))
    for index, edge in enumerate(action.data["next"]):
        if edge["action"] not in actions:
            message = f"action '{action.name}' leads to unknown action '{edge['action']}'"
            found.append(_error(action, GRAPH, message, ("next", index)))
        edge_name = f"next edge to '{edge['action']}'"
        found += _score(action, edge_name, edge["score"], ("next", index))
    return found


def _score(action: Definition, edge: str, score: float, loc: Sequence[str | int]) -> list[Finding]:
    if 0.0 <= score <= 1.0:
        return []
    message = f"action '{action.name}': {edge} has score {score}, outside [0, 1]"
    return [_error(action, GRAPH, message, loc)]


def linked_actions(actions: Iterable[Definition]) -> set[str]:
    """The actions some other action leads to (a self-loop does not count)."""
    return {
        edge["action"]
        for action in actions
        for edge in action.data["next"]
        if edge["action"] != action.name
    }


def isolated(action: Definition, linked: bool) -> list[Attached]:
    """An action nothing links to and that links to nothing (see the module docstring)."""
    leads = [e for e in action.data["next"] if e["action"] != action.name]
    if linked or leads or action.data["tools"]:
        return []
    message = (
        f"action '{action.name}' is isolated: no action leads to it and it calls no "
        "tool and leads nowhere; add tools = [...] or next = [...], or remove it"
    )
    return [
        Attached(ISOLATED, action, Finding("warning", GRAPH, action.file, action.line, message))
    ]
