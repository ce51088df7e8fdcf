"""MCP client configuration files as people write them, read into one shape.

The dialects (each looked up in its client's documentation):

* ``mcpServers`` object: Claude Desktop, Claude Code (``.mcp.json``, and ``~/.claude.json``
  with each project's servers under ``projects``; ``type`` stdio | http | sse), Cursor,
  Windsurf (``serverUrl``), Gemini CLI (``url`` is the old HTTP+SSE transport, ``httpUrl``
  streamable HTTP; ``timeout`` in ms; ``includeTools`` and ``excludeTools``), Cline
  (``type`` streamableHttp; ``autoApprove``), Roo Code (``alwaysAllow``,
  ``disabledTools``), Kiro (``autoApprove``, ``disabledTools``);
* ``servers`` (VS Code ``.vscode/mcp.json``, with ``inputs``) or ``mcp.servers`` (its
  ``settings.json``), JSON with comments and trailing commas;
* ``context_servers`` (Zed ``settings.json``, JSONC; ``command`` a string or, in older
  versions, ``{path, args, env}``);
* ``[mcp_servers.NAME]`` tables (Codex ``config.toml``: ``bearer_token_env_var``,
  ``env_vars``, ``http_headers``, ``env_http_headers``, ``enabled``, ``enabled_tools``,
  ``disabled_tools``, ``startup_timeout_sec``, ``tool_timeout_sec``);
* a ``mcpServers`` list (Continue ``config.yaml`` and ``.continue/mcpServers/*.yaml``:
  ``name``, ``type`` sse | streamable-http, ``requestOptions.headers``).

A file is read as JSON, then JSONC, TOML or YAML by its name; one that none of them reads
is one line naming what was tried. Each server becomes a :class:`Server`; what a server
says that toolctl has no place for is kept in ``unmapped`` for the caller to name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolctl.errors import UsageError
from toolctl.interchange.documents import bounded, short
from toolctl.interchange.entries import read_text

DIALECTS = {
    "claude": "Claude Desktop / Claude Code / Cursor",
    "windsurf": "Windsurf",
    "gemini": "Gemini CLI",
    "cline": "Cline",
    "roo": "Roo Code",
    "kiro": "Kiro",
    "vscode": "VS Code",
    "zed": "Zed",
    "codex": "Codex",
    "continue": "Continue",
}
TRIED = (
    "JSON and JSONC (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Gemini CLI, "
    "Cline, Roo Code, Kiro, Zed), TOML (Codex) and YAML (Continue)"
)
NO_EQUIVALENT = {
    "autoApprove": "toolctl never asks before a call: every run is explicit",
    "alwaysAllow": "toolctl never asks before a call: every run is explicit",
    "trust": "toolctl never asks before a call: every run is explicit",
    "envFile": "toolctl does not read env files: export its variables",
    "watchPaths": "toolctl does not restart servers on file changes",
    "oauth": "toolctl sends no OAuth sign-in for this server: put a token in its headers",
    "auth": "toolctl sends no OAuth sign-in for this server: put a token in its headers",
    "authProviderType": "toolctl sends no OAuth sign-in for this server",
    "headersHelper": "toolctl runs no helper to make headers: set them in [service.mcp]",
    "settings": "settings of a Zed extension are the extension's own",
    "required": "toolctl starts a server only when one of its tools runs",
    "dev": "toolctl has no development mode for servers",
}
KNOWN = {
    "type", "transport", "command", "args", "env", "cwd", "url", "httpUrl", "serverUrl",
    "headers", "disabled", "enabled", "disabledTools", "disabled_tools", "enabled_tools",
    "includeTools", "excludeTools", "timeout", "description", "name", "source",
    "bearer_token_env_var", "env_vars", "http_headers", "env_http_headers",
    "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "requestOptions",
    "connectionTimeout", "networkTimeout", "extensionName", "gallery", "version",
}  # fmt: skip
"""Fields a server may have that are read (or deliberately ignored as display-only)."""


@dataclass
class Server:
    """One server of a client config, in the client's own terms, before any rewriting."""

    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    transport: str | None = None
    """"sse" (the old HTTP+SSE transport), "http" (streamable HTTP), None: not said."""
    headers: dict[str, str] = field(default_factory=dict)
    disabled: bool = False
    enabled_tools: list[str] | None = None
    disabled_tools: list[str] = field(default_factory=list)
    tool_timeout: float | None = None
    connect_timeout: float | None = None
    description: str | None = None
    unmapped: dict[str, str] = field(default_factory=dict)
    """Fields without an equivalent, and why."""
    problem: str | None = None
    """Why the server cannot be imported (malformed): it is listed, the others import."""
    skip: str | None = None
    """Why the server is left out though nothing is wrong with it (a note)."""


@dataclass
class ClientConfig:
    """A config file read: its dialect, servers, VS Code inputs and the workspace it is in."""

    source: str
    dialect: str
    servers: list[Server]
    workspace: Path
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def read_client_config(path: Path) -> ClientConfig:
    """Read ``path`` in whichever dialect it is written."""
    data = _parse(path, read_text(path))
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not an MCP config: expected a JSON object")
    dialect, raw = _servers(data, path)
    notes: list[str] = []
    if isinstance(raw, dict) and isinstance(data.get("projects"), dict):
        raw = _with_projects(raw, data["projects"], notes)
    read = _read_list if isinstance(raw, list) else _read_map
    servers = read(raw, dialect, path)
    given = data.get("inputs")
    inputs = {
        str(item["id"]): item
        for item in (given if isinstance(given, list) else [])
        if isinstance(item, dict) and "id" in item
    }
    return ClientConfig(str(path), dialect, servers, workspace_of(path), inputs, notes)


def _with_projects(
    servers: dict[str, Any], projects: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    """Claude Code's ``~/.claude.json`` keeps each project's own servers under
    ``projects.PATH.mcpServers``: they are read too; a name already taken is left out."""
    merged = dict(servers)
    for folder, project in projects.items():
        found = project.get("mcpServers") if isinstance(project, dict) else None
        for name, server in (found if isinstance(found, dict) else {}).items():
            if name in merged and merged[name] != server:
                notes.append(f"left out server '{name}' of project {folder}: the name is taken")
            merged.setdefault(name, server)
    return merged


def workspace_of(path: Path) -> Path:
    """The folder a config belongs to: the one holding ``.vscode/``, ``.cursor/``, ``.roo/``,
    ``.kiro/``, ``.gemini/``, ``.zed/``, ``.codex/`` or ``.continue/``; else the file's own."""
    folder = path.resolve().parent
    for parent in [folder, *folder.parents]:
        if parent.name in (".vscode", ".cursor", ".roo", ".kiro", ".gemini", ".zed", ".codex",
                           ".continue", ".windsurf", ".claude"):  # fmt: skip
            return parent.parent
    return folder


def _parse(path: Path, text: str) -> Any:
    suffix = path.suffix.lower()
    readers: list[Callable[[str], Any]]
    if suffix == ".toml":
        readers = [_toml]
    elif suffix in (".yaml", ".yml"):
        readers = [_yaml]
    else:
        readers = [json.loads, _jsonc, _toml, _yaml] if suffix != ".json" else [json.loads, _jsonc]
    first: Exception | None = None
    for reader in readers:
        try:
            data = reader(text)
        except Exception as exc:  # each parser has its own error class
            first = first or exc
            continue
        if isinstance(data, (dict, list)):
            return bounded(data, str(path))
    raise UsageError(
        f"{path}: not an MCP client config toolctl can read; tried {TRIED}",
        hint=f"the first reader said: {_first_line(first)}",
    )


def _jsonc(text: str) -> Any:
    import json5

    return json5.loads(text)


def _toml(text: str) -> Any:
    import tomllib

    return tomllib.loads(text)


def _yaml(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def _first_line(exc: Exception | None) -> str:
    return short(exc) if exc is not None else "nothing"


def _servers(data: dict[str, Any], path: Path) -> tuple[str, Any]:
    if isinstance(data.get("mcp_servers"), dict):
        return "codex", data["mcp_servers"]
    if isinstance(data.get("context_servers"), dict):
        return "zed", data["context_servers"]
    servers = data.get("mcpServers")
    if isinstance(servers, list):
        return "continue", servers
    if isinstance(servers, dict):
        return _flavour(servers, path), servers
    if isinstance(data.get("servers"), dict):
        return "vscode", data["servers"]
    if isinstance(data.get("mcp"), dict) and isinstance(data["mcp"].get("servers"), dict):
        return "vscode", data["mcp"]["servers"]
    raise UsageError(
        f"{path}: no 'mcpServers' (Claude Desktop, Claude Code, Cursor, Windsurf, Gemini CLI, "
        "Cline, Roo Code, Kiro, Continue), 'servers' (VS Code), 'context_servers' (Zed) or "
        "'mcp_servers' (Codex) in it"
    )


def _flavour(servers: Mapping[str, Any], path: Path) -> str:
    """Which client wrote an ``mcpServers`` object: by where it lives, then by its fields."""
    where = path.resolve().as_posix()
    for marker, dialect in (
        ("/.gemini/", "gemini"), ("/windsurf/", "windsurf"), ("cline_mcp_settings", "cline"),
        ("/.roo/", "roo"), ("mcp_settings.json", "roo"), ("/.kiro/", "kiro"),
    ):  # fmt: skip
        if marker in where:
            return dialect
    fields = {key for server in servers.values() if isinstance(server, dict) for key in server}
    values = {str(s.get("type")) for s in servers.values() if isinstance(s, dict)}
    if fields & {"httpUrl", "trust", "includeTools", "excludeTools"}:
        return "gemini"
    if "serverUrl" in fields:
        return "windsurf"
    if "alwaysAllow" in fields:
        return "roo"
    if "streamableHttp" in values or "autoApprove" in fields:
        return "cline"
    return "claude"


def _read_map(raw: Mapping[str, Any], dialect: str, path: Path) -> list[Server]:
    from toolctl.interchange.client_servers import server_of

    return [server_of(str(name), value, dialect) for name, value in raw.items()]


def _read_list(raw: list[Any], dialect: str, path: Path) -> list[Server]:
    from toolctl.interchange.client_servers import server_of

    servers = []
    for position, item in enumerate(raw, start=1):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name:
            servers.append(Server(f"#{position}", problem="a server without a 'name'"))
            continue
        servers.append(server_of(name, item, dialect))
    return servers
