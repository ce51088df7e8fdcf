"""An MCP server's elicitation with nobody at a terminal: declared answers, or a decline.

A service may declare answers (``[service.mcp] elicit = { KEY = "VALUE" }``, and with
``elicit_defaults = true`` the defaults the server's form gives) and a run may give more
(``run --elicit KEY=VALUE``). When they cover every field the server requires,
the elicitation is accepted with them, each converted to the type the server's schema
asks for; otherwise it is declined at once. Either way the call goes on: never a hang.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any


def declared_answer(
    params: Mapping[str, Any],
    answers: Mapping[str, str],
    *,
    defaults: bool = False,
    declined: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The ``elicitation/create`` result for ``params`` from the declared ``answers`` (and,
    with ``defaults``, the defaults the form itself gives, SEP-1034). ``declined`` hears
    why answers that were given did not do (a required field missing, a value its schema
    refuses); a form nobody answered is declined without a word."""

    def decline(why: str) -> dict[str, Any]:
        if declined is not None and answers:
            declined(f"the MCP server's question was declined: {why}")
        return {"action": "decline"}

    schema = params.get("requestedSchema")
    if not isinstance(schema, dict) or params.get("mode", "form") != "form":
        return decline("it is not a form toolctl can answer")
    fields = schema.get("properties")
    fields = fields if isinstance(fields, dict) else {}
    required = schema.get("required")
    needed = [str(name) for name in required] if isinstance(required, list) else []
    given = {
        name: field["default"]
        for name, field in fields.items()
        if defaults and isinstance(field, dict) and "default" in field
    }
    missing = [name for name in needed if name not in answers and name not in given]
    if not (answers or given) or missing:
        # answers for fields this form does not ask for are left alone (a service's
        # answers may be for its other forms), but named: a misspelt field is one
        unknown = sorted(set(answers) - set(fields))
        aside = f" (answers were given for {', '.join(unknown)})" if unknown else ""
        return decline(f"no answer for {', '.join(missing)}{aside}")
    content: dict[str, Any] = dict(given)
    for name, field in fields.items():
        if name in answers:
            value = _typed(answers[name], field if isinstance(field, dict) else {})
            if value is None:
                # never the answer itself: a form may ask for a password
                return decline(f"{name}: the answer given is not {_kind(field)}")
            content[name] = value
    refused = _refused(schema, content)
    if refused:
        return decline(refused)
    return {"action": "accept", "content": content}


def _kind(field: Any) -> str:
    kind = field.get("type", "string") if isinstance(field, dict) else "string"
    return f"an {kind}" if str(kind)[:1] in "aeiou" else f"a {kind}"


def _refused(schema: Mapping[str, Any], content: Mapping[str, Any]) -> str | None:
    """What the form's schema says against ``content`` (an enum, a bound, a length), or
    None; a schema no validator takes is the server's to answer for."""
    from toolctl.schemas import SchemaProblem, compile_schema

    try:
        compile_schema(dict(schema))(dict(content))
    except SchemaProblem:
        return None
    except Exception as exc:  # fastjsonschema's JsonSchemaValueException
        return str(getattr(exc, "message", exc)).removeprefix("data.")[:300]
    return None


def _typed(text: str, field: Mapping[str, Any]) -> Any:
    """``text`` as the field's type (string, integer, number, boolean, array of strings);
    None when it is not one."""
    kind = field.get("type", "string")
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
        if kind == "boolean":
            return {"true": True, "false": False}[text.strip().lower()]
        if kind == "array":
            value = json.loads(text) if text.lstrip().startswith("[") else text.split(",")
            return [str(item).strip() for item in value]
    except (ValueError, KeyError):
        return None
    return text
