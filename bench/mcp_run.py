"""`toolctl run` on MCP tools: a kept session against a local tool, and `--batch` over one
stdio session against a bare JSON-RPC loop on the same server. Both measured in one run.

Targets (issue "MCP servers as a runtime"):

* `toolctl run` of a tool on a kept session: at most 1.5x `toolctl run` of a trivial tool
  as a local subprocess (alternating the two).
* `toolctl run --batch` of 1,000 calls over one stdio session: at least 50% of the calls/s
  of a bare Python loop that starts the same server, does the handshake and writes the
  same ``tools/call`` requests one after the other, reading each answer (the floor). Both
  include starting the server.

The server is plugins/textmcp/server.py (the official SDK 1.x, low-level API), tool
``reverse``.
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
SERVER = ROOT / "plugins/textmcp/server.py"
TOOLCTL = str(Path(sys.executable).with_name("toolctl"))
LOCAL = """
[[tool]]
name = "echo"
[tool.local]
command = ["{python}", "-c", "import sys; sys.stdout.write(sys.stdin.read())"]
[[tool.arguments]]
name = "text"
"""
FLOOR = """
import json, subprocess, sys
server = subprocess.Popen([sys.executable, {server!r}], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, bufsize=0)
def ask(message):
    server.stdin.write(json.dumps(message).encode() + b"\\n")
    if "id" in message:
        return json.loads(server.stdout.readline())
ask({{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {{
    "protocolVersion": "2025-06-18", "capabilities": {{}},
    "clientInfo": {{"name": "floor", "version": "0"}}}}}})
ask({{"jsonrpc": "2.0", "method": "notifications/initialized"}})
for n in range({calls}):
    answer = ask({{"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
                  "params": {{"name": "reverse", "arguments": {{"text": f"line {{n}}"}}}}}})
    assert "result" in answer, answer
server.stdin.close()
server.wait()
"""


def registry(work: Path, *, keep: bool) -> Path:
    from toolctl.mcp import connect_stdio, pin_of

    with connect_stdio([sys.executable, str(SERVER)], timeout=60) as session:
        reverse = next(t for t in session.list_tools() if t["name"] == "reverse")
    reg = work / ("kept" if keep else "direct")
    reg.mkdir()
    (reg / "local.toml").write_text(LOCAL.format(python=sys.executable))
    (reg / "mcp.toml").write_text(
        f"""
[[service]]
name = "text-mcp"
[service.mcp]
command = {json.dumps([sys.executable, str(SERVER)])}
keep_alive = {"true" if keep else "false"}

[[tool]]
name = "reverse"
service = "text-mcp"
description = {json.dumps(reverse["description"])}
[tool.mcp]
name = "reverse"
pin = "{pin_of(reverse)}"
parameters = {{ type = "object", properties = {{ text = {{ type = "string" }} }} }}
"""
    )
    past = time.time() - 60  # written a minute ago: the cache trusts it at once
    for path in (reg, *reg.iterdir()):
        os.utime(path, (past, past))
    return reg


def kept_against_local(work: Path, repeat: int, env: dict[str, str]) -> None:
    reg = registry(work, keep=True)
    up = subprocess.run(
        [TOOLCTL, "service", "up", "text-mcp", "-r", str(reg)],
        env={**os.environ, **env},
        capture_output=True,
    )
    if up.returncode != 0:
        raise SystemExit(f"service up failed: {up.stderr.decode()}")
    try:
        times = alternate(
            {
                "toolctl run, local tool": [
                    TOOLCTL,
                    "run",
                    "echo",
                    "-a",
                    "text=hi",
                    "-r",
                    str(reg),
                ],
                "toolctl run, MCP tool on a kept session": [
                    TOOLCTL,
                    "run",
                    "reverse",
                    "-a",
                    "text=hi",
                    "-r",
                    str(reg),
                ],
            },
            repeat=repeat,
            env=env,
        )
    finally:
        subprocess.run(
            [TOOLCTL, "service", "down", "text-mcp", "-r", str(reg)],
            env={**os.environ, **env},
            capture_output=True,
        )
    base = times["toolctl run, local tool"]
    report(
        "one run: MCP tool on a kept session vs a local tool (median; target <= 1.5x)",
        [(k, f"{v:7.1f} ms   {v / base:.2f}x") for k, v in times.items()],
    )


def batch_against_floor(work: Path, calls: int, rounds: int, env: dict[str, str]) -> None:
    reg = registry(work, keep=False)
    lines = work / "lines.jsonl"
    lines.write_text("".join(json.dumps({"text": f"line {n}"}) + "\n" for n in range(calls)))
    floor = work / "floor.py"
    floor.write_text(FLOOR.format(server=str(SERVER), calls=calls))
    commands = {
        "bare JSON-RPC loop (floor)": [sys.executable, str(floor)],
        "toolctl run --batch --concurrency 16": [
            TOOLCTL, "run", "reverse", "-r", str(reg), "--batch", str(lines),
            "--concurrency", "16",
        ],
    }  # fmt: skip
    times = alternate(commands, repeat=rounds, warmup=1, env=env)
    floor_rate = calls / (times["bare JSON-RPC loop (floor)"] / 1000)
    report(
        f"--batch of {calls} calls over one stdio session vs the floor "
        "(median, server start included; target >= 50% of the floor's calls/s)",
        [
            (k, f"{v:8.1f} ms   {calls / (v / 1000):7.0f} calls/s   "
                f"{calls / (v / 1000) / floor_rate:.0%} of the floor")
            for k, v in times.items()
        ],
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="toolctl-bench-mcp-"))
    env = {
        "XDG_CACHE_HOME": str(work / "cache"),
        "XDG_STATE_HOME": str(work / "state"),
        "NO_COLOR": "1",
    }
    try:
        kept_against_local(work, options.repeat, env)
        batch_against_floor(work, options.calls, options.rounds, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
