"""Registry files to index rows, many at a time: in a process pool when there are many.

A cold index of 100,000 tools is mostly TOML parsing and validation, work that splits by
file. What comes back from a file is what the index stores (each definition's compact
JSON) plus what the cross-definition lint reads; a plain tool (no service) carries only
its runtime for that, so results cross the process boundary cheaply and a rebuild after
one edit decodes almost nothing it already had.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, NamedTuple

from toolctl.findings import Finding
from toolctl.registry.loader import Definition

POOL_FROM = 2_000_000
"""Bytes to parse from which a cold build uses a process pool (~20,000 plain tools; below
it, starting the workers costs more than it saves)."""


class Parsed(NamedTuple):
    """One file's definitions (with ``light`` data), their stored JSON, its problems."""

    definitions: list[Definition]
    texts: list[str]
    problems: list[Finding]


def dumps(data: Any) -> str:
    """The compact, sorted JSON the index stores for a definition."""
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


def light(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """What the lint and the runtime column need of a definition: everything, except for a
    tool without a service, whose runtime is its own."""
    if kind == "tool" and not data.get("service"):
        return {"runtime": data.get("runtime"), "service": None}
    return data


def light_from_text(kind: str, text: str, runtime: str | None) -> dict[str, Any]:
    """``light`` of stored JSON, decoding only what may name a service (or is no tool)."""
    if kind == "tool" and text.count('"service":') == 1 and '"service":null' in text:
        return {"runtime": runtime, "service": None}
    data: dict[str, Any] = json.loads(text)
    return data


def parse_for_index(path: str) -> Parsed:
    from toolctl.registry.loader import parse_file

    parsed = parse_file(path)
    return Parsed(
        [d._replace(data=light(d.kind, d.data)) for d in parsed.definitions],
        [
            dumps(d.data) if text is None else text
            for d, text in zip(
                parsed.definitions, parsed.texts or [None] * len(parsed.definitions), strict=True
            )
        ],
        parsed.problems,
    )


def parse_many(
    paths: Sequence[str], workers: int | None = None, size: int | None = None
) -> list[Parsed]:
    """``parse_for_index`` of every path, in order; ``workers`` processes (default: one
    per usable CPU once the files' ``size`` is POOL_FROM bytes, else this process alone)."""
    small = size is None or size < POOL_FROM
    if (workers is None and small) or len(paths) < 2:
        return [parse_for_index(path) for path in paths]
    import multiprocessing
    import threading

    # Workers are forked (the models are built already, nothing is re-imported); forking
    # is unsafe once other threads run (a server refreshing its index): then no pool.
    fork = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    if workers is None:
        workers = _cpus() if fork else 1
    if workers <= 1:
        return [parse_for_index(path) for path in paths]
    from concurrent.futures import ProcessPoolExecutor

    import toolctl.models  # noqa: F401  (once, before the fork, not once a worker)

    context = multiprocessing.get_context("fork" if fork else "spawn")
    chunk = max(1, len(paths) // (workers * 8))
    try:
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            return list(pool.map(parse_for_index, paths, chunksize=chunk))
    except (OSError, RuntimeError):  # no processes to be had (limits, sandbox): do it here
        return [parse_for_index(path) for path in paths]


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
