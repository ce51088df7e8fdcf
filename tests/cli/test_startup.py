"""What `toolctl run` of a local tool loads: its own command, never the rest of toolctl.

Start-up is most of a short `toolctl run` (bench/run_local.py); these tests keep the modules
it imports to the ones the call needs, in a fresh interpreter (a process of its own, since
the test session has everything loaded already).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import write_files

LOADED = """
import json, sys
from toolctl.cli import dispatch
code = dispatch(sys.argv[2:])
sys.stdout.flush()
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""

NEVER_ON_THE_RUN_PATH = (
    "rich",
    "pydantic",
    "pydantic_core",
    "httpx",
    "httpcore",
    "fastjsonschema",
    "tomllib",
    "pulsar",
    "cryptography",  # announcements are signed: read only when they are asked for
    "mcp",
    "starlette",
    "uvicorn",
    "anyio",
    "asyncio",
    "importlib.metadata",
    "typer.rich_utils",
    "toolctl.models",
    "toolctl.schemas",
    "toolctl.registry.index.parsing",
    "toolctl.registry.index.build",
    "toolctl.registry.index.reindex",
    "toolctl.serve",
    "toolctl.pulsar",
    "toolctl.signing",
    "toolctl.registry.announced",
    "toolctl.registry.trust",
    "toolctl.mcp",
    "toolctl.interchange",
    "toolctl.processes.launching",
    "toolctl.processes.probing",
    "toolctl.processes.ready",
    "toolctl.processes.services",
    "toolctl.processes.stopping",
    "toolctl.processes.table",
    "opentelemetry",
    "prometheus_client",
    "google.protobuf",
    "toolctl.records.otel",
    "toolctl.records.metrics",
    "toolctl.records.masking",
    "toolctl.records.stats",
)
"""Loaded by other commands, by a cold index or by other runtimes, never by this run."""

TOOLCTL_MODULES = {
    "toolctl",
    "toolctl.arguments",
    "toolctl.calls",
    "toolctl.calls.caller",  # the Caller
    "toolctl.calls.command",  # run's use case
    "toolctl.calls.events",  # a call's start and done
    "toolctl.calls.leaks",  # passed secrets masked in a failed result
    "toolctl.calls.resolution",  # the tool a name stands for, its arguments and timeout
    "toolctl.cli",
    "toolctl.cli.app",
    "toolctl.cli.common",
    "toolctl.cli.run",
    "toolctl.terminal",
    "toolctl.terminal.completion",  # the completers run's options name (~0.2 ms, no imports)
    "toolctl.terminal.render",
    "toolctl.terminal.running",  # what run shows (once the tool was found)
    "toolctl.descriptor_env",
    "toolctl.errors",
    "toolctl.findings",
    "toolctl.names",
    "toolctl.project",
    "toolctl.processes",  # the package loads its modules on first use
    "toolctl.processes.lifetime",  # run's signals
    "toolctl.processes.reaper",  # no process a call started outlives it
    "toolctl.registry",
    "toolctl.registry.directories",  # open_registry's checks, below the package (no circle)
    "toolctl.registry.index",
    "toolctl.registry.index.database",
    "toolctl.registry.index.reader",
    "toolctl.registry.loader",
    "toolctl.records",
    "toolctl.records.history",
    "toolctl.records.journal",
    "toolctl.records.recorder",
    "toolctl.records.tracing",
    "toolctl.runners",
    "toolctl.runners.argv",  # the tool's command line
    "toolctl.runners.base",
    "toolctl.runners.local",
    "toolctl.runners.process",
    "toolctl.runtimes",
    "toolctl.settings",
    "toolctl.tool_state",
}
"""Every toolctl module a warm `run` of a local tool may load; a new one is a cost to weigh."""

ECHO = """
[[tool]]
name = "echo"
description = "Print the arguments it is given"
[tool.local]
command = ["{python}", "-c", "import sys; sys.stdout.write(sys.stdin.read())"]
[[tool.arguments]]
name = "text"
"""


def loaded_by(tmp_path: Path, *args: str) -> tuple[int, str, set[str]]:
    """Exit code, stdout and the modules loaded by one command line in a fresh interpreter."""
    report = tmp_path / "loaded.json"
    done = subprocess.run(
        [sys.executable, "-c", LOADED, str(report), *args],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert not done.stderr or done.stderr.startswith("toolctl: "), done.stderr
    found = json.loads(report.read_text())
    return found["code"], done.stdout, set(found["modules"])


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules for h in NEVER_ON_THE_RUN_PATH if m == h or m.startswith(h + ".")}


def echo_registry(tmp_path: Path) -> Path:
    registry = write_files(tmp_path, {"reg/echo.toml": ECHO.format(python=sys.executable)})
    past = time.time() - 60  # written a minute ago: the index cache trusts it at once
    for path in (registry / "reg", registry / "reg/echo.toml"):
        os.utime(path, (past, past))
    return registry / "reg"


def test_run_of_a_local_tool_loads_only_what_the_call_needs(tmp_path: Path) -> None:
    registry = echo_registry(tmp_path)
    argv = ("run", "echo", "--arg", "text=hi", "-r", str(registry))
    loaded_by(tmp_path, *argv)  # the first run builds the index and the runners' cache
    code, out, modules = loaded_by(tmp_path, *argv)
    assert (code, out) == (0, '{"text": "hi"}\n')
    assert heavy(modules) == set()
    assert {m for m in modules if m.split(".")[0] == "toolctl"} <= TOOLCTL_MODULES


def test_run_of_an_unknown_tool_says_so_without_loading_more(tmp_path: Path) -> None:
    registry = echo_registry(tmp_path)
    loaded_by(tmp_path, "run", "echo", "--arg", "text=hi", "-r", str(registry))
    code, out, modules = loaded_by(tmp_path, "run", "ecko", "-r", str(registry))
    assert (code, out) == (4, "")
    assert heavy(modules) == set()
    # and how an error is told, which a run that went well never loads
    told = TOOLCTL_MODULES | {"toolctl.terminal.endings"}
    assert {m for m in modules if m.split(".")[0] == "toolctl"} <= told


def test_run_inside_a_project_reads_its_toolctl_toml_without_tomllib(tmp_path: Path) -> None:
    registry = echo_registry(tmp_path)
    project = tmp_path / "toolctl.toml"
    project.write_text(f'[registry]\npaths = ["{registry.name}"]\nuser = false\n')
    past = time.time() - 60  # as old as a checked-out project is: its parsed copy is kept
    os.utime(project, (past, past))
    argv = ("run", "echo", "--arg", "text=hi")
    loaded_by(tmp_path, *argv)  # the first run parses it and keeps a copy
    code, out, modules = loaded_by(tmp_path, *argv)
    assert (code, out) == (0, '{"text": "hi"}\n')
    assert heavy(modules) == set()
    project.write_text('[registry]\npaths = ["elsewhere"]\nuser = false\n')
    os.utime(project, (past + 1, past + 1))  # an edit is seen, however old it looks
    code, out, _ = loaded_by(tmp_path, *argv)
    assert (code, out) == (4, "")


def test_a_registry_that_reads_no_announcements_loads_nothing_of_them(tmp_path: Path) -> None:
    """A registry holding [[trust]] entries, announcements not turned on: `list` and `run`
    load nothing of Pulsar, cryptography or the announced modules (and dial nothing)."""
    registry = echo_registry(tmp_path)
    trust = "ed25519:" + "A" * 43 + "="
    (registry / "trust.toml").write_text(f'[[trust]]\nkey = "{trust}"\nservices = "*"\n')
    for argv in (
        ("list", "-r", str(registry)),
        ("run", "echo", "--arg", "text=hi", "-r", str(registry)),
    ):
        loaded_by(tmp_path, *argv)
        code, _, modules = loaded_by(tmp_path, *argv)
        assert code == 0
        assert not {m for m in modules if m.startswith(("pulsar", "_pulsar", "cryptography",
                    "toolctl.pulsar", "toolctl.signing", "toolctl.registry.announced",
                    "toolctl.registry.trust"))}  # fmt: skip


HTTP = """
[[tool]]
name = "far"
description = "An HTTP tool nobody answers"
timeout = 5
[tool.http]
url = "http://127.0.0.1:{port}/x"
"""


def test_run_of_an_http_tool_loads_httpx_without_its_command_line_client(
    tmp_path: Path,
) -> None:
    """httpx imports its own CLI (click, rich, pygments) when they are installed; toolctl
    never calls it, so a run loads httpx without it (toolctl.imports.skip_httpx_cli)."""
    from toolctl.processes import free_port

    registry = write_files(tmp_path, {"reg/far.toml": HTTP.format(port=free_port())})
    code, out, modules = loaded_by(tmp_path, "run", "far", "-r", str(registry / "reg"))
    assert (code, out) == (5, "")  # nobody listens: transport unavailable
    assert "httpx" in modules
    assert {"pygments", "click", "rich"}.isdisjoint(modules)
