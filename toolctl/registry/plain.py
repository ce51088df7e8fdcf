"""Plain tools, validated and normalised without pydantic: most of a large registry.

A plain tool is a ``[[tool]]`` with nothing but ``name``, ``description``, ``category``,
``tags``, ``timeout`` and a ``[tool.local]`` of ``command``, ``input``, ``env`` and ``cwd``,
each of exactly the type the model takes and within its bounds. Its normalised data is
written out here, the same keys in the same order as ``models.normalise`` of the
validated ``Tool`` (tests/registry/test_plain.py compares the two over generated entries).
Anything else, valid or not, goes through pydantic, which also words the errors; so a
cold build or a re-index of plain tools never imports pydantic or builds the models.
"""

from __future__ import annotations

import re
from json.encoder import encode_basestring_ascii as _string
from typing import Any

from toolctl.arguments import DEFAULT_TIMEOUT, MAX_TIMEOUT
from toolctl.names import NAME_PATTERN
from toolctl.runtimes import TOOL_SECTIONS

_NAME = re.compile(NAME_PATTERN.removeprefix("^").removesuffix("$"))  # used with fullmatch
_KEYS = frozenset({"name", "description", "category", "tags", "timeout", "local"})
_LOCAL_KEYS = frozenset({"command", "input", "env", "cwd"})


def plain_tool(entry: dict[str, Any]) -> dict[str, Any] | None:
    """``normalise("tool", Tool.model_validate(entry))`` for a plain tool, else None."""
    if not entry.keys() <= _KEYS:
        return None
    name, description = entry.get("name"), entry.get("description", "")
    category, tags = entry.get("category"), entry.get("tags", [])
    timeout, local = entry.get("timeout", DEFAULT_TIMEOUT), entry.get("local")
    if not (
        type(name) is str
        and _NAME.fullmatch(name)
        and type(description) is str
        and (category is None or type(category) is str)
        and type(tags) is list
        and all(type(tag) is str for tag in tags)
        and type(timeout) in (int, float)
        and 0 < timeout <= MAX_TIMEOUT  # False for nan
        and type(local) is dict
    ):
        return None
    section = _local(local)
    if section is None:
        return None
    data: dict[str, Any] = {
        "name": name,
        "description": description,
        "category": category,
        "tags": list(tags),
        "timeout": float(timeout),
    }
    for runtime in TOOL_SECTIONS:
        data[runtime] = section if runtime == "local" else None
    data.update(
        service=None,
        config={},
        runtime="local",
        options={},
        arguments=[],
        parameters=None,
        annotations=None,
        schema={"type": "object", "properties": {}, "required": [], "additionalProperties": False},
    )
    return data


def _local(local: dict[str, Any]) -> dict[str, Any] | None:
    """A ``[tool.local]`` as ``LocalRuntime`` dumps it, or None if it is not plain."""
    if not local.keys() <= _LOCAL_KEYS:
        return None
    command, mode = local.get("command"), local.get("input", "json")
    env, cwd = local.get("env", {}), local.get("cwd")
    if not (
        type(command) is list
        and command
        and all(type(item) is str for item in command)
        and type(mode) is str
        and mode in ("json", "none")
        and type(env) is dict
        and all(type(key) is str and type(value) is str for key, value in env.items())
        and (cwd is None or (type(cwd) is str and "\x00" not in cwd))
    ):
        return None
    return {"command": list(command), "input": mode, "env": dict(env), "cwd": cwd}


_HOLES = ("category", "description", "local", "name", "tags", "timeout")  # sorted, as in JSON


def _template() -> list[str]:
    """The index's JSON of a plain tool (``indexing.dumps``: compact, sorted keys), cut
    where the values of ``_HOLES`` go."""
    import json

    data = plain_tool({"name": "x", "local": {"command": ["x"]}})
    assert data is not None
    marked = {**data, **{key: f"@{key}@" for key in _HOLES}}
    text = json.dumps(marked, separators=(",", ":"), sort_keys=True)
    pieces = []
    for key in _HOLES:
        before, text = text.split(f'"@{key}@"', 1)
        pieces.append(before)
    return [*pieces, text]


_PIECES = _template()


def plain_text(data: dict[str, Any]) -> str:
    """``indexing.dumps(data)`` of what ``plain_tool`` returned, without the encoder's
    general walk (a fifth of the cost)."""
    local, category = data["local"], data["category"]
    env = ",".join(f"{_string(k)}:{_string(v)}" for k, v in sorted(local["env"].items()))
    cwd = "null" if local["cwd"] is None else _string(local["cwd"])
    section = (
        f'{{"command":[{",".join(map(_string, local["command"]))}],"cwd":{cwd},'
        f'"env":{{{env}}},"input":{_string(local["input"])}}}'
    )
    values = (
        "null" if category is None else _string(category),
        _string(data["description"]),
        section,
        _string(data["name"]),
        f"[{','.join(map(_string, data['tags']))}]",
        float.__repr__(data["timeout"]),
    )
    pieces = _PIECES
    return "".join([pieces[0], *(v + piece for v, piece in zip(values, pieces[1:], strict=True))])
