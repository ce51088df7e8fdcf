"""What `toolctl check` computes: every problem, with --strict applied, and the verdict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from toolctl.findings import Finding, Severity
from toolctl.registry.index import Registry
from toolctl.registry.lint import SHADOW
from toolctl.registry.loader import HIDDEN, Definition, first_key_line
from toolctl.registry.runnable import (
    MACHINE_CODES,
    SECRET,
    SHELL,
    ImageLookup,
    runnable_problems,
)
from toolctl.settings import Settings
from toolctl.targets import distinct, input_file


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

    def to_sarif(self) -> dict[str, Any]:
        """The findings as a SARIF 2.1.0 log (``registry.sarif``)."""
        from toolctl import __version__
        from toolctl.registry.sarif import sarif_log

        return sarif_log(self.findings, __version__, notes=self.notes)

    def to_json(
        self, show_path: Callable[[str], str], show_text: Callable[[str], str] = str
    ) -> dict[str, Any]:
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
                    "message": show_text(f.message),
                }
                for f in self.findings
            ],
            "notes": [show_text(note) for note in self.notes],
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
    from toolctl.registry.directories import require_directories

    require_directories(settings)
    images = local_images(settings)
    if files:
        result = check_files(files, settings, images=images)
    else:
        result = _project_only(run_check(settings, locked=locked, images=images), settings)
        result = replace(result, findings=[*_missing_directories(settings), *result.findings])
    if not live:
        return result
    from toolctl.mcp.live import live_check

    registry = Registry.open(settings, full=True)
    services, tools = registry.winners("service"), registry.winners("tool")
    found = live_check(settings, services, tools, strict=settings.strict)
    if settings.strict:  # every warning an error: tools not imported, unpinned, new offers
        found = [f._replace(severity="error") for f in found]
    return replace(result, findings=[*result.findings, *found])


def check_files(
    files: Sequence[Path], settings: Settings, *, images: ImageLookup | None = None
) -> CheckResult:
    """Descriptor files checked: one inside a registry directory gets the registry's own
    check, limited to it; one outside is a candidate (``registry.candidates``)."""
    import os

    from toolctl.registry.candidates import candidate_findings
    from toolctl.registry.loader import parse_file

    for file in files:
        input_file(file, "descriptor file", regular=True)
    paths = [os.path.abspath(file) for file in distinct(files)]
    roots = [os.path.realpath(root) for root in settings.search_path]
    named = [os.path.abspath(root) for root in settings.search_path]
    inside = {  # by where it is (a symlink in a registry directory is the registry's) or leads
        p
        for p in paths
        if any(_below(p, r) for r in named) or any(_below(os.path.realpath(p), r) for r in roots)
    }
    findings, notes = [], list(image_notes(images))
    if inside:
        whole = run_check(settings, images=images)
        real = {os.path.realpath(p) for p in inside}
        findings += [f for f in whole.findings if os.path.realpath(f.file) in real]
        notes = list(dict.fromkeys([*whole.notes, *notes]))
    found, definitions = candidate_findings([p for p in paths if p not in inside], settings, images)
    findings += [strictened(f, settings.strict) for f in found]
    definitions += sum(len(parse_file(p).definitions) for p in inside)
    return CheckResult(findings, len(paths), definitions, tuple(notes))


QUEUE = "queue"
"""The code of two Pulsar services on one request queue."""


def shared_queues(registry: Registry) -> list[Finding]:
    """A warning on each Pulsar service whose request queue an earlier one uses too: each
    service's workers subscribe as SERVICE-request, so every call went to a worker of both,
    ran twice, and the caller took the first answer."""
    first: dict[str, Definition] = {}
    found: list[Finding] = []
    for service in registry.iter_winners("service"):
        pulsar = service.data.get("pulsar")
        queue = pulsar.get("request_queue") if isinstance(pulsar, dict) else None
        if not isinstance(queue, str):
            continue
        holder = first.setdefault(queue, service)
        if holder is not service:
            message = (
                f"service '{service.name}' sends to the request queue of service "
                f"'{holder.name}' ({holder.file}:{holder.line}), {queue}: the workers of both "
                "take every call, so each runs twice"
            )
            found.append(Finding("warning", QUEUE, service.file, service.line, message))
    return found


def _below(path: str, root: str) -> bool:
    import os

    return os.path.commonpath([path, root]) == root


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
    from toolctl.registry.lockfile import LOCK_FILE, compare, find_lock

    announced = announced_findings(settings)
    registry = Registry.open(settings, full=True)
    findings = [strictened(found, settings.strict) for found in registry.findings()]
    findings += [  # a file the walk had to leave out: `list` skips it, an error here
        Finding("error", "parse", path, 1, why) for path, why in registry.unreadable()
    ]
    findings += [
        found._replace(severity="error") if settings.strict else found for found in announced
    ]
    for found in outside_links(registry, settings):
        findings.append(found._replace(severity="error") if settings.strict else found)
    findings += [strictened(found, settings.strict) for found in shared_queues(registry)]
    in_force = (d for kind in ("tool", "service") for d in registry.iter_winners(kind))
    machine = runnable_problems(in_force, settings.environ, images)
    findings += [strictened(found, settings.strict) for found in machine]
    lock = find_lock(settings)
    if locked and lock is None:
        raise RegistryError(
            f"--locked: no {LOCK_FILE} on the search path", hint="run 'toolctl lock' first"
        )
    if lock is not None and (locked or settings.strict):
        findings += compare(registry, lock)
    files, definitions = registry.counts()
    return CheckResult(findings, files, definitions, image_notes(images))


def _missing_directories(settings: Settings) -> list[Finding]:
    """A project's registry directory that does not exist (a typo in ``paths``, a directory
    renamed): read as empty, the check would pass on nothing. An error when none of the
    project's exists, else a warning (an error under --strict)."""
    from toolctl.registry.directories import missing_project_registries

    project = settings.project
    missing = missing_project_registries(settings)
    if project is None or not missing:
        return []
    every = len(missing) == len(project.registries)
    severity: Severity = "error" if every or settings.strict else "warning"
    try:
        line = first_key_line(project.file.read_text(encoding="utf-8-sig"), "paths")
    except (OSError, UnicodeDecodeError):
        line = 1
    return [
        Finding(
            severity,
            "project",
            str(project.file),
            line,
            f"registry directory {d} does not exist: nothing of it is checked (a typo in "
            "paths? `toolctl init` makes registry/)",
        )
        for d in missing
    ]


def _project_only(result: CheckResult, settings: Settings) -> CheckResult:
    """In a project, what its own directories hold: the user registry (read after them)
    is one person's, on one machine; CI runs without it, so a problem there must not fail
    the project's check (or its pre-commit hook). What was left out is said in a note."""
    import os
    import shlex

    user = [
        os.path.realpath(d)
        for d, source in zip(settings.search_path, settings.sources, strict=False)
        if source == "user"
    ]
    if not user or "project" not in settings.sources:
        return result
    kept = [
        f for f in result.findings if not any(_below(os.path.realpath(f.file), u) for u in user)
    ]
    left = len(result.findings) - len(kept)
    if not left:
        return result
    every = " ".join(
        f"-r {shlex.quote(str(d))}" for d in settings.without_announcements().search_path
    )
    note = (
        f"left out {left} finding(s) in the user registry ({', '.join(user)}): not the "
        f"project's; `toolctl check {every}` shows them"
    )
    return replace(result, findings=kept, notes=(*result.notes, note))


def announced_findings(settings: Settings) -> list[Finding]:
    """With announcements read: what a read says (refusals, a broker that did not answer)
    and the ``[[trust]]`` entries that are not valid."""
    if settings.announced is None:
        return []
    from toolctl.registry.announced import CODE, WHERE, refresh
    from toolctl.registry.trust import read_trust
    from toolctl.reporting import Quiet

    said: list[str] = []

    class Told(Quiet):
        def warn(self, message: str) -> None:
            said.append(message)

    found = refresh(settings, Told())
    found += [Finding("warning", CODE, WHERE, 1, message) for message in said]
    return found + read_trust(settings)[1]


def ensure_strictly_usable(registry: Registry) -> None:
    """``Registry.ensure_usable``, and under --strict what else `check --strict` calls an
    error of the definitions in force: one that changed since ``toolctl.lock`` (when there
    is one), a file a symlink places outside its registry directory. Asked once per
    Registry (a server opens a new one when a file changes)."""
    registry.ensure_usable()
    settings = registry.settings
    if not settings.strict or registry.strictly_usable:
        return
    from toolctl.registry.index.reader import refuse_strictly
    from toolctl.registry.lockfile import compare, find_lock

    found = outside_links(registry, settings)
    lock = find_lock(settings)
    if lock is not None:
        found += compare(registry, lock)
    if found:
        refuse_strictly(len(found), found[0].file, found[0].line, found[0].message)
    registry.strictly_usable = True


def strictened(found: Finding, strict: bool) -> Finding:
    """A finding as `check` reports it: --strict makes shadows, hidden text, written
    secrets, arguments run as code and machine problems errors."""
    if strict and (
        found.code in (SHADOW, HIDDEN, SECRET, SHELL, QUEUE) or found.code in MACHINE_CODES
    ):
        return found._replace(severity="error")
    return found


def image_notes(images: ImageLookup | None) -> tuple[str, ...]:
    return (images.note,) if images is not None and images.note else ()


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
