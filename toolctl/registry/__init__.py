"""The registry: the search path (loader), the first-wins index (index), writes (writer).

``open_registry`` is how every command opens it: directories named on the command line
must exist, skipped files are reported, and ``--strict`` refuses a registry with errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolctl.registry.directories import missing_project_registries, require_directories

if TYPE_CHECKING:
    from toolctl.registry.index import Registry
    from toolctl.reporting import Reporter
    from toolctl.settings import Settings


__all__ = ["MAX_TOLD", "missing_project_registries", "open_registry", "require_directories"]

MAX_TOLD = 10
"""Refused announcements a command warns of one by one (anyone may publish: a flood of
junk must not bury its output); `check` reports them all."""


def open_registry(
    settings: Settings,
    reporter: Reporter,
    *,
    full: bool = False,
    warn: bool = True,
    announcements_required: bool = False,
) -> Registry:
    """The registry, after warning about skipped files and enforcing --strict. Announcements
    that cannot be read are a warning, or with ``announcements_required`` the error."""
    from toolctl.registry.index import Registry

    require_directories(settings)
    _project_directories(settings, reporter)
    if settings.ignored_project is not None:
        reporter.warn(
            f"ignoring {settings.ignored_project}: another user owns it "
            "(if it is yours, chown it to you; else remove it)"
        )
    if settings.announced is not None:  # an explicit opt-in: a bounded read of the topic
        from toolctl.registry.announced import refresh

        refusals = refresh(settings, reporter, required=announcements_required)
        for refused in refusals[:MAX_TOLD]:
            reporter.warn(f"announcement refused: {refused.message}")
        if len(refusals) > MAX_TOLD:
            more = len(refusals) - MAX_TOLD
            reporter.warn(f"{more} more announcements refused; `toolctl check` lists them all")
    registry = Registry.open(settings, full=full, reporter=reporter)
    if warn:
        for path, why in registry.unreadable():
            reporter.warn(f"{path}: {why}")
        for problem in registry.skipped():
            reporter.warn(f"{problem.file}:{problem.line}: {problem.message} (skipped)")
    registry.ensure_usable()
    if settings.strict:  # (what else --strict refuses: not loaded otherwise)
        from toolctl.registry.check import ensure_strictly_usable

        ensure_strictly_usable(registry)
    return registry


def _project_directories(settings: Settings, reporter: Reporter) -> None:
    """A project's registry directory that does not exist (a typo in ``paths``), as `check`
    tells it: under --strict the command is refused (exit 3, as `check --strict` fails);
    else a warning when none of the project's exists (its tools would silently be the
    user registry's)."""
    project = settings.project
    missing = missing_project_registries(settings)
    if project is None or not missing:
        return
    told = f"registry directory {missing[0]} ({project.file}) does not exist" + (
        f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    )
    if settings.strict:
        from toolctl.errors import RegistryError

        raise RegistryError(f"--strict is on and {told}", hint="fix paths in toolctl.toml")
    if len(missing) == len(project.registries):
        reporter.warn(f"{told}: nothing of the project's is read (a typo in paths?)")
