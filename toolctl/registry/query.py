"""Reading the registry for people: `list` (filters, a table's rows) and `show`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from toolctl.registry import open_registry

if TYPE_CHECKING:
    from toolctl.registry.index import Registry
    from toolctl.registry.loader import Definition
    from toolctl.reporting import Reporter
    from toolctl.settings import Settings


def matches(
    data: Mapping[str, Any],
    *,
    category: str | None = None,
    runtime: str | None = None,
    word: str | None = None,
) -> bool:
    """Whether a definition passes every filter given (None means 'any')."""
    if category is not None and (data.get("category") or "").casefold() != category.casefold():
        return False
    if runtime is not None and (data.get("runtime") or data.get("transport")) != runtime:
        return False
    if word is not None:
        haystack = " ".join([data["name"], data.get("description") or "", *data.get("tags", [])])
        return word.casefold() in haystack.casefold()
    return True


KIND_NAMES = {"tools": "tool", "services": "service", "actions": "action", "groups": "group"}


def kind_of(word: str) -> str:
    """'tools' or 'tool' -> 'tool'; anything else is a usage error."""
    from toolctl.errors import UsageError

    kind = KIND_NAMES.get(word, word)
    if kind not in KIND_NAMES.values():
        raise UsageError(f"unknown kind '{word}': expected tool, service, action or group")
    return kind


def kind_and_name(kind: str, name: str | None, command: str) -> tuple[str, str]:
    """``command KIND NAME``'s kind and name; a UsageError for a name given where the kind
    goes (``unregister sentiment``) says so."""
    from toolctl.errors import UsageError

    if name is not None:
        return kind_of(kind), name
    if kind in KIND_NAMES or kind in KIND_NAMES.values():
        raise UsageError(f"missing NAME: toolctl {command} {kind} NAME")
    raise UsageError(
        f"{command} takes KIND NAME, and '{kind}' is not a kind (tool, service, action, group)",
        hint=f"e.g. toolctl {command} tool {kind}",
    )


class Table(NamedTuple):
    """A listing as a table: its column names and its rows of cells, streamed."""

    columns: list[str]
    rows: Iterator[list[str]]


def list_table(
    settings: Settings,
    reporter: Reporter,
    word: str,
    *,
    category: str | None = None,
    runtime: str | None = None,
    search: str | None = None,
) -> Table:
    """`toolctl list` as a table: the definitions of a kind in force, filtered, one row each."""
    kind = kind_of(word)
    registry = open_registry(settings, reporter, full=True)
    _known_runtime(registry, runtime)
    if settings.announced is not None:  # a column saying which names were announced
        from toolctl.registry.announced_view import with_origins

        columns, row = COLUMNS[kind]
        found = with_origins(settings, _matching(registry, kind, category, runtime, search))
        return Table(
            [*columns, "ORIGIN"], ([*row(d.data), d.data.get("origin", "")] for d in found)
        )
    if kind == "tool" and search is None:  # the fields a row shows, no descriptor decoded
        fields = registry.iter_winner_fields("tool", _TOOL_FIELDS, strings=True)
        return Table(COLUMNS["tool"][0], _tool_rows(fields, category, runtime))
    columns, row = COLUMNS[kind]
    found = _matching(registry, kind, category, runtime, search)
    return Table(columns, (row(d.data) for d in found))


def list_definitions(
    settings: Settings,
    reporter: Reporter,
    word: str,
    *,
    category: str | None = None,
    runtime: str | None = None,
    search: str | None = None,
) -> Iterator[Definition]:
    """`toolctl list --json`: the definitions of a kind in force, filtered, streamed (a
    registry of 100,000 tools is never held whole)."""
    kind = kind_of(word)
    registry = open_registry(settings, reporter, full=True)
    _known_runtime(registry, runtime)
    found = _matching(registry, kind, category, runtime, search)
    if settings.announced is None:
        return found
    from toolctl.registry.announced_view import with_origins

    return with_origins(settings, found)


def _known_runtime(registry: Registry, runtime: str | None) -> None:
    """``--runtime`` names a runtime of the table of runtimes, or one a tool in force runs
    on (a plugin's): a typo listed nothing, exit 0, as if no tool ran there."""
    from toolctl.runtimes import BY_NAME, OWN_PLUGINS

    known = [*BY_NAME, *OWN_PLUGINS]
    if runtime is None or runtime in known or runtime in registry.runtimes_in_force():
        return
    import difflib

    from toolctl.errors import UsageError

    close = difflib.get_close_matches(runtime.lower(), known, n=1)
    raise UsageError(
        f"unknown runtime '{runtime}': expected one of {', '.join(known)} (or a plugin's "
        "that a tool runs on)",
        hint=f"did you mean '{close[0]}'?" if close else None,
    )


def _matching(
    registry: Registry, kind: str, category: str | None, runtime: str | None, word: str | None
) -> Iterator[Definition]:
    return (
        d
        for d in registry.iter_winners(kind)
        if matches(d.data, category=category, runtime=runtime, word=word)
    )


def first_line(text: str | None) -> str:
    """A table shows a multi-line description's first line (``show`` has the rest)."""
    return (text or "").strip().partition("\n")[0].strip()


def _tool_row(data: Mapping[str, Any]) -> list[str]:
    return [
        data["name"],
        (data.get("runtime") or "?")
        + (f" ({data['state']})" if data.get("state", "active") != "active" else ""),
        data.get("category") or "",
        first_line(data["description"]),
    ]


_TOOL_FIELDS = ("state", "category", "description")


def _tool_rows(
    found: Iterable[tuple[str, str | None, list[Any]]], category: str | None, runtime: str | None
) -> Iterator[list[str]]:
    """``_tool_row`` of each tool from the few fields it shows (a table of 100,000 tools
    decodes no descriptor whole); ``state`` is absent when "active"."""
    every = category is None and runtime is None
    for name, runs_on, (state, group, description) in found:
        if every or matches(
            {"category": group, "runtime": runs_on}, category=category, runtime=runtime
        ):
            shown = (runs_on or "?") + (f" ({state})" if state not in (None, "active") else "")
            yield [name, shown, group or "", first_line(description)]


def _service_row(data: Mapping[str, Any]) -> list[str]:
    from toolctl.runtimes import BY_NAME

    runtime = data["transport"]  # a service's runtime, as its normalised data names it
    row = BY_NAME.get(runtime)
    where = row.endpoint(data[runtime]) if row else ""
    return [data["name"], runtime, where, first_line(data["description"])]


def _action_row(data: Mapping[str, Any]) -> list[str]:
    return [
        data["name"],
        ", ".join(e["tool"] for e in data["tools"]),
        ", ".join(e["action"] for e in data["next"]),
        first_line(data["description"]),
    ]


def _group_row(data: Mapping[str, Any]) -> list[str]:
    return [data["name"], ", ".join(data["tools"]), first_line(data["description"])]


COLUMNS: dict[str, tuple[list[str], Callable[[Mapping[str, Any]], list[str]]]] = {
    "tool": (["NAME", "RUNTIME", "CATEGORY", "DESCRIPTION"], _tool_row),
    "service": (["NAME", "TRANSPORT", "ENDPOINT", "DESCRIPTION"], _service_row),
    "action": (["NAME", "CALLS", "NEXT", "DESCRIPTION"], _action_row),
    "group": (["NAME", "TOOLS", "DESCRIPTION"], _group_row),
}
"""Each kind's table: its columns and how a definition's data becomes a row."""


class Shown(NamedTuple):
    """`toolctl show`: the definition in force, the ones it shadows, and for a group its
    tools in usage order."""

    winner: Definition
    shadowed: list[Definition]
    ordered: list[str]
    origin: str | None = None
    """"announced by SERVICE on HOST at TIME" for an announced name."""
    quarantined_by: Definition | None = None
    """The earlier definition ``winner``'s name is confusable with: then ``winner`` is
    quarantined (never run, listed or exported)."""


def show(settings: Settings, reporter: Reporter, name: str, kind: str | None = None) -> Shown:
    """The definition of ``name`` in force (of ``kind``, or of whichever kind has it) and
    every definition it shadows; NotFound with close matches, UsageError if two kinds do."""
    from toolctl.errors import NotFound, UsageError
    from toolctl.names import KINDS
    from toolctl.registry.index.reader import named

    named(kind or "", name)
    registry = open_registry(settings, reporter)
    kinds = [kind_of(kind)] if kind else list(KINDS)
    by_kind: dict[str, list[Definition]] = {}
    for definition in registry.find(name, kinds):
        by_kind.setdefault(definition.kind, []).append(definition)
    if not by_kind and "tool" in kinds:  # a tool by its function name, as `run` takes it
        holder = registry.by_function_name(name)
        if holder is not None:
            by_kind["tool"] = list(registry.find(holder.name, ["tool"]))
    if not by_kind:
        suggestions = [s for k in kinds for s in registry.suggest(k, name)]
        kind = kinds[0] if len(kinds) == 1 else "name"
        raise NotFound(kind, name, suggestions[:3], searched=settings.search_path)
    if len(by_kind) > 1:
        raise UsageError(
            f"'{name}' names a {' and a '.join(by_kind)}", hint=f"pass --kind {'|'.join(by_kind)}"
        )
    ((winner, *shadowed),) = by_kind.values()
    ordered: list[str] = []
    if winner.kind == "group":
        from toolctl.graph import usage_ordered

        ordered = usage_ordered(winner.data)
    from toolctl.registry.announced_view import origin_text

    return Shown(
        winner,
        shadowed,
        ordered,
        origin_text(settings, winner.file),
        registry.confusable_with(winner.kind, winner.name),
    )


def complete_names(settings: Settings, kind: str, prefix: str) -> list[tuple[str, str]]:
    """Shell completion: the names in force of ``kind`` that start with ``prefix``, each
    with its description; nothing (never an error) when the registry cannot be read."""
    from toolctl.errors import ToolctlError
    from toolctl.registry.index import Registry

    try:
        registry = Registry.open(settings)
        names = sorted(n for n in registry.names_of(kind) if n.startswith(prefix))
        data = registry.data_of(kind, names[:200])
    except (ToolctlError, OSError):
        return []
    return [(name, _first_line(data.get(name, {}).get("description"))) for name in names]


def complete_arguments(settings: Settings, tool: str, prefix: str) -> list[tuple[str, str]]:
    """Shell completion after ``--arg``: ``NAME=`` for each argument of ``tool``."""
    from toolctl.errors import ToolctlError
    from toolctl.registry.index import Registry

    try:
        data = Registry.open(settings).resolve("tool", tool).data
    except (ToolctlError, OSError):
        return []
    properties = data.get("schema", {}).get("properties", {})
    return [
        (f"{key}=", _first_line(value.get("description") if isinstance(value, dict) else None))
        for key, value in sorted(properties.items())
        if key.startswith(prefix)
    ]


def _first_line(text: Any) -> str:
    return text.strip().splitlines()[0] if isinstance(text, str) and text.strip() else ""
