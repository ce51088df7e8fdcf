"""Timing helpers for the benchmarks: commands measured alternately, in one run, as ratios.

The machines are shared and noisy, so absolute times drift; running the commands being
compared in turn, many times, and comparing medians is what stays meaningful.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def median_ms(samples: Sequence[float]) -> float:
    return statistics.median(samples) * 1000


def alternate(commands: Mapping[str, Sequence[str]], **options: Any) -> dict[str, float]:
    """Run each command in turn ``repeat`` times; the median wall time of each, in ms.

    The options are ``alternate_cpu``'s.
    """
    wall, _ = alternate_cpu(commands, **options)
    return wall


def alternate_cpu(
    commands: Mapping[str, Sequence[str]],
    *,
    repeat: int = 21,
    warmup: int = 2,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    envs: Mapping[str, Mapping[str, str]] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """Run each command in turn ``repeat`` times (after ``warmup`` rounds): the median wall
    time of each, and its median CPU time (user + system, with every process it waited
    for: steadier than wall time on a busy machine), in ms.

    ``envs`` adds variables for some commands only (by name), over ``env``.
    """
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    environment = {**os.environ, **(env or {})}
    own = {name: {**environment, **extra} for name, extra in (envs or {}).items()}
    for round_number in range(warmup + repeat):
        for name, argv in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(
                list(argv),
                cwd=cwd,
                env=own.get(name, environment),
                input=stdin,
                capture_output=True,
            )
            elapsed = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed ({done.returncode}): {done.stderr.decode()}")
            if round_number >= warmup:
                wall[name].append(elapsed)
                used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                cpu[name].append(used)
    return (
        {name: median_ms(values) for name, values in wall.items()},
        {name: median_ms(values) for name, values in cpu.items()},
    )


def report(title: str, rows: Sequence[tuple[str, str]]) -> None:
    print(f"\n{title}")
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key.ljust(width)}  {value}")
