"""`toolctl export` and `toolctl import`, the whole flow of each: the library calls behind
the two commands.

Every import goes read → check where it would land → register, under `register`'s
first-wins and look-alike rules, whatever it reads: TrustGraph, Chat2Graph or tool_agent
files, the live tools of a registered MCP server (``import mcp SERVICE``, and ``--update``
which diffs and re-pins them), or MCP client configs (``import mcp-config``). Warnings go
to the reporter as they arise; what the import did comes back as an ``ImportDone``: the
JSON document, the lines for people (in order, notes and data), and the error the command
ends with when something was refused (the rest is imported all the same).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl.errors import NotFound, RegistryError, ToolctlError, UsageError
from toolctl.interchange import Exported, Streamed, export, export_streamed
from toolctl.registry import open_registry

if TYPE_CHECKING:
    from toolctl.registry.writer import Written
    from toolctl.reporting import Reporter
    from toolctl.settings import Settings

__all__ = ["Exported", "ImportDone", "ImportOptions", "Streamed", "export_tools", "import_files"]

ShowPath = Callable[[Path], str]
"""How the caller shows a file's path (relative to the working directory, say)."""

EXPORTED = ("description", "schema", "annotations", "title", "mcp.annotations", "mcp.output_schema")
"""The fields of a tool the streamed exports read (``interchange.functions``)."""


def _exported(name: str, values: list[Any]) -> dict[str, Any]:
    """A tool as the streamed exports read it (``mcp.*`` back under ``mcp``)."""
    tool = {"name": name, **dict(zip(EXPORTED, values, strict=True))}
    tool["mcp"] = {
        "annotations": tool.pop("mcp.annotations"),
        "output_schema": tool.pop("mcp.output_schema"),
    }
    return tool


def export_tools(
    settings: Settings,
    reporter: Reporter,
    format: str,
    *,
    group: str | None = None,
    strict_schemas: bool = False,
    commands: bool = False,
) -> Exported | Streamed:
    """The tools in force (or ``group``'s) in ``format``, sorted by name. Streamed (one
    tool at a time, its notes complete once the items are read) unless a group, command
    lines or a format that needs every tool at once (trustgraph) asks for all of them."""
    registry = open_registry(settings, reporter, full=True)
    if group is None and not commands:
        tools_in_order = (  # only what an export reads: no descriptor decoded whole
            _exported(name, values)
            for name, _, values in registry.iter_winner_fields("tool", EXPORTED)
        )
        streamed = export_streamed(format, tools_in_order, strict_schemas=strict_schemas)
        if streamed is not None:
            return streamed
    chosen = registry.resolve("group", group).data if group is not None else None
    tools = {d.name: d.data for d in registry.winners("tool")}
    services = {d.name: d.data for d in registry.winners("service")}
    return export(format, tools, services, chosen, strict_schemas=strict_schemas, commands=commands)


@dataclass
class ImportDone:
    """What an import did. ``document(show_path)`` is the JSON to print; ``lines`` what
    people read instead, in order (``(True, text)`` data for stdout, ``(False, text)`` a
    note for stderr); ``error`` what the command ends with after either (a refusal)."""

    document: Callable[[ShowPath], Any]
    lines: list[tuple[bool, str]] = field(default_factory=list)
    error: ToolctlError | None = None

    def note(self, text: str) -> None:
        self.lines.append((False, text))

    def data(self, text: str) -> None:
        self.lines.append((True, text))


@dataclass(frozen=True)
class ImportOptions:
    """The options of `toolctl import` beyond the format and the files."""

    as_loaded: bool = False
    prefix: str | None = None
    globs: tuple[str, ...] = ()
    update: bool = False
    accept: bool = False


def import_files(
    settings: Settings,
    reporter: Reporter,
    format: str,
    files: Sequence[Path],
    options: ImportOptions | None = None,
) -> ImportDone:
    """`toolctl import FORMAT FILE...` (``mcp``: the one SERVICE); see the module doc."""
    options = options or ImportOptions()
    _check_options(format, files, options)
    if format == "mcp":
        service = str(files[0])
        try:
            if options.update:
                return _mcp_update(settings, service, accept=options.accept)
            return _mcp_import(settings, reporter, service, options)
        except NotFound as exc:
            if exc.kind == "service" and exc.name == service and files[0].is_file():
                exc.hint = (
                    f"{service} is a file: import mcp takes a registered MCP service's name; "
                    "a client's config (mcpServers) is 'toolctl import mcp-config FILE'"
                )
            raise
    if format == "mcp-config":
        return _mcp_config(settings, reporter, files)
    return _entries(settings, reporter, format, files, as_loaded=options.as_loaded)


def _check_options(format: str, files: Sequence[Path], options: ImportOptions) -> None:
    if not files:  # what the one positional argument is depends on FORMAT, so it is told here
        missing = "SERVICE" if format == "mcp" else "FILE..."
        raise UsageError(f"missing argument '{missing}'", hint="see 'toolctl import -h'")
    mcp_only = {
        "--prefix": options.prefix is not None,
        "--tool": bool(options.globs),
        "--update": options.update,
    }
    if format != "mcp":
        for option, given in {**mcp_only, "--yes": options.accept}.items():
            if given:
                raise UsageError(f"{option} is for 'toolctl import mcp SERVICE' only")
    if options.accept and not options.update:
        raise UsageError("--yes accepts the changes of --update: give both")
    if format == "mcp" and len(files) != 1:
        raise UsageError("'toolctl import mcp' takes one SERVICE", hint="import mcp SERVICE")
    check_prefix(options.prefix)


def check_prefix(prefix: str | None) -> None:
    """UsageError for a ``--prefix`` no tool name can start with: said once, not once for
    each tool it would name."""
    from toolctl.names import name_problem

    problem = name_problem(f"{prefix}tool") if prefix else None
    if problem is not None:
        raise UsageError(f"invalid --prefix {prefix!r}", hint=problem)


def _entries(
    settings: Settings, reporter: Reporter, format: str, files: Sequence[Path], *, as_loaded: bool
) -> ImportDone:
    """TrustGraph, Chat2Graph or tool_agent files: all of it registered, or nothing."""
    from toolctl.interchange import check_landing, read_import
    from toolctl.registry.writer import register

    imported = read_import(format, files, as_loaded=as_loaded)
    for note in [*imported.notes, *check_landing(imported, settings)]:
        reporter.warn(note)
    with reporter.progress(f"importing {len(imported.entries)} entries…"):
        written = register(imported.entries, settings)
    done = ImportDone(
        lambda show: [{"kind": w.kind, "name": w.name, "file": show(w.path)} for w in written]
    )
    note_written(done, written)
    return done


LISTED = 20
"""Entries an import names one line each; past that, one line sums them up."""


def note_written(done: ImportDone, written: Sequence[Written]) -> None:
    """A line per entry written, or past ``LISTED`` one summary line: how many of each
    kind, where, and how many were already there unchanged."""
    if len(written) <= LISTED:
        for w in written:
            done.note(w.describe("imported", "into"))
        return
    from collections import Counter

    unchanged = sum(w.action == "unchanged" for w in written)
    kinds = Counter(w.kind for w in written if w.action != "unchanged")
    where = sorted({os.path.dirname(str(w.path)) for w in written})
    counted = ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in sorted(kinds.items()))
    text = f"imported {counted or 'nothing new'} into {', '.join(where[:3])}"
    if len(where) > 3:
        text += f" and {len(where) - 3} more directories"
    if unchanged:
        text += f"; {unchanged} already in force unchanged"
    done.note(text)


@dataclass
class _Live:
    """What an MCP service offers now: its tools with their pins, the pins of its
    resources, templates and prompts (and the items), and its registry definition."""

    tools: list[tuple[dict[str, Any], str]]
    offers: dict[str, dict[str, dict[str, Any]]]
    pins: dict[str, dict[str, str]]
    definition: Any
    not_tools: list[str]
    """Entries of its tool list that are no tools, each said."""


def _live(settings: Settings, service: str, reporter: Reporter | None = None) -> _Live:
    """What the MCP service offers now, each tool and item with its pin."""
    from toolctl.mcp import pin_of
    from toolctl.mcp.live import live_offer
    from toolctl.mcp.pins import offer_pins
    from toolctl.registry.index import Registry
    from toolctl.reporting import QUIET

    definition = Registry.open(settings).resolve("service", service)
    not_tools: list[str] = []
    with (reporter or QUIET).progress(f"connecting to MCP server '{service}'…"):
        tools, offers = live_offer(settings, definition, not_tools=not_tools)
    pinned = [(tool, pin_of(tool)) for tool in tools]
    return _Live(pinned, offers, offer_pins(offers), definition, not_tools)


def _offer_counts(pins: Mapping[str, Mapping[str, str]]) -> str:
    from toolctl.mcp.pins import SINGULAR

    return ", ".join(f"{len(pins.get(kind) or {})} {SINGULAR[kind]}(s)" for kind in SINGULAR)


def _pin_offers(settings: Settings, done: ImportDone, service: str, live: _Live) -> None:
    """On a first import, pin the service's resources, templates and prompts; later,
    say when they differ from their pins (``--update`` shows and re-pins them)."""
    from toolctl.mcp.pins import offer_drift

    stored = live.definition.data["mcp"].get("pins")
    if stored is not None:
        drift = offer_drift(stored, live.pins)
        if drift:
            done.note(
                f"{len(drift)} resource(s), template(s) or prompt(s) of '{service}' differ "
                f"from their pins (see 'toolctl import mcp {service} --update')"
            )
        return
    if not any(live.pins.values()):
        return  # nothing to pin: the service file stays as it was written
    from toolctl.interchange.mcp import write_offer_pins

    try:
        where = write_offer_pins(settings, live.definition, live.pins)
    except ToolctlError as exc:
        done.note(f"resources and prompts of '{service}' not pinned: {exc.message}")
        return
    done.note(f"pinned {_offer_counts(live.pins)} of '{service}' in {where}")


def _mcp_import(
    settings: Settings, reporter: Reporter, service: str, options: ImportOptions
) -> ImportDone:
    """The live tools of ``service``, one pinned tool each; a refused name does not stop
    the others (it is listed, and the import ends with exit 3)."""
    from toolctl.interchange import Imported, check_landing
    from toolctl.interchange.mcp import plan_import
    from toolctl.registry.writer import register

    live = _live(settings, service, reporter)
    plan = plan_import(settings, service, live.tools, prefix=options.prefix, globs=options.globs)
    plan.refused += live.not_tools
    written = []
    if plan.entries:
        for note in check_landing(Imported(plan.entries, []), settings):
            reporter.warn(note)
        written = register(plan.entries, settings)
    done = ImportDone(
        lambda show: {
            "imported": [{"name": w.name, "file": show(w.path)} for w in written],
            "refused": plan.refused,
            "present": plan.present,
            "skipped": plan.skipped,
        }
    )
    note_written(done, written)
    if plan.skipped:
        reporter.warn(
            f"skipped {len(plan.skipped)} tool(s) of '{service}' that run only as tasks "
            f"(execution.taskSupport = required), which toolctl does not call: "
            + ", ".join(plan.skipped)
        )
    for note in plan.notes:
        done.note(note)
    _pin_offers(settings, done, service, live)
    if plan.present:
        done.note(
            f"{len(plan.present)} tool(s) already imported from '{service}' "
            f"(see 'toolctl import mcp {service} --update')"
        )
    if plan.refused:
        done.error = RegistryError(
            f"{len(plan.refused)} tool(s) of service '{service}' refused "
            f"({len(written)} imported)" + (": first definition wins" if plan.clashes else ""),
            details=plan.refused,
            hint="import them under another --prefix, or rename the tool that holds the name"
            if plan.clashes
            else "the reason is given for each tool",
        )
    return done


def _mcp_update(settings: Settings, service: str, *, accept: bool) -> ImportDone:
    """A diff of every pinned tool of ``service`` that changed, and of its resources,
    templates and prompts that differ from their pins; with ``accept``, re-pinned."""
    from toolctl.interchange.mcp import apply_update, plan_update, write_offer_pins
    from toolctl.mcp.pins import SINGULAR, offer_drift

    live = _live(settings, service)
    changes, same, unimported = plan_update(settings, service, live.tools)
    stored = live.definition.data["mcp"].get("pins")
    drift = offer_drift(stored or {}, live.pins)
    done = ImportDone(
        lambda show: {
            "unchanged": same,
            "changed": [
                {"name": c.name, "remote": c.remote, "fields": c.fields, "diff": c.diff}
                for c in changes
            ],
            "offers": [{"kind": d.kind, "key": d.key, "state": d.state} for d in drift],
            "not_imported": unimported,
            "accepted": accept,
        }
    )
    for change in changes:
        if change.table is None:
            done.data(
                f"{change.name} ({change.remote}): vanished from the server; "
                f"'toolctl unregister tool {change.name}' removes it\n"
            )
        else:
            done.data(
                f"{change.name} ({change.remote}): {', '.join(change.fields)} changed\n"
                + "".join(f"  {line}\n" for line in change.diff)
            )
    for item in drift:  # only pins are kept of these: the live item is shown to review
        now = live.offers.get(item.kind, {}).get(item.key)
        state = {"new": "not pinned", "vanished": "vanished from the server"}.get(
            item.state, "changed since it was pinned"
        )
        done.data(f"{SINGULAR[item.kind]} '{item.key}': {state}\n")
        if now is not None:
            done.data(f"  now: {json.dumps(now, sort_keys=True, ensure_ascii=False)}\n")
    if not changes:
        done.note(f"all {same} pinned tool(s) of '{service}' match the server")
    if unimported:  # a tool the server offers now that nothing here pins
        shown = ", ".join(unimported[:5]) + (", ..." if len(unimported) > 5 else "")
        done.note(
            f"the server also offers {len(unimported)} tool(s) not imported: {shown} "
            f"('toolctl import mcp {service} --tool NAME' imports one)"
        )
    if stored is not None and not drift:
        done.note(f"its {_offer_counts(live.pins)} match their pins")
    if not accept:
        if changes or drift:
            counted = [f"{len(changes)} tool(s)"] if changes else []
            if drift:
                counted.append(f"{len(drift)} resource(s), template(s) or prompt(s)")
            unpinned = " (or are not pinned)" if drift else ""
            done.error = RegistryError(
                f"{' and '.join(counted)} of service '{service}' changed since they were "
                f"pinned{unpinned}",
                hint=f"review the diff, then 'toolctl import mcp {service} --update --yes'",
            )
        return done
    try:  # the diff is still shown, then an error here
        if changes:
            files = apply_update(settings, changes)
            done.note(f"rewrote {len(files)} pin(s) of service '{service}'")
        if drift:
            where = write_offer_pins(settings, live.definition, live.pins)
            done.note(f"pinned {_offer_counts(live.pins)} of '{service}' in {where}")
    except ToolctlError as exc:
        done.error = exc
    return done


def _mcp_config(settings: Settings, reporter: Reporter, files: Sequence[Path]) -> ImportDone:
    """The servers of MCP client configs as services, each secret its own ${env:NAME}."""
    from toolctl.interchange.mcp_config import import_client_configs

    result = import_client_configs(settings, files)
    for source, dialect, count in result.read:
        reporter.note(f"{os.path.normpath(source)}: {count} server(s), read as {dialect}")
    for note in result.notes:
        reporter.warn(note)
    done = ImportDone(
        lambda show: {
            "imported": [{"name": w.name, "file": show(w.path)} for w in result.written],
            "export": sorted(result.exports),
            "refused": result.refused,
        }
    )
    for w in result.written:
        done.note(f"imported service '{w.name}' into {w.path}")
    for variable, where in result.exports.items():
        shown = where.replace("\n", "\\n")  # one line each: the file's names cannot add one
        done.data(f"export {variable}=...   # {shown}\n")
    if result.exports:
        done.note(f"set before running their tools (not copied): {' '.join(result.exports)}")
    if result.refused:
        done.error = RegistryError(
            f"{len(result.refused)} server(s) not imported ({len(result.written)} imported)",
            details=result.refused,
        )
    return done
