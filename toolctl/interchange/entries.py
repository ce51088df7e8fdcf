"""Imported descriptor tables → registry entries, validated exactly as registry files are."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl.errors import RegistryError, UsageError
from toolctl.registry.writer import Entry
from toolctl.settings import Settings
from toolctl.targets import input_file

if TYPE_CHECKING:
    from toolctl.registry.loader import Definition


@dataclass(frozen=True)
class Tables:
    """What one foreign file converts to: TOML tables as (kind, table), and notes."""

    source: str
    tables: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """What refuses the import (every one is listed), with the item it is about."""


@dataclass(frozen=True)
class Imported:
    """Entries ready for ``registry.writer.register``, and what was left out and why."""

    entries: list[Entry]
    notes: list[str]
    hint: str | None = None
    """What to try when the entries are refused where they land (``check_landing``)."""


def read_text(path: Path) -> str:
    """A file to import, whole: at most ``MAX_INPUT`` bytes of UTF-8 (``/dev/zero`` is
    refused, not read until memory runs out); a FIFO will do (`<(curl ...)`)."""
    from toolctl.arguments import read_bounded

    input_file(path)
    try:
        with path.open("rb") as opened:
            return read_bounded(opened, str(path)).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc


def read_json(path: Path) -> Any:
    from toolctl.interchange.documents import parse_json

    return parse_json(read_text(path), str(path))


def read_yaml(path: Path) -> Any:
    from toolctl.interchange.documents import parse_yaml

    return parse_yaml(read_text(path), str(path))


def validate(converted: Sequence[Tables]) -> Imported:
    """Validate every table with the registry's own loader; any problem refuses the batch."""
    entries: list[Entry] = []
    problems = _slug_collisions(converted)
    for tables in converted:
        problems += [f"{tables.source}: {problem}" for problem in tables.problems]
        found, trouble = _validate_one(tables)
        entries += found
        problems += trouble
    entries, repeated, differing = _once(entries)
    problems += differing
    if problems:
        raise RegistryError(
            f"{len(problems)} problem(s) in the imported descriptors; nothing was imported",
            details=problems,
        )
    return Imported(entries, [note for tables in converted for note in tables.notes] + repeated)


def _once(entries: Sequence[Entry]) -> tuple[list[Entry], list[str], list[str]]:
    """The entries with each one given again the same (real configs copy each other's
    blocks: `import A B` is `import A; import B`) kept once; a note for each left out, and
    a problem for each name given again with a different definition (every one listed:
    first wins would drop it unseen)."""
    from toolctl.registry.writer import given_again

    first: dict[tuple[str, str], Entry] = {}
    kept: list[Entry] = []
    again: dict[tuple[str, str], list[str]] = {}  # (file, the earlier file): what it repeats
    problems: list[str] = []
    for entry in entries:
        new = entry.definition
        held = first.setdefault((new.kind, new.name), entry)
        if held is entry:
            kept.append(entry)
            continue
        old = held.definition
        if given_again(new, old):
            again.setdefault((new.file, old.file), []).append(f"{new.kind} '{new.name}'")
        elif new.file == old.file:
            problems.append(f"{new.file}: {new.kind} '{new.name}' is given twice")
        else:
            problems.append(
                f"{new.file}: {new.kind} '{new.name}' differs from the one {old.file} gives; "
                "rename it in one of them, or leave one file out"
            )
    notes = [
        f"{file}: {_some(named)} given in {earlier} too, the same: imported once"
        for (file, earlier), named in again.items()
    ]
    return kept, notes, problems


def _some(named: Sequence[str]) -> str:
    """``tool 'a'``, or ``12 entries (tool 'a', action 'b', ...)``."""
    if len(named) == 1:
        return f"{named[0]} is"
    shown = ", ".join(named[:3]) + (", ..." if len(named) > 3 else "")
    return f"{len(named)} entries ({shown}) are"


def _slug_collisions(converted: Sequence[Tables]) -> list[str]:
    """Two foreign names that became the same (or confusable) registry names: reported."""
    from toolctl.names import fold

    seen: dict[tuple[str, str], tuple[str, str, str]] = {}
    problems = []
    for tables in converted:
        for kind, table in tables.tables:
            name = str(table.get("name"))
            original = str(table.get("title") or name)
            first = seen.setdefault((kind, fold(name)), (original, tables.source, name))
            if first[0] != original:
                if first[2] == name:
                    became = f"both become '{name}'"
                elif (first[0], original) == (first[2], name):
                    became = "are confusable: they differ only in case or in - _ ."
                else:
                    became = f"become '{first[2]}' and '{name}', which are confusable"
                problems.append(
                    f"{tables.source}: {kind} names '{first[0]}' ({first[1]}) and '{original}' "
                    f"{became}; rename one of them in the source"
                )
    return problems


def check_landing(imported: Imported, settings: Settings) -> list[str]:
    """Lint the imported entries together with the registry they land in, as `check` would.

    Every error that concerns an imported entry (an unknown service, a missing required
    config param, an edge or group member naming nothing) refuses the whole import, all
    listed with their source file; warnings are returned for the caller to show.
    """
    from toolctl.names import KINDS
    from toolctl.registry.index import Registry
    from toolctl.registry.lint import lint
    from toolctl.registry.runnable import MACHINE_CODES, runnable_problems

    registry = Registry.open(settings, full=True)
    present = [d for kind in KINDS for d in registry.winners(kind)]
    new = [entry.definition for entry in imported.entries]
    sources = {d.file for d in new}
    combined = [*present, *(d for d in new if not registry.definitions(d.kind, d.name))]
    errors: list[str] = []
    warnings: list[str] = []
    # what would stop an entry from running wherever it lands (a {placeholder} naming no
    # argument, a ${env:} naming no variable); not what depends on this machine (PATH)
    runnable = [f for f in runnable_problems(new, {}) if f.code not in MACHINE_CODES]
    for finding in [*lint(combined), *runnable]:
        if finding.file not in sources:
            continue
        line = f"{finding.file}: {_as_imported(finding.message, new)}"
        (errors if finding.severity == "error" else warnings).append(line)
    if errors:
        raise RegistryError(
            f"{len(errors)} problem(s) with the registry the import lands in; nothing was imported",
            details=errors,
            hint=imported.hint if any("unknown tool" in e for e in errors) else None,
        )
    return warnings


def _as_imported(message: str, new: list[Definition]) -> str:
    """A finding's words for an import: an imported definition's place without a line
    (its line is one of the TOML rendered from it, another entry's in the source), and
    nothing quarantined (nothing is written)."""
    import re

    def file_alone(found: re.Match[str]) -> str:
        return found.group(1)

    for definition in new:
        place = rf"({re.escape(definition.file)}):{definition.line}\b"
        message = re.sub(place, file_alone, message)
    return message.replace("; it is quarantined (never run, listed or exported)", "")


def _validate_one(tables: Tables) -> tuple[list[Entry], list[str]]:
    from toolctl.registry.dumping import registry_toml
    from toolctl.registry.loader import parse_document

    document: dict[str, list[dict[str, Any]]] = {}
    for kind, table in tables.tables:
        document.setdefault(kind, []).append(table)
    try:
        text = registry_toml(document)
    except (TypeError, ValueError) as exc:
        return [], [f"{tables.source}: cannot be written as TOML: {exc}"]
    parsed = parse_document(document, text, tables.source)
    problems = [f"{tables.source}: {p.message}" for p in parsed.problems]
    counters: dict[str, int] = {}
    entries = []
    for definition in parsed.definitions:
        position = counters.get(definition.kind, 0)
        counters[definition.kind] = position + 1
        # Any problem refuses the batch, so valid definitions line up with the raw tables.
        entries.append(Entry(definition, parsed.raw[definition.kind][position]))
    return entries, problems


def items_of(data: Any, source: str, what: str) -> list[dict[str, Any]]:
    """A JSON document as a list of objects: a list of them, or one alone."""
    items = data if isinstance(data, list) else [data]
    for position, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise UsageError(f"{source}: item {position} is not a JSON object ({what})")
    return items


def clean(table: dict[str, Any]) -> dict[str, Any]:
    """Drop keys whose value is None or empty: TOML has no null, and the defaults apply."""
    return {k: v for k, v in table.items() if v is not None and v != [] and v != {}}
