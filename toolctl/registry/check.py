"""What `toolctl check` computes: every problem, with --strict applied, and the verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolctl.findings import Finding
from toolctl.registry.index import Registry
from toolctl.registry.lint import SHADOW
from toolctl.settings import Settings


@dataclass(frozen=True)
class CheckResult:
    findings: list[Finding]
    files: int
    definitions: int

    @property
    def errors(self) -> int:
        return sum(f.severity == "error" for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.severity == "warning" for f in self.findings)

    @property
    def ok(self) -> bool:
        return self.errors == 0

    def summary(self) -> str:
        verdict = "ok" if self.ok else "failed"
        return (
            f"check {verdict}: {self.errors} error(s), {self.warnings} warning(s) "
            f"in {self.files} file(s), {self.definitions} definition(s)"
        )

    def to_json(self, show_path: Callable[[str], str]) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "errors": self.errors,
            "warnings": self.warnings,
            "files": self.files,
            "definitions": self.definitions,
            "problems": [
                {
                    "severity": f.severity,
                    "code": f.code,
                    "file": show_path(f.file),
                    "line": f.line,
                    "message": f.message,
                }
                for f in self.findings
            ],
        }


def check(settings: Settings, *, locked: bool = False, live: bool = False) -> CheckResult:
    """`toolctl check`: ``run_check``, and with ``live`` what every MCP service says now
    (``live_check``: changed pins, vanished tools, tools not imported, unreachable servers)."""
    from toolctl.registry import require_directories

    require_directories(settings)
    result = run_check(settings, locked=locked)
    if not live:
        return result
    from dataclasses import replace

    from toolctl.mcp.live import live_check

    registry = Registry.open(settings, full=True)
    services, tools = registry.winners("service"), registry.winners("tool")
    found = live_check(settings, services, tools, strict=settings.strict)
    return replace(result, findings=[*result.findings, *found])


def run_check(settings: Settings, *, locked: bool = False) -> CheckResult:
    """Refresh the index from every file and report its problems (shadows are errors if strict).

    ``locked`` (or --strict when a ``toolctl.lock`` exists) also compares the names in
    force with the lock; every difference is an error.
    """
    from toolctl.errors import RegistryError
    from toolctl.registry.lockfile import LOCK_FILE, compare, find_lock

    registry = Registry.open(settings, full=True)
    findings = [
        found._replace(severity="error") if settings.strict and found.code == SHADOW else found
        for found in registry.findings()
    ]
    for found in outside_links(registry, settings):
        findings.append(found._replace(severity="error") if settings.strict else found)
    lock = find_lock(settings)
    if locked and lock is None:
        raise RegistryError(
            f"--locked: no {LOCK_FILE} on the search path", hint="run 'toolctl lock' first"
        )
    if lock is not None and (locked or settings.strict):
        findings += compare(registry, lock)
    files, definitions = registry.counts()
    return CheckResult(findings, files, definitions)


LINK = "symlink"


def outside_links(registry: Registry, settings: Settings) -> list[Finding]:
    """Registry files that a symlink (of the file or a directory above it) places outside
    their registry directory: such a file can change without the directory changing."""
    import os

    roots = [os.path.realpath(root) for root in settings.search_path]
    real_dirs: dict[str, str] = {}
    found = []
    for file, root in registry.files():
        directory, base = os.path.split(file)
        if directory not in real_dirs:
            real_dirs[directory] = os.path.realpath(directory)
        real = os.path.join(real_dirs[directory], base)
        if os.path.islink(file):
            real = os.path.realpath(file)
        if os.path.commonpath([real, roots[root]]) != roots[root]:
            message = f"symlink leaves the registry directory: the file is {real}"
            found.append(Finding("warning", LINK, file, 1, message))
    return found
