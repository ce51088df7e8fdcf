"""A tool's arguments: built from --arg/--args, converted to declared types, validated.

Validation uses the tool's JSON Schema (derived once, when the descriptor is loaded) and
happens before anything runs: invalid arguments are exit 2 and the tool never starts.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolctl.errors import InvalidArguments, RegistryError, UsageError

MAX_DEPTH = 64
"""How deeply an argument value may nest (JSON output and validation recurse)."""
DEFAULT_TIMEOUT = 60.0
"""Seconds a call may take when neither its tool's ``timeout`` nor ``--timeout`` says."""
MAX_TIMEOUT = 86_400.0
"""The longest timeout a call may have, in seconds (one day)."""
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_-]*)\}")
"""``{name}`` in a command item (group 1), or the ``{{``/``}}`` that stand for a brace."""
DEFAULT_MAX_OUTPUT = 16 * 1024 * 1024
"""Bytes of a tool's output a result holds unless its ``max_output`` or ``--max-output``
says (16 MiB)."""
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


MAX_INPUT = 64 * 2**20
"""The most toolctl reads of one JSON input it holds whole (``--args``, a ``--batch`` line,
a file to import): past it, a usage error, never all the memory there is (``/dev/zero``)."""


def read_bounded(stream: Any, what: str) -> bytes:
    """All of ``stream`` (binary; a text one is encoded), at most ``MAX_INPUT`` bytes:
    UsageError past it, naming ``what``."""
    raw = stream.read(MAX_INPUT + 1)
    if len(raw) > MAX_INPUT:
        raise UsageError(f"{what} is larger than {MAX_INPUT // 2**20} MiB")
    return raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else bytes(raw)


def bounded_lines(stream: Any, origin: str) -> Iterator[str]:
    """The lines of binary ``stream`` (ending at ``\n`` only, as JSON Lines says: U+2028
    may sit in a string), each at most ``MAX_INPUT`` bytes and UTF-8: UsageError naming
    ``origin`` and the line past it (``/dev/zero`` is one endless line)."""
    number = 0
    while True:
        line = stream.readline(MAX_INPUT + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_INPUT:
            raise UsageError(f"{origin}:{number}: a line over {MAX_INPUT // 2**20} MiB")
        try:
            yield line.decode("utf-8").removesuffix("\n")
        except UnicodeDecodeError as exc:
            raise UsageError(f"{origin}:{number}: it is not UTF-8 text ({exc.reason})") from None


def read_args_option(value: str) -> dict[str, Any]:
    """``--args``: inline JSON, ``@file`` or ``-`` for stdin; must be a JSON object."""
    if value == "-":
        what, origin = "--args - (stdin)", "stdin"
        raw = read_bounded(getattr(sys.stdin, "buffer", sys.stdin), what)
    elif value.startswith("@"):
        if value == "@":
            raise UsageError("--args @ names no file: --args @FILE")
        path = Path(value[1:])
        what, origin = f"--args file {path}", str(path)
        try:
            with path.open("rb") as opened:
                raw = read_bounded(opened, what)
        except OSError as exc:
            raise UsageError(f"cannot read --args file {path}: {exc.strerror}") from exc
    else:
        raw, what, origin = b"", "", "--args"
    try:
        text = raw.decode("utf-8") if what else value
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} is not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    parsed = loads(text, origin)
    if not isinstance(parsed, dict):
        raise UsageError(f"{origin} must be a JSON object of arguments")
    return parsed


def loads(text: str, origin: str) -> Any:
    """JSON text as a value, or a UsageError naming ``origin`` (too deep, not UTF-8, bad)."""
    try:
        parsed = json.loads(text, object_pairs_hook=unique_keys)
    except RecursionError:
        raise UsageError(f"{origin} nests deeper than {MAX_DEPTH} levels") from None
    except DuplicateKey as exc:
        raise UsageError(f"{origin} gives {exc} twice") from None
    except ValueError as exc:
        raise UsageError(f"{origin} is not valid JSON: {json_problem(exc)}") from None
    if isinstance(parsed, dict):
        check_arguments(parsed)  # names the argument
        return parsed
    problem = value_problem(parsed)
    if problem:
        raise UsageError(f"{origin}: {problem}")
    return parsed


def value_problem(value: Any) -> str | None:
    """Why a value cannot be an argument, or None: nesting past MAX_DEPTH, text that is
    not Unicode (a lone surrogate, as ``"\\ud800"`` or undecodable bytes give)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not is_text(item):
                return "text that is not valid Unicode (a lone surrogate)"
            continue
        if isinstance(item, float) and not math.isfinite(item):
            return f"a number that is not finite ({item!r})"
        if isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                return f"nests deeper than {MAX_DEPTH} levels"
            if isinstance(item, dict):
                for key, child in item.items():
                    if isinstance(key, str) and not is_text(key):
                        return "a key that is not valid Unicode (a lone surrogate)"
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
    return None


def is_text(text: str) -> bool:
    """Whether ``text`` is valid Unicode: no lone surrogate (which no UTF-8 can carry)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable_os(text: str) -> str:
    """Text the OS gave (a path, a command-line argument) fit to print and store: bytes that
    are not UTF-8 (which ``os.fsdecode`` keeps as lone surrogates) as ``\\xff`` escapes."""
    if is_text(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte stands for: not from the OS
        return printable_text(text)


def printable_text(text: str) -> str:
    """``text`` with each lone surrogate as a ``\\udXXX`` escape: safe to print, log or send."""
    return text if is_text(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def json_problem(exc: Exception) -> str:
    """Why ``json.loads`` refused a text, in words for whoever wrote it (Python's own limit
    on a number's digits comes with advice to its programmer)."""
    text = str(exc)
    return "a number of over 4300 digits" if "int_max_str_digits" in text else text


class DuplicateKey(ValueError):
    """A JSON object that gives one key twice (its message: the key): which value counts
    differs between readers, so a proxy that reads the first ``tool_id`` would log another
    tool than the one run. ``json.loads(text, object_pairs_hook=unique_keys)`` raises it."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(_shown(key))
            seen.add(key)
    return found


def check_arguments(arguments: Mapping[str, Any]) -> None:
    """InvalidArguments naming the first argument no tool could be given (see value_problem)."""
    for key, value in arguments.items():
        problem = value_problem({key: value})
        if problem:
            raise InvalidArguments(f"argument {_shown(key)}: {problem}")


def _shown(key: str) -> str:
    return repr(key) if is_text(key) else ascii(key)


def check_timeout(value: Any, origin: str) -> float:
    """A timeout as seconds: a finite number in (0, MAX_TIMEOUT], else a UsageError."""
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"{origin} must be a number of seconds, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(seconds) or not 0 < seconds <= MAX_TIMEOUT:
        raise UsageError(
            f"{origin} must be a finite number of seconds above 0 and at most "
            f"{MAX_TIMEOUT:g}, got {value!r}"
        )
    return seconds


def tool_timeout(data: Mapping[str, Any], default: float | None) -> Any:
    """A tool's own timeout; ``default`` (toolctl.toml or config.toml) stands in for one
    left at DEFAULT_TIMEOUT (the descriptor keeps no trace of whether it was written)."""
    seconds = data.get("timeout", DEFAULT_TIMEOUT)
    return default if default is not None and seconds == DEFAULT_TIMEOUT else seconds


MAX_OUTPUT_LIMIT = 1024**3
"""The most output a result may be allowed to hold (``max_output``), in bytes (1 GiB)."""
_UNITS = {
    **dict.fromkeys(("", "b"), 1),
    **dict.fromkeys(("k", "kb", "kib"), 1024),
    **dict.fromkeys(("m", "mb", "mib"), 1024**2),
    **dict.fromkeys(("g", "gb", "gib"), 1024**3),
}


def parse_size(text: str, origin: str) -> int:
    """``1048576``, ``512KiB``, ``16M``, ``1GiB`` (binary units) as bytes, in (0, 1 GiB]."""
    import re

    match = re.fullmatch(r"\s*([0-9]{1,12})\s*([A-Za-z]{0,3})\s*", text)  # ASCII digits
    if not match or match.group(2).lower() not in _UNITS:
        raise UsageError(f"{origin} expects a size such as 1048576, 512KiB or 16MiB, got {text!r}")
    size = int(match.group(1)) * _UNITS[match.group(2).lower()]
    if not 0 < size <= MAX_OUTPUT_LIMIT:
        raise UsageError(f"{origin} must be above 0 and at most 1GiB, got {text!r}")
    return size


def parse_pairs(pairs: Sequence[str], schema: Mapping[str, Any]) -> dict[str, Any]:
    """``--arg k=v`` pairs, each value converted to the type the schema declares for k.

    A key given once takes its whole value (JSON for an array). A key declared an array
    may be given again and again: each value is then one item, converted to the type its
    ``items`` declare. Any other key given twice is refused: one of its values would be
    lost."""
    properties = schema.get("properties", {})
    given: dict[str, list[str]] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--arg expects KEY=VALUE, got {pair!r}")
        if key not in properties and properties:
            _refuse_unknown(key, properties, schema)
        given.setdefault(key, []).append(raw)
    arguments: dict[str, Any] = {}
    for key, values in given.items():
        declared = properties.get(key, {})
        declared = declared if isinstance(declared, Mapping) else {}
        if len(values) == 1:
            arguments[key] = convert(key, values[0], declared.get("type"))
        elif "array" in _kinds(declared.get("type")):
            items = declared.get("items")
            kind = items.get("type") if isinstance(items, Mapping) else None
            arguments[key] = [convert(key, raw, kind) for raw in values]
        else:
            raise InvalidArguments(
                f"argument {_shown(key)} is given {len(values)} times; give it once "
                "(only an argument declared an array takes one item per --arg)"
            )
    return arguments


def _kinds(declared: Any) -> list[Any]:
    return declared if isinstance(declared, list) else [declared]


def key_values(pairs: Sequence[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` pairs as given, the values left as text (``--elicit``, ``mcp add --env``).
    A malformed item is named by its place, never echoed: it may be a secret typed
    without its ``KEY=``. A key given twice is refused: one of its values would be lost."""
    found: dict[str, str] = {}
    places: dict[str, int] = {}
    for place, pair in enumerate(pairs, 1):
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"{option} expects KEY=VALUE; its item {place} has no KEY=")
        if key in found:  # one of the two values would be lost
            raise UsageError(
                f"{option} gives {_shown(key)} twice (its items {places[key]} and {place})"
            )
        found[key], places[key] = raw, place
    return found


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP field name (RFC 9110's token)."""


def header_values(items: Sequence[str], option: str) -> dict[str, str]:
    """``NAME: VALUE`` headers as curl and `claude mcp add` take them (``mcp add --header``).
    As with ``key_values``, a malformed item is named by its place and never echoed (it may
    be a token typed without its name); a name given twice (in any case) is refused, and so
    is a value holding a line break, which would start a header of its own."""
    found: dict[str, str] = {}
    places: dict[str, int] = {}
    for place, item in enumerate(items, 1):
        name, sep, value = item.partition(":")
        if not sep or not _HEADER_NAME.fullmatch(name):
            raise UsageError(f"{option} expects 'NAME: VALUE'; its item {place} has no NAME:")
        if any(char in value for char in "\r\n\x00"):
            raise UsageError(f"{option}: its item {place} holds a line break or a NUL")
        folded = name.lower()
        if folded in places:
            first = places[folded]
            raise UsageError(f"{option} gives {name} twice (its items {first} and {place})")
        found[name], places[folded] = value.strip(), place
    return found


def _refuse_unknown(key: str, properties: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """``--arg txt=hi``: an unknown argument close to a declared one is a typo, refused with
    a did-you-mean (unless the schema takes any argument, ``additionalProperties = true``)."""
    import difflib

    if schema.get("additionalProperties") is True:
        return
    close = difflib.get_close_matches(key, list(properties), n=1)
    if close:
        raise InvalidArguments(f"unknown argument '{key}' (did you mean '{close[0]}'?)")


_JSON_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")


def convert(key: str, raw: str, declared: Any) -> Any:
    """One ``k=v`` value as the declared JSON type (strings stay strings)."""
    kinds = _kinds(declared)
    try:
        if "integer" in kinds:
            return int(raw)
        if "number" in kinds:  # `x=1` is 1, as JSON writes it; `x=1.5`, `x=1e3` floats
            return int(raw) if _JSON_INTEGER.fullmatch(raw.strip()) else float(raw)
        if "boolean" in kinds:
            if raw.lower() in _TRUE | _FALSE:
                return raw.lower() in _TRUE
            raise ValueError(raw)
        if "object" in kinds or "array" in kinds:
            return loads(raw, f"argument '{key}'")
    except UsageError as exc:
        raise InvalidArguments(str(exc)) from None
    except ValueError as exc:
        expected = " or ".join(k for k in kinds if k)
        raise InvalidArguments(
            f"argument '{key}' expects {_article(expected)}, got {_quoted(key, repr(raw))}"
        ) from exc
    return raw


def _quoted(key: str, text: str) -> str:
    """A value an error quotes (it reaches terminals, CI logs and a server's clients):
    ``'***'`` for an argument whose name says it holds a secret (``api_token``), and
    credential-shaped strings (``sk-...``, a JWT) masked wherever they are."""
    from toolctl.secret_names import PREFIXES, secret_name

    if secret_name(key):
        return "'***'" if text[:1] == "'" else '"***"'
    return PREFIXES.sub("***", text)


def _article(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def build(
    schema: Mapping[str, Any], args: Mapping[str, Any] | None, pairs: Sequence[str]
) -> dict[str, Any]:
    """``--args`` first, ``--arg`` pairs over it, then declared defaults for what is missing."""
    arguments = dict(args or {})
    arguments.update(parse_pairs(pairs, schema))
    check_arguments(arguments)
    for key, prop in schema.get("properties", {}).items():
        if key not in arguments and isinstance(prop, dict) and "default" in prop:
            arguments[key] = prop["default"]
    return arguments


def an_object(tool: str, args: Any) -> None:
    """InvalidArguments for ``args`` that are no JSON object of named values: a model's
    JSON may be anything (a list of pairs ran as an object, a string raised a bare
    ValueError, from a library call)."""
    if args is None or (isinstance(args, Mapping) and all(isinstance(k, str) for k in args)):
        return
    if isinstance(args, Mapping):
        raise InvalidArguments(f"tool '{tool}': argument names must be strings")
    kind = {list: "an array", tuple: "an array", str: "a string", bool: "a boolean"}
    shown = kind.get(type(args)) or ("a number" if isinstance(args, (int, float)) else "")
    raise InvalidArguments(
        f"tool '{tool}': arguments must be a JSON object, got {shown or type(args).__name__}"
    )


def whole_numbers(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` with an integral number given for an ``integer`` argument as the
    integer: JSON Schema takes 1.0 for an integer, and the tool was handed "1.0" (in its
    command line, its JSON, its request)."""
    properties = schema.get("properties")
    whole = dict(arguments)
    if not isinstance(properties, Mapping):
        return whole
    for key, value in arguments.items():
        declared = properties.get(key)
        if isinstance(value, float) and value.is_integer() and isinstance(declared, Mapping):
            kinds = _kinds(declared.get("type"))
            if "integer" in kinds and "number" not in kinds:
                whole[key] = int(value)
    return whole


def validate(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Raise InvalidArguments naming the argument and what was expected."""
    if plainly_valid(schema, arguments):
        return  # no need to import and compile a validator (~15 ms of a `toolctl run`)
    import fastjsonschema

    from toolctl.schemas import SchemaProblem

    try:
        _validator(schema)(dict(arguments))
    except fastjsonschema.JsonSchemaValueException as exc:
        raise InvalidArguments(f"tool '{tool}': {_explain(exc, schema)}") from exc
    except SchemaProblem as exc:
        raise RegistryError(f"tool '{tool}': parameters: {exc}") from None
    except RecursionError:  # {"$ref": "#"}, or a -> b -> a: no value ever ends it
        raise RegistryError(
            f"tool '{tool}': parameters: its $ref refers back to itself without end"
        ) from None


_PLAIN_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}
_PLAIN_KEYS = frozenset({"type", "properties", "required", "additionalProperties"})
_PLAIN_PROPERTY_KEYS = frozenset({"type", "description", "enum", "default"})


def plainly_valid(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> bool:
    """True when ``schema`` has the plain shape ``[[tool.arguments]]`` derive (typed
    properties, enums of scalars, required, additionalProperties) and ``arguments``
    obviously satisfy it. False means "ask fastjsonschema", which also words the errors:
    this never accepts what fastjsonschema would refuse."""
    properties, required = schema.get("properties", {}), schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if set(schema) - _PLAIN_KEYS or schema.get("type") != "object" or extra not in (True, False):
        return False
    if not isinstance(properties, dict) or not isinstance(required, list):
        return False
    if any(name not in arguments for name in required):
        return False
    for key, value in arguments.items():
        declared = properties.get(key)
        if declared is None and extra is False:
            return False
        if declared is not None and not _plain_property(declared, value):
            return False
    return True


def _plain_property(declared: Any, value: Any) -> bool:
    if not isinstance(declared, dict) or set(declared) - _PLAIN_PROPERTY_KEYS:
        return False
    types = _PLAIN_TYPES.get(declared.get("type"))  # type: ignore[arg-type]
    if types is None or not isinstance(value, types):
        return False
    if isinstance(value, bool) and declared["type"] != "boolean":
        return False
    enum = declared.get("enum")
    if enum is None:
        return True
    plain = (str, int, float, bool, type(None))
    return isinstance(enum, list) and any(
        type(choice) is type(value) and isinstance(choice, plain) and choice == value
        for choice in enum
    )


_VALIDATORS: dict[int, tuple[Mapping[str, Any], Callable[[Any], Any]]] = {}


def _validator(schema: Mapping[str, Any]) -> Callable[[Any], Any]:
    """A compiled validator per schema object: a batch compiles once, not once per line.

    Keyed by identity (holding the schema, so the id cannot be reused); a descriptor's
    schema is one object for as long as its tool is in use.
    """
    known = _VALIDATORS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    from toolctl.schemas import compile_schema

    compiled = compile_schema(dict(schema))
    if len(_VALIDATORS) >= 64:
        _VALIDATORS.pop(next(iter(_VALIDATORS)))
    _VALIDATORS[id(schema)] = (schema, compiled)
    return compiled


def _typo_of(unknown: set[str], missing: Sequence[str]) -> str | None:
    """``unknown argument 'txt' (did you mean 'text'?)`` when an unknown argument stands
    close to a missing one, rather than "missing required argument: text"."""
    import difflib

    for key in sorted(unknown):
        close = difflib.get_close_matches(key, list(missing), n=1)
        if close:
            return f"unknown argument '{key}' (did you mean '{close[0]}'?)"
    return None


def _explain(exc: Any, schema: Mapping[str, Any]) -> str:
    path = [str(p) for p in (exc.path or [])[1:]]
    if exc.rule == "required":
        present = set(exc.value or {})
        missing = [r for r in exc.rule_definition if r not in present]
        typo = _typo_of(present - set(schema.get("properties", {})), missing)
        if typo:
            return typo
        return f"missing required argument{'s' if len(missing) > 1 else ''}: {', '.join(missing)}"
    if exc.rule == "additionalProperties":
        known = sorted(schema.get("properties", {}))
        extra = sorted(set(exc.value or {}) - set(known))
        import difflib

        close = difflib.get_close_matches(extra[0], known, n=1) if len(extra) == 1 else []
        if close:
            return f"unknown argument '{extra[0]}' (did you mean '{close[0]}'?)"
        return (
            f"unknown argument{'s' if len(extra) > 1 else ''}: {', '.join(extra)} "
            f"(expected: {', '.join(known) or 'none'})"
        )
    where = f"argument '{'.'.join(path)}'" if path else "arguments"
    detail = str(exc.message).removeprefix(str(exc.name)).strip()
    return f"{where} {detail}, got {_quoted(path[-1] if path else '', json.dumps(exc.value))}"
