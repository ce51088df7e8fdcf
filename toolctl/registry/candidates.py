"""`toolctl check FILE...`: descriptor files checked against the registry in force, as
`register` would take them, with nothing written (for pre-commit and CI).

A file outside every registry directory is a *candidate*: its definitions are checked
for syntax and fields, for names (taken by a different definition: `register` refuses it,
unless ``--replace`` may update it in the directory register writes to; look-alikes),
for what they name (services, tools, actions: in the files or in force), and for what
would stop them from running. A file inside a registry directory is already part of the
registry: it gets the registry's own check, limited to that file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from toolctl.errors import RegistryError
from toolctl.findings import Finding
from toolctl.names import fold
from toolctl.registry.index import Registry
from toolctl.registry.lint import confusable, in_force_problems
from toolctl.registry.loader import Definition, parse_file
from toolctl.registry.runnable import ImageLookup, runnable_problems
from toolctl.settings import Settings

TAKEN = "taken"
"""The code of a candidate whose name a different definition in force holds."""
NOTHING = (
    "defines nothing: no [[tool]], [[service]], [[action]] or [[group]] table (register refuses it)"
)
CLASH = "clash"
"""The code of a candidate whose name (or a look-alike) another candidate holds."""


def candidate_findings(
    paths: Sequence[str], settings: Settings, images: ImageLookup | None
) -> tuple[list[Finding], int]:
    """Every finding of the candidate files ``paths`` (as written: ``check`` applies
    --strict), and how many definitions they hold (see the module docstring)."""
    findings: list[Finding] = []
    candidates: list[Definition] = []
    for path in paths:
        parsed = parse_file(path)
        findings += parsed.problems
        candidates += parsed.definitions
        if not parsed.definitions and not parsed.problems:  # as `register` refuses it
            findings.append(Finding("error", "parse", path, 1, NOTHING))
    if candidates:
        registry = Registry.open(settings, full=True)
        findings += _names(candidates, registry, _writes_to(settings))
        findings += _references(candidates, registry)
        findings += runnable_problems(candidates, settings.environ, images)
    return findings, len(candidates)


def _writes_to(settings: Settings) -> Path | None:
    from toolctl.registry.writer import target_directory

    try:
        return target_directory(settings)
    except RegistryError:
        return None


def _names(
    candidates: Iterable[Definition], registry: Registry, writes_to: Path | None
) -> list[Finding]:
    """Names clashing inside the files, taken in the registry, or look-alikes of either."""
    from toolctl.registry.writer import given_again, same_definition

    found: list[Finding] = []
    seen: dict[tuple[str, str], Definition] = {}
    for new in candidates:
        earlier = seen.setdefault((new.kind, fold(new.name)), new)
        if earlier is not new and given_again(new, earlier):
            continue  # another file's, the same: `register` keeps it once
        if earlier is not new:  # `register` refuses the batch: an error, even the same name
            message = (
                f"{new.kind} '{new.name}' clashes with '{earlier.name}' "
                f"({earlier.file}:{earlier.line}) in the same batch: register refuses the files"
            )
            found.append(Finding("error", CLASH, new.file, new.line, message))
            continue
        similar = registry.confusable_with(new.kind, new.name)
        if similar is not None:
            found.append(confusable(new, similar))
            continue
        taken = registry.definitions(new.kind, new.name)
        if taken and not same_definition(new, taken[0]):
            found.append(_taken(new, taken[0], writes_to))
    return found


def _taken(new: Definition, holder: Definition, writes_to: Path | None) -> Finding:
    where = f"{holder.file}:{holder.line}"
    if writes_to is not None and Path(holder.file).is_relative_to(writes_to):
        message = (
            f"{new.kind} '{new.name}' differs from the one in force at {where}: "
            "`register --replace` would update it"
        )
        return Finding("warning", TAKEN, new.file, new.line, message)
    message = (
        f"{new.kind} '{new.name}' is already defined in {where}: first definition wins, "
        "so `register` refuses it; pick another name"
    )
    return Finding("error", TAKEN, new.file, new.line, message)


class _Either:
    """What a name means to a candidate: the candidates' own definition, else the one in
    force in the registry (the ``InForce`` and ``Container`` that lint's rules take)."""

    def __init__(self, kind: str, candidates: Iterable[Definition], registry: Registry) -> None:
        self.kind = kind
        self.own: dict[str, Definition] = {}
        for definition in candidates:
            if definition.kind == kind:
                self.own.setdefault(definition.name, definition)
        self.registry = registry

    def get(self, name: str, /) -> Definition | None:
        if name in self.own:
            return self.own[name]
        found = self.registry.definitions(self.kind, name) if name else []
        return found[0] if found else None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None


def _references(candidates: list[Definition], registry: Registry) -> list[Finding]:
    """The services, tools and actions each candidate names, in the files or in force."""
    services = _Either("service", candidates, registry)
    tools = _Either("tool", candidates, registry)
    actions = _Either("action", candidates, registry)
    found: list[Finding] = []
    for definition in candidates:
        for attached in in_force_problems(definition, services, tools, actions):
            found.append(attached.finding)
    return found
