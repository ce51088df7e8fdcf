"""`toolctl where`: where toolctl reads and writes, and which configuration is in force."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolctl.arguments import DEFAULT_TIMEOUT
from toolctl.errors import RegistryError
from toolctl.settings import Settings
from toolctl.urls import hide_passwords


@dataclass(frozen=True)
class Directory:
    path: Path
    source: str
    """``--registry``, ``TOOLCTL_REGISTRY``, ``project`` or ``user``."""
    exists: bool

    @property
    def refused(self) -> str | None:
        """Why commands refuse it (``registry.require_directories``), or None."""
        if self.exists:
            return None
        if self.path.exists():
            return "not a directory"
        if self.source in ("--registry", "TOOLCTL_REGISTRY"):
            return "does not exist"  # a named one is never created: a typo must show
        if self.source == "user":  # XDG_DATA_HOME through a file: it can never be made
            from toolctl.registry.directories import user_registry_unusable

            return user_registry_unusable(self.path)
        return None


@dataclass(frozen=True)
class Locations:
    project: Path | None
    ignored_project: Path | None
    search_path: list[Directory]
    writes_to: Path | None
    """Where `register` writes; None when no directory on the path is writable."""
    config_files: list[Path]
    user_config: Path
    data_dir: Path
    cache_dir: Path
    state_dir: Path
    defaults: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        def text(path: Path | None) -> str | None:
            return None if path is None else str(path)

        return {
            "project": text(self.project),
            "ignored_project": text(self.ignored_project),
            "search_path": [
                {"path": str(d.path), "source": d.source, "exists": d.exists}
                for d in self.search_path
            ],
            "register_writes_to": text(self.writes_to),
            "config_files": [str(p) for p in self.config_files],
            "user_config": str(self.user_config),
            "data_dir": str(self.data_dir),
            "cache_dir": str(self.cache_dir),
            "state_dir": str(self.state_dir),
            "defaults": self.defaults,
        }


def locations(settings: Settings) -> Locations:
    """Everything `where` shows, from the settings in force (nothing is created)."""
    from toolctl.project import CONFIG_FILE
    from toolctl.registry.writer import target_directory

    search_path = [
        Directory(path, source, path.is_dir())
        for path, source in zip(settings.search_path, settings.sources, strict=True)
    ]
    try:
        writes_to: Path | None = target_directory(settings)
    except RegistryError:
        writes_to = None
    if any(d.refused for d in search_path):
        writes_to = None  # register refuses the whole search path
    return Locations(
        project=settings.project.file if settings.project else None,
        ignored_project=settings.ignored_project,
        search_path=search_path,
        writes_to=writes_to,
        config_files=list(settings.config_files),
        user_config=settings.config_dir / CONFIG_FILE,
        data_dir=settings.data_dir,
        cache_dir=settings.cache_dir,
        state_dir=settings.state_dir,
        defaults={
            "pulsar_url": hide_passwords(settings.pulsar_url),  # shown, never used
            "container_engine": settings.container_engine,
            "timeout": settings.default_timeout or DEFAULT_TIMEOUT,
            **(
                {
                    "announcements": hide_passwords(
                        f"{settings.announced} ({settings.announce_topic})"
                    )
                }
                if settings.announced
                else {}
            ),
        },
    )
