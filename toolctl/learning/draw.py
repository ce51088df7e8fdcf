"""The learned graph drawn: tools as nodes, learned transitions as edges as wide as they are likely.

An edge X → Y is drawn when Y took at least ``MIN_SHARE`` of what followed X (success-
weighted), labelled with that share; its line width grows with it. ``^`` is a session's
start. Graphviz (``dot``) turns DOT into SVG or PNG; it is run without a shell, with only
``PATH`` in its environment, and never outlives the call.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess

from toolctl.errors import TimedOut, ToolFailed, TransportUnavailable
from toolctl.learning.model import START, LearnedModel

MIN_SHARE = 0.05
GRAPHVIZ_TIMEOUT = 60.0


def learned_dot(model: LearnedModel, min_share: float = MIN_SHARE) -> str:
    """The model's first-order transitions as Graphviz DOT, sorted, byte-stable."""
    edges = []
    for context in sorted(model.contexts):
        if len(context) != 1:
            continue
        weights = model.weights(context)
        total = sum(weights.values())
        for tool, weight in sorted(weights.items()):
            share = weight / total if total else 0.0
            if share >= min_share:
                edges.append((context[0], tool, share))
    nodes = sorted({n for source, target, _ in edges for n in (source, target)} - {START})
    lines = ["digraph learned {", "  rankdir=LR;", "  node [shape=ellipse];"]
    if any(source == START for source, _, _ in edges):
        lines.append(f'  {_id(START)} [label="start", shape=point, width=0.2];')
    lines += [f"  {_id(name)} [label={_id(name)}];" for name in nodes]
    lines += [
        f'  {_id(s)} -> {_id(t)} [label="{share:.2f}", penwidth={0.5 + 6 * share:.2f}];'
        for s, t, share in edges
    ]
    return "\n".join([*lines, "}"]) + "\n"


def _id(name: str) -> str:
    """A DOT double-quoted id, as written (``查询`` too: DOT has no ``\\u`` escape, so
    JSON's drew ``u67e5u8be2``); only ``"`` and ``\\`` escaped (a name has no space)."""
    shown = "".join(f"<U+{ord(c):04X}>" if _hidden(c) else c for c in name)
    return '"' + shown.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _hidden(char: str) -> bool:
    """A character a transcript's tool name may hold that must not reach a terminal or a
    drawing as it is: a control (an escape sequence sets the terminal's title), or one
    that hides or reorders text (bidi controls, TAG characters)."""
    import unicodedata

    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


def graphviz(
    dot: str, format: str, path: str | None = None, timeout: float = GRAPHVIZ_TIMEOUT
) -> bytes:
    """``dot -T<format>`` of the DOT text; exit 5 without Graphviz, 1 when it fails."""
    program = shutil.which("dot", path=path)
    if program is None:
        raise TransportUnavailable(
            "Graphviz 'dot' not found on PATH",
            hint="install Graphviz (Debian: apt-get install graphviz), or use --format dot",
        )
    try:
        child = subprocess.Popen(
            [program, f"-T{format}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": path or ""},
            start_new_session=True,  # its own group: a timeout ends all it started
        )
    except OSError as exc:
        raise TransportUnavailable(f"cannot run Graphviz 'dot': {exc.strerror or exc}") from None
    try:
        out, err = child.communicate(dot.encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        raise TimedOut(
            f"Graphviz 'dot' took more than {timeout:g} s and was stopped",
            hint="draw fewer actions (--group), or use --format dot",
        ) from None
    except BaseException:  # Ctrl-C, a signal: nothing it started outlives the command
        _kill_group(child)
        raise
    if child.returncode != 0:
        reason = err.decode(errors="replace").strip().splitlines()
        raise ToolFailed(f"Graphviz 'dot' failed: {reason[0] if reason else child.returncode}")
    return out


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    """End ``child`` and every process of its group (it leads one), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
