"""The toolkit graph read from the registry cache: what `graph` draws and `recommend` searches
(``draw_toolkit`` and ``recommend_tools``, the two commands' work)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from toolctl.registry import open_registry

if TYPE_CHECKING:
    from toolctl.graph import Drawing, Recommendation, Toolkit
    from toolctl.registry.index import Registry
    from toolctl.reporting import Reporter
    from toolctl.settings import Settings


def load_toolkit(registry: Registry, *, lazy: bool = False) -> Toolkit:
    """The toolkit graph of the registry: actions, every tool's runtime, the groups.

    Tools come as (name, runtime) rows, never decoded, so 50,000 of them cost one cheap
    query. With ``lazy`` (what `recommend` uses) groups are left out and an action is
    decoded only when the search reaches it, a batch per BFS level: a recommendation
    reads a few thousand of 20,000 actions.
    """
    from toolctl.graph import Toolkit

    registry.check_kind("action")
    tools = registry.tool_runtimes()
    if lazy:
        return Toolkit(IndexedActions(registry), tools)
    return Toolkit.from_data(
        (d.data for d in registry.winners("action")),
        tools,
        (d.data for d in registry.winners("group")),
    )


class IndexedActions(Mapping[str, Mapping[str, Any]]):
    """The actions in force, read from the registry cache as they are needed.

    Names are loaded up front (membership is asked for every edge); descriptors are decoded
    on first use, in batches when ``prefetch`` says what is coming.
    """

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._names = registry.names_of("action")
        self._decoded: dict[str, Mapping[str, Any]] = {}

    def prefetch(self, names: Iterable[str]) -> None:
        missing = [n for n in names if n in self._names and n not in self._decoded]
        if missing:
            self._decoded.update(self._registry.data_of("action", missing))

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        if name not in self._decoded:
            if name not in self._names:
                raise KeyError(name)
            self.prefetch([name])
        return self._decoded[name]

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._names))

    def __len__(self) -> int:
        return len(self._names)


class Drawn(NamedTuple):
    """`toolctl graph`: the toolkit and the part of it to draw."""

    toolkit: Toolkit
    drawing: Drawing

    def to_json(self) -> dict[str, Any]:
        from toolctl.graph import describe

        return describe(self.toolkit, self.drawing)


def draw_toolkit(settings: Settings, reporter: Reporter, group: str | None = None) -> Drawn:
    """The whole toolkit, or ``group``'s tools and their callers (NotFound, with close
    matches, for a group that does not exist)."""
    registry = open_registry(settings, reporter, full=True)
    toolkit = load_toolkit(registry)
    if group is None:
        return Drawn(toolkit, toolkit.drawing())
    registry.resolve("group", group)
    return Drawn(toolkit, toolkit.narrowed(group))


def recommend_tools(
    settings: Settings, reporter: Reporter, starts: Sequence[str], hops: int, threshold: float
) -> Recommendation:
    """`toolctl recommend`: the bounded BFS from ``starts`` (Chat2Graph). An unknown start
    beside known ones is warned about and skipped; with none known, NotFound for the first."""
    from toolctl.errors import NotFound
    from toolctl.graph import recommend

    registry = open_registry(settings, reporter)
    result = recommend(load_toolkit(registry, lazy=True), starts, hops, threshold)
    problems = [
        NotFound("action", name, registry.suggest("action", name)) for name in result.unknown
    ]
    if not result.actions:
        first, *problems = problems
    for problem in problems:
        reporter.warn(f"{problem}; skipped")
    if not result.actions:
        raise first
    return result
