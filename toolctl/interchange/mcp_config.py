"""`toolctl import mcp-config`: MCP client configs → ``[[service]]`` entries, no secret copied.

Each server of each file (read by ``client_configs``, in any dialect) becomes one service
with ``[service.mcp]``. Client placeholders become ``${env:NAME}`` (``placeholders``);
then every value, wherever it stands (env, headers, arguments, the URL), is decided on by
``secrets``: a secret becomes its own variable, a setting stays as it is. A server the
client keeps off is a ``disabled`` service; the tools it keeps off are written down for
`import mcp` to write disabled; its per-call timeout becomes ``tool_timeout``, its start-up
timeout ``connect_timeout``. What has no equivalent is named in a note. A server that
cannot be read, or would not be a valid service, is listed and left out; the others in
its file are imported.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolctl.errors import NameConflict
from toolctl.interchange.client_configs import DIALECTS, ClientConfig, Server, read_client_config
from toolctl.interchange.entries import Imported, Tables, _validate_one, clean
from toolctl.interchange.placeholders import Placeholders
from toolctl.interchange.secrets import (
    Scope,
    Vault,
    hide_known,
    rewrite,
    rewrite_args,
    rewrite_map,
)
from toolctl.interchange.slugs import slug
from toolctl.registry.writer import Written
from toolctl.settings import Settings


@dataclass
class ConfigImport:
    """What an import of client configs wrote, left out, noted, and asks the user to export."""

    written: list[Written] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    conflicts: list[NameConflict] = field(default_factory=list)
    """Why the registry refused servers (also in ``refused``, as lines)."""
    notes: list[str] = field(default_factory=list)
    exports: dict[str, str] = field(default_factory=dict)
    """Each variable to export before the services run, and where its value was."""
    values: dict[str, str] = field(default_factory=dict, repr=False)
    """The secrets of ``exports`` that the configs held, by variable (in memory only)."""
    read: list[tuple[str, str, int]] = field(default_factory=list)
    """Each file read: its name, the dialect it was read as, how many servers it has."""


def import_client_configs(settings: Settings, files: Sequence[Path]) -> ConfigImport:
    """Read, convert, check and register the servers of ``files``; see the module doc."""
    return import_configs(settings, [read_client_config(path) for path in files])


def import_configs(settings: Settings, configs: Sequence[ClientConfig]) -> ConfigImport:
    """Convert, check and register the servers of configs already read."""
    from toolctl.interchange.entries import check_landing, validate
    from toolctl.registry.writer import register

    result = ConfigImport()
    vault = Vault()
    converted = _once([convert(config, vault, result) for config in configs], result)
    imported: Imported = validate(converted)
    result.notes += [*imported.notes, *check_landing(imported, settings)]
    # each server on its own: one whose name the registry holds otherwise is refused, and
    # the others are imported (a directory that cannot be written refuses them all)
    for entry in imported.entries:
        try:
            result.written += register([entry], settings)
        except NameConflict as exc:
            result.conflicts.append(exc)
            result.refused.append(f"server '{entry.definition.name}': {exc}")
    used = _variables([table for tables in converted for _, table in tables.tables])
    result.exports = {k: v for k, v in sorted(vault.exports.items()) if k in used}
    result.values = {k: v for k, v in vault.values.items() if k in result.exports}
    return result


def _variables(tables: Sequence[dict[str, Any]]) -> set[str]:
    """The ``${env:NAME}`` variables the imported tables use: a refused server's are not
    asked for (its secret was given a variable before it was refused)."""
    import json
    import re

    return set(re.findall(r"\$\{env:([^}]+)\}", json.dumps(tables, ensure_ascii=False)))


def _once(converted: list[Tables], result: ConfigImport) -> list[Tables]:
    """Each server once across the files: the same server in two clients' configs (the
    usual case) is imported once; two different servers of one name (or look-alikes) are
    refused, the later one, and every other server still imported."""
    from toolctl.names import fold

    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for tables in converted:
        kept = []
        for kind, table in tables.tables:
            key = fold(str(table["name"]))
            if key not in seen:
                seen[key] = (tables.source, table)
                kept.append((kind, table))
                continue
            source, first = seen[key]
            differs = _differing(first, table)
            if not differs:
                named = (table.get("mcp") or {}).get("transport")
                if named is not None and "transport" not in (first.get("mcp") or {}):
                    first["mcp"] = {**first.get("mcp", {}), "transport": named}
                tables.notes.append(
                    f"{tables.source}: server '{table['name']}' is also in {source}, "
                    "the same: imported once"
                )
            else:
                result.refused.append(
                    f"{tables.source}: server '{table['name']}' differs from '{first['name']}' "
                    f"of {source} ({', '.join(differs)}): rename one of them in its file"
                )
        tables.tables[:] = kept
    return converted


def _differing(first: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """What two servers of one name differ in. A transport one file leaves to be found
    (Cursor writes no `type`) and the other names (VS Code's `"type": "http"`) is no
    difference (``_once`` keeps the one named)."""
    mcp, theirs = dict(first.get("mcp") or {}), dict(other.get("mcp") or {})
    if ("transport" in mcp) != ("transport" in theirs):
        mcp.pop("transport", None)
        theirs.pop("transport", None)
    keys = sorted({*first, *other} - {"mcp"})
    differs = [k for k in keys if first.get(k) != other.get(k)]
    return differs + [f"mcp.{k}" for k in sorted({*mcp, *theirs}) if mcp.get(k) != theirs.get(k)]


def convert(config: ClientConfig, vault: Vault, result: ConfigImport | None = None) -> Tables:
    """One config's servers as service tables; refused servers go to ``result.refused``."""
    tables = Tables(config.source)
    placeholders = Placeholders(
        config.workspace, Path.home(), config.inputs, bare_dollar=config.dialect == "gemini"
    )
    refused = result.refused if result is not None else tables.problems
    for server in config.servers:
        if server.skip:
            tables.notes.append(f"{config.source}: left out server '{server.name}': {server.skip}")
            continue
        if server.problem:
            refused.append(f"{config.source}: server '{server.name}'{_phrase(server.problem)}")
            continue
        table = _service_table(server, placeholders, vault, config)
        _, problems = _validate_one(Tables(config.source, [("service", table)]))
        if problems:
            why = "; ".join(p.split(": ", 1)[-1] for p in problems)
            refused.append(f"{config.source}: server '{server.name}': {why}")
            continue
        tables.tables.append(("service", table))
        tables.notes.extend(_notes(server, table["name"], config.source))
    tables.notes.extend(f"{config.source}: {note}" for note in config.notes + placeholders.notes)
    if result is not None:
        result.read.append((config.source, DIALECTS[config.dialect], len(config.servers)))
    return tables


def _phrase(problem: str) -> str:
    return f" {problem}" if problem.startswith("is ") else f": {problem}"


def _service_table(
    server: Server, placeholders: Placeholders, vault: Vault, config: ClientConfig
) -> dict[str, Any]:
    name = slug(server.name)
    section = _section(server, placeholders, Scope(name, server.name, vault), config.workspace)
    section |= {
        "connect_timeout": server.connect_timeout,
        "tool_timeout": server.tool_timeout,
        "disabled_tools": sorted(set(server.disabled_tools)),
    }
    if server.enabled_tools is not None:  # even empty, an allow-list says: no tool enabled
        section["enabled_tools"] = sorted(set(server.enabled_tools))
    table: dict[str, Any] = {"name": name}
    if name != server.name:
        table["title"] = server.name
    table["description"] = server.description
    table["state"] = "disabled" if server.disabled else None
    table["mcp"] = {k: v for k, v in section.items() if k == "enabled_tools" or clean({k: v})}
    return clean(table)


def _section(
    server: Server, placeholders: Placeholders, scope: Scope, workspace: Path
) -> dict[str, Any]:
    """How to reach the server: client placeholders resolved, then every secret hidden."""

    def text(value: str, where: str) -> str:
        return placeholders.translate(value, scope, where)

    if server.command is not None:
        args = [text(a, f"argument {n}") for n, a in enumerate(server.args, start=1)]
        env = {k: text(v, f"env {k}") for k, v in server.env.items()}
        command = text(server.command, "command")
        section = {
            "command": [command, *rewrite_args(args, scope, program=command)],
            "env": rewrite_map(env, scope, "env"),
            "cwd": (
                _cwd(text(server.cwd, "cwd"), workspace)
                if server.cwd
                else _implied_cwd([command, *args], workspace)
            ),
        }
        return dict(hide_known(section, scope))
    headers = {k: text(v, f"header {k}") for k, v in server.headers.items()}
    section = {
        "url": rewrite(text(server.url or "", "url"), scope, None, "url"),
        "transport": server.transport,
        "headers": rewrite_map(headers, scope, "header"),
    }
    return dict(hide_known(section, scope))


def _implied_cwd(argv: list[str], workspace: Path) -> str | None:
    """The workspace, for a server a client starts there that names a file of it by a
    relative path (``python server.py``, ``node ./dist/index.js``): toolctl starts it
    wherever a run is, so its service says where. None when nothing names such a file."""
    for item in argv:
        relative = item and not item.startswith(("-", "/", "~", "$")) and "://" not in item
        if relative and ("/" in item or "." in Path(item).name):
            try:
                if (workspace / item).exists():
                    return str(workspace.resolve())
            except (OSError, ValueError):  # a name the file system refuses: not a file
                continue
    return None


def _cwd(cwd: str, workspace: Path) -> str:
    """A client's cwd is relative to its workspace; toolctl's to the registry file: absolute."""
    if "\x00" in cwd:  # no path holds one (resolve() would raise): the model refuses it
        return cwd
    return str((workspace / Path(os.path.expanduser(cwd))).resolve())


def _notes(server: Server, name: str, source: str) -> list[str]:
    said = f"{source}: server '{server.name}'"
    notes = []
    if server.disabled:
        notes.append(f"{said} is disabled there: service '{name}' is written disabled")
    tools = sorted(set(server.disabled_tools))
    if tools or server.enabled_tools is not None:
        kept = (
            f"only {', '.join(sorted(set(server.enabled_tools)))} enabled"
            if server.enabled_tools is not None
            else ""
        )
        off = f"{', '.join(tools)} disabled" if tools else ""
        notes.append(
            f"{said}: {' and '.join(x for x in (kept, off) if x)}; "
            f"'toolctl import mcp {name}' writes its tools so"
        )
    for key, why in sorted(server.unmapped.items()):
        notes.append(f"{said}: '{key}' not imported: {why}")
    return notes
