"""Pins held by a session that outlives one call (`run --batch`, `mcp serve`, `serve`): a
server that changes a tool it was pinned with is refused from its next call on, as a new
`run` refuses it; a change accepted while a server served is taken without a restart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import tomli_w

from tests.conftest import ROOT, Toolctl
from tests.serve.mcp_clients import stdio_session, texts

MUTANT = ROOT / "tests/mcp/servers/mutant_server.py"


def mutant_registry(root: Path, **env: str) -> Path:
    service = {"name": "mutant", "mcp": {"command": [sys.executable, str(MUTANT)], "env": env}}
    (root / "reg").mkdir(parents=True, exist_ok=True)
    (root / "reg/s.toml").write_text(tomli_w.dumps({"service": [service]}))
    return root / "reg"


def test_a_batch_refuses_a_tool_its_server_changed_mid_session(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """The session's tool list was read once: a server that changed `shout` after the
    first call (and said so) kept being called for every later line."""
    reg = mutant_registry(tmp_path, MUTANT_AFTER_FIRST="1")
    assert toolctl("import", "mcp", "mutant", "-r", str(reg)).returncode == 0
    lines = tmp_path / "b.jsonl"
    lines.write_text('{"text": "a"}\n{"text": "b"}\n{"text": "c"}\n')
    done = toolctl("run", "mutant.shout", "--batch", str(lines), "-r", str(reg))
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["success"] for r in results] == [True, False, False], done.stdout
    assert all(r["exit_code"] == 3 for r in results[1:])
    assert "changed since it was pinned (description)" in results[1]["error"]


def test_a_change_accepted_while_mcp_serve_runs_is_served_without_a_restart(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """`import mcp --update --yes` while `mcp serve` held a session with the server as it
    was: every later call was refused, the hint sending the user to the update just made."""
    wording = tmp_path / "description.txt"
    reg = mutant_registry(tmp_path, MUTANT_DESCRIPTION=str(wording))
    assert toolctl("import", "mcp", "mutant", "-r", str(reg)).returncode == 0

    async def main() -> None:
        async with stdio_session(reg) as session:
            first = await session.call_tool("mutant.shout", {"text": "a"})
            assert not first.isError and texts(first) == ["A (call 1)"]
            wording.write_text("Say a text in capitals, v2.")
            accepted = subprocess.run(
                [sys.executable, "-m", "toolctl", "import", "mcp", "mutant", "--update",
                 "--yes", "-r", str(reg)],
                capture_output=True, text=True, timeout=60, env=dict(os.environ),
            )  # fmt: skip
            assert accepted.returncode == 0, accepted.stderr
            await anyio.sleep(1.5)  # the server reads the registry again as it changes
            after = await session.call_tool("mutant.shout", {"text": "b"})
            assert not after.isError, texts(after)
            assert texts(after) == ["B (call 1)"]  # a new server, started for the new pin

    anyio.run(main)


def _running(marker: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                line = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in line and "pytest" not in line:
            found.append(line)
    return found


def test_a_registry_holding_toolctl_s_own_server_does_not_serve_itself_without_end(
    toolctl_process: Toolctl, tmp_path: Path
) -> None:
    """`mcp install` writes toolctl's server into a client's config, `import mcp-config`
    brings it back: every server it ran started another (one more process a second, past
    the client that started the first). The third one nested is refused."""
    reg = mutant_registry(tmp_path)
    assert toolctl_process("import", "mcp", "mutant", "-r", str(reg)).returncode == 0
    itself = [sys.executable, "-m", "toolctl", "mcp", "serve", "-r", str(reg)]
    added = toolctl_process("mcp", "add", "self", "-r", str(reg), "--", *itself, timeout=120)
    assert added.returncode == 0, added.stderr
    again = toolctl_process("check", "--live", "-r", str(reg), timeout=120)
    assert "Traceback" not in again.stderr and "internal error" not in again.stderr
    done = toolctl_process("run", "self.mutant.shout", "--arg", "text=a", "-r", str(reg))
    assert done.returncode == 0 and done.stdout.startswith("A (call 1)"), done.stderr
    deadline = time.monotonic() + 10
    while _running(str(reg)) and time.monotonic() < deadline:  # the servers end with them
        time.sleep(0.1)
    assert _running(str(reg)) == []


def test_the_serving_depth_toolctl_reads_refuses_only_a_real_depth(
    toolctl_process: Toolctl, tmp_path: Path
) -> None:
    """TOOLCTL_SERVING_DEPTH as a server gets it: three deep is refused (exit 3, one
    line); a value no server sets (not a number, a huge one) is no depth at all."""
    reg = mutant_registry(tmp_path)
    for value, code in (("3", 3), ("2", 0), ("abc", 0), ("9" * 40, 0), ("-1", 0), ("", 0)):
        done = toolctl_process(
            "mcp", "serve", "-r", str(reg), input="", env={"TOOLCTL_SERVING_DEPTH": value}
        )
        assert done.returncode == code, (value, done.stderr)
        assert "Traceback" not in done.stderr
        if code:
            assert "serving under 3 servers of its own" in done.stderr
            assert len(done.stderr.splitlines()) == 1, done.stderr
