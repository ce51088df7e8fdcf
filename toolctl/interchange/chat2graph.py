"""Chat2Graph YAML (``tools:``, ``actions:``, ``toolkit:`` chains) → tools and actions.

Names: Chat2Graph names actions in words (``"browser using action"``); a name toolctl
does not accept becomes a slug (``browser-using-action``) and the original is kept as
``title`` (see ``interchange.slugs``); every reference follows the same mapping.

Two ways to read the chains:

* separate (the default): each ``toolkit:`` chain ``[a, b, c]`` becomes Next edges a→b
  and b→c of score 1.0; chains stay apart, and every action under ``actions:`` is kept.
* ``as_loaded``: the graph Chat2Graph's ``AgenticService.load`` builds. Its loader reads
  ``actions:`` (a later action of the same name replaces an earlier one; tool references
  to unknown tools are dropped), keeps only the chain entries that name such an action,
  and then links *every* chained action to the one before it in one flat sequence: the
  last action of a chain leads to the first of the next, and an action listed twice gets
  an edge from each predecessor. Actions in no chain are not in its graph.

An action's ``tools`` become Call edges of score 1.0 (Chat2Graph's default) either way.
A ``LOCAL_TOOL`` is a Python class in Chat2Graph (``module_path`` + ``name``); toolctl runs
it with a small shim that imports the class and calls its ``function`` with the JSON
arguments, which works where Chat2Graph is importable and the function needs no injected
services. An ``MCP`` tool is an MCP server (a tool group): it becomes a service with
``[service.mcp]`` (``STDIO``: command, args, env; ``STREAMABLE_HTTP``: url), whose tools
arrive with ``toolctl import mcp SERVICE`` (``SSE``: the old HTTP+SSE transport); secrets are
decided on per value as for `import mcp-config`. Call edges to an MCP group are dropped (an
edge names a tool, not a server).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from toolctl.arguments import MAX_TIMEOUT
from toolctl.errors import UsageError
from toolctl.interchange.entries import Tables, clean
from toolctl.interchange.slugs import named, slug

SCORE = 1.0
SHIM = """\
import asyncio, importlib, inspect, json, sys
module, name = sys.argv[1], sys.argv[2]
tool = getattr(importlib.import_module(module), name)()
result = tool.function(**json.load(sys.stdin))
if inspect.isawaitable(result):
    result = asyncio.run(result)
print(result if isinstance(result, str) else json.dumps(result, ensure_ascii=False))
"""


def convert(data: Any, source: str, *, as_loaded: bool = False) -> Tables:
    if not isinstance(data, dict):
        raise UsageError(
            f"{source}: not a Chat2Graph configuration",
            hint="expected a mapping with tools:, actions: and toolkit:",
        )
    result = Tables(source)
    tools, left_out = _tools(_list(data, "tools", source), source, result.notes, as_loaded)
    chains = [_chain(chain, source) for chain in _list(data, "toolkit", source)]
    if as_loaded:
        actions = _loaded_actions(data, chains, tools, left_out, source, result.notes)
    else:
        actions = _separate_actions(data, chains, left_out, source)
    result.tables.extend(_mcp_services(_list(data, "tools", source), source, result.notes))
    if tools:  # said once: what the module docstring says, where the user looks
        result.notes.append(
            f"{source}: {len(tools)} LOCAL_TOOL tool(s) run through a shim that imports the "
            "class and calls its function with the JSON arguments, where Chat2Graph is "
            "importable: one whose function takes services Chat2Graph injects fails; each "
            "takes any object (Chat2Graph reads its parameters from docstrings)"
        )
    result.tables.extend(("tool", t) for t in tools.values())
    result.tables.extend(("action", clean(a)) for a in actions.values())
    return result


def _separate_actions(
    data: dict[str, Any], chains: list[list[Any]], left_out: set[str], source: str
) -> dict[str, dict[str, Any]]:
    actions: dict[str, dict[str, Any]] = {}
    declared = _list(data, "actions", source)
    for number, raw in enumerate([*declared, *(a for chain in chains for a in chain)]):
        name = _name(raw, "action", source)
        if name not in actions:
            actions[name] = _action(raw, name, left_out, source)
        elif number < len(declared) and _action(raw, name, left_out, source) != actions[name]:
            _twice("action", name, source, "differently")  # (a chain's bare name: a use)
    for chain in chains:
        names = [_name(a, "action", source) for a in chain]
        for before, after in pairwise(names):
            _link(actions[before], after)
    return actions


def _loaded_actions(
    data: dict[str, Any],
    chains: list[list[Any]],
    tools: dict[str, dict[str, Any]],
    left_out: set[str],
    source: str,
    notes: list[str],
) -> dict[str, dict[str, Any]]:
    """The graph ``AgenticService.load`` builds (see the module docstring)."""
    declared: dict[str, Any] = {}
    for raw in _list(data, "actions", source):
        if isinstance(raw, dict):
            name = str(raw.get("name", ""))
            if declared.get(name, raw) != raw:
                notes.append(
                    f"{source}: action '{name}' is given twice: the later one is kept, as "
                    "Chat2Graph's loader keeps it"
                )
            declared[name] = raw  # Chat2Graph: the later one replaces
    sequence = [
        name
        for chain in chains
        for ref in chain
        if (name := _name(ref, "action", source)) in declared
    ]
    dropped = sorted(
        {_name(ref, "action", source) for chain in chains for ref in chain} - set(declared)
    )
    if dropped:
        notes.append(
            f"{source}: left out chain entries naming no action under actions: "
            f"({', '.join(dropped)}), as Chat2Graph's loader does"
        )
    unchained = sorted(set(declared) - set(sequence))
    if unchained:
        notes.append(
            f"{source}: left out actions in no toolkit chain ({', '.join(unchained)}): "
            "Chat2Graph's loader does not put them in its graph"
        )
    known = set(tools) | left_out
    actions: dict[str, dict[str, Any]] = {}
    for name in sequence:
        if name not in actions:
            raw = declared[name]
            given = _listed(raw.get("tools") or [], name, source)
            refs = [t for t in given if isinstance(t, dict) and "name" in t]
            unknown = _refs(refs) - known  # Chat2Graph's loader drops them without a word
            actions[name] = _action({**raw, "tools": refs}, name, left_out | unknown, source)
    for before, after in pairwise(sequence):
        _link(actions[before], after)
    return actions


def _listed(value: Any, action: str, source: str) -> list[Any]:
    if not isinstance(value, list):
        raise UsageError(f"{source}: action '{action}': 'tools' must be a list")
    return value


def _refs(refs: list[Any]) -> set[str]:
    return {str(r["name"]) for r in refs}


def _link(action: dict[str, Any], after: str) -> None:
    edges = action.setdefault("next", [])
    if all(e["action"] != slug(after) for e in edges):
        edges.append({"action": slug(after), "score": SCORE})


def _list(data: dict[str, Any], key: str, source: str) -> list[Any]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise UsageError(f"{source}: '{key}' must be a list")
    return value


def _name(ref: Any, what: str, source: str) -> str:
    """A reference is the YAML anchor's mapping (with ``name``) or a bare name."""
    name = ref.get("name") if isinstance(ref, dict) else ref
    if not isinstance(name, str) or not name:  # not echoed: it may hold an env or headers
        keys = (
            ", ".join(sorted(map(str, ref)))[:80] if isinstance(ref, dict) else type(ref).__name__
        )
        article = "an" if what[:1] in "aeiou" else "a"
        raise UsageError(f"{source}: {article} {what} without a name (it holds: {keys})")
    return name


def _chain(chain: Any, source: str) -> list[Any]:
    return chain if isinstance(chain, list) else [chain]


def _tools(
    raws: list[Any], source: str, notes: list[str], as_loaded: bool
) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """The LOCAL tools by name, and the names of the others (MCP servers, what does not
    map). A name given twice the same is one tool; given twice differently it is refused
    (exit 3, as TrustGraph's and tool_agent's imports refuse it), but for ``as_loaded``,
    where the later one is kept, as Chat2Graph's loader keeps it, and that is said."""
    tools: dict[str, dict[str, Any]] = {}
    left_out: set[str] = set()
    servers: set[str] = set()
    local: set[str] = set()
    for raw in raws:
        name = _name(raw, "tool", source)
        kind = raw.get("type", "LOCAL_TOOL") if isinstance(raw, dict) else None
        module = raw.get("module_path") if isinstance(raw, dict) else None
        (servers if kind == "MCP" else local).add(name)
        if name in servers and name in local:
            _twice("tool", name, source, "as a LOCAL_TOOL and as an MCP server")
        if kind != "LOCAL_TOOL" or not module:
            left_out.add(name)
            if kind == "MCP":
                continue  # a server: see _mcp_services
            notes.append(
                f"{source}: left out tool '{name}' ({kind or 'no type'}): only LOCAL_TOOL "
                "tools with a module_path map to toolctl; its Call edges are dropped too"
            )
            continue
        table = _tool(raw, name, module)
        held = tools.setdefault(name, table)
        if held != table:
            if not as_loaded:
                _twice("tool", name, source, "differently")
            notes.append(
                f"{source}: tool '{name}' is given twice: the later one is kept, as "
                "Chat2Graph's loader keeps it"
            )
            tools[name] = table
    return tools, left_out


def _twice(kind: str, name: str, source: str, how: str) -> None:
    from toolctl.errors import RegistryError

    raise RegistryError(
        f"{source}: {kind} '{name}' is given twice, {how}",
        hint="rename one of them, or remove one (with --as-loaded the later one is kept)"
        if how == "differently"
        else "rename one of them",
    )


def _tool(raw: dict[str, Any], name: str, module: str) -> dict[str, Any]:
    table = {
        "description": raw.get("desc") or raw.get("description"),
        "tags": ["chat2graph"],
        "parameters": {"type": "object"},  # Chat2Graph reads the schema from docstrings
        "local": {"command": ["python3", "-c", SHIM, _literal(module), _literal(name)]},
    }
    return clean(named(table, name))


def _literal(item: str) -> str:
    """A command item taken as it is: its braces doubled, so none reads as a placeholder."""
    return item.replace("{", "{{").replace("}", "}}")


def _action(raw: Any, name: str, left_out: set[str], source: str) -> dict[str, Any]:
    described = raw if isinstance(raw, dict) else {}
    refs = described.get("tools") or []
    if not isinstance(refs, list):
        raise UsageError(f"{source}: action '{name}': 'tools' must be a list")
    calls = [_name(t, "tool", source) for t in refs]
    table = {
        "description": described.get("desc") or described.get("description"),
        "tools": [
            {"tool": slug(t), "score": SCORE} for t in dict.fromkeys(calls) if t not in left_out
        ],
    }
    return named(table, name)


def _mcp_services(
    raws: list[Any], source: str, notes: list[str]
) -> list[tuple[str, dict[str, Any]]]:
    """Each ``MCP`` tool (a server) as a ``[service.mcp]`` table, once per name; secrets
    (by name or shape, in env, arguments or the URL) become ``${env:...}`` references."""
    from toolctl.interchange.secrets import Vault

    services: dict[str, tuple[str, dict[str, Any]]] = {}
    vault = Vault()
    for raw in raws:
        if not isinstance(raw, dict) or raw.get("type") != "MCP":
            continue
        name = _name(raw, "tool", source)
        if name in services:
            continue
        config = raw.get("mcp_transport_config")
        section = _mcp_section(name, config if isinstance(config, dict) else {}, vault, source)
        if isinstance(section, str):
            notes.append(f"{source}: left out MCP server '{name}': {section}")
            continue
        table = {"description": raw.get("desc") or raw.get("description"), "mcp": clean(section)}
        services[name] = ("service", clean(named(table, name)))
        notes.append(
            f"{source}: MCP server '{name}' became service '{slug(name)}': import its tools "
            f"with 'toolctl import mcp {slug(name)}'; Call edges to it are dropped"
        )
    if vault.exports:
        notes.append(
            f"{source}: secrets were not copied; export before running the MCP servers' "
            f"tools: {', '.join(sorted(vault.exports))}"
        )
    return list(services.values())


def _mcp_section(
    name: str, config: dict[str, Any], vault: Any, source: str
) -> dict[str, Any] | str:
    """A server's ``[service.mcp]``, or why it has none (a transport toolctl lacks)."""
    from toolctl.interchange.secrets import Scope, hide_known

    scope = Scope(slug(name), name, vault)
    section = _mcp_transport(name, config, scope, source)
    return section if isinstance(section, str) else dict(hide_known(section, scope))


def _mcp_transport(
    name: str, config: dict[str, Any], scope: Any, source: str
) -> dict[str, Any] | str:
    """``_mcp_section`` before the secrets it took are hidden wherever else they stand."""
    from toolctl.interchange.secrets import rewrite, rewrite_args, rewrite_map

    transport = str(config.get("transport_type", "STDIO")).upper()
    command = config.get("command", "npx")  # Chat2Graph's McpTransportConfig defaults
    if transport == "STDIO" and isinstance(command, str) and command:
        args = config.get("args") or []
        env = config.get("env") or {}
        if not isinstance(args, list) or not isinstance(env, dict):
            raise UsageError(f"{source}: MCP tool '{name}': args must be a list, env a map")
        return {
            "command": [command, *rewrite_args([str(a) for a in args], scope, program=command)],
            "env": rewrite_map({str(k): str(v) for k, v in env.items()}, scope, "env"),
        }
    url = config.get("url", "http://localhost:8931")
    if transport in ("STREAMABLE_HTTP", "SSE") and isinstance(url, str) and url:
        headers = config.get("headers") or {}
        if not isinstance(headers, dict):
            raise UsageError(f"{source}: MCP tool '{name}': headers must be a map")
        section: dict[str, Any] = {
            "url": rewrite(url, scope, None, "url"),
            "transport": "sse" if transport == "SSE" else "http",
            "headers": rewrite_map({str(k): str(v) for k, v in headers.items()}, scope, "header"),
        }
        timeout = config.get("timeout")  # the HTTP timeout the MCP SDK's client is given
        if isinstance(timeout, int | float) and not isinstance(timeout, bool):
            if not 0 < timeout <= MAX_TIMEOUT:  # (a 400-digit int: no float holds it)
                return "its timeout is not seconds above 0, at most a day"
            section["connect_timeout"] = float(timeout)
        return section
    if transport in ("STDIO", "STREAMABLE_HTTP", "SSE"):
        given = "command" if transport == "STDIO" else "url"
        return f"{transport} with no {given} toolctl can use"
    return f"{transport}: toolctl's MCP client speaks stdio, streamable HTTP and HTTP+SSE"
