"""What a descriptor's process gets from the caller's world: ``${env:NAME}`` values and a
cwd; and those values as secrets, to be masked wherever they turn up.

Below runners/ and processes/, which both start processes from descriptors (a local tool,
a managed service), so neither has to import the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from toolctl.errors import ToolctlError, UsageError
from toolctl.settings import Settings


def expand_env(value: str, settings: Settings, *, mask: bool = False) -> str:
    """Replace ``${env:NAME}`` with the caller's variable (or ``***`` when masking)."""
    out, rest = [], value
    while (start := rest.find("${env:")) != -1:
        end = rest.find("}", start)
        if end == -1:
            break
        name = rest[start + 6 : end]
        if name not in settings.environ:
            raise UsageError(f"environment variable {name} is not set", hint="export it first")
        out += [rest[:start], "***" if mask else settings.environ[name]]
        rest = rest[end + 1 :]
    return "".join(out) + rest


def env_names(value: str) -> list[str]:
    """The variables ``value`` names with ``${env:NAME}``, in order."""
    names, rest = [], value
    while (start := rest.find("${env:")) != -1:
        end = rest.find("}", start)
        if end == -1:
            break
        names.append(rest[start + 6 : end])
        rest = rest[end + 1 :]
    return names


def expand_env_map(
    values: Mapping[str, str], settings: Settings, *, mask: bool = False
) -> dict[str, str]:
    return {key: expand_env(value, settings, mask=mask) for key, value in values.items()}


MASK = "***"
MIN_SECRET = 4
"""Shorter variable values are not hunted for in text (they would mask every ``a``)."""


def descriptor_secrets(
    descriptors: Iterable[Mapping[str, Any] | None], environ: Mapping[str, str]
) -> frozenset[str]:
    """The values of every variable the descriptors name with ``${env:NAME}``."""
    names: set[str] = set()
    for descriptor in descriptors:
        if descriptor:
            names.update(_names_in(descriptor))
    return frozenset(environ[name] for name in names if len(environ.get(name) or "") >= MIN_SECRET)


def _names_in(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        if "${env:" in value:
            yield from env_names(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _names_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _names_in(item)


def hide_values(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of the given secret values as ``***`` (the longest first), as
    written and as a JSON string holds it (a tool that echoes ``Pa"ss\\word`` as JSON
    writes ``Pa\\"ss\\\\word``)."""
    import json

    forms = {form for secret in secrets for form in (secret, json.dumps(secret)[1:-1])}
    forms |= {json.dumps(secret, ensure_ascii=False)[1:-1] for secret in secrets}
    for secret in sorted(forms, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def unleaked_error(error: ToolctlError, secrets: Iterable[str]) -> ToolctlError:
    """``error`` with ``secrets`` masked in its message, hint and details (in place): a
    server that echoes a key it was sent ("invalid key sk-...") never has it printed."""
    if secrets:
        error.message = hide_values(error.message, secrets)
        error.hint = hide_values(error.hint, secrets) if error.hint is not None else None
        error.details = [hide_values(line, secrets) for line in error.details]
        error.args = (error.message, *error.args[1:])
        if getattr(error, "output", None):  # what the tool printed before it was ended
            error.output = hide_values(error.output, secrets)  # type: ignore[attr-defined]
    return error


def descriptor_cwd(owner: str, base: Path, relative: str | None) -> str | None:
    """A descriptor's ``cwd``, relative to the directory of the file that defines it."""
    if relative is None:
        return None
    directory = (base / relative).resolve()
    if not directory.is_dir():
        # it cannot run here, as with a program not installed: exit 5, not a usage error
        from toolctl.errors import TransportUnavailable

        missing = "is not a directory" if directory.exists() else "does not exist"
        raise TransportUnavailable(
            f"{owner}: working directory {directory} {missing}",
            hint="moved? register it again from where it is now (toolctl register --replace "
            "FILE), or fix its cwd",
        )
    return str(directory)
