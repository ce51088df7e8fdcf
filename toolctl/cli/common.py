"""Options every command shares, and the one way commands get Settings and the Registry."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolctl.errors import UsageError
from toolctl.registry.index import Registry
from toolctl.settings import Settings

RegistryOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--registry",
        "-r",
        metavar="DIR",
        help="Registry directory; repeat for a search path (first wins). Default: "
        "$TOOLCTL_REGISTRY, else the project's (toolctl.toml) then the user registry.",
    ),
]
StrictOption = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Refuse to work while the registry has errors or shadows (also TOOLCTL_STRICT=1).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (sorted, byte-stable).")]

KIND_NAMES = {"tools": "tool", "services": "service", "actions": "action", "groups": "group"}


def settings_for(registry: list[Path] | None, strict: bool = False, **extra: object) -> Settings:
    return Settings.load(registry or (), strict=strict, **extra)  # type: ignore[arg-type]


def open_registry(settings: Settings, *, full: bool = False, warn: bool = True) -> Registry:
    """The registry, after warning about skipped files and enforcing --strict."""
    from toolctl.cli import render

    require_directories(settings)
    registry = Registry.open(settings, full=full)
    if warn:
        for problem in registry.skipped():
            render.warn(
                f"{render.display_path(problem.file)}:{problem.line}: {problem.message} (skipped)"
            )
    registry.ensure_usable()
    return registry


def require_directories(settings: Settings) -> None:
    """A directory named with --registry must exist: a typo must not read as 'empty'."""
    from toolctl.cli import render

    if settings.ignored_project is not None:
        render.warn(
            f"ignoring {render.display_path(settings.ignored_project)}: another user owns it"
        )
    if settings.explicit_registry:
        for directory in settings.search_path:
            if not directory.is_dir() and directory != settings.user_registry:
                raise UsageError(
                    f"registry directory {render.display_path(directory)} does not exist",
                    hint=f"create it (mkdir -p {render.display_path(directory)}), or leave "
                    "out --registry: `toolctl where` shows the registry in force",
                )


def kind_of(word: str) -> str:
    """'tools' or 'tool' -> 'tool'; anything else is a usage error."""
    kind = KIND_NAMES.get(word, word)
    if kind not in KIND_NAMES.values():
        raise UsageError(f"unknown kind '{word}': expected one of {', '.join(KIND_NAMES)}")
    return kind
