"""A registry of 100,000 tools: `list`, `export` and the cold index, against 10 tools and floors.

Measured side by side in one run, alternating, medians of ``--repeat`` rounds:

1. ``list --json``, ``list`` (table, piped) and ``export --format openai`` on 100,000
   tools (10 to a file) and on 10 tools, warm cache: wall time and peak RSS of each
   process, the ratio to 10 tools (target ≤ 10x, < 150 MB), and for the JSON the ratio to
   its floors: a process's ``json.dump`` of the same rows, already in memory, into
   /dev/null (the bytes are the same), and the C floor: a process that reads the rows
   from the warm index, decodes them and writes them compact with the C encoder (what
   any writer built on the json module pays before it indents a byte);
2. a cold index build (a fresh cache: ``show NAME --json``) against a bare Python process
   that only reads and parses the same files with ``tomllib`` (target ≤ 2x), on 10 tools
   to a file and on 10,000 to a file (``--cold-per-file``);
3. a re-index after an edit of one file of the 100,000-tool registry: ``show`` of a tool
   of that file right after the edit, minus a warm ``show`` (target ≤ 0.5 s).

``--baseline DIR`` runs the same commands with another checkout's ``toolctl`` package
(e.g. a worktree of main) too, each with its own cache, for before/after in one run.
The generated registry is kept under the temp dir (``toolctl-bench-scale-*``) and reused.

Usage::

    python bench/registry_scale.py [--tools 100000] [--repeat 5] [--baseline ../main]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from registry import make_registry

ROOT = Path(__file__).resolve().parents[1]
FLOOR = (
    "import sys, tomllib, pathlib\n"
    "for f in sorted(pathlib.Path(sys.argv[1]).rglob('*.toml')):\n"
    "    tomllib.loads(f.read_bytes().decode())\n"
)


def registry(tools: int, per_file: int) -> Path:
    """The generated registry, reused across runs (its files keep a past mtime)."""
    path = Path(tempfile.gettempdir()) / f"toolctl-bench-scale-{tools}-{per_file}"
    if not (path / "done").exists():
        shutil.rmtree(path, ignore_errors=True)
        make_registry(path / "reg", tools, per_file)
        (path / "done").touch()
    return path / "reg"


QUIET_DIR: Path | None = None
"""Where the processes run: an empty directory of this run (``python -m`` puts the working
directory first on the path, so a source tree, or any ``copy.py`` left in /tmp, would be
imported instead)."""


def run(argv: Sequence[str], env: Mapping[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one process; it must succeed."""
    started = time.perf_counter()
    child = subprocess.Popen(
        list(argv),
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=QUIET_DIR or tempfile.gettempdir(),
    )
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}): {stderr}")
    return elapsed, usage.ru_maxrss / 1024


Job = Callable[[], tuple[float, float]]


def alternate(jobs: Mapping[str, Job], repeat: int) -> dict[str, tuple[float, float]]:
    """Each job in turn, ``repeat`` rounds (after one warm-up); median seconds, max MB."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in jobs}
    for round_number in range(repeat + 1):
        for name, job in jobs.items():
            result = job()
            if round_number:
                samples[name].append(result)
    return {
        name: (statistics.median(s for s, _ in got), max(m for _, m in got))
        for name, got in samples.items()
    }


def variants(options: argparse.Namespace, work: Path) -> dict[str, dict[str, str]]:
    """Environment of each toolctl under test: this checkout, and the baseline if given."""
    here = {"NO_COLOR": "1", "XDG_CACHE_HOME": str(work / "cache"), "PYTHONPATH": str(ROOT)}
    found = {"": {**os.environ, **here}}
    if options.baseline:
        found["baseline "] = {
            **found[""],
            "PYTHONPATH": str(Path(options.baseline).resolve()),
            "XDG_CACHE_HOME": str(work / "cache-baseline"),
        }
    return found


DUMP_FLOOR = """
import json, os, sys, time
rows = json.loads(open(sys.argv[1], encoding="utf-8").read())
if sys.argv[2] == "export":  # rows of the size and depth of export's
    rows = [{"function": {"name": r["name"], "description": r["description"],
             "parameters": r["schema"]}, "type": "function"} for r in rows]
with open(os.devnull, "w", encoding="utf-8") as sink:
    started = time.perf_counter()
    json.dump(rows, sink, indent=2, sort_keys=True, ensure_ascii=False)
print(time.perf_counter() - started)
"""


def dump_floor(rows_file: Path, shape: str) -> Job:
    """A process's ``json.dump`` of the rows already in its memory (loading them untimed)."""

    def job() -> tuple[float, float]:
        argv = [sys.executable, "-c", DUMP_FLOOR, str(rows_file), shape]
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        return float(done.stdout), 0.0

    return job


C_FLOOR = """
import json, os, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
encode = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode  # C, compact
where = " FROM defs WHERE kind = 'tool' AND winner = 1 ORDER BY name"
with open(os.devnull, "w", encoding="utf-8") as sink:
    if sys.argv[2] == "export":
        rows = db.execute("SELECT name, json_extract(data, '$.description', '$.schema')" + where)
        for name, fields in rows:
            description, schema = json.loads(fields)
            function = {"description": description, "name": name, "parameters": schema}
            sink.write(encode({"function": function, "type": "function"}))
    else:
        for kind, file, line, runtime, data in db.execute(
            "SELECT kind, file, line, runtime, data" + where
        ):
            row = json.loads(data)
            row.update(kind=kind, file=file, line=line, runtime=runtime)
            sink.write(encode(row))
"""


def c_floor(work: Path, shape: str) -> Job:
    """A process that reads the rows from the warm index, decodes them and writes them with
    the C encoder, compact: what any writer built on the json module pays before indenting."""

    def job() -> tuple[float, float]:
        index = max((work / "cache").rglob("*.sqlite3"), key=lambda p: p.stat().st_size)
        return run([sys.executable, "-c", C_FLOOR, str(index), shape], os.environ)

    return job


def listings(options: argparse.Namespace, small: Path, big: Path, work: Path) -> None:
    toolctl = [sys.executable, "-m", "toolctl"]
    commands = {"list --json": ["list", "--json"], "list": ["list"]}
    commands["export -f openai"] = ["export", "--format", "openai"]
    jobs: dict[str, Job] = {}
    envs = variants(options, work)
    for prefix, env in envs.items():
        for label, args in commands.items():
            for size, path in (("10", small), ("big", big)):
                argv = [*toolctl, *args, "-r", str(path)]
                jobs[f"{prefix}{label} @{size}"] = lambda a=argv, e=env: run(a, e)  # type: ignore[misc]
        # byte-compiled first: with PYTHONDONTWRITEBYTECODE set, a checkout never run
        # before would compile every module in each timed start
        package = Path(env["PYTHONPATH"]) / "toolctl"
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
        for path in (small, big):  # warm each cache outside the timing
            run([*toolctl, "list", "-r", str(path)], env)
    rows_file = work / "rows.json"
    with rows_file.open("w") as out:
        argv = [*toolctl, "list", "--json", "-r", str(big)]
        subprocess.run(argv, env=envs[""], stdout=out, check=True, cwd=work)
    jobs["floor: json.dump of the rows @big"] = dump_floor(rows_file, "list")
    jobs["floor: json.dump of export rows @big"] = dump_floor(rows_file, "export")
    jobs["C floor: list rows @big"] = c_floor(work, "list")
    jobs["C floor: export rows @big"] = c_floor(work, "export")
    times = alternate(jobs, options.repeat)
    print(f"\nwarm cache, {options.tools:,} tools ('big') and 10 (median of {options.repeat})")
    floors = {
        "list --json": times["floor: json.dump of the rows @big"][0],
        "export -f openai": times["floor: json.dump of export rows @big"][0],
    }
    c_floors = {
        "list --json": times["C floor: list rows @big"][0],
        "export -f openai": times["C floor: export rows @big"][0],
    }
    for prefix in envs:
        for label in commands:
            small_s, _ = times[f"{prefix}{label} @10"]
            big_s, big_mb = times[f"{prefix}{label} @big"]
            floor, c_floor_s = floors.get(label), c_floors.get(label)
            against = f"  {big_s / floor:5.2f}x json.dump" if floor else ""
            against += f"  {big_s / c_floor_s:5.2f}x C floor" if c_floor_s else ""
            print(
                f"  {prefix + label:28} 10: {small_s * 1000:6.0f} ms   big: {big_s:6.2f} s "
                f"{big_mb:6.0f} MB   {big_s / small_s:5.1f}x 10 tools{against}"
            )
    for label, floor in floors.items():
        print(f"  floor: json.dump of the {label} rows, in memory    {floor:6.2f} s")
    small_json = times["list --json @10"][0]
    for label, floor in c_floors.items():
        print(
            f"  C floor: the {label} rows read, decoded, C-encoded compact (a process) "
            f"{floor:6.2f} s = {floor / small_json:4.1f}x 10-tool list --json"
        )


def cold_build(options: argparse.Namespace, big: Path, work: Path, per_file: int) -> None:
    floor_argv = [sys.executable, "-c", FLOOR, str(big)]
    jobs: dict[str, Job] = {"floor: tomllib only": lambda: run(floor_argv, os.environ)}
    for prefix, env in variants(options, work).items():
        name = f"tool-{options.tools - 1}"
        argv = [sys.executable, "-m", "toolctl", "show", name, "--json", "-r", str(big)]
        cache = Path(env["XDG_CACHE_HOME"]) / "cold"

        def cold(
            argv: list[str] = argv, env: Mapping[str, str] = env, cache: Path = cache
        ) -> tuple[float, float]:
            shutil.rmtree(cache, ignore_errors=True)
            return run(argv, {**env, "XDG_CACHE_HOME": str(cache)})

        jobs[f"{prefix}cold build (show)"] = cold
    times = alternate(jobs, max(1, options.repeat // 2))
    floor = times["floor: tomllib only"][0]
    rounds = max(1, options.repeat // 2)
    print(f"\ncold index build, {options.tools:,} tools, {per_file:,} a file (median of {rounds})")
    for name, (seconds, mb) in times.items():
        print(f"  {name:28} {seconds:6.2f} s {mb:6.0f} MB   {seconds / floor:5.2f}x tomllib")


def edit_one(options: argparse.Namespace, big: Path, work: Path) -> None:
    target = sorted(big.rglob("*.toml"))[len(list(big.rglob("*.toml"))) // 2]
    original = target.read_text()
    name = original.split('name = "', 1)[1].split('"', 1)[0]
    jobs: dict[str, Job] = {}
    for prefix, env in variants(options, work).items():
        argv = [sys.executable, "-m", "toolctl", "show", name, "--json", "-r", str(big)]
        run(argv, env)

        def edited(argv: list[str] = argv, env: Mapping[str, str] = env) -> tuple[float, float]:
            text = target.read_text()
            changed = original if text != original else original.replace("bench", "bench!", 1)
            target.write_text(changed)
            past = time.time() - 60
            os.utime(target, (past, past))
            return run(argv, env)

        jobs[f"{prefix}show after an edit"] = edited
        jobs[f"{prefix}show, warm"] = lambda argv=argv, env=env: run(argv, env)  # type: ignore[misc]
    try:
        times = alternate(jobs, options.repeat)
    finally:
        target.write_text(original)
        os.utime(target, (time.time() - 120, time.time() - 120))
    print(f"\nre-index after an edit of one file of {options.tools:,} tools (median)")
    for prefix in variants(options, work):
        after, warm = times[f"{prefix}show after an edit"][0], times[f"{prefix}show, warm"][0]
        print(
            f"  {prefix + 'edit':28} show after it {after:6.2f} s, warm {warm:5.2f} s: "
            f"re-index {after - warm:5.2f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=100_000)
    parser.add_argument("--per-file", type=int, default=10)
    parser.add_argument(
        "--cold-per-file",
        type=int,
        action="append",
        help="layouts of the cold build, tools a file (default: --per-file and 10,000)",
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", metavar="DIR", help="another checkout to compare with")
    parser.add_argument("--only", choices=["list", "cold", "edit"], action="append")
    options = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    big, small = registry(options.tools, options.per_file), registry(10, 1)
    work = Path(tempfile.mkdtemp(prefix="toolctl-bench-scale-run-"))
    global QUIET_DIR
    QUIET_DIR = work / "cwd"
    QUIET_DIR.mkdir()
    try:
        wanted = options.only or ["list", "cold", "edit"]
        if "list" in wanted:
            listings(options, small, big, work)
        if "cold" in wanted:
            for per_file in options.cold_per_file or [options.per_file, 10_000]:
                cold_build(options, registry(options.tools, per_file), work, per_file)
        if "edit" in wanted:
            edit_one(options, big, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
