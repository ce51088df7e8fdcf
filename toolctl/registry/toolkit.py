"""The toolkit graph read from the registry cache: what `graph` draws and `recommend` searches."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolctl.graph import Toolkit
    from toolctl.registry.index import Registry


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
