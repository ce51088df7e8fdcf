"""`toolctl recommend` on a big toolkit against a 10-action one, measured side by side.

The big registry: 20,000 actions with 5 Next edges each, 50,000 tools and 100,000 Call
edges (5 per action), scores drawn uniformly from 0.00..1.00 (seeded), in 200 TOML files
below a temporary directory. The small one: 10 actions of the same shape over 25 tools.
The script

1. writes both registries and builds each registry cache once (timed on its own: the
   first command after a change parses and validates every file);
2. runs ``toolctl recommend`` end to end as a subprocess, warm cache, alternating big and
   small runs so that machine noise hits both alike: 100 start actions with ``--hops 3``
   on the big registry, all 10 actions with ``--hops 3`` on the small one (default
   threshold 0.5, table output into a pipe);
3. times the library call ``toolctl.graph.recommend`` alone (toolkit already in memory,
   no I/O) for the big query, and loading the toolkit from the warm cache.

It prints medians and the ratio big/small; the target is a ratio of at most 8 and a
library call under 50 ms. For scale: Chat2Graph's own ``recommend_subgraph`` (networkx)
takes about 5.5 s for the big query on the machines this was written for.

Usage::

    python bench/recommend.py [--repeat 9] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ACTIONS, TOOLS, NEXT_PER_ACTION, CALLS_PER_ACTION = 20_000, 50_000, 5, 5
STARTS, HOPS = 100, 3


def score(rng: random.Random) -> float:
    return round(rng.random(), 2)


def inline(key: str, names: list[str], rng: random.Random) -> str:
    return ", ".join(f'{{ {key} = "{name}", score = {score(rng)} }}' for name in names)


def write_registry(directory: Path, actions: int, tools: int, files: int, seed: int) -> list[str]:
    """TOML files with ``tools`` tools and ``actions`` actions; returns the action names."""
    rng = random.Random(seed)
    tool_names = [f"tool-{i:05d}" for i in range(tools)]
    action_names = [f"action-{i:05d}" for i in range(actions)]
    chunks: dict[str, list[str]] = {}
    for i, name in enumerate(tool_names):
        chunks.setdefault(f"tools/tools-{i * files // (2 * tools):03d}.toml", []).append(
            f'[[tool]]\nname = "{name}"\ndescription = "Tool number {i}"\ncategory = "bench"\n'
            '[tool.local]\ncommand = ["true"]\n[[tool.arguments]]\nname = "text"\n'
            'description = "Some text"\n'
        )
    for i, name in enumerate(action_names):
        others = rng.sample(range(actions - 1), NEXT_PER_ACTION)
        nexts = [action_names[j if j < i else j + 1] for j in others]
        calls = rng.sample(tool_names, CALLS_PER_ACTION)
        chunks.setdefault(f"actions/actions-{i * files // (2 * actions):03d}.toml", []).append(
            f'[[action]]\nname = "{name}"\ndescription = "Step number {i}"\n'
            f"tools = [{inline('tool', calls, rng)}]\nnext = [{inline('action', nexts, rng)}]\n"
        )
    for relative, entries in chunks.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(entries))
    return action_names


def toolctl(registry: Path, env: dict[str, str], *args: str) -> float:
    """One end-to-end run; returns its wall time in seconds."""
    command = [sys.executable, "-m", "toolctl", *args, "--registry", str(registry)]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def library(
    registry: Path, env: dict[str, str], starts: list[str], repeat: int
) -> dict[str, float]:
    """Load the toolkit from the warm cache, then time recommend() alone."""
    from toolctl.graph import recommend
    from toolctl.registry.index import Registry
    from toolctl.registry.toolkit import load_toolkit
    from toolctl.settings import Settings

    settings = Settings.load([registry], environ=env)
    started = time.perf_counter()
    toolkit = load_toolkit(Registry.open(settings))
    loaded = time.perf_counter() - started
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = recommend(toolkit, starts, HOPS)
        times.append(time.perf_counter() - started)
    print(
        f"  big query keeps {len(result.actions)} actions, {len(result.tools)} tools, "
        f"{len(result.edges)} edges"
    )
    return {
        "load": loaded,
        "min": min(times),
        "median": statistics.median(times),
        "max": max(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--keep", type=Path, help="Write the registries here and keep them.")
    options = parser.parse_args()
    work = options.keep or Path(tempfile.mkdtemp(prefix="toolctl-bench-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"), "NO_COLOR": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    try:
        print(f"writing registries below {work} ...")
        started = time.perf_counter()
        big_actions = write_registry(work / "big", ACTIONS, TOOLS, 200, seed=1)
        small_actions = write_registry(work / "small", 10, 25, 2, seed=2)
        print(f"  written in {time.perf_counter() - started:.1f} s")
        starts = random.Random(3).sample(big_actions, STARTS)
        big_args = ["recommend", *(f"--action={a}" for a in starts), "--hops", str(HOPS)]
        small_args = ["recommend", *(f"--action={a}" for a in small_actions), "--hops", str(HOPS)]
        print("building the registry caches (first run after a change) ...")
        print(f"  big:   {toolctl(work / 'big', env, *big_args):.1f} s")
        print(f"  small: {toolctl(work / 'small', env, *small_args):.2f} s")
        big, small = [], []
        for _ in range(options.repeat):
            big.append(toolctl(work / "big", env, *big_args))
            small.append(toolctl(work / "small", env, *small_args))
        b, s = statistics.median(big), statistics.median(small)
        print(f"end to end, warm cache, median of {options.repeat} alternating runs:")
        print(f"  big:   {b * 1000:7.1f} ms   (min {min(big) * 1000:.1f})")
        print(f"  small: {s * 1000:7.1f} ms   (min {min(small) * 1000:.1f})")
        print(f"  ratio big/small: {b / s:.2f}  (target <= 8)")
        print("library call, toolkit in memory:")
        lib = library(work / "big", env, starts, max(options.repeat, 20))
        print(f"  decoding all actions and building the graph: {lib['load'] * 1000:.1f} ms")
        print(
            f"  recommend(): median {lib['median'] * 1000:.1f} ms, min {lib['min'] * 1000:.1f}, "
            f"max {lib['max'] * 1000:.1f}  (target < 50 ms)"
        )
    finally:
        if options.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
