"""`check`'s findings as a SARIF 2.1.0 log, for code-scanning services (GitHub's, GitLab's).

One run of the driver ``toolctl``: a rule per finding code met, a result per finding with its
level and its file:line. A file below the working directory is a relative URI against
``%SRCROOT%`` (where the scan ran, the repository's root in CI); one elsewhere a ``file:`` URI.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from toolctl.findings import Finding

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

RULES = {
    "parse": "A descriptor file or entry that does not parse or validate",
    "shadow": "A name defined again further down the search path",
    "placeholder": "A {placeholder} that names no argument",
    "shell": "An argument inside the code a shell or an interpreter runs",
    "lock": "A definition that differs from toolctl.lock",
    "symlink": "A symlink leaving a registry directory",
    "taken": "A name already taken on the search path",
    "clash": "A name (or a look-alike) defined twice in the files register would take",
    "confusable": "A name confusable with another",
    "service": "A tool naming a service that does not fit",
    "graph": "A problem in the toolkit graph",
    "group": "A group naming something missing",
    "project": "A project's registry directory that does not exist",
    "hidden": "Characters that hide or reorder text (bidi controls, TAG characters)",
    "executable": "A local tool's command that is not on this machine's PATH",
    "cwd": "A local tool's working directory that does not exist",
    "image": "A container image this machine's engine does not hold",
    "env": "An environment value that would leak or cannot be sent",
    "secret": "A secret written in a descriptor rather than passed as ${env:NAME}",
    "announced": "An announcement that was refused or could not be read",
    "trust": "A [[trust]] entry that is not valid",
    "mcp-pin": "An MCP tool whose server changed it since it was pinned",
    "mcp-vanished": "An MCP tool its server no longer offers",
    "mcp-new": "An MCP tool its server offers that is not imported",
    "mcp-unpinned": "An MCP tool without a pin",
    "mcp-unreachable": "An MCP server that could not be reached",
    "mcp-login": "An MCP server that needs a login",
}
"""Short descriptions of the best-known codes; any other code is its own description."""


def sarif_log(
    findings: Iterable[Finding],
    version: str,
    root: Path | None = None,
    notes: Iterable[str] = (),
) -> dict[str, Any]:
    """The SARIF log of ``findings``; paths relative to ``root`` (default: the working
    directory) when they lie below it, in locations and in messages; ``notes`` (what was
    not checked, and why) as the invocation's notifications."""
    base = Path(root or os.getcwd()).resolve()
    rules: dict[str, int] = {}
    results = []
    for finding in findings:
        index = rules.setdefault(finding.code, len(rules))
        results.append(_result(finding, index, base))
    told = [{"level": "note", "message": {"text": _relative(n, base)}} for n in notes]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "toolctl",
                        "version": version,
                        "rules": [_rule(code) for code in rules],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": base.as_uri() + "/"}},
                "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": told}],
                "results": results,
            }
        ],
    }


def _relative(text: str, base: Path) -> str:
    """Paths below ``base`` in a message shown relative to it, as the locations are: a
    runner's absolute directory says nothing in a code-scanning alert."""
    return text.replace(f"{base}{os.sep}", "")


def _rule(code: str) -> dict[str, Any]:
    return {"id": code, "shortDescription": {"text": RULES.get(code, code)}}


def _result(finding: Finding, index: int, base: Path) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": _artifact(finding.file, base)}
    if finding.line >= 1:
        location["region"] = {"startLine": finding.line}
    return {
        "ruleId": finding.code,
        "ruleIndex": index,
        "level": "error" if finding.severity == "error" else "warning",
        "message": {"text": _relative(finding.message, base)},
        "locations": [{"physicalLocation": location}],
    }


def _artifact(file: str, base: Path) -> dict[str, Any]:
    path = Path(file)
    absolute = (path if path.is_absolute() else base / path).resolve()
    try:
        relative = absolute.relative_to(base)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(relative.as_posix()), "uriBaseId": "%SRCROOT%"}
