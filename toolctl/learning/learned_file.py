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
from collections.abc import Mapping
from typing import Any

from toolctl.errors import RegistryError, UsageError
from toolctl.learning.model import LearnedModel, Proposal, Tally

FORMAT = 1
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


def _name(name: str) -> str:
    if not name or any(c.isspace() for c in name):
        raise UsageError(f"tool name {name!r} cannot be learned: it is empty or has a space")
    return name


def _key(key: str) -> str:
    return key if _BARE.match(key) else _string(key)


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=True)  # a JSON string is a TOML basic string here


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
            Proposal(kind, p["from"], p["to"], float(p["score"]), p.get("current"))
            for kind in sorted(proposed)
            for p in proposed[kind]
        )
        return LearnedModel(
            _read_tallies(document.get("tools", {})),
            contexts,
            _count(document["sessions"], "sessions"),
            _count(document["order"], "order"),
            _count(document["min_support"], "min_support"),
            _weight(document["failure_weight"], "failure_weight"),
            _weight(document["lexical_weight"], "lexical_weight"),
            proposals,
        )
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
        raise RegistryError(
            f"{origin}: not a learned file ({exc})",
            hint="write it again with `toolctl graph learn`",
        ) from None


def _read_tallies(table: Any) -> dict[str, Tally]:
    return {
        tool: Tally(_count(v["calls"], "calls"), _count(v.get("failed", 0), "failed"))
        for tool, v in table.items()
    }


def _count(value: Any, key: str) -> int:
    """A count a learned file holds: a whole number, 0 or more (``inf``, ``1e400`` and -1
    are a hand edit, not what `graph learn` writes)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ValueError(f"{key} = {value!r} is not a count")
    if value < 0 or value in (float("inf"), float("-inf")) or int(value) != value:
        raise ValueError(f"{key} = {value!r} is not a count")
    return int(value)


def _weight(value: Any, key: str) -> float:
    """A weight: a finite number, 0 or more."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} = {value!r} is not a number")
    if not 0 <= value < float("inf"):  # NaN fails too
        raise ValueError(f"{key} = {value!r} is not a finite number of 0 or more")
    return float(value)
