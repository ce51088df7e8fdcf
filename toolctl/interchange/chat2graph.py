"""Chat2Graph YAML (``tools:``, ``actions:``, ``toolkit:`` chains) → tools and actions.

Each ``toolkit:`` chain ``[a, b, c]`` becomes Next edges a→b and b→c of score 1.0, and an
action's ``tools`` become Call edges of score 1.0 (Chat2Graph's defaults). Chains stay
separate: Chat2Graph's loader flattens all chains into one, so the last action of each
chain also leads to the first of the next; that quirk is not copied.

A ``LOCAL_TOOL`` is a Python class in Chat2Graph (``module_path`` + ``name``); toolctl runs
it with a small shim that imports the class and calls its ``function`` with the JSON
arguments, which works where Chat2Graph is importable and the function needs no injected
services. ``MCP`` tools are MCP servers (tool groups) and are left out with a note.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from toolctl.errors import UsageError
from toolctl.interchange.entries import Tables, clean

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


def convert(data: Any, source: str) -> Tables:
    if not isinstance(data, dict):
        raise UsageError(
            f"{source}: not a Chat2Graph configuration",
            hint="expected a mapping with tools:, actions: and toolkit:",
        )
    result = Tables(source)
    tools, left_out = _tools(_list(data, "tools", source), source, result.notes)
    chains = [_chain(chain, source) for chain in _list(data, "toolkit", source)]
    actions: dict[str, dict[str, Any]] = {}
    for raw in [*_list(data, "actions", source), *(a for chain in chains for a in chain)]:
        name = _name(raw, "action", source)
        if name not in actions:
            actions[name] = _action(raw, name, left_out, source)
    for chain in chains:
        names = [_name(a, "action", source) for a in chain]
        for before, after in pairwise(names):
            edges = actions[before].setdefault("next", [])
            if all(e["action"] != after for e in edges):
                edges.append({"action": after, "score": SCORE})
    result.tables.extend(("tool", t) for t in tools.values())
    result.tables.extend(("action", clean(a)) for a in actions.values())
    return result


def _list(data: dict[str, Any], key: str, source: str) -> list[Any]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise UsageError(f"{source}: '{key}' must be a list")
    return value


def _name(ref: Any, what: str, source: str) -> str:
    """A reference is the YAML anchor's mapping (with ``name``) or a bare name."""
    name = ref.get("name") if isinstance(ref, dict) else ref
    if not isinstance(name, str) or not name:
        raise UsageError(f"{source}: a {what} without a name: {ref!r}")
    return name


def _chain(chain: Any, source: str) -> list[Any]:
    return chain if isinstance(chain, list) else [chain]


def _tools(
    raws: list[Any], source: str, notes: list[str]
) -> tuple[dict[str, dict[str, Any]], set[str]]:
    tools: dict[str, dict[str, Any]] = {}
    left_out: set[str] = set()
    for raw in raws:
        name = _name(raw, "tool", source)
        kind = raw.get("type", "LOCAL_TOOL") if isinstance(raw, dict) else None
        module = raw.get("module_path") if isinstance(raw, dict) else None
        if kind != "LOCAL_TOOL" or not module:
            left_out.add(name)
            notes.append(
                f"{source}: left out tool '{name}' ({kind or 'no type'}): only LOCAL_TOOL "
                "tools with a module_path map to toolctl; its Call edges are dropped too"
            )
            continue
        tools.setdefault(name, _tool(raw, name, module))
    return tools, left_out


def _tool(raw: dict[str, Any], name: str, module: str) -> dict[str, Any]:
    return clean(
        {
            "name": name,
            "description": raw.get("desc") or raw.get("description"),
            "tags": ["chat2graph"],
            "parameters": {"type": "object"},  # Chat2Graph reads the schema from docstrings
            "local": {"command": ["python3", "-c", SHIM, module, name]},
        }
    )


def _action(raw: Any, name: str, left_out: set[str], source: str) -> dict[str, Any]:
    described = raw if isinstance(raw, dict) else {}
    calls = [_name(t, "tool", source) for t in described.get("tools") or []]
    return {
        "name": name,
        "description": described.get("desc") or described.get("description"),
        "tools": [{"tool": t, "score": SCORE} for t in dict.fromkeys(calls) if t not in left_out],
    }
