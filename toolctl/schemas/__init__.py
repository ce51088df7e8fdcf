"""JSON Schema in descriptors: the draft-07 meta-schema and the checks `parameters` must pass.

A ``parameters`` schema is checked when its file is loaded (a cache miss, never on every
``run``): against the draft-07 meta-schema, for ``$ref`` that leaves the document (loading a
registry never touches the network or another file), and by compiling it the way argument
validation will, so an odd schema makes its own file broken and never crashes a command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DRAFT7: dict[str, Any] = {
    "title": "Core schema meta-schema",
    "definitions": {
        "schemaArray": {"type": "array", "minItems": 1, "items": {"$ref": "#"}},
        "nonNegativeInteger": {"type": "integer", "minimum": 0},
        "nonNegativeIntegerDefault0": {
            "allOf": [{"$ref": "#/definitions/nonNegativeInteger"}, {"default": 0}]
        },
        "simpleTypes": {
            "enum": ["array", "boolean", "integer", "null", "number", "object", "string"]
        },
        "stringArray": {
            "type": "array",
            "items": {"type": "string"},
            "uniqueItems": True,
            "default": [],
        },
    },
    "type": ["object", "boolean"],
    "properties": {
        "$id": {"type": "string", "format": "uri-reference"},
        "$schema": {"type": "string", "format": "uri"},
        "$ref": {"type": "string", "format": "uri-reference"},
        "$comment": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "default": True,
        "readOnly": {"type": "boolean", "default": False},
        "examples": {"type": "array", "items": True},
        "multipleOf": {"type": "number", "exclusiveMinimum": 0},
        "maximum": {"type": "number"},
        "exclusiveMaximum": {"type": "number"},
        "minimum": {"type": "number"},
        "exclusiveMinimum": {"type": "number"},
        "maxLength": {"$ref": "#/definitions/nonNegativeInteger"},
        "minLength": {"$ref": "#/definitions/nonNegativeIntegerDefault0"},
        "pattern": {"type": "string", "format": "regex"},
        "additionalItems": {"$ref": "#"},
        "items": {"anyOf": [{"$ref": "#"}, {"$ref": "#/definitions/schemaArray"}], "default": True},
        "maxItems": {"$ref": "#/definitions/nonNegativeInteger"},
        "minItems": {"$ref": "#/definitions/nonNegativeIntegerDefault0"},
        "uniqueItems": {"type": "boolean", "default": False},
        "contains": {"$ref": "#"},
        "maxProperties": {"$ref": "#/definitions/nonNegativeInteger"},
        "minProperties": {"$ref": "#/definitions/nonNegativeIntegerDefault0"},
        "required": {"$ref": "#/definitions/stringArray"},
        "additionalProperties": {"$ref": "#"},
        "definitions": {"type": "object", "additionalProperties": {"$ref": "#"}, "default": {}},
        "properties": {"type": "object", "additionalProperties": {"$ref": "#"}, "default": {}},
        "patternProperties": {
            "type": "object",
            "additionalProperties": {"$ref": "#"},
            "propertyNames": {"format": "regex"},
            "default": {},
        },
        "dependencies": {
            "type": "object",
            "additionalProperties": {
                "anyOf": [{"$ref": "#"}, {"$ref": "#/definitions/stringArray"}]
            },
        },
        "propertyNames": {"$ref": "#"},
        "const": True,
        "enum": {"type": "array", "items": True},
        "type": {
            "anyOf": [
                {"$ref": "#/definitions/simpleTypes"},
                {
                    "type": "array",
                    "items": {"$ref": "#/definitions/simpleTypes"},
                    "minItems": 1,
                    "uniqueItems": True,
                },
            ]
        },
        "format": {"type": "string"},
        "contentMediaType": {"type": "string"},
        "contentEncoding": {"type": "string"},
        "if": {"$ref": "#"},
        "then": {"$ref": "#"},
        "else": {"$ref": "#"},
        "allOf": {"$ref": "#/definitions/schemaArray"},
        "anyOf": {"$ref": "#/definitions/schemaArray"},
        "oneOf": {"$ref": "#/definitions/schemaArray"},
        "not": {"$ref": "#"},
    },
    "default": True,
}


class SchemaProblem(ValueError):
    """A ``parameters`` schema toolctl will not use; the message says why, in one line."""


class _NoFetch(dict[str, Callable[[str], Any]]):
    """fastjsonschema handlers for every URI scheme: each refuses, so nothing is fetched."""

    def __contains__(self, scheme: object) -> bool:
        return True

    def __getitem__(self, scheme: str) -> Callable[[str], Any]:
        return _refuse_fetch


def _refuse_fetch(uri: str) -> Any:
    raise SchemaProblem(f"$ref {uri!r} is not in the descriptor; only '#/...' references work")


def check_parameters(schema: dict[str, Any]) -> None:
    """Raise SchemaProblem unless ``schema`` is a JSON Schema toolctl can validate with."""
    import fastjsonschema

    from toolctl.schemas import draft7 as _draft7

    remote = remote_ref(schema)
    if remote is not None:
        _refuse_fetch(remote)
    try:
        _draft7.validate(schema)  # type: ignore[no-untyped-call]
    except fastjsonschema.JsonSchemaValueException as exc:
        where = ".".join(str(p) for p in (exc.path or [])[1:])
        raise SchemaProblem(
            f"not a valid JSON Schema: {where + ' ' if where else ''}{_rule(exc)}"
        ) from None
    except RecursionError:
        raise SchemaProblem("nested too deeply to check") from None
    if endless_ref(schema):
        raise SchemaProblem("its $ref refers back to itself without end")
    compile_schema(schema)


def _rule(exc: Any) -> str:
    message = str(exc.message)
    return message.removeprefix(str(exc.name)).strip() or message


def compile_schema(schema: dict[str, Any]) -> Callable[[Any], Any]:
    """A validator for ``schema``; any failure to compile is a SchemaProblem, never a crash.

    fastjsonschema raises whatever its code generator meets (re.error, TypeError,
    RecursionError, ...) on schemas that are valid JSON but odd, hence the broad except.
    """
    import fastjsonschema

    try:
        validator = fastjsonschema.compile(schema, handlers=_NoFetch(), use_default=False)
        _linear_patterns(validator, _patterns(schema))
        return validator
    except SchemaProblem:
        raise
    except fastjsonschema.JsonSchemaDefinitionException as exc:
        raise SchemaProblem(f"not a valid JSON Schema: {exc}") from None
    except Exception as exc:
        raise SchemaProblem(f"not a usable JSON Schema: {type(exc).__name__}: {exc}") from None


def _patterns(schema: Any) -> set[str]:
    """Every regular expression a schema's author wrote (``pattern``, ``patternProperties``)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("pattern"), str):
                found.add(item["pattern"])
            if isinstance(item.get("patternProperties"), dict):
                found.update(k for k in item["patternProperties"] if isinstance(k, str))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _linear_patterns(validator: Callable[[Any], Any], written: set[str]) -> None:
    """Swap the validator's regular expressions for RE2's, which match in linear time.

    Python's ``re`` backtracks: ``^(a+)+$`` against 29 characters takes seconds and holds
    the GIL all along, so one argument could freeze every route of `serve`. fastjsonschema
    keeps its compiled expressions in one dict of the generated code's globals; each is
    recompiled with RE2 (its ``\\Z`` written ``\\z``). A pattern of the schema's author
    that RE2 cannot run (lookaround, backreferences) is a SchemaProblem; the few of
    fastjsonschema's own format expressions RE2 cannot run stay as they are.
    """
    expressions = getattr(validator, "__globals__", {}).get("REGEX_PATTERNS")
    if not expressions:
        return
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would write its complaint to stderr itself
    for key, compiled in list(expressions.items()):
        source = compiled.pattern.replace("\\Z", "\\z")
        try:
            expressions[key] = re2.compile(source, options=options)
        except re2.error as exc:
            if key in written:
                first = exc.args[0] if exc.args else exc
                reason = first.decode() if isinstance(first, bytes) else first
                raise SchemaProblem(
                    f"pattern {key!r} uses what a linear-time matcher cannot run ({reason}); "
                    "toolctl matches patterns with RE2 (no lookaround, no backreferences)"
                ) from None


def remote_ref(schema: Any) -> str | None:
    """The first ``$ref`` that is not a local ``#...`` pointer, if any."""
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                return ref
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


_SAME_VALUE = ("allOf", "anyOf", "oneOf")
"""Keywords whose subschemas apply to the value itself (with ``not``, ``if``, ``then``,
``else`` and ``$ref``), not to a part of it."""


def endless_ref(schema: Any) -> bool:
    """Whether some ``$ref`` leads back to where it started without descending into the
    value (``a`` -> ``b`` -> ``a``, ``{"allOf": [{"$ref": "#"}]}``): validating any value
    there never ends. A schema that recurses into its parts (a tree's ``children``) ends
    with the value, and is fine."""
    ids: dict[int, Any] = {}
    edges: dict[int, list[int]] = {}
    stack = [schema]
    while stack:  # every subschema, and where each leads without consuming the value
        item = stack.pop()
        if not isinstance(item, dict) or id(item) in ids:
            continue
        ids[id(item)] = item
        leads = [*(s for key in _SAME_VALUE for s in _list(item.get(key)))]
        leads += [item[key] for key in ("not", "if", "then", "else") if key in item]
        ref = item.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            target = _pointer(schema, ref[1:])
            if target is not None:
                leads.append(target)
        edges[id(item)] = [id(lead) for lead in leads if isinstance(lead, dict)]
        stack.extend(lead for lead in leads if isinstance(lead, dict))
        for value in item.values():  # the parts: properties, items, definitions, ...
            stack.extend(value.values() if isinstance(value, dict) else _list(value))
            if isinstance(value, dict):
                stack.append(value)
    return _has_cycle(edges)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _pointer(schema: Any, pointer: str) -> Any:
    """The subschema a JSON pointer (``/definitions/x``) names, or None."""
    from urllib.parse import unquote

    found = schema
    for part in filter(None, unquote(pointer).split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(found, dict) and part in found:
            found = found[part]
        elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
            found = found[int(part)]
        else:
            return None
    return found


def _has_cycle(edges: dict[int, list[int]]) -> bool:
    """Whether the directed graph ``edges`` has a cycle (iteratively: no recursion)."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in edges:
        if start in state:
            continue
        path = [(start, iter(edges.get(start, ())))]
        state[start] = 1
        while path:
            node, following = path[-1]
            step = next(following, None)
            if step is None:
                state[node] = 2
                path.pop()
            elif state.get(step) == 1:
                return True
            elif step not in state:
                state[step] = 1
                path.append((step, iter(edges.get(step, ()))))
    return False
