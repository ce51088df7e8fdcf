"""What `toolctl check` computes: every problem, with --strict applied, and the verdict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolctl.registry.index import Registry
from toolctl.registry.lint import SHADOW
from toolctl.registry.loader import Problem
from toolctl.registry.runnable import MACHINE_CODES, ImageLookup, runnable_problems
from toolctl.settings import Settings


@dataclass(frozen=True)
class Finding:
    severity: str
    code: str
    file: str
    line: int
    message: str


@dataclass(frozen=True)
class CheckResult:
    findings: list[Finding]
    files: int
    definitions: int
    notes: tuple[str, ...] = ()
    """What was not checked, and why (no container engine to ask for images)."""

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
            "notes": list(self.notes),
        }


def check(
    settings: Settings,
    *,
    files: Sequence[Path] = (),
    locked: bool = False,
    live: bool = False,
) -> CheckResult:
    """`toolctl check`: ``run_check`` (or, given ``files``, ``check_files``: those files
    against the registry in force), container images asked of the engine in force, and with
    ``live`` what every MCP service says now (``live_check``: changed pins, vanished tools,
    tools not imported, unreachable servers)."""
    from toolctl.registry import require_directories

    require_directories(settings)
    images = local_images(settings)
    if files:
        from toolctl.registry.candidates import check_files

        result = check_files(files, settings, images=images)
    else:
        result = run_check(settings, locked=locked, images=images)
    if not live:
        return result
    from dataclasses import replace

    from toolctl.runners.mcp import live_check

    found = [Finding(*each) for each in live_check(settings, strict=settings.strict)]
    return replace(result, findings=[*result.findings, *found])


def local_images(settings: Settings) -> ImageLookup | None:
    """The container runtime's answer to "is this image here?" (its row of the table of
    runtimes names it: the registry does not import runners)."""
    from toolctl.runtimes import BY_NAME, import_dotted

    target = BY_NAME["container"].local_images
    return import_dotted(target)(settings) if target else None


def run_check(
    settings: Settings, *, locked: bool = False, images: ImageLookup | None = None
) -> CheckResult:
    """Refresh the index from every file and report its problems (shadows are errors if strict).

    ``locked`` (or --strict when a ``toolctl.lock`` exists) also compares the names in
    force with the lock; every difference is an error. What would stop a definition in
    force from running on this machine is reported too (``registry.runnable``; container
    images through ``images``).
    """
    from toolctl.errors import RegistryError
    from toolctl.registry.lockfile import LOCK_CODE, LOCK_FILE, compare, find_lock

    registry = Registry.open(settings, full=True)
    findings = []
    for report in registry.reports():
        findings.append(as_finding(report.code, report.problem, settings.strict))
    for p in outside_links(registry, settings):
        severity = "error" if settings.strict else p.severity
        findings.append(Finding(severity, LINK, p.file, p.line, p.message))
    in_force = (d for kind in ("tool", "service") for d in registry.iter_winners(kind))
    for code, p in runnable_problems(in_force, settings.environ, images):
        findings.append(as_finding(code, p, settings.strict))
    lock = find_lock(settings)
    if locked and lock is None:
        raise RegistryError(
            f"--locked: no {LOCK_FILE} on the search path", hint="run 'toolctl lock' first"
        )
    if lock is not None and (locked or settings.strict):
        findings += [
            Finding(p.severity, LOCK_CODE, p.file, p.line, p.message)
            for p in compare(registry, lock)
        ]
    files, definitions = registry.counts()
    return CheckResult(findings, files, definitions, image_notes(images))


def as_finding(code: str, problem: Problem, strict: bool) -> Finding:
    """A problem as `check` reports it; --strict makes shadows and machine problems errors."""
    severity = problem.severity
    if strict and (code == SHADOW or code in MACHINE_CODES):
        severity = "error"
    return Finding(severity, code, problem.file, problem.line, problem.message)


def image_notes(images: ImageLookup | None) -> tuple[str, ...]:
    return (images.note,) if images is not None and images.note else ()


LINK = "symlink"


def outside_links(registry: Registry, settings: Settings) -> list[Problem]:
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
            found.append(Problem("warning", file, 1, message))
    return found
