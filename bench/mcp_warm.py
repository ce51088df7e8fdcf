"""A slow stdio server kept warm: the second `toolctl run` of a tool on
``@modelcontextprotocol/server-everything``, started through ``npx``, with ``keep_alive``.

Measured in one run, alternating (issue "MCP configurations as people really write them"):

* ``toolctl run everything.echo`` without ``keep_alive``: every run starts the server
  through ``npx`` (the cost people pay by default);
* the same with ``keep_alive = true``: the first run (a warm-up round, not measured)
  starts the kept session, every later one reuses it. Target: under 0.5 s;
* ``toolctl run`` of a trivial local tool, for scale.

The server is the one the tests use (tests/mcp/node, ``npm ci`` by `make mcp-servers`);
``npx --no-install`` finds it there, as it finds a package already in its cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import alternate, report

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "tests/mcp/node"
TOOLCTL = str(Path(sys.executable).with_name("toolctl"))
COMMAND = ["npx", "--no-install", "@modelcontextprotocol/server-everything", "stdio"]
LOCAL = """
[[tool]]
name = "local-echo"
[tool.local]
command = ["{python}", "-c", "import sys; sys.stdout.write(sys.stdin.read())"]
[[tool.arguments]]
name = "message"
"""


def registry(work: Path, *, keep: bool, env: dict[str, str]) -> Path:
    reg = work / ("warm" if keep else "cold")
    reg.mkdir()
    (reg / "local.toml").write_text(LOCAL.format(python=sys.executable))
    (reg / "everything.toml").write_text(
        f"""
[[service]]
name = "everything"
[service.mcp]
command = {json.dumps(COMMAND)}
cwd = {json.dumps(str(NODE))}
keep_alive = {"true" if keep else "false"}
"""
    )
    imported = subprocess.run(
        [TOOLCTL, "import", "mcp", "everything", "--tool", "echo", "-r", str(reg)],
        env={**os.environ, **env},
        capture_output=True,
    )
    if imported.returncode != 0:
        raise SystemExit(f"import mcp failed: {imported.stderr.decode()}")
    past = time.time() - 60  # written a minute ago: the cache trusts it at once
    for path in (reg, *reg.rglob("*")):
        os.utime(path, (past, past))
    return reg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=11)
    options = parser.parse_args()
    if not (NODE / "node_modules/@modelcontextprotocol/server-everything").is_dir():
        raise SystemExit("server-everything is not installed: run `make mcp-servers`")
    work = Path(tempfile.mkdtemp(prefix="toolctl-bench-warm-"))
    env = {
        "XDG_CACHE_HOME": str(work / "cache"),
        "XDG_STATE_HOME": str(work / "state"),
        "NO_COLOR": "1",
    }
    # kept sessions are known by service name in the state directory: one each
    cold_env = {**env, "XDG_STATE_HOME": str(work / "state-cold")}
    cold, warm = registry(work, keep=False, env=cold_env), registry(work, keep=True, env=env)
    names = (
        "toolctl run, local tool",
        "toolctl run, everything via npx, no keep_alive",
        "toolctl run, everything via npx, keep_alive (warm)",
    )

    def run(reg: Path, tool: str) -> list[str]:
        return [TOOLCTL, "run", tool, "-a", "message=hi", "-r", str(reg)]

    try:
        commands = [
            run(cold, "local-echo"),
            run(cold, "everything.echo"),
            run(warm, "everything.echo"),
        ]
        times = alternate(
            dict(zip(names, commands, strict=True)),
            repeat=options.repeat,
            warmup=1,
            env=env,
            envs={names[0]: cold_env, names[1]: cold_env},
        )
    finally:
        subprocess.run(
            [TOOLCTL, "service", "down", "everything", "-r", str(warm)],
            env={**os.environ, **env},
            capture_output=True,
        )
        shutil.rmtree(work, ignore_errors=True)
    base = times[names[0]]
    report(
        "a run of server-everything's echo over stdio (median; target: warm < 500 ms)",
        [(k, f"{v:7.1f} ms   {v / base:.2f}x the local tool") for k, v in times.items()],
    )


if __name__ == "__main__":
    main()
