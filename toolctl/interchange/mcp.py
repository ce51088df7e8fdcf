"""MCP in: a server's live tools as pinned ``[[tool]]`` entries, and the MCP server configs of
Claude Desktop, Claude Code, Cursor and VS Code as ``[[service]]`` entries.

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
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolctl.errors import RegistryError, UsageError
from toolctl.interchange.entries import Tables, _validate_one, clean, read_json
from toolctl.interchange.slugs import MAX_LENGTH, slug
from toolctl.names import NAME_PATTERN, fold
from toolctl.registry.writer import Entry
from toolctl.settings import Settings

LiveTool = tuple[Mapping[str, Any], str]
"""A tool object as the server listed it, and its pin."""

_LOOKALIKES = str.maketrans(
    # Cyrillic, Greek and other letters drawn like ASCII ones (a subset of Unicode's
    # confusables.txt: the ones a tool name could use to pass for another)
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04bb\u04cf\u051b\u051d\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405\u03bf\u03b1\u03bd\u03c4\u03b9\u03ba\u03c1\u039f\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u03a1\u03a4\u03a5\u03a7\u0131\u2113",
    "aeopcyxijsdhlqwABEKMHOPCTXIJSoavtikpOABEZHIKMNPTYXil",
)


def skeleton(name: str) -> str:
    """``name`` with lookalike letters replaced by the ASCII letters they imitate."""
    return unicodedata.normalize("NFKC", name).translate(_LOOKALIKES)


def registry_name(prefix: str, remote: str) -> str:
    """The registry name of remote tool ``remote``: ``prefix`` + its name (or its slug)."""
    ascii_form = skeleton(remote)
    whole = prefix + ascii_form
    if re.match(NAME_PATTERN, whole) and len(whole) <= MAX_LENGTH * 2:
        return whole
    return prefix + slug(ascii_form)


@dataclass
class McpImport:
    """What an import of a service's tools will write, refuse and leave as it is."""

    entries: list[Entry] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    """Registry names of tools already imported from this service (same remote name)."""
    notes: list[str] = field(default_factory=list)


def tool_table(
    service: str, name: str, tool: Mapping[str, Any], pin: str, *, renamed: bool
) -> dict[str, Any]:
    """The ``[[tool]]`` table of one live tool (``renamed``: its name is not prefix + its
    remote name, which then becomes the title)."""
    remote = str(tool["name"])
    schema = tool.get("inputSchema")
    mcp: dict[str, Any] = {"name": remote, "pin": pin}
    if isinstance(schema, dict):
        mcp["parameters"] = schema
    if isinstance(tool.get("annotations"), dict):
        mcp["annotations"] = tool["annotations"]
    table: dict[str, Any] = {"name": name}
    title = tool.get("title")
    if renamed:
        table["title"] = remote
    elif isinstance(title, str) and title:
        table["title"] = title
    table |= {"description": tool.get("description"), "service": service, "mcp": mcp}
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
        taken = registry.definitions("tool", name)
        if taken:
            holder = taken[0]
            mcp = holder.data.get("mcp") or {}
            if holder.data.get("service") == service and mcp.get("name") == remote:
                plan.present.append(name)
            else:
                plan.refused.append(
                    f"{shown}: name '{name}' is already defined in {holder.file}:{holder.line}"
                )
            continue
        similar = registry.confusable_with("tool", name)
        if similar is not None:
            plan.refused.append(
                f"{shown}: '{name}' is confusable with '{similar.name}' "
                f"({similar.file}:{similar.line})"
            )
            continue
        earlier = batch.setdefault(fold(name), remote)
        if earlier != remote:
            plan.refused.append(f"{shown}: confusable with '{earlier}' offered by the same server")
            continue
        table = tool_table(service, name, tool, pin, renamed=name != prefix + remote)
        found, problems = _validate_one(Tables(f"{service}/{remote}", [("tool", table)]))
        if problems:
            plan.refused.append(f"{shown}: " + "; ".join(p.split(": ", 1)[-1] for p in problems))
            continue
        plan.entries += found
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
) -> tuple[list[Change], int]:
    """Each tool imported from ``service`` whose pin differs from the live one (or that
    vanished), with a per-field diff; and how many tools are unchanged."""
    from toolctl.registry.index import Registry

    live = {str(tool["name"]): (tool, pin) for tool, pin in tools}
    registry = Registry.open(settings, full=True)
    changes, same = [], 0
    for definition in registry.winners("tool"):
        mcp = definition.data.get("mcp")
        if definition.data.get("service") != service or not isinstance(mcp, dict):
            continue
        remote = str(mcp.get("name"))
        if remote not in live:
            changes.append(Change(definition.name, remote, definition.file, ["vanished"], [], None))
            continue
        tool, pin = live[remote]
        if mcp.get("pin") == pin:
            same += 1
            continue
        fields, diff = _diff(definition.data, mcp, tool)
        table = _updated_table(definition, tool, pin)
        changes.append(Change(definition.name, remote, definition.file, fields, diff, table))
    return changes, same


def _diff(
    stored: Mapping[str, Any], mcp: Mapping[str, Any], live: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    pairs = [
        ("description", stored.get("description") or "", live.get("description") or ""),
        ("inputSchema", mcp.get("parameters"), live.get("inputSchema")),
        ("annotations", mcp.get("annotations"), live.get("annotations")),
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
        fields.append("other fields (title, outputSchema, _meta...)")
    return fields, lines


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
            if isinstance(schema, dict):
                mcp["parameters"] = schema
            if isinstance(tool.get("annotations"), dict):
                mcp["annotations"] = tool["annotations"]
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

    import tomli_w

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
            temporary.write_bytes(tomli_w.dumps(document).encode())
            os.replace(temporary, path)
        rewritten.append(str(path))
    return rewritten


# -- mcp-config files ----------------------------------------------------------------------

SECRET_KEY = re.compile(r"(?i)(key|token|secret|passw|auth|credential|cookie|session)")


def convert_config(data: Any, source: str) -> tuple[Tables, dict[str, str]]:
    """A Claude Desktop / Claude Code / Cursor (``mcpServers``) or VS Code (``servers``)
    config → ``[[service]]`` tables; returns them and the variables to export (NAME →
    where its value was)."""
    if not isinstance(data, dict):
        raise UsageError(f"{source}: not an MCP config: expected a JSON object")
    servers = data.get("mcpServers", data.get("servers"))
    if servers is None and isinstance(data.get("mcp"), dict):  # VS Code settings.json
        servers = data["mcp"].get("servers")
    if not isinstance(servers, dict):
        raise UsageError(
            f"{source}: no 'mcpServers' (Claude, Cursor) or 'servers' (VS Code) object"
        )
    result = Tables(source)
    exports: dict[str, str] = {}
    for foreign, server in servers.items():
        if not isinstance(server, dict):
            result.problems.append(f"server '{foreign}' is not a JSON object")
            continue
        section, trouble = _server_section(str(foreign), server, exports)
        if trouble:
            result.problems.append(f"server '{foreign}': {trouble}")
            continue
        name = slug(str(foreign))
        table: dict[str, Any] = {"name": name, "mcp": section}
        if name != foreign:
            table["title"] = str(foreign)
        result.tables.append(("service", table))
    return result, exports


def _server_section(
    foreign: str, server: Mapping[str, Any], exports: dict[str, str]
) -> tuple[dict[str, Any], str]:
    kind = server.get("type", server.get("transport"))
    if "command" in server:
        command = server["command"]
        args = server.get("args") or []
        if not isinstance(command, str) or not command:
            return {}, "'command' is not a non-empty string"
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            return {}, "'args' is not a list of strings"
        section: dict[str, Any] = {"command": [command, *args]}
        env = server.get("env") or {}
        if not isinstance(env, dict):
            return {}, "'env' is not an object"
        section["env"] = secret_references(foreign, env, exports, every=True)
        if isinstance(server.get("cwd"), str):
            section["cwd"] = server["cwd"]
        return clean(section), ""
    if "url" in server or "serverUrl" in server:
        url = server.get("url", server.get("serverUrl"))
        if kind == "sse":
            return {}, "the old HTTP+SSE transport ('type': 'sse') is not supported"
        if not isinstance(url, str):
            return {}, "'url' is not a string"
        headers = server.get("headers") or {}
        if not isinstance(headers, dict):
            return {}, "'headers' is not an object"
        section = {"url": url, "headers": secret_references(foreign, headers, exports, every=False)}
        return clean(section), ""
    return {}, "neither 'command' (stdio) nor 'url' (streamable HTTP)"


def secret_references(
    foreign: str, values: Mapping[str, Any], exports: dict[str, str], *, every: bool
) -> dict[str, str]:
    """Literal values as ``${env:NAME}`` references (every env value; headers that carry
    a credential): no secret is copied into the registry."""
    out = {}
    for key, value in values.items():
        text = str(value)
        if "${env:" in text or (not every and not SECRET_KEY.search(str(key))):
            out[str(key)] = text
            continue
        for inner in re.findall(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}", text):
            exports.setdefault(inner, f"server '{foreign}', {key}")  # ${VAR} (Claude Code)
        if re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", text):
            out[str(key)] = "${env:" + text[2:]
            continue
        variable = _variable(foreign, str(key))
        out[str(key)] = "${env:" + variable + "}"
        exports.setdefault(variable, f"server '{foreign}', {key}")
    return out


def _variable(foreign: str, key: str) -> str:
    base = key if re.fullmatch(r"[A-Z_][A-Z0-9_]*", key) else f"{foreign}_{key}"
    return re.sub(r"[^A-Za-z0-9]+", "_", base).strip("_").upper() or "MCP_SECRET"


def read_config(path: Path) -> tuple[Tables, dict[str, str]]:
    return convert_config(read_json(path), str(path))
