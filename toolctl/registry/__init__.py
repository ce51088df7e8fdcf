"""The registry: the search path (loader), the first-wins index (index), writes (writer).

``open_registry`` is how every command opens it: directories named on the command line
must exist, skipped files are reported, and ``--strict`` refuses a registry with errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from toolctl.registry.index import Registry
    from toolctl.reporting import Reporter
    from toolctl.settings import Settings


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
        reporter.warn(f"ignoring {settings.ignored_project}: another user owns it")
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
    return registry


def missing_project_registries(settings: Settings) -> list[Path]:
    """The registry directories the project in force names that do not exist (a typo in
    ``paths``, a directory renamed): what `check` and every command read as empty."""
    project = settings.project
    if project is None or "project" not in settings.sources:
        return []
    return [d for d in project.registries if not d.is_dir()]


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


def require_directories(settings: Settings) -> None:
    """A directory named with --registry or TOOLCTL_REGISTRY must exist: a typo must not
    read as 'empty' (nor become a new registry)."""
    from toolctl.arguments import is_text, printable_os
    from toolctl.errors import UsageError

    for directory in settings.search_path:
        if not is_text(str(directory)):
            raise UsageError(
                f"registry directory {printable_os(str(directory))} is not a UTF-8 path",
                hint="rename it, or name another with --registry",
            )
    files = settings.without_announcements()
    for directory, source in zip(files.search_path, files.sources, strict=True):
        named = source in ("--registry", "TOOLCTL_REGISTRY")
        if not named and directory.exists() and not directory.is_dir():
            # a file where toolctl.toml's registry.paths names a directory: reading it as
            # empty would send `register` to the next directory on the path
            raise UsageError(
                f"registry directory {directory} (from the {source} registry) is not a directory",
                hint="name a directory there",
            )
        if named and not directory.is_dir() and directory != settings.user_registry:
            named_by = " (from TOOLCTL_REGISTRY)" if source == "TOOLCTL_REGISTRY" else ""
            if directory.exists():
                raise UsageError(
                    f"registry directory {directory}{named_by} is not a directory",
                    hint=f"name a directory, or leave out {source}",
                )
            raise UsageError(
                f"registry directory {directory}{named_by} does not exist",
                hint=f"create it (mkdir -p {directory}), or leave out {source}: "
                "`toolctl where` shows the registry in force",
            )
