"""What a descriptor's process gets from the caller's world: ``${env:NAME}`` values and a
cwd; and those values as secrets, to be masked wherever they turn up.

Below runners/ and processes/, which both start processes from descriptors (a local tool,
a managed service), so neither has to import the other.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from toolctl.errors import ToolctlError, UsageError
from toolctl.settings import Settings

PROCESS_TAG = "TOOLCTL_PROCESS_TAG"
"""Set in a background process's environment to its record's tag (``processes.table``
names it ``TAG_VARIABLE``): what it starts keeps it, so `service down` finds it."""

INHERITED = (
    ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
     "PROCESSOR_ARCHITECTURE", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME",
     "USERPROFILE", "COMSPEC", "WINDIR")
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "SHELL", "TERM", "USER", "TMPDIR", "XDG_CONFIG_HOME",
          "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR")
) + ("PATH", "LANG", "LANGUAGE", "TZ", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
     "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR",
     "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "NO_COLOR")  # fmt: skip
"""What a process toolctl starts for a descriptor (a local tool, a managed service, a stdio
MCP server) inherits of the caller's environment, besides every ``LC_*`` locale variable
and toolctl's own ``SETTINGS`` (a tool that runs `toolctl` uses its caller's registry):
the MCP SDK client's ``get_default_environment`` set, the locale, time zone,
temporary and XDG directories, and how to reach the network (proxies, CA bundles).
Anything else a tool needs its descriptor names: ``pass_env = ["AWS_PROFILE", "SSH_*"]``
when they are set, ``env = { NAME = "${env:NAME}" }`` always (a secret, masked wherever
it turns up). So a tool never sees the secrets of whoever runs it (a server's bearer
token, an API key in the shell) unless it declares them."""


SETTINGS = (
    "TOOLCTL_ANNOUNCED", "TOOLCTL_ANNOUNCE_TOPIC", "TOOLCTL_CONTAINER_ENGINE",
    "TOOLCTL_HISTORY", "TOOLCTL_HISTORY_MAX_CALLS", "TOOLCTL_HISTORY_MAX_DAYS", "TOOLCTL_LOG",
    "TOOLCTL_MCP_KEEP", "TOOLCTL_PULSAR_URL", "TOOLCTL_RECORD_ARGUMENTS", "TOOLCTL_REGISTRY",
    "TOOLCTL_SERVING_DEPTH", "TOOLCTL_SESSION", "TOOLCTL_STRICT",
)  # fmt: skip
"""toolctl's own settings, which a tool that runs `toolctl` gets, so it works with the
registry, history and broker its caller does: these names alone, not every ``TOOLCTL_*``
(``serve --token-env TOOLCTL_TOKEN`` names a secret)."""
_INHERITED = frozenset((*INHERITED, *SETTINGS, PROCESS_TAG))


def child_environment(
    environ: Mapping[str, str], declared: Mapping[str, str], passed: Iterable[str] = ()
) -> dict[str, str]:
    """A descriptor's process's whole environment: the ``INHERITED`` variables of
    ``environ`` and those its ``pass_env`` names (``passed``: names or globs, ``AWS_*``)
    when they are set (never a shell function), the process tag, and its ``declared`` env,
    already expanded."""
    patterns = tuple(passed)
    safe = {
        key: value
        for key, value in environ.items()
        if (
            key in _INHERITED
            or key.startswith("LC_")
            or any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns)
        )
        and not value.startswith("()")
    }
    return {**safe, **declared}


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
    written, as a JSON string holds it (a tool that echoes ``Pa"ss\\word`` as JSON
    writes ``Pa\\"ss\\\\word``) and percent-encoded, as a server echoes a query or a
    form (``tok/en+x`` as ``tok%2Fen%2Bx``, in either case of hex, or with ``+`` for a
    space)."""
    import json

    forms: set[str] = set()
    for secret in secrets:
        forms |= {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
        forms |= _percent_encoded(secret)
    for secret in sorted(forms, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return _cut_short(text, forms) if CUT in text else text


CUT = "…"
"""Where an excerpt was cut (a failed answer's first 200 characters, a line that is not
JSON): the start of a secret may stand just before it."""


def _cut_short(text: str, forms: set[str]) -> str:
    """``text`` with the start of a secret (three characters or more) that an excerpt's
    cut left just before a ``…`` as ``***``: it was printed, 36 of a token's 40."""
    pieces = text.split(CUT)
    for index, piece in enumerate(pieces[:-1]):
        for secret in forms:
            size = next((n for n in range(len(secret) - 1, 2, -1) if piece.endswith(secret[:n])), 0)
            if size:
                piece = piece[:-size] + MASK
        pieces[index] = piece
    return CUT.join(pieces)


def _percent_encoded(secret: str) -> set[str]:
    """The forms a URL or a form gives ``secret`` (none when it needs no encoding)."""
    import re
    from urllib.parse import quote, quote_plus

    forms = {quote(secret, safe=""), quote(secret, safe="/"), quote_plus(secret)} - {secret}
    return forms | {re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), f) for f in forms}


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
