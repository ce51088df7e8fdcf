"""Finding the runner of a runtime by name (the table of runtimes is ``toolctl.runtimes``).

Runners are found through the entry-point group ``toolctl.runners``, where the built-in
runners are registered like any third-party one (pyproject.toml; a row whose entry point
is not installed yet, as in a source checkout, still finds its runner). First wins, visibly:
toolctl's own distribution comes first, then the others in ``sys.path`` order (by name
within one directory); a runtime name registered twice is reported with both registrants
every time it is loaded, never settled by the order a directory happens to list.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from toolctl.errors import PluginBroken, ToolctlError, TransportUnavailable
from toolctl.runtimes import BY_NAME, import_dotted

if TYPE_CHECKING:
    from toolctl.runners.base import Runner
    from toolctl.settings import Settings

ENTRY_POINT_GROUP = "toolctl.runners"
OWN_DISTRIBUTION = "toolctl-cli"
"""This project's distribution (pyproject.toml): not "toolctl", an unrelated placeholder on
PyPI whose entry points, were it installed, must not rank as toolctl's own."""


class Registrant(NamedTuple):
    """Who registers a runtime name: the entry point's target and its distribution."""

    target: str
    distribution: str


def load_runner(
    runtime: str, settings: Settings, warn: Callable[[str], None] | None = None
) -> Runner:
    """The runner registered for ``runtime``; ``warn`` hears of a name registered twice."""
    from toolctl.runners.base import Runner

    registered = entry_points(settings)
    found = registered.get(runtime)
    if not found and runtime in BY_NAME:  # a built-in row whose entry point is not installed
        found = [Registrant(BY_NAME[runtime].runner, OWN_DISTRIBUTION)]
    if not found:
        installed = ", ".join(sorted(registered))
        raise TransportUnavailable(
            f"no runner for runtime '{runtime}' (installed: {installed})",
            hint=f"install the package that registers '{runtime}' under {ENTRY_POINT_GROUP}",
        )
    winner = found[0]
    if len(found) > 1 and warn is not None:
        warn(conflict_message(runtime, found))
    try:
        runner = import_dotted(winner.target)(settings)
    except ToolctlError:
        raise
    except Exception as exc:
        raise PluginBroken(
            f"the runner of runtime '{runtime}' ({winner.target}, from "
            f"{winner.distribution}) failed to load: {type(exc).__name__}: {exc}",
            hint=f"reinstall or remove {winner.distribution}",
        ) from exc
    if not isinstance(runner, Runner):
        raise PluginBroken(
            f"runner for '{runtime}' ({winner.target}, from {winner.distribution}) "
            "does not implement Runner: it needs run(call) and close()",
            hint=f"upgrade {winner.distribution} to the Runner interface of toolctl.runners.base",
        )
    return runner


def conflict_message(runtime: str, found: list[Registrant]) -> str:
    """Says who registered ``runtime`` and which registration is in force."""
    others = ", ".join(f"{r.distribution} ({r.target})" for r in found[1:])
    return (
        f"runtime '{runtime}' is registered more than once: {found[0].distribution} "
        f"({found[0].target}) is used, {others} ignored (first registered wins)"
    )


def entry_points(settings: Settings) -> dict[str, list[Registrant]]:
    """Every runtime name and its registrants, first the one in force.

    Cached against the mtimes of the sys.path directories: ``importlib.metadata`` costs
    ~25 ms to import and scan, a fifth of a whole local run; installing or removing a
    package changes its site directory's mtime and so the cache key.
    """
    # sys.path[0] is the script's directory or the working directory, not where
    # distributions live; keying on its mtime would miss the cache at every file change.
    key = [[entry, _mtime(entry)] for entry in sys.path[1:] if entry]
    cache = settings.cache_dir / "runners-2.json"  # runners.json: the older format
    try:
        cached = json.loads(cache.read_text())
        if cached["key"] == key:
            return {
                name: [Registrant(*item) for item in items]
                for name, items in cached["runners"].items()
            }
    except (OSError, ValueError, KeyError, TypeError):
        pass
    runners = _scan()
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        temporary = cache.with_name(f".runners.{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"key": key, "runners": runners}))
        os.replace(temporary, cache)
    except OSError:
        pass
    return runners


def _scan() -> dict[str, list[Registrant]]:
    """The entry points of the group, in precedence order (see the module docstring)."""
    from importlib.metadata import distributions

    places = {os.path.realpath(entry or "."): n for n, entry in enumerate(sys.path)}
    found: list[tuple[tuple[int, int, str], str, Registrant]] = []
    seen: set[tuple[str, str]] = set()
    for dist in distributions():
        name = dist.metadata["Name"] or "?"
        site = os.path.realpath(str(dist.locate_file("")))
        rank = (0 if _normal(name) == OWN_DISTRIBUTION else 1, places.get(site, len(places)))
        for point in dist.entry_points:
            if point.group != ENTRY_POINT_GROUP or (name, point.name) in seen:
                continue  # the same distribution seen twice on sys.path: its first copy
            seen.add((name, point.name))
            found.append(((*rank, _normal(name)), point.name, Registrant(point.value, name)))
    runners: dict[str, list[Registrant]] = {}
    for _, runtime, registrant in sorted(found, key=lambda item: item[0]):
        runners.setdefault(runtime, []).append(registrant)
    return runners


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1
