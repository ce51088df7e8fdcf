"""Kept sessions, the caller's side: start one (``service up``, or a run of a ``keep_alive``
service) and find the one that runs.

A kept session is a background process (``toolctl.mcp.keeper``) in the process table,
named after its stdio MCP service, holding the server's session and relaying calls from
127.0.0.1:PORT to whoever shows the token in its token file. Nothing here opens the
registry: callers pass the service they resolved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl.descriptor_env import child_environment, expand_env, expand_env_map
from toolctl.errors import TransportUnavailable, UsageError
from toolctl.mcp.service import connect_budget
from toolctl.runtimes import MCP_IDLE_TIMEOUT

if TYPE_CHECKING:
    from toolctl.mcp.keeper import KeptSession
    from toolctl.mcp.service import Entry
    from toolctl.processes import ProcessRecord
    from toolctl.settings import Settings

KEPT = "mcp-session"
"""The process-table kind of a kept MCP session (its record is named after the service)."""
REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def kept_session(
    settings: Settings, name: str, section: Mapping[str, Any], base: Path
) -> KeptSession | None:
    """The kept session of service ``name`` when one runs (``service up``) or its
    ``section`` asks for one (``keep_alive``: started now; ``base`` is the directory of the
    file defining the service); None when calls connect directly."""
    from toolctl.mcp.keeper import KeptSession
    from toolctl.processes.table import ProcessTable

    record = ProcessTable(settings).get(name)
    wanted = section.get("keep_alive") and section.get("command")
    if (record is None or record.kind != KEPT) and wanted:
        idle = float(section.get("idle_timeout", MCP_IDLE_TIMEOUT))
        record, _ = _start(settings, name, section, base, idle or None)
    if record is None or record.kind != KEPT or record.port is None:
        return None
    token_file = _token_file(settings, name, record.port)
    try:
        token = token_file.read_text().strip()
    except OSError as exc:
        raise TransportUnavailable(
            f"kept session of MCP service '{name}' has no token ({token_file}): {exc.strerror}",
            hint=f"restart it: 'toolctl service down {name}; toolctl service up {name}'",
        ) from exc
    if record.argv[3:4] != [definition(section, base, token)]:
        return None  # a session kept for another definition of the name: connect directly
    return KeptSession(name, record.port, token)


def keep(
    settings: Settings, service: Entry, *, idle: float | None = None
) -> tuple[ProcessRecord, bool]:
    """Start the kept session of stdio MCP ``service`` unless it runs; (record, started).

    With ``idle``, it ends after that many seconds without a call.
    """
    section = service.data.get("mcp")
    if not isinstance(section, Mapping) or not section.get("command"):
        raise UsageError(
            f"service '{service.name}' is not a stdio MCP service; only those are kept by toolctl",
            hint="a service with [service.mcp] command = [...]",
        )
    return _start(settings, service.name, section, Path(service.file).parent, idle)


def _start(
    settings: Settings, name: str, section: Mapping[str, Any], base: Path, idle: float | None
) -> tuple[ProcessRecord, bool]:
    import json
    import sys

    from toolctl.descriptor_env import descriptor_cwd
    from toolctl.mcp.keeper import SPEC_VARIABLE, new_token
    from toolctl.processes import ReadyFile, free_port, launch
    from toolctl.processes.table import ProcessTable

    table = ProcessTable(settings)
    current = table.get(name)
    if current is not None and current.kind == KEPT and serves(settings, current, section, base):
        return current, False
    env = section.get("env") or {}
    expanded = expand_env_map(env, settings)  # a missing variable: exit 2
    for item in section["command"]:
        expand_env(str(item), settings)  # the same for the command's items
    port = free_port()
    token_file = _token_file(settings, name, port)
    for stale in token_file.parent.glob(f"{token_file.name.split('.')[0]}.*.token"):
        stale.unlink(missing_ok=True)
    token = new_token(token_file)
    timeout = connect_budget(section)
    spec = {
        "name": name,
        "argv": [str(item) for item in section["command"]],  # ${env:} expanded by the keeper
        "cwd": descriptor_cwd(f"service '{name}'", base, section.get("cwd")),
        "secrets": sorted(
            {key for value in env.values() for key in REFERENCE.findall(value)}
            | {key for item in section["command"] for key in REFERENCE.findall(str(item))}
        ),
        "env": sorted(env),  # the declared variables the server gets beside the safe ones
        "pass_env": list(section.get("pass_env") or ()),  # and those it gets when set
        "port": port,
        "token_file": str(token_file),
        "ready": str(table.ready_path(name)),
        "connect_timeout": timeout,
        "idle_timeout": idle,
    }
    record, started = launch(
        settings,
        name,
        KEPT,
        [sys.executable, "-m", "toolctl.mcp.keeper", definition(section, base, token)],
        ReadyFile(table.ready_path(name)),
        env={**_keeper_environment(settings, spec, expanded), SPEC_VARIABLE: json.dumps(spec)},
        port=port,
        url=f"tcp://127.0.0.1:{port}",
        timeout=timeout + 5,
        reuse=lambda running: running.kind != KEPT or serves(settings, running, section, base),
    )
    if not started:
        token_file.unlink(missing_ok=True)
    return record, started


def _keeper_environment(
    settings: Settings, spec: Mapping[str, Any], expanded: Mapping[str, str]
) -> dict[str, str]:
    """What the keeper holds for its idle time, never the caller's whole environment: what
    its server gets (``child_environment``), the variables its command and env name
    (``${env:NAME}``: it expands the command's, and masks them all in what the server
    says), and what its own interpreter may need to start (``PYTHON*``)."""
    environ = settings.environ
    named = {key: environ[key] for key in spec["secrets"] if key in environ}
    python = {k: v for k, v in environ.items() if k.startswith(_INTERPRETER)}
    served = child_environment(environ, expanded, spec["pass_env"])
    return {**python, **named, **served}


_INTERPRETER = ("PYTHON", "VIRTUAL_ENV", "LD_LIBRARY_PATH")


def definition(section: Mapping[str, Any], base: Path, token: str) -> str:
    """What a kept session serves, as a keyed digest: the server's command, its declared
    environment (``env``, ``pass_env``) and where it runs. Kept sessions are named by
    service in one table per user, and two projects may each define a service of the same
    name: a session serves
    only its own definition. Keyed with the session's token (readable by its owner only),
    so the digest in the keeper's command line tells nobody else anything of a value."""
    import hashlib
    import hmac
    import json

    what = {
        "command": [str(item) for item in section.get("command") or ()],
        "env": {str(k): str(v) for k, v in (section.get("env") or {}).items()},
        "cwd": str(section.get("cwd") or ""),
        "base": str(base.resolve()),
    }
    if section.get("pass_env"):  # (absent when empty: the sessions running keep their digest)
        what["pass_env"] = [str(pattern) for pattern in section["pass_env"]]
    text = json.dumps(what, sort_keys=True).encode()
    return "definition=" + hmac.new(token.encode(), text, hashlib.sha256).hexdigest()[:32]


def serves(
    settings: Settings, record: ProcessRecord, section: Mapping[str, Any], base: Path
) -> bool:
    """Whether the kept session of ``record`` was started for this definition."""
    if record.port is None:
        return False
    try:
        token = _token_file(settings, record.name, record.port).read_text().strip()
    except OSError:
        return False
    return record.argv[3:4] == [definition(section, base, token)]


def _token_file(settings: Settings, name: str, port: int) -> Path:
    from toolctl.processes.table import ProcessTable

    log = ProcessTable(settings).log_path(name)
    return log.with_name(f"{log.stem}.{port}.token")
