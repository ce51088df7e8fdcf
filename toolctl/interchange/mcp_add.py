"""`toolctl mcp add NAME -- COMMAND ARGS...` (or ``--url URL``): an MCP server in two steps
a user would otherwise take by hand: the server becomes a ``[[service]]`` as `import
mcp-config` would write it from a client's config (each secret in its env, arguments or URL
its own ``${env:NAME}``), then its tools are imported as `import mcp SERVICE` does."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolctl.errors import RegistryError, ToolctlError, UsageError
from toolctl.interchange.flows import ImportDone, ImportOptions, check_prefix, import_files
from toolctl.reporting import Reporter
from toolctl.settings import Settings


def add_mcp_server(
    settings: Settings,
    reporter: Reporter,
    name: str,
    command: Sequence[str] = (),
    *,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    options: ImportOptions | None = None,
) -> ImportDone:
    """Register the server ``name`` (``command`` over stdio, or ``url`` over HTTP, sent
    ``headers``), then import its tools; a server whose tools cannot be listed stays
    registered (the error says how to retry)."""
    from toolctl.interchange.client_configs import ClientConfig
    from toolctl.interchange.client_servers import server_of
    from toolctl.interchange.mcp_config import import_configs
    from toolctl.names import name_problem

    problem = name_problem(name)  # the name the user chose is the service's, as it is
    if problem is not None:
        raise UsageError(f"invalid service name {name!r}: {problem}")
    check_prefix(options.prefix if options else None)  # before the service is registered
    if command and url:
        raise UsageError("give the server's command after --, or --url, not both")
    if not command and not url:
        raise UsageError("give the server's command after --, or --url (one of them)")
    if headers and not url:
        raise UsageError("--header goes with --url: a server run by its command takes --env")
    value: dict[str, Any] = {"url": url} if url else {"command": command[0], "args": command[1:]}
    if env:
        value["env"] = dict(env)
    if headers:
        value["headers"] = dict(headers)
    server = server_of(name, value, "claude")
    config = ClientConfig("the command line", "claude", [server], Path(os.getcwd()))
    added = import_configs(settings, [config])
    for note in added.notes:
        reporter.warn(note)
    if added.conflicts:  # the name is taken: that refusal is the command's, as it is
        raise added.conflicts[0]
    if added.refused or not added.written:
        raise RegistryError(f"MCP server '{name}' not added", details=added.refused or added.notes)
    service = added.written[0].name
    reporter.note(added.written[0].describe("added"))
    for variable, where in added.exports.items():
        reporter.warn(f"set {variable} before running its tools ({where}); not copied")
    # the tools are listed with the secrets given here, which the registry does not hold
    listing = settings._replace(environ={**settings.environ, **added.values})
    try:
        done = import_files(listing, reporter, "mcp", [Path(service)], options)
    except ToolctlError as exc:
        exc.hint = "; ".join(
            filter(
                None,
                [
                    exc.hint,
                    f"service '{service}' is registered: "
                    f"'toolctl import mcp {service}' imports its tools once it answers "
                    f"('toolctl unregister service {service}' removes it)",
                ],
            )
        )
        raise
    if added.exports:  # --json says what to set too, as `import mcp-config --json` does
        listed, exports = done.document, sorted(added.exports)
        done.document = lambda show: {**listed(show), "export": exports}
    return done
