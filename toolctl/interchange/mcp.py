"""MCP in: a server's live tools as pinned ``[[tool]]`` entries (client configs: ``mcp_config``).

No I/O with servers here: the caller lists the tools (and computes each one's pin with
``toolctl.mcp.pin_of``) and hands them in. Every name goes through ``register``'s rules,
but one refused name does not refuse the others: :func:`plan_import` sorts the tools into
entries to write, names refused (taken by something else, or confusable with a name in
force), and tools already imported. A remote name that looks like another through
lookalike letters (a Cyrillic ``e`` for a Latin one) gets the registry name it imitates, so
first-wins refuses it like any other taken name.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolctl.arguments import value_problem
from toolctl.errors import RegistryError, UsageError
from toolctl.interchange.entries import Tables, _validate_one, clean
from toolctl.interchange.slugs import MAX_LENGTH, skeleton, slug
from toolctl.mcp.pins import (
    canonical_json,
    kept_annotations,
    needs_task,
    schema_field,
    stored_schema,
)
from toolctl.names import NAME_PATTERN, fold
from toolctl.registry.writer import Entry
from toolctl.settings import Settings

LiveTool = tuple[Mapping[str, Any], str]
"""A tool object as the server listed it, and its pin."""
MAX_TOOL_BYTES = 256 * 1024
"""The most a tool's definition (its schemas, description, annotations) may take: every
call checks its arguments against the schema, and a server's 2 MB enum made each take
~20 s (a real tool's is a few KiB)."""


def registry_name(prefix: str, remote: str) -> str:
    """The registry name of remote tool ``remote``: ``prefix`` + its name (or its slug)."""
    ascii_form = skeleton(remote)
    whole = prefix + ascii_form
    if re.fullmatch(NAME_PATTERN, whole) and len(whole) <= MAX_LENGTH * 2:
        return whole
    return prefix + slug(ascii_form)


@dataclass
class McpImport:
    """What an import of a service's tools will write, refuse and leave as it is."""

    entries: list[Entry] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    """Registry names of tools already imported from this service (same remote name)."""
    skipped: list[str] = field(default_factory=list)
    """Tools that run only as tasks, which toolctl does not call (``needs_task``)."""
    notes: list[str] = field(default_factory=list)
    clashes: int = 0
    """How many of ``refused`` were refused for their name (taken or confusable)."""


def tool_table(
    service: str,
    name: str,
    tool: Mapping[str, Any],
    pin: str,
    *,
    renamed: bool,
    section: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``[[tool]]`` table of one live tool (``renamed``: its name is not prefix + its
    remote name, which then becomes the title). The service's ``section`` says which tools
    are written disabled (``disabled_tools``, or all but its ``enabled_tools``) and the
    ``timeout`` they get (``tool_timeout``), as the client config it came from did."""
    remote = str(tool["name"])
    schema = tool.get("inputSchema")
    mcp: dict[str, Any] = {"name": remote, "pin": pin}
    if isinstance(schema, dict):
        mcp["parameters"] = schema_field(schema)
    if isinstance(tool.get("outputSchema"), dict):
        mcp["output_schema"] = schema_field(tool["outputSchema"])
    if isinstance(tool.get("annotations"), dict):
        mcp["annotations"] = kept_annotations(tool["annotations"])
    table: dict[str, Any] = {"name": name}
    title = tool.get("title")
    if renamed:
        table["title"] = remote
    elif isinstance(title, str) and title:
        table["title"] = title
    table |= {"description": tool.get("description"), "service": service, "mcp": mcp}
    section = section or {}
    allowed = section.get("enabled_tools")
    if remote in (section.get("disabled_tools") or []) or (
        allowed is not None and remote not in allowed
    ):
        table["state"] = "disabled"
    if section.get("tool_timeout"):
        table["timeout"] = section["tool_timeout"]
    return clean(table)


def plan_import(
    settings: Settings,
    service: str,
    tools: Sequence[LiveTool],
    *,
    prefix: str | None = None,
    globs: Sequence[str] = (),
) -> McpImport:
    """Sort the live tools of ``service`` into entries to register, refusals, and tools
    already imported; ``globs`` (fnmatch, on remote names) choose which, default all."""
    from toolctl.registry.index import Registry

    prefix = f"{service}." if prefix is None else prefix
    registry = Registry.open(settings, full=True)
    held = registry.definitions("service", service)
    section = held[0].data.get("mcp") if held else None
    plan = McpImport()
    batch: dict[str, str] = {}
    chosen = [
        t for t in tools if not globs or any(fnmatch.fnmatchcase(t[0]["name"], g) for g in globs)
    ]
    if globs and not chosen:
        raise UsageError(
            f"no tool of service '{service}' matches {', '.join(globs)}",
            hint=f"'toolctl import mcp {service}' without --tool imports them all",
        )
    for tool, pin in chosen:
        remote = str(tool["name"])
        name = registry_name(prefix, remote)
        shown = f"'{remote}'" if name == prefix + remote else f"'{remote}' (as '{name}')"
        if needs_task(tool):
            plan.skipped.append(shown)
            continue
        if tool.get("inputSchema") is not None and not isinstance(tool["inputSchema"], dict):
            # imported, it would take no arguments: every call would be one the server refuses
            plan.refused.append(f"{shown}: its inputSchema is not a JSON object")
            continue
        problem = value_problem(tool)  # nested past reading, text that is not Unicode
        if problem is not None:
            said = problem if problem.startswith("nests") else f"holds {problem}"
            plan.refused.append(f"{shown}: it {said}")
            continue
        size = len(canonical_json(tool))
        if size > MAX_TOOL_BYTES:  # a 200,000-value enum: every run of it took ~20 s
            plan.refused.append(
                f"{shown}: its definition is {size:,} bytes, more than a tool's {MAX_TOOL_BYTES:,}"
            )
            continue
        taken = registry.definitions("tool", name)
        if taken:
            holder = taken[0]
            mcp = holder.data.get("mcp") or {}
            if holder.data.get("service") == service and mcp.get("name") == remote:
                plan.present.append(name)
            else:
                plan.clashes += 1
                plan.refused.append(
                    f"{shown}: name '{name}' is already defined in {holder.file}:{holder.line}"
                )
            continue
        similar = registry.confusable_with("tool", name)
        if similar is not None:
            plan.clashes += 1
            plan.refused.append(
                f"{shown}: '{name}' is confusable with '{similar.name}' "
                f"({similar.file}:{similar.line})"
            )
            continue
        earlier = batch.get(fold(name))
        if earlier is not None:  # the first of a name the server lists twice is kept
            plan.clashes += 1
            plan.refused.append(
                f"{shown}: listed twice by the server"
                if earlier == remote
                else f"{shown}: confusable with '{earlier}' offered by the same server"
            )
            continue
        batch[fold(name)] = remote
        renamed = name != prefix + remote
        table = tool_table(service, name, tool, pin, renamed=renamed, section=section)
        found, problems = _validate_one(Tables(f"{service}/{remote}", [("tool", table)]))
        if problems:
            plan.refused.append(f"{shown}: " + "; ".join(p.split(": ", 1)[-1] for p in problems))
            continue
        plan.entries += found
    off = [e.definition.name for e in plan.entries if e.table.get("state") == "disabled"]
    if off:
        plan.notes.append(
            f"{len(off)} tool(s) written disabled, as service '{service}' says "
            f"(disabled_tools/enabled_tools): {', '.join(off)}"
        )
    return plan


# -- --update ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One imported tool whose live definition no longer matches its pin."""

    name: str
    remote: str
    file: str
    fields: list[str]
    diff: list[str]
    table: dict[str, Any] | None
    """The rewritten ``[[tool]]`` table; None when the tool vanished from the server."""


def plan_update(
    settings: Settings, service: str, tools: Sequence[LiveTool]
) -> tuple[list[Change], int, list[str]]:
    """Each tool imported from ``service`` whose pin differs from the live one (or that
    vanished), with a per-field diff; how many tools are unchanged; and the server's tools
    not imported (new ones, or left out)."""
    from toolctl.registry.index import Registry

    live: dict[str, tuple[Any, str]] = {}
    for tool, pin in tools:  # the first of a name listed twice, as the import pinned it
        live.setdefault(str(tool["name"]), (tool, pin))
    registry = Registry.open(settings, full=True)
    changes, same = [], 0
    imported: set[str] = set()
    for definition in registry.winners("tool"):
        mcp = definition.data.get("mcp")
        if definition.data.get("service") != service or not isinstance(mcp, dict):
            continue
        remote = str(mcp.get("name"))
        imported.add(remote)
        if remote not in live:
            changes.append(Change(definition.name, remote, definition.file, ["vanished"], [], None))
            continue
        tool, pin = live[remote]
        unkept = isinstance(tool.get("outputSchema"), dict) and "output_schema" not in mcp
        if mcp.get("pin") == pin and not unkept:  # (imported before outputSchema was kept)
            same += 1
            continue
        fields, diff = _diff(definition.data, mcp, tool)
        table = _updated_table(definition, tool, pin)
        changes.append(Change(definition.name, remote, definition.file, fields, diff, table))
    return changes, same, sorted(set(live) - imported)


def _diff(
    stored: Mapping[str, Any], mcp: Mapping[str, Any], live: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    pairs = [
        ("description", stored.get("description") or "", live.get("description") or ""),
        ("inputSchema", stored_schema(mcp), live.get("inputSchema")),
        ("outputSchema", stored_schema(mcp, "output_schema"), live.get("outputSchema")),
        ("annotations", mcp.get("annotations"), _annotations(live)),
    ]
    fields, lines = [], []
    for label, old, new in pairs:
        if old == new:
            continue
        fields.append(label)
        old_text = old if isinstance(old, str) else json.dumps(old, indent=2, sort_keys=True)
        new_text = new if isinstance(new, str) else json.dumps(new, indent=2, sort_keys=True)
        lines.append(f"{label}:")
        lines += [
            "  " + line
            for line in difflib.unified_diff(
                old_text.splitlines(), new_text.splitlines(), "pinned", "live", lineterm="", n=1
            )
        ]
    if not fields:
        fields.append("other fields (title, _meta...)")
    return fields, lines


def _annotations(live: Mapping[str, Any]) -> Any:
    annotations = live.get("annotations")
    return kept_annotations(annotations) if isinstance(annotations, dict) else annotations


def _updated_table(definition: Any, tool: Mapping[str, Any], pin: str) -> dict[str, Any]:
    import tomllib

    with open(definition.file, "rb") as handle:
        document = tomllib.load(handle)
    for table in document.get("tool", []):
        if table.get("name") == definition.name:
            updated = dict(table)
            mcp = dict(updated.get("mcp") or {})
            mcp["pin"] = pin
            schema = tool.get("inputSchema")
            mcp.pop("parameters", None)
            mcp.pop("annotations", None)
            mcp.pop("output_schema", None)
            if isinstance(schema, dict):
                mcp["parameters"] = schema_field(schema)
                # the server's schema is what the tool takes now: arguments written by hand
                # (a scaffold's) would be left in the file, never read
                updated.pop("arguments", None)
                updated.pop("parameters", None)
            if isinstance(tool.get("annotations"), dict):
                mcp["annotations"] = kept_annotations(tool["annotations"])
            if isinstance(tool.get("outputSchema"), dict):
                mcp["output_schema"] = schema_field(tool["outputSchema"])
            updated["mcp"] = mcp
            updated.pop("description", None)
            if tool.get("description"):
                updated["description"] = tool["description"]
            return updated
    raise RegistryError(f"{definition.file}: tool '{definition.name}' is not a table there")


def apply_update(settings: Settings, changes: Sequence[Change]) -> list[str]:
    """Rewrite the pins (and description, schema, annotations) of ``changes``; returns
    the files rewritten. A file holding other entries is rewritten with them intact."""
    import tomllib

    from toolctl.registry.dumping import registry_toml
    from toolctl.registry.writer import locked

    rewritten = []
    for change in changes:
        if change.table is None:
            continue
        path = Path(change.file)
        root = next((r for r in settings.search_path if path.is_relative_to(r)), path.parent)
        with locked(root):
            with open(path, "rb") as handle:
                document = tomllib.load(handle)
            tables = document.get("tool", [])
            document["tool"] = [change.table if t.get("name") == change.name else t for t in tables]
            temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            temporary.write_bytes(registry_toml(document).encode())
            os.replace(temporary, path)
        rewritten.append(str(path))
    return rewritten


# -- pins of resources, resource templates and prompts ([service.mcp.pins]) ------------------


def write_offer_pins(settings: Settings, definition: Any, pins: Mapping[str, Any]) -> str:
    """Set ``[service.mcp.pins]`` of service ``definition`` in its file to ``pins`` (every
    kind, maybe empty); returns the file. Other entries of the file are kept as they are."""
    import tomllib

    from toolctl.registry.dumping import registry_toml
    from toolctl.registry.writer import locked

    path = Path(definition.file)
    root = next((r for r in settings.search_path if path.is_relative_to(r)), None)
    if root is None or not path.is_file():
        raise RegistryError(
            f"service '{definition.name}' is not defined in a registry file toolctl can "
            f"rewrite ({definition.file})"
        )
    with locked(root):
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
        services = document.get("service")
        tables = services if isinstance(services, list) else [services]
        table = next(
            (
                t
                for t in tables
                if isinstance(t, dict) and definition.name in (t.get("name"), t.get("id"))
            ),
            None,
        )
        if table is None or not isinstance(table.get("mcp"), dict):
            raise RegistryError(f"{path}: service '{definition.name}' is not a table there")
        table["mcp"]["pins"] = {kind: dict(sorted(items.items())) for kind, items in pins.items()}
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_bytes(registry_toml(document).encode())
        os.replace(temporary, path)
    return str(path)
