"""Which tools a server shows, and noticing when the registry changes on disk.

A selection is everything in force, or the union of ``--group`` members, ``--tool`` names
and the tools ``recommend`` gives from ``--action`` starts. The listing is exactly
``export --format mcp`` of the selected tools that run: one whose state (or its service's)
is not active is left out, as `run` refuses it without ``--allow-staging`` and a call of it
is refused the same way (a ``--tool`` naming one is a warning); REST's ``/tools`` still
shows it, with its state, as tool_agent's does. A fingerprint of every registry file and
directory (path, size, mtime) says cheaply whether anything changed since the last look.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolctl.errors import NameConflict, NotFound, ToolctlError
from toolctl.graph import DEFAULT_THRESHOLD
from toolctl.registry.index import Registry
from toolctl.registry.loader import walk
from toolctl.runners.base import ToolSpec
from toolctl.settings import Settings


@dataclass(frozen=True)
class Selection:
    """What to serve; all empty means every tool in force."""

    groups: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    actions: tuple[str, ...] = ()
    hops: int = 0
    threshold: float = DEFAULT_THRESHOLD

    @property
    def everything(self) -> bool:
        return not (self.groups or self.tools or self.actions)


@dataclass
class Snapshot:
    """One look at the registry: the served tools' data by name and their MCP listing."""

    tools: dict[str, dict[str, Any]]
    listing: dict[str, Any]
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def fingerprint(settings: Settings) -> int:
    """A hash of every registry file's path, size and mtime and every directory's mtime."""
    files, dirs = walk(settings.search_path)
    return hash((tuple(files), tuple(dirs)))


def select(registry: Registry, selection: Selection) -> Snapshot:
    """The selected tools in force; NotFound for a group or tool name that does not exist,
    or when no ``--action`` start exists (unknown starts beside known ones are warnings)."""
    from toolctl.interchange import export

    winners = {d.name: d.data for d in registry.winners("tool")}
    groups = {d.name: d.data for d in registry.winners("group")}
    warnings: list[str] = []
    if selection.everything:
        chosen = winners
    else:
        names = set(_named(registry, selection.tools, winners))
        names |= _group_members(registry, selection.groups, groups)
        names |= _recommended(registry, selection, warnings)
        chosen = {name: winners[name] for name in sorted(names) if name in winners}
    listing = export("mcp", _runnable(registry, chosen, selection, warnings), {}).data
    return Snapshot(chosen, listing, groups, warnings)


def _runnable(
    registry: Registry, chosen: dict[str, Any], selection: Selection, warnings: list[str]
) -> dict[str, Any]:
    """The chosen tools that run by default; one named by ``--tool`` that does not is a
    warning (a group's or a recommendation's is left out without a word)."""
    from toolctl.tool_state import not_runnable

    services = {d.name: d.data for d in registry.winners("service")}
    runnable: dict[str, Any] = {}
    for name, data in chosen.items():
        why = not_runnable(data, services.get(data.get("service") or ""))
        if why is None:
            runnable[name] = data
        elif name in selection.tools:
            warnings.append(f"{why}: not listed, and a call of it is refused")
    return runnable


def _named(registry: Registry, names: Sequence[str], winners: dict[str, Any]) -> list[str]:
    for name in names:
        if name not in winners:
            raise NotFound("tool", name, registry.suggest("tool", name))
    return list(names)


def _group_members(
    registry: Registry, names: Sequence[str], groups: dict[str, dict[str, Any]]
) -> set[str]:
    members: set[str] = set()
    for name in names:
        if name not in groups:
            raise NotFound("group", name, registry.suggest("group", name))
        members |= set(groups[name]["tools"])
    return members


def _recommended(registry: Registry, selection: Selection, warnings: list[str]) -> set[str]:
    if not selection.actions:
        return set()
    from toolctl.graph import recommend
    from toolctl.registry.toolkit import load_toolkit

    result = recommend(
        load_toolkit(registry, lazy=True), selection.actions, selection.hops, selection.threshold
    )
    unknown = [NotFound("action", n, registry.suggest("action", n)) for n in result.unknown]
    if not result.actions:
        raise unknown[0]
    warnings.extend(f"{problem}; skipped" for problem in unknown)
    return {tool.name for tool in result.tools}


class Catalog:
    """The served selection, re-read when the registry's fingerprint changes."""

    def __init__(
        self, settings: Settings, selection: Selection, warn: Callable[[str], None] | None = None
    ) -> None:
        self.settings = settings
        self.selection = selection
        self.lock = threading.Lock()
        self._print = fingerprint(settings)
        self._resolved: dict[str, ToolSpec] = {}
        self._mapped: tuple[Snapshot | None, dict[str, str]] = (None, {})
        self.following = None
        if settings.announced is not None:  # read now, then follow while serving
            from toolctl.registry.announced import refresh
            from toolctl.reporting import Quiet
            from toolctl.serve.following import Following

            refresh(settings, Quiet())
            self.following = Following(settings, warn or (lambda message: None))
            self._print = fingerprint(settings)
        self.registry = Registry.open(settings, full=True)
        self._usable()
        self.snapshot = select(self.registry, selection)

    def _usable(self) -> None:
        """RegistryError when --strict refuses the registry (see ``open_registry``)."""
        self.registry.ensure_usable()
        if self.settings.strict:
            from toolctl.registry.check import ensure_strictly_usable

            ensure_strictly_usable(self.registry)

    def close(self) -> None:
        """Stop following announcements."""
        if self.following is not None:
            self.following.close()

    def refresh(self) -> bool:
        """Look again if anything changed on disk; True when the listing itself changed.

        A selection that no longer resolves (its group was removed) serves nothing rather
        than failing: the server stays up and says so through its listing.
        """
        with self.lock:
            current = fingerprint(self.settings)
            if current == self._print:
                return False
            self._print = current
            self._resolved.clear()
            self.registry = Registry.open(self.settings, full=True)
            try:
                snapshot = select(self.registry, self.selection)
            except NotFound as exc:
                snapshot = Snapshot({}, {"tools": []}, warnings=[str(exc)])
            changed = snapshot.listing != self.snapshot.listing
            self.snapshot = snapshot
            return changed

    def resolve(self, name: str) -> ToolSpec:
        """The served tool ``name`` as the call path runs it.

        Kept until the registry changes on disk: the same descriptor object each call, so
        its compiled argument validator is reused (compiling costs more than a Pulsar
        round trip). One lookup at a time: the registry is not shared between threads.
        """
        from toolctl.calls import resolve

        with self.lock:
            self._usable()  # --strict: a registry gone bad refuses calls
            spec = self._resolved.get(name)
            if spec is None:
                spec = self._resolved[name] = resolve(self.registry, name)
            return spec

    def not_served(self, name: str) -> ToolctlError:
        """The error for a call of ``name``, which is not served: NameConflict for a
        look-alike quarantined behind an earlier holder, as `toolctl run` says it (exit 3;
        the doors said "not found", exit 4), else NotFound with the served close names."""
        with self.lock:
            try:
                self.registry.resolve("tool", name)
            except NameConflict as conflict:
                return conflict
            except ToolctlError:
                pass
        return NotFound("tool", name, self.suggest(name))

    def suggest(self, name: str) -> list[str]:
        """Served tools whose names are close to ``name``."""
        with self.lock:
            close = self.registry.suggest("tool", name, limit=10)
        return [n for n in close if n in self.snapshot.tools][:3]

    def canonical(self, name: str) -> str:
        """``name``, or the served tool whose function name it is (``a_b`` for ``a.b``, as an
        OpenAI export spells it), so a model's function call reaches the tool."""
        snapshot = self.snapshot
        if name in snapshot.tools:
            return name
        if self._mapped[0] is not snapshot:
            from toolctl.names import function_name

            mapped = {function_name(n): n for n in snapshot.tools if "." in n}
            self._mapped = (snapshot, {k: v for k, v in mapped.items() if k is not None})
        return self._mapped[1].get(name, name)

    def served(self, name: str) -> bool:
        """Whether ``name`` is a served tool, looking at the disk again if it is not (yet)."""
        if name in self.snapshot.tools:
            return True
        self.refresh()
        return name in self.snapshot.tools
