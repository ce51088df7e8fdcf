"""TrustGraph tool services: config items out (the JSON `tg-put-config-item` takes) and in.

A TrustGraph *tool service* (``tool-service/NAME``) is a toolctl service with
``[service.pulsar]``; a TrustGraph *tool* (``tool/NAME``, type ``tool-service``) is a
toolctl tool with ``service`` and ``config``, whose config values TrustGraph keeps as
top-level keys next to its own fields. Only Pulsar services, and tools on them, export.

On import, a TrustGraph *MCP server* item (``mcp/ID``: ``url``, ``remote-name``,
``auth-token``) becomes a service with ``[service.mcp]`` named after its ID (the token
never copied: an ``Authorization`` header reading ``${env:ID_AUTH_TOKEN}``; a password or
token in the ``url`` becomes a reference as ``secrets`` decides), and an
``mcp-tool`` tool a tool on that service with ``[tool.mcp]``, its ``name`` the item's
``remote-name`` when the item is in the same file (TrustGraph's default: the ID). Such
tools arrive unpinned; ``toolctl import mcp SERVICE --update --yes`` pins them.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolctl.errors import UsageError
from toolctl.interchange.documents import parse_json, short
from toolctl.interchange.entries import Tables, clean, items_of, read_text
from toolctl.interchange.slugs import named, slug

TOOL_FIELDS = ("type", "id", "name", "description", "service", "arguments")
"""A tool's own fields in TrustGraph (``id`` is what it is stored under, ``name`` what the
agent's model is shown); every other key of a tool-service tool is its config."""
ARGUMENT_KEYS = ("name", "type", "description", "required", "default", "enum")
LISTED = 10

# -- export ---------------------------------------------------------------------------------


def export_items(
    tools: Sequence[Mapping[str, Any]],
    services: Mapping[str, Mapping[str, Any]],
    *,
    narrowed: bool,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Config items for the tools on Pulsar services and those services, sorted by key.

    Without ``narrowed`` every Pulsar service is exported, used or not; with it only the
    services the chosen tools use.
    """
    items: list[dict[str, Any]] = []
    notes: list[str] = []
    skipped: list[str] = []
    used: set[str] = set()
    for tool in tools:
        service = services.get(tool.get("service") or "")
        if service is None or service.get("transport") != "pulsar":
            skipped.append(tool["name"])
            continue
        value = _tool_value(tool, notes)
        if value is not None:
            items.append({"key": f"tool/{tool['name']}", "value": value})
            used.add(service["name"])
    if not narrowed:
        used.update(n for n, s in services.items() if s.get("transport") == "pulsar")
    items += [{"key": f"tool-service/{n}", "value": _service_value(services[n])} for n in used]
    if skipped:
        shown = ", ".join(skipped[:LISTED]) + (", ..." if len(skipped) > LISTED else "")
        notes.append(
            f"left out {len(skipped)} tool(s) not on a Pulsar service "
            f"(only those map to TrustGraph): {shown}"
        )
    return sorted(items, key=lambda item: str(item["key"])), notes


def announcement_items(
    service: Mapping[str, Any], tools: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """What `worker --announce` publishes: the service's ``tool-service`` item and its
    tools' ``tool`` items, sorted by key. Arguments keep ``required``, ``default`` and
    ``enum`` (keys TrustGraph passes over), so an announced tool validates as its file does."""
    value = _service_value(service)
    if service.get("description"):
        value["description"] = service["description"]
    items: list[dict[str, Any]] = [{"key": f"tool-service/{service['name']}", "value": value}]
    for tool in tools:
        tool_value = _tool_value(tool, [])
        if tool_value is None:
            continue
        declared = {a["name"]: a for a in tool.get("arguments") or []}
        for argument in tool_value["arguments"]:
            kept = declared.get(argument["name"], {})
            argument.update({k: kept[k] for k in ("required", "default", "enum") if k in kept})
        items.append({"key": f"tool/{tool['name']}", "value": tool_value})
    return sorted(items, key=lambda item: str(item["key"]))


def put_commands(items: Sequence[Mapping[str, Any]]) -> str:
    """The items as `tg-put-config-item` command lines, one per item, ready for a shell."""
    import shlex

    lines = []
    for item in items:
        kind, _, key = str(item["key"]).partition("/")
        value = json.dumps(item["value"], sort_keys=True, ensure_ascii=False)
        lines.append(
            f"tg-put-config-item --type {shlex.quote(kind)} --key {shlex.quote(key)} "
            f"--value {shlex.quote(value)}\n"
        )
    return "".join(lines)


def _service_value(service: Mapping[str, Any]) -> dict[str, Any]:
    pulsar = service["pulsar"]
    return {
        "id": service["name"],
        "request-queue": pulsar["request_queue"],
        "response-queue": pulsar["response_queue"],
        "config-params": [
            {"name": p["name"], "required": bool(p.get("required"))}
            for p in pulsar.get("config_params") or []
        ],
    }


def _tool_value(tool: Mapping[str, Any], notes: list[str]) -> dict[str, Any] | None:
    value: dict[str, Any] = {
        "type": "tool-service",
        "name": tool.get("title") or tool["name"],  # what the model is shown, as imported
        "description": tool.get("description") or "",
        "service": tool["service"],
        "arguments": _arguments(tool, notes),
    }
    config = tool.get("config") or {}
    clash = sorted(set(config) & set(TOOL_FIELDS))
    if clash:
        notes.append(
            f"left out tool '{tool['name']}': its config key(s) {', '.join(clash)} "
            "would overwrite TrustGraph's own fields"
        )
        return None
    return value | dict(config)


def _arguments(tool: Mapping[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    """TrustGraph arguments carry name, type and description; say what else is dropped."""
    declared = tool.get("arguments") or []
    if not declared:  # `parameters = {...}`: read the JSON Schema, say what it loses
        schema = tool["schema"]
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        declared = [
            {
                "name": name,
                "type": prop.get("type") if isinstance(prop.get("type"), str) else "string",
                "description": prop.get("description") or "",
            }
            for name, prop in properties.items()
        ]
        lost = [
            f"{name} ({', '.join(what)})"
            for name, prop in properties.items()
            if (what := _lost_in_schema(prop, optional=name not in required))
        ]
        if lost:
            notes.append(
                f"tool '{tool['name']}': TrustGraph arguments carry a name, a type and a "
                f"description only; dropped {'; '.join(lost)}"
            )
        return declared
    dropped = [
        a["name"]
        for a in declared
        if a.get("default") is not None or a.get("enum") is not None or a.get("required") is False
    ]
    if dropped:
        notes.append(
            f"tool '{tool['name']}': TrustGraph arguments have no default, enum or optional; "
            f"dropped them from {', '.join(dropped)}"
        )
    return [
        {
            "name": a["name"],
            "type": a.get("type") or "string",
            "description": a.get("description") or "",
        }
        for a in declared
    ]


def _lost_in_schema(prop: Mapping[str, Any], *, optional: bool) -> list[str]:
    """What a property's schema says that a TrustGraph argument cannot: optional, a type
    that is not one name, every keyword beyond type and description."""
    lost = ["optional"] if optional else []
    kind = prop.get("type")
    if kind is not None and not isinstance(kind, str):
        lost.append(f"type {json.dumps(kind)} as string")
    return lost + sorted(str(k) for k in prop if k not in ("type", "description"))


# -- import ---------------------------------------------------------------------------------

INTERNAL_TYPES = {
    "knowledge-query": "queries TrustGraph's knowledge graph",
    "text-completion": "calls TrustGraph's LLM text-completion service",
    "prompt": "renders a TrustGraph prompt template",
    "structured-query": "queries TrustGraph's structured data",
    "row-embeddings-query": "searches TrustGraph's row embeddings",
}
"""Tool types TrustGraph's agent implements itself: they run only inside TrustGraph."""
CONFIG_TYPES = ("tool", "tool-service", "mcp")


def read(path: Path) -> Any:
    """A JSON file, `tg-show-config` output (its ``Version: N`` line first), or a
    `tg-export-workspace` bundle (``.tgx``: a gzipped tar of ``config/TYPE/KEY.json``)."""
    if path.is_file() and _is_tar(path):
        return _bundle_entries(path)
    text = read_text(path)
    first, _, rest = text.partition("\n")
    if first.startswith("Version:"):  # tg-show-config prints the version, then the JSON
        text = rest
    return parse_json(text, str(path))


def _is_tar(path: Path) -> bool:
    try:
        return tarfile.is_tarfile(path)
    except (OSError, EOFError):
        return True  # a truncated bundle: let reading it say what is wrong


MAX_BUNDLE_MEMBER = 16 * 1024**2
"""Bytes a config item of a ``.tgx`` bundle may hold, checked before it is unpacked (a
small gzip can declare gigabytes)."""


def _bundle_entries(path: Path) -> list[Any]:
    entries = []
    try:
        with tarfile.open(path) as bundle:
            for member in bundle.getmembers():
                if not (member.isfile() and member.name.startswith("config/")):
                    continue
                if member.size > MAX_BUNDLE_MEMBER:
                    raise UsageError(
                        f"{path}:{member.name}: {member.size:,} bytes; a config item of a "
                        f"bundle holds at most {MAX_BUNDLE_MEMBER // 1024**2} MiB"
                    )
                handle = bundle.extractfile(member)
                if handle is not None:
                    text = handle.read().decode("utf-8")
                    entries.append(parse_json(text, f"{path}:{member.name}"))
    except (tarfile.TarError, OSError, EOFError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"{path}: not a readable tg-export-workspace bundle: {short(exc)}"
        ) from None
    return entries


def convert(data: Any, source: str) -> Tables:
    """Config items, a config dump or bundle entries, or bare values → service/tool tables."""
    if _openai_functions(data):
        raise UsageError(
            f"{source}: this is an OpenAI function list (what `toolctl export --format "
            "openai` prints), not TrustGraph config items",
            hint="an OpenAI function says what a tool takes, not how to run it: it cannot be "
            "imported; import where the tools are defined (trustgraph, chat2graph, "
            "tool-agent, mcp-config)",
        )
    result = Tables(source)
    classified = [_classify(item, source) for item in _items(data, source)]
    remote = {
        name: str(value.get("remote-name") or name)
        for kind, name, value in classified
        if kind == "mcp"
    }
    others: dict[str, int] = {}
    internal: dict[str, list[str]] = {}
    for kind, name, value in classified:
        if kind == "tool-service":
            _service(value, name, result)
        elif kind == "tool":
            _tool(value, name, result, remote, internal)
        elif kind == "mcp":
            _mcp_server(value, name, result)
        else:
            others[kind] = others.get(kind, 0) + 1
    result.notes.extend(_summary(source, others, internal))
    return result


def _openai_functions(data: Any) -> bool:
    """Whether ``data`` is a list of OpenAI tools (``{"type": "function", "function": ...}``)."""
    items = data.get("tools") if isinstance(data, dict) else data
    return (
        isinstance(items, list)
        and bool(items)
        and all(
            isinstance(item, dict) and item.get("type") == "function" and "function" in item
            for item in items
        )
    )


def _summary(
    source: str, others: Mapping[str, int], internal: Mapping[str, list[str]]
) -> list[str]:
    """One line for the items that are not tools (a configurator dump holds prompts, flows
    and blueprints by the dozen), one per type of tool that runs only inside TrustGraph."""
    notes = []
    if others:
        counts = ", ".join(f"{kind} ({n})" for kind, n in sorted(others.items()))
        total = sum(others.values())
        notes.append(
            f"{source}: left out {total} config item(s) that are not tools, tool services "
            f"or MCP servers: {counts}"
        )
    for kind, names in sorted(internal.items()):
        shown = ", ".join(names[:LISTED]) + (", ..." if len(names) > LISTED else "")
        notes.append(
            f"{source}: left out {len(names)} tool(s) of type '{kind}': it "
            f"{INTERNAL_TYPES[kind]}, so each runs only inside TrustGraph: {shown}"
        )
    return notes


def _items(data: Any, source: str) -> list[dict[str, Any]]:
    """Every item, whatever the shape: a workspace-config export's or `tg-show-config`'s
    ``{type: {key: value}}`` becomes ``{"type", "key", "value"}`` entries."""
    if isinstance(data, dict) and isinstance(data.get("config"), dict) and "source_version" in data:
        data = data["config"]  # tg-export-workspace-config
    if isinstance(data, dict) and _is_dump(data):
        return [
            {"type": kind, "key": key, "value": value}
            for kind, values in data.items()
            for key, value in values.items()
        ]
    return items_of(data, source, "a TrustGraph config item or value")


def _is_dump(data: dict[str, Any]) -> bool:
    return (
        any(kind in data for kind in CONFIG_TYPES)
        and "type" not in data
        and all(isinstance(values, dict) for values in data.values())
    )


def _classify(item: dict[str, Any], source: str) -> tuple[str, str, dict[str, Any]]:
    """(kind, name from the key, value) of one item, bare or keyed."""
    if "key" in item and "value" in item:
        if "type" in item:  # a bundle entry or dump item: {"type", "key", "value"}
            kind, name = str(item["type"]), str(item["key"])
        else:  # toolctl's export: {"key": "tool/NAME", "value"}
            kind, _, name = str(item["key"]).partition("/")
        if kind not in CONFIG_TYPES:  # prompts, flow blueprints...: left out, unread
            return kind, name, {}
        return kind, name, _value(item["value"], f"{kind}/{name}", source)
    if any(k in item for k in ("request-queue", "request_queue", "topic", "config-params")):
        return "tool-service", str(item.get("id") or ""), item
    if "type" in item:  # a bare tool: its id is the key it is stored under, else its name
        return "tool", str(item.get("id") or item.get("name") or ""), item
    if "url" in item or "remote-name" in item:
        return "mcp", str(item.get("remote-name") or ""), item
    if "id" in item:  # a tool service that declares nothing else
        return "tool-service", str(item["id"]), item
    raise UsageError(
        f"{source}: not a TrustGraph config item, tool service, tool or MCP server",
        hint='expected {"key": "tool/NAME", "value": {...}} or a descriptor with "type"',
    )


def _value(value: Any, key: str, source: str) -> dict[str, Any]:
    if isinstance(value, str):  # the config service keeps values as JSON strings
        value = parse_json(value, f"{source}: value of '{key}'")
    if not isinstance(value, dict):
        raise UsageError(f"{source}: value of '{key}' is not a JSON object")
    return value


def _service(value: dict[str, Any], name: str, result: Tables) -> None:
    spellings = {
        "request-queue": "request_queue",
        "response-queue": "response_queue",
        "config-params": "config_params",
    }
    # the config key names it, as TrustGraph's agent looks it up (tool_services[key]); an
    # "id" inside the value is not that (a tool naming the key was an unknown service)
    foreign = str(name or value.get("id") or value.get("name") or "")
    pulsar: dict[str, Any] = {}
    for key, item in value.items():
        if key in ("id", "name", "description", "topic"):
            continue
        if spellings.get(key, key) == "config_params" and isinstance(item, list):
            # TrustGraph's agent takes a bare name for {"name": ...} (param.get or param)
            pulsar["config_params"] = [{"name": p} if isinstance(p, str) else p for p in item]
        elif spellings.get(key, key) in ("request_queue", "response_queue", "config_params"):
            pulsar[spellings.get(key, key)] = item
        else:
            result.notes.append(
                f"{result.source}: service '{foreign}': dropped unknown key '{key}'"
            )
    topic = value.get("topic")
    if topic is not None and "request_queue" not in pulsar and "response_queue" not in pulsar:
        # DynamicToolService: non-persistent://tg/{request,response}/{topic}
        pulsar["request_queue"] = f"non-persistent://tg/request/{topic}"
        pulsar["response_queue"] = f"non-persistent://tg/response/{topic}"
    if "request_queue" not in pulsar or "response_queue" not in pulsar:
        result.problems.append(
            f"tool service '{foreign}' has no request-queue and response-queue (nor a topic "
            "to derive them from); TrustGraph's agent refuses it too"
        )
        return
    table = {"pulsar": pulsar, "description": value.get("description")}
    result.tables.append(("service", clean(named(table, foreign))))


def _mcp_server(value: dict[str, Any], name: str, result: Tables) -> None:
    foreign = name or str(value.get("remote-name") or "")
    url = value.get("url")
    if not isinstance(url, str) or not url:
        result.problems.append(f"MCP server '{foreign}' has no url")
        return
    mcp: dict[str, Any] = {"url": _url(url, foreign, result)}
    token = value.get("auth-token")
    if token:
        variable = "".join(c if c.isalnum() else "_" for c in slug(foreign)).upper()
        variable = f"{variable}_AUTH_TOKEN"
        mcp["headers"] = {"Authorization": "Bearer ${env:" + variable + "}"}
        result.notes.append(
            f"{result.source}: MCP server '{foreign}': its auth-token was not copied; "
            f"export {variable} before running its tools"
        )
    unknown = sorted(set(value) - {"url", "remote-name", "auth-token"})
    for key in unknown:
        result.notes.append(f"{result.source}: MCP server '{foreign}': dropped unknown key '{key}'")
    result.tables.append(("service", named({"mcp": mcp}, foreign)))


def _url(url: str, foreign: str, result: Tables) -> str:
    """An MCP server's URL with its secrets (a password, a token in the query) as references."""
    from toolctl.interchange.secrets import Scope, Vault, rewrite

    vault = Vault()
    hidden = rewrite(url, Scope(slug(foreign), foreign, vault), None, "url")
    if vault.exports:
        result.notes.append(
            f"{result.source}: MCP server '{foreign}': its url reads "
            f"{', '.join(sorted(vault.exports))} from the environment (secrets are not "
            "copied); export them before running its tools"
        )
    return hidden


def _tool(value: dict[str, Any], name: str, result: Tables, remote: Mapping[str, str],
          internal: dict[str, list[str]]) -> None:  # fmt: skip
    # the tool is its id (the config key), shown to the model by its name (kept as title)
    foreign = str(name or value.get("id") or value.get("name") or "")
    kind = value.get("type")
    if not isinstance(kind, str):
        result.problems.append(f"tool '{foreign}' has a type that is not a string: {kind!r}")
    elif kind in INTERNAL_TYPES:
        internal.setdefault(kind, []).append(foreign)
    elif (problem := _tool_problem(value)) is not None:
        result.problems.append(f"tool '{foreign}': {problem}")
    elif kind == "tool-service":
        result.tables.append(("tool", _tool_table(value, foreign)))
    elif kind == "mcp-tool":
        result.tables.append(("tool", _mcp_tool_table(value, foreign, remote)))
    else:
        result.problems.append(
            f"tool '{foreign}' has TrustGraph type {kind!r}, which TrustGraph does not know"
        )


def _mcp_tool_table(
    value: dict[str, Any], foreign: str, remote: Mapping[str, str]
) -> dict[str, Any]:
    server = str(value.get("mcp-tool") or foreign)
    arguments = [
        {k: v for k, v in a.items() if k in ARGUMENT_KEYS} if isinstance(a, dict) else a
        for a in value.get("arguments") or []
    ]
    table = {
        "description": value.get("description"),
        "service": slug(server),
        "arguments": arguments,
        "mcp": {"name": remote.get(server, server)},
    }
    return clean(named(table, foreign))


def _tool_problem(value: dict[str, Any]) -> str | None:
    """What TrustGraph itself refuses in a tool, which toolctl would carry through: a
    ``group`` that is not a list of names (its agent then fails to load the workspace's
    whole tool config), ``arguments`` that are not a list (read a character at a time)."""
    group = value.get("group")
    if group is not None and not (
        isinstance(group, list) and all(isinstance(g, str) for g in group)
    ):
        return "its group is not a list of group names (TrustGraph's agent refuses it)"
    arguments = value.get("arguments")
    if arguments is not None and not isinstance(arguments, list):
        return "its arguments are not a list"
    return None


def _tool_table(value: dict[str, Any], foreign: str) -> dict[str, Any]:
    arguments = [
        {k: v for k, v in a.items() if k in ARGUMENT_KEYS} if isinstance(a, dict) else a
        for a in value.get("arguments") or []
    ]
    service = value.get("service")
    table = {
        "description": value.get("description"),
        "service": slug(service) if isinstance(service, str) else service,
        "config": {k: v for k, v in value.items() if k not in TOOL_FIELDS},
        "arguments": arguments,
    }
    return clean(_titled(named(table, foreign), value.get("name")))


def _titled(table: dict[str, Any], shown: Any) -> dict[str, Any]:
    """``table`` with the name TrustGraph shows the model as its title, when it is not
    the registry name (``Tell a joke`` for ``tell-joke``)."""
    if isinstance(shown, str) and shown and shown != table["name"]:
        return {**table, "title": shown}
    return table
