"""Registry size: `toolctl show NAME --json` on 10, 10,000 and 100,000 tools, and --version.

Targets (issue "toolctl foundation"): with a warm cache, show on 10,000 tools in 10,000
files takes at most 1.2x its time on 10 tools, on 100,000 tools at most 1.5x;
`toolctl --version` takes at most 4x `python3 -c pass`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from timing import alternate, report

TOOL = (
    '[[tool]]\nname = "{name}"\ndescription = "bench tool {n}"\n[tool.local]\ncommand = ["true"]\n'
)


def make_registry(root: Path, tools: int, per_file: int) -> Path:
    """``tools`` tools, ``per_file`` to a file, a hundred files to a directory."""
    for start in range(0, tools, per_file):
        directory = root / f"d{start // (per_file * 100):05d}"
        directory.mkdir(parents=True, exist_ok=True)
        text = "\n".join(
            TOOL.format(name=f"tool-{n}", n=n) for n in range(start, min(start + per_file, tools))
        )
        (directory / f"t{start:07d}.toml").write_text(text)
    past = time.time() - 60  # as if written a minute ago: no "racy" directories
    for directory in [root, *root.iterdir()]:
        os.utime(directory, (past, past))
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--big", type=int, default=100_000, help="tools in the largest registry")
    parser.add_argument("--big-per-file", type=int, default=10, help="tools per file in it")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="toolctl-bench-registry-"))
    env = {"XDG_CACHE_HOME": str(work / "cache"), "NO_COLOR": "1"}
    toolctl = [sys.executable, "-m", "toolctl"]
    try:
        sizes = {
            "10": (10, 1),
            "10k": (10_000, 1),
            f"{options.big // 1000}k": (options.big, options.big_per_file),
        }
        registries = {}
        for label, (tools, per_file) in sizes.items():
            registries[label] = make_registry(work / label, tools, per_file)
            started = time.perf_counter()
            show = [*toolctl, "show", f"tool-{tools - 1}", "--json", "-r", str(registries[label])]
            alternate({"first": show}, repeat=1, warmup=0, env=env)
            print(f"cold cache build, {label} tools: {time.perf_counter() - started:.1f} s")
        times = alternate(
            {
                label: [*toolctl, "show", f"tool-{sizes[label][0] // 2}", "--json", "-r", str(path)]
                for label, path in registries.items()
            },
            repeat=options.repeat,
            env=env,
        )
        startup = alternate(
            {
                "python3 -c pass": [sys.executable, "-c", "pass"],
                "toolctl --version": [*toolctl, "--version"],
            },
            repeat=options.repeat,
            env=env,
        )
        rows = [
            (f"show, {label} tools", f"{ms:7.1f} ms   {ms / times['10']:.2f}x")
            for label, ms in times.items()
        ]
        report("toolctl show NAME --json, warm cache (median, ratio to 10 tools)", rows)
        base = startup["python3 -c pass"]
        report(
            "start-up (median, ratio to python3 -c pass)",
            [(k, f"{v:7.1f} ms   {v / base:.2f}x") for k, v in startup.items()],
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
