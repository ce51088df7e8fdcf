"""The registry directories a search path names, checked before anything is read: one
named on the command line that does not exist, a project's that is missing. (Below the
``toolctl.registry`` façade, so its own modules check them without importing it.)"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from toolctl.settings import Settings


def missing_project_registries(settings: Settings) -> list[Path]:
    """The registry directories the project in force names that do not exist (a typo in
    ``paths``, a directory renamed): what `check` and every command read as empty."""
    project = settings.project
    if project is None or "project" not in settings.sources:
        return []
    return [d for d in project.registries if not d.is_dir()]


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
        if source == "user":
            _usable(directory)
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


def _usable(directory: Path) -> None:
    """OutputLost (74) for a user registry that cannot be there (XDG_DATA_HOME through a
    file, a directory toolctl may not enter): it read as an empty registry, `list` said
    "no tools" and `run` "not found". One not made yet is fine (`register` makes it)."""
    from toolctl.settings import own_file_unusable

    failed = _never_there(directory)
    unusable = own_file_unusable(failed) if failed is not None else None
    if unusable is not None:
        raise unusable from None


def user_registry_unusable(directory: Path) -> str | None:
    """Why the user registry can never be made or read there (`toolctl where`), or None."""
    failed = _never_there(directory)
    return None if failed is None else _UNUSABLE[failed.errno or 0]


def _never_there(directory: Path) -> OSError | None:
    """The error that says ``directory`` can be neither read nor made (see _UNUSABLE)."""
    import os

    try:
        os.stat(directory)
    except OSError as exc:
        return exc if (exc.errno or 0) in _UNUSABLE else None
    return None


_UNUSABLE = {
    errno.ENOTDIR: "a path through a file",
    errno.EACCES: "not permitted",
    errno.ELOOP: "a symlink loop",
}
"""Why a user registry can be neither read nor made, by errno."""
