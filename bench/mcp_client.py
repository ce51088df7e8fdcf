"""What toolctl's MCP client adds to a call's start-up, against the official SDK's client.

Each command is a fresh interpreter that imports its client, starts the same stdio server,
finishes the handshake and makes one ``tools/call``; the floor writes the same JSON-RPC
lines to the same server with nothing but the standard library. Commands alternate, many
times, in one run; medians and ratios are printed. Also: the import cost of each client
alone, against a bare ``python -c pass``.

Target (issue "MCP servers as a runtime"): report the ratio; ours should be well below 1.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from timing import alternate, report

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests/mcp/servers/probe_server.py"
SDK2_PYTHON = ROOT / ".venv-mcp2/bin/python"

TOOLCTL = """
import sys
from toolctl.mcp import connect_stdio, map_result
with connect_stdio(sys.argv[1:], timeout=60) as session:
    answer = map_result(session.call_tool("echo", {"text": "hi"}, 60))
assert answer.output == "hi", answer
"""

OFFICIAL = """
import sys, anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    server = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("echo", {"text": "hi"})
    assert result.content[0].text == "hi", result

anyio.run(main)
"""

FLOOR = """
import json, subprocess, sys
server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(message):
    server.stdin.write(json.dumps(message).encode() + b"\\n"); server.stdin.flush()
def answer():
    while True:
        message = json.loads(server.stdout.readline())
        if "id" in message and "method" not in message:
            return message
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "floor", "version": "0"}}})
answer()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
      "params": {"name": "echo", "arguments": {"text": "hi"}}})
assert answer()["result"]["content"][0]["text"] == "hi"
server.stdin.close(); server.wait()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="toolctl-bench-mcp-"))
    try:
        scripts = {}
        for name, text in (("toolctl", TOOLCTL), ("official", OFFICIAL), ("floor", FLOOR)):
            scripts[name] = work / f"client_{name}.py"
            scripts[name].write_text(text)
        python = sys.executable
        imports = {
            "python -c pass": [python, "-c", "pass"],
            "import toolctl.mcp (session, stdio)": [
                python,
                "-c",
                "import toolctl.mcp.session, toolctl.mcp.stdio",
            ],
            "import mcp.client.session, .stdio (SDK 1.x)": [
                python,
                "-c",
                "import mcp.client.session, mcp.client.stdio",
            ],
        }
        if SDK2_PYTHON.exists():
            imports["import mcp.client.session, .stdio (SDK 2.x)"] = [
                str(SDK2_PYTHON),
                "-c",
                "import mcp.client.session, mcp.client.stdio",
            ]
        times = alternate(imports, repeat=options.repeat)
        bare = times["python -c pass"]
        report(
            "client import cost (median wall time; added over a bare interpreter)",
            [(k, f"{v:7.1f} ms   +{v - bare:6.1f} ms") for k, v in times.items()],
        )
        server = [python, str(PROBE)]  # the probe server on SDK 1.x, the same for all three
        calls = alternate(
            {
                "floor: stdlib JSON lines": [python, str(scripts["floor"]), *server],
                "toolctl.mcp client": [python, str(scripts["toolctl"]), *server],
                "official SDK 1.x client": [python, str(scripts["official"]), *server],
            },
            repeat=options.repeat,
        )
        floor = calls["floor: stdlib JSON lines"]
        ours, theirs = calls["toolctl.mcp client"], calls["official SDK 1.x client"]
        report(
            "import + spawn + initialize + tools/call against the probe server (median)",
            [(k, f"{v:7.1f} ms   +{v - floor:6.1f} ms over the floor") for k, v in calls.items()]
            + [
                ("whole call, toolctl / official", f"{ours / theirs:.2f}x"),
                (
                    "added over the floor, toolctl / official",
                    f"{(ours - floor) / max(theirs - floor, 1e-9):.2f}x",
                ),
            ],
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
