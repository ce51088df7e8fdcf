"""Adaptive serving (`mcp serve --adaptive K`): each MCP session is shown its top K tools.

A model shown 50 tools chooses worse and pays for every schema in its context; the learned
graph (``toolctl.learning``) says which few a session is likely to call next. After each
``tools/call`` the session's list is ranked again from the calls it has made
(``learning.blend.adaptive_tools``); when the list changes, that session alone is sent
``notifications/tools/list_changed``. Tools named with ``--pin`` are always shown, ahead of
the ranked ones.

The narrowing is what is *listed*: a call to a served tool that is not on the session's list
still runs (a client may have cached an earlier list; refusing it would break the call, not
protect anything, since every served tool is one the user chose to serve).

The model is the learned file in force (``toolctl.learned``, written by `graph learn`); with
none, the run history's sessions are learned in memory; with no history either, the ranking
falls back to the order of names, and the server says so once.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolctl.graph import Toolkit
    from toolctl.learning.model import LearnedModel
    from toolctl.registry.index import Registry
    from toolctl.reporting import Reporter
    from toolctl.serve.dispatch import Dispatcher
    from toolctl.settings import Settings


@dataclass(frozen=True)
class AdaptiveConfig:
    """``top``: how many ranked tools a session is shown; ``pinned``: always shown too."""

    top: int
    pinned: tuple[str, ...] = ()


@dataclass
class _Session:
    calls: list[str] = field(default_factory=list)
    shown: tuple[str, ...] | None = None


class Adaptive:
    """The tools each session is shown, kept per session object (stdio's one, or each
    ``Mcp-Session-Id`` over HTTP); a session that ends is forgotten with it."""

    def __init__(
        self, config: AdaptiveConfig, model: LearnedModel, toolkit: Toolkit | None = None
    ) -> None:
        self.config, self.model, self.toolkit = config, model, toolkit
        self._sessions: weakref.WeakKeyDictionary[Any, _Session] = weakref.WeakKeyDictionary()
        self._texts: tuple[int, dict[str, str]] | None = None

    def shown(self, session: Any, tools: Mapping[str, Mapping[str, Any]]) -> tuple[str, ...]:
        """The names ``session`` is shown now, of the served ``tools`` (name → data)."""
        state = self._sessions.setdefault(session, _Session())
        state.shown = self._rank(state.calls, tools)
        return state.shown

    def called(self, session: Any, name: str, tools: Mapping[str, Mapping[str, Any]]) -> bool:
        """Record that ``session`` called ``name``; True when its list has changed (and the
        session had been shown one: a client that never listed is not told)."""
        state = self._sessions.setdefault(session, _Session())
        state.calls.append(name)
        if state.shown is None:
            return False
        return self._rank(state.calls, tools) != state.shown

    def _rank(
        self, calls: Sequence[str], tools: Mapping[str, Mapping[str, Any]]
    ) -> tuple[str, ...]:
        from toolctl.learning.blend import adaptive_tools

        texts = self._candidates(tools)
        chosen = adaptive_tools(
            self.model,
            calls,
            texts,
            self.config.top,
            pinned=self.config.pinned,
            toolkit=self.toolkit,
        )
        return tuple(chosen)

    def _candidates(self, tools: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
        """Each served tool's text, computed once per listing the catalog holds."""
        from toolctl.learning.bm25 import tool_text

        if self._texts is None or self._texts[0] != id(tools):
            texts = {
                name: tool_text(name, str(data.get("description") or ""), data.get("schema") or {})
                for name, data in tools.items()
            }
            self._texts = (id(tools), texts)
        return self._texts[1]


def adaptive_config(top: int | None, pinned: Sequence[str] | None) -> AdaptiveConfig | None:
    """The options ``--adaptive K`` and ``--pin NAME``; None without --adaptive."""
    from toolctl.errors import UsageError

    if top is None:
        if pinned:
            raise UsageError("--pin needs --adaptive K: without it every tool is listed")
        return None
    if top < 1:
        raise UsageError("--adaptive must be at least 1")
    return AdaptiveConfig(top, tuple(dict.fromkeys(pinned or ())))


def open_adaptive(
    registry: Registry, config: AdaptiveConfig, reporter: Reporter, served: Mapping[str, Any]
) -> Adaptive:
    """The Adaptive for ``settings``' registry: the learned file in force, else the run
    history learned in memory (said on the reporter), else no model at all (said too).
    NotFound for a ``--pin`` that names no served tool."""
    from toolctl.errors import NotFound, ToolctlError
    from toolctl.learning.model import learn
    from toolctl.learning.store import find_learned, read_learned

    settings = registry.settings
    unknown = [name for name in config.pinned if name not in served]
    if unknown:
        close = registry.suggest("tool", unknown[0])
        raise NotFound("tool", unknown[0], close, hint="--pin names a tool this server serves")
    toolkit = _toolkit(registry)
    path = find_learned(settings)
    if path is not None:
        return Adaptive(config, read_learned(path), toolkit)
    try:
        sessions = _history_sessions(settings)
    except ToolctlError as exc:  # a damaged history never keeps a server from serving
        reporter.warn(f"{exc}; ranking without it")
        sessions = []
    if sessions:
        reporter.warn(
            "no learned file (toolctl.learned): ranking from the run history's "
            f"{len(sessions)} sessions; 'toolctl graph learn' writes one to review and keep"
        )
        return Adaptive(config, learn(sessions), toolkit)
    reporter.warn(
        "nothing learned yet (no toolctl.learned, no run history): every session is shown "
        f"its first {config.top} tools by name until 'toolctl graph learn' has something"
    )
    return Adaptive(config, learn([]), toolkit)


def _history_sessions(settings: Settings) -> list[Any]:
    from toolctl.records.transcripts import history_transcripts

    return [t.calls for t in history_transcripts(settings) if t.calls]


def _toolkit(registry: Registry) -> Toolkit | None:
    if not registry.names_of("action"):
        return None
    from toolctl.registry.toolkit import load_toolkit

    toolkit: Toolkit = load_toolkit(registry)
    return toolkit


def served_adaptive(
    dispatcher: Dispatcher, config: AdaptiveConfig | None, reporter: Reporter
) -> Adaptive | None:
    """The Adaptive of a server's ``dispatcher`` (None without ``--adaptive``)."""
    if config is None:
        return None
    catalog = dispatcher.catalog
    return open_adaptive(catalog.registry, config, reporter, catalog.snapshot.tools)
