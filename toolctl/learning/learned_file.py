"""The learned file: a learned model as reviewable TOML, and back.

Everything is sorted and every number printed the same way, so the same sessions give the
same bytes. One table per context, ``[next."A B"]`` holding what came after the calls A
then B (``^`` is the start of a session), each next tool with its ``calls``, how many of
them ``failed``, and its ``score``: its share of the context's success-weighted calls.
``[tools]`` holds the same for all calls (popularity). ``[[proposed.call]]`` and
``[[proposed.next]]`` hold edge scores for the registry's actions, with the ``current``
score when the edge exists. Written by hand rather than by tomli-w: inline tables keep one
line per next tool, and the writer must stay fast at 10^5 contexts.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from toolctl.arguments import is_text
from toolctl.errors import RegistryError, UsageError
from toolctl.learning.model import LearnedModel, Proposal, Tally

FORMAT = 1
MAX_COUNT = 2**53  # the largest count a float (the scores' arithmetic) holds exactly
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")
_HEADER = """\
# Learned by `toolctl graph learn` from {sessions} sessions of {calls} calls; `toolctl
# recommend --after TOOL` reads it. [next."A B"]: what came after the calls A then B ("^":
# a session's start); calls, how many failed, and score: the share of the context's calls,
# a failed one counting {failure_weight}. [[proposed.*]]: Call/Next edge scores for the
# registry's actions, to review and copy by hand; toolctl never changes a descriptor.
"""


def dumps(model: LearnedModel) -> str:
    """The model as TOML text, byte-stable."""
    out = [
        _HEADER.format(
            sessions=model.sessions, calls=model.calls, failure_weight=model.failure_weight
        ),
        f"format = {FORMAT}\n",
        f"sessions = {model.sessions}\n",
        f"order = {model.order}\n",
        f"min_support = {model.min_support}\n",
        f"failure_weight = {float(model.failure_weight)!r}\n",
        f"lexical_weight = {float(model.lexical_weight)!r}\n",
    ]
    out.append("\n[tools]\n")
    out += _tallies(model.tools, model.weights(()))
    for context in sorted(model.contexts):
        out.append(f"\n[next.{_key(' '.join(_name(n) for n in context))}]\n")
        out += _tallies(model.contexts[context], model.weights(context))
    for proposal in model.proposals:
        out.append(f"\n[[proposed.{proposal.kind}]]\n")
        out.append(f"from = {_string(proposal.source)}\nto = {_string(proposal.target)}\n")
        out.append(f"score = {proposal.score!r}\n")
        if proposal.current is not None:
            out.append(f"current = {float(proposal.current)!r}\n")
    return "".join(out)


def _tallies(tallies: Mapping[str, Tally], weights: Mapping[str, float]) -> list[str]:
    total = sum(weights.values()) or 1.0
    return [
        f"{_key(_name(tool))} = {{ calls = {t.calls}, failed = {t.failed}, "
        f"score = {weights.get(tool, 0.0) / total:.4f} }}\n"
        for tool, t in sorted(tallies.items())
    ]


def learnable(name: str) -> bool:
    """Whether a tool name can be a key of the learned file: not empty, no space (contexts
    are names joined by spaces), and Unicode text (a lone surrogate from a JSON escape
    would be written as an escape no TOML reader takes: the file written, then refused)."""
    return bool(name) and not any(c.isspace() for c in name) and is_text(name)


def _name(name: str) -> str:
    if not learnable(name):
        raise UsageError(
            f"tool name {name!r} cannot be learned: it is empty, has a space or is not text"
        )
    return name


def _key(key: str) -> str:
    return key if _BARE.match(key) else _string(key)


def _string(text: str) -> str:
    """A TOML basic string: JSON's, written as UTF-8 (JSON's ASCII escapes of a character
    past U+FFFF are two surrogates, which no TOML reader takes: `search🔍` made the file
    unreadable), with DEL escaped as TOML asks (JSON escapes the other controls)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def loads(text: str, origin: str) -> LearnedModel:
    """A learned file's text as a model; RegistryError naming ``origin`` when it is not one."""
    import tomllib

    try:
        document = tomllib.loads(text)
        if document.get("format") != FORMAT:
            raise ValueError(f"format {document.get('format')!r}, expected {FORMAT}")
        contexts = {
            tuple(key.split(" ")): _read_tallies(value)
            for key, value in document.get("next", {}).items()
        }
        proposed = document.get("proposed", {})
        proposals = tuple(
            _read_proposal(kind, p) for kind in sorted(proposed) for p in proposed[kind]
        )
        return LearnedModel(
            _read_tallies(document.get("tools", {})),
            contexts,
            _count(document["sessions"], "sessions"),
            _count(document["order"], "order"),
            _count(document["min_support"], "min_support"),
            _number(document["failure_weight"], "failure_weight", most=1.0),
            _number(document["lexical_weight"], "lexical_weight", most=1.0),
            proposals,
        )
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
        raise RegistryError(
            f"{origin}: not a learned file ({_why(exc)})",
            hint="write it again with `toolctl graph learn`",
        ) from None


def _why(exc: Exception) -> str:
    """What is wrong with a learned file, in its own terms rather than Python's
    (``'sessions'``, ``string indices must be integers``)."""
    if isinstance(exc, KeyError):
        return f"it has no {exc.args[0]!r}" if exc.args else "a key is missing"
    if isinstance(exc, (TypeError, AttributeError)):
        return "a value of the wrong kind where a table or a number goes"
    return str(exc)


def _read_tallies(table: Any) -> dict[str, Tally]:
    return {tool: _read_tally(tool, v) for tool, v in table.items()}


def _read_tally(tool: str, value: Any) -> Tally:
    calls, failed = _count(value["calls"], "calls"), _count(value.get("failed", 0), "failed")
    if failed > calls:  # a negative weight: the tool would drop out of every context
        raise ValueError(f"{tool}: failed = {failed} is more than its calls = {calls}")
    return Tally(calls, failed)


def _read_proposal(kind: str, table: Any) -> Proposal:
    source, target, current = table["from"], table["to"], table.get("current")
    if not isinstance(source, str) or not isinstance(target, str):
        raise ValueError(f"[[proposed.{kind}]] from and to must be names")
    score = _number(table["score"], "score")
    return Proposal(
        kind, source, target, score, None if current is None else _number(current, "current")
    )


def _count(value: Any, key: str) -> int:
    """A count a learned file holds: a whole number from 0 to ``MAX_COUNT`` (``inf``,
    ``1e400``, -1 or a 400-digit integer are a hand edit, not what `graph learn` writes;
    the last one overflowed the float arithmetic of the scores)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ValueError(f"{key} = {_shown(value)} is not a count")
    if not 0 <= value <= MAX_COUNT or int(value) != value:
        raise ValueError(f"{key} = {_shown(value)} is not a count")
    return int(value)


def _number(value: Any, key: str, most: float | None = None) -> float:
    """A finite number, 0 or more, and at most ``most`` when given (1 for a weight: a share
    of a call, or of the blended score)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} = {_shown(value)} is not a number")
    if not 0 <= value <= (sys.float_info.max if most is None else most):  # NaN fails too
        bound = "of 0 or more" if most is None else f"from 0 to {most:g}"
        raise ValueError(f"{key} = {_shown(value)} is not a finite number {bound}")
    return float(value)


def _shown(value: Any) -> str:
    """The value for an error line, a hand-typed 400-digit integer cut short."""
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:20]}... ({len(text)} characters)"
