"""The learning commands' work, one function each: learn, evaluate, rank the next tools, draw.

``learn_graph`` takes any iterable of sessions (transcripts' calls now; the run history's
sessions when it exists), so every source of calls learns the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from toolctl.errors import UsageError
from toolctl.learning.blend import Scored, rank_next
from toolctl.learning.bm25 import tool_text
from toolctl.learning.model import LEXICAL_WEIGHT, LearnedModel, Step, learn
from toolctl.reporting import QUIET, Reporter
from toolctl.transcripts import Transcript, read_transcripts

if TYPE_CHECKING:
    from toolctl.graph import Toolkit
    from toolctl.learning.evaluate import Evaluation
    from toolctl.registry.index import Registry
    from toolctl.settings import Settings


@dataclass(frozen=True)
class Learned:
    path: Path
    model: LearnedModel
    skipped: int = 0
    """Calls left out: a tool name that cannot be learned (``learned_file.learnable``)."""
    text: str | None = None
    """The learned file, for the caller to print, when ``path`` is ``-`` (stdout)."""

    def summary(self) -> dict[str, int]:
        m = self.model
        counts = {"contexts": len(m.contexts), "proposals": len(m.proposals)}
        return {"sessions": m.sessions, "calls": m.calls, **counts}


@dataclass(frozen=True)
class NextTools:
    """The ranked next tools; ``learned`` is the file read (None: none was found)."""

    ranked: tuple[Scored, ...]
    learned: Path | None
    unknown: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"next": [{"name": s.name, "score": round(s.score, 4)} for s in self.ranked]}


def read_files(paths: Sequence[Path]) -> list[Transcript]:
    """Every conversation of the transcript files (``-`` is standard input), in order."""
    found: list[Transcript] = []
    for path in paths:
        found += _read_one(path)
    return found


def _read_one(path: Path) -> Iterator[Transcript]:

    from toolctl.arguments import bounded_lines

    if str(path) == "-":
        yield from read_transcripts(bounded_lines(sys.stdin.buffer, "<stdin>"), "<stdin>")
        return
    try:
        with path.open("rb") as lines:
            yield from list(read_transcripts(bounded_lines(lines, str(path)), str(path)))
    except OSError as exc:
        raise UsageError(f"cannot read transcripts {path}: {exc.strerror or exc}") from None


def learn_graph(
    sessions: Iterable[Sequence[Step]],
    registry: Registry,
    *,
    out: Path | None = None,
    lexical_weight: float | None = None,
) -> Learned:
    """Learn from ``sessions``, propose edge scores for the registry's actions, write the file."""
    from toolctl.learning.learned_file import dumps
    from toolctl.learning.proposals import propose
    from toolctl.learning.store import default_learned_path, write_learned

    weight = LEXICAL_WEIGHT if lexical_weight is None else lexical_weight
    kept, skipped = _learnable(sessions, in_force_name(registry))
    model = learn(kept, lexical_weight=weight)
    toolkit = _toolkit(registry)
    if toolkit is not None:
        model = replace(model, proposals=propose(toolkit, model))
    path = out or default_learned_path(registry.settings)
    text = dumps(model)
    if str(path) == "-":
        return Learned(path, model, skipped, text)
    write_learned(path, text, through_links=out is not None)
    return Learned(path, model, skipped)


class _Called(NamedTuple):
    """A call as learning takes it: its tool by its registry name."""

    tool: str
    success: bool | None


def _learnable(
    sessions: Iterable[Sequence[Step]], named: Callable[[str], str]
) -> tuple[list[list[Step]], int]:
    """The sessions without the calls whose tool name cannot be learned (empty, with a
    space, not text: one imported transcript must not stop learning from all the others;
    or ``^``, the session's start, which such a tool was counted as), each tool by its
    registry name (``in_force_name``), and how many calls that left out."""
    from toolctl.learning.learned_file import learnable
    from toolctl.learning.model import START

    kept: list[list[Step]] = []
    skipped = 0
    for session in sessions:
        steps: list[Step] = [
            _Called(named(s.tool), s.success)
            for s in session
            if s.tool != START and learnable(s.tool)
        ]
        skipped += len(session) - len(steps)
        kept.append(steps)
    return kept, skipped


def in_force_name(registry: Registry) -> Callable[[str], str]:
    """A tool's name as a transcript gives it, to the registry's: an OpenAI function name
    (``dotted_name``, what `export --format openai` calls ``dotted.name``, and what `run`
    and `serve` accept) is the tool in force it stands for; any other name stays."""
    from functools import lru_cache

    @lru_cache(maxsize=4096)
    def named(name: str) -> str:
        if not isinstance(name, str) or registry.definitions("tool", name):
            return name
        holder = registry.by_function_name(name)
        return holder.name if holder is not None else name

    return named


def learn_from_transcripts(paths: Sequence[Path], registry: Registry, out: Path | None) -> Learned:
    """``learn_graph`` over transcript files, its lexical weight cross-validated on them;
    UsageError when they hold no call to learn from (as for an empty history: an empty
    learned file would only replace the one there, reviewed and versioned)."""
    from toolctl.learning.evaluate import tuned_weight
    from toolctl.learning.learned_file import learnable

    transcripts = read_files(paths)
    if not any(learnable(c.tool) for t in transcripts for c in t.calls):
        shown = ", ".join(str(p) for p in paths)
        raise UsageError(
            f"nothing to learn from: no tool call in {shown}",
            hint="the transcripts' assistant messages name no tool_calls (OpenAI chat JSONL)",
        )
    weight = tuned_weight(transcripts)
    return learn_graph((t.calls for t in transcripts), registry, out=out, lexical_weight=weight)


def learn_from_history(registry: Registry, out: Path | None, reporter: Reporter = QUIET) -> Learned:
    """``learn_graph`` over the run history's sessions (``toolctl.records``: the calls made
    through toolctl, and transcripts imported with `history import`); rows of the history
    skipped as odd are told to ``reporter``."""
    from toolctl.learning.learned_file import learnable
    from toolctl.records.transcripts import history_transcripts

    transcripts = list(history_transcripts(registry.settings, reporter=reporter))
    if not any(t.calls for t in transcripts):
        raise UsageError(
            "nothing to learn from: the run history has no calls yet",
            hint="run some tools, 'toolctl history import FILE', or give --from-transcripts FILE",
        )
    if not any(learnable(c.tool) for t in transcripts for c in t.calls):
        # as for an empty history: an empty learned file would only hide the old one
        raise UsageError(
            "nothing to learn from: no call in the run history names a tool that can be "
            "learned (each name is empty, has a space or is not text)",
            hint="run some tools, 'toolctl history import FILE', or give --from-transcripts FILE",
        )
    return learn_graph((t.calls for t in transcripts), registry, out=out)


def evaluate_files(paths: Sequence[Path], folds: int, top: int) -> Evaluation:
    from toolctl.learning.evaluate import evaluate

    transcripts = read_files(paths)
    if not any(t.calls for t in transcripts):
        raise UsageError("no tool calls in the transcripts: nothing to evaluate")
    return evaluate(transcripts, folds, top)


def recommend_next(
    registry: Registry, after: Sequence[str], query: str, top: int, learned: Path | None = None
) -> NextTools:
    """The ``top`` tools in force most likely to be called after ``after``."""
    from toolctl.learning.store import find_learned, read_learned

    if top < 1:
        raise UsageError("--top must be at least 1")
    path = learned or find_learned(registry.settings)
    model = read_learned(path) if path else learn([])
    candidates = tools_in_force(registry)
    after = [in_force_name(registry)(name) for name in after]
    best = rank_next(model, after, candidates, query=query, toolkit=_toolkit(registry), top=top)
    unknown = tuple(name for name in dict.fromkeys(after) if name not in candidates)
    return NextTools(tuple(best), path, unknown)


def learned_drawing(settings: Settings, format: str) -> str:
    """`graph --learned`: the DOT text of the learned file the search path finds (exit 4
    when there is none; dot, svg and png only)."""
    from toolctl.errors import NotFound
    from toolctl.learning.draw import learned_dot
    from toolctl.learning.store import find_learned, read_learned

    path = find_learned(settings)
    if path is None:
        raise NotFound("learned file", "toolctl.learned", hint="run `toolctl graph learn` first")
    if format not in ("dot", "svg", "png"):
        raise UsageError("--learned draws dot, svg or png")
    return learned_dot(read_learned(path))


def tools_in_force(registry: Registry) -> dict[str, str]:
    """Each tool in force and its text for BM25. Only winners count: a shadowed definition
    or a look-alike of an earlier name (quarantined by the index) is never suggested."""
    texts: dict[str, str] = {}
    for definition in registry.iter_winners("tool"):
        data = definition.data
        description = str(data.get("description") or "")
        texts[definition.name] = tool_text(definition.name, description, data.get("schema") or {})
    return texts


def _toolkit(registry: Registry) -> Toolkit | None:
    from toolctl.registry.toolkit import load_toolkit

    if not registry.names_of("action"):
        return None
    return load_toolkit(registry)
