"""Shared fixtures: an isolated environment per test and a way to call the real CLI.

Every test gets its own XDG cache/state/data directories, so caches, managed services and
crash reports never leak between tests or into the developer's home.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

FUZZ_SCALE = float(os.environ.get("FUZZ_SCALE", "1"))
"""``make check`` (the edit-test loop) sets FUZZ_SCALE=0.25: a quarter of each property
test's examples; ``make test`` and CI run them all."""


def examples(count: int) -> int:
    """A property test's ``max_examples``: ``count``, scaled by FUZZ_SCALE."""
    return max(1, round(count * FUZZ_SCALE))


class Needs:
    """What a marker says a test needs, and how to tell: the test's module (a path below
    tests/, or a directory ending in /) or a fixture it uses."""

    def __init__(self, what: str, paths: tuple[str, ...] = (), fixtures: tuple[str, ...] = ()):
        self.what, self.paths, self.fixtures = what, paths, frozenset(fixtures)

    def __call__(self, item: pytest.Item) -> bool:
        # the test's id below tests/: a path names a module, ``path::name`` one test
        where = item.nodeid.removeprefix("tests/")
        used = getattr(item, "fixturenames", ())  # a test function's; other items have none
        return where.startswith(self.paths) or not self.fixtures.isdisjoint(used)


MCP_SERVER_FIXTURES = (
    "probe_argv",
    "everything_argv",
    "time_argv",
    "probe_url",
    "probe_sse_url",
    "everything_url",
    "everything_sse_url",
    "probe_tools",
)
OUTSIDE: dict[str, Needs] = {
    "pulsar": Needs("a Pulsar broker: pulsar-lite or the Apache Pulsar standalone", ("pulsar/",)),
    "container": Needs(
        "podman running real containers",
        (
            "runners/container/",
            "serve/test_container_cancel.py",
            "cli/test_check_runnable.py::test_a_container_image_not_present_locally",
        ),
        ("podman",),
    ),
    "mcp_servers": Needs(
        "real MCP servers (the SDK 1.x and 2.x probe, the npm reference servers)",
        (
            "mcp/test_kept.py",
            "mcp/test_sample.py",
            "mcp/test_import.py",
            "mcp/test_runtime.py",
            "mcp/test_add.py",
            "mcp/test_defects.py",
            "mcp/test_offer_pins.py",
        ),
        MCP_SERVER_FIXTURES,
    ),
    "servers": Needs(
        "a real server: toolctl serve, a managed service, a fixture HTTP server",
        (
            "serve/",
            "processes/",
            "runners/http/test_managed_services.py",
            "mcp/test_oauth.py",
            "interchange/test_function_names.py::test_serve_accepts_the_mapped_name",
            "interchange/test_client_install.py::test_the_entry_starts_a_server",
            "interchange/test_client_install.py::test_a_projects_shared_entry",
        ),
        ("http_server", "https_server", "serve"),
    ),
    "process": Needs(
        "toolctl as a process of its own (signals, exit, start-up)",
        (
            "cli/test_startup.py",
            "cli/test_complete.py",
            "cli/test_pre_commit.py",
            "cli/test_terminal.py",
            "cli/test_records_cli.py::test_eight_toolctl_processes_record_at_once",
            "cli/test_records_cli.py::test_sixteen_runs_at_once_behind_a_long_write_lose",
            "cli/test_registry_cli.py::test_parallel_registers",
            "runners/test_local.py::test_output_streams_before_the_tool_ends",
            "cli/test_entry.py::test_a_removed_working_directory",
            "cli/test_entry.py::test_closed_and_full_standard_streams",
        ),
        ("toolctl_process",),
    ),
    "install": Needs(
        "a fresh virtual environment and toolctl installed into it by pip, uv and pipx",
        ("test_install.py",),
    ),
    "documents": Needs(
        "every command the README and the tutorials show, run as a user runs them "
        "(containers, servers, a broker among them)",
        ("test_docs.py",),
    ),
    "node": Needs(
        "Node 22 and the official MCP conformance suite from npm",
        ("mcp/test_conformance.py",),
    ),
    "volume": Needs(
        "the bounds at full size: tens of MiB of output, thousands of tools, documents "
        "nested thousands deep (a sixth of the in-process tier's time)",
        (
            "cli/test_listing_stream.py::test_list_json_and_export_at_thousands",
            "runners/test_output_cap.py::test_64_mib_of_output",
            "interchange/test_import_bounds.py::test_hostile_documents_are_one_line",
        ),
    ),
}
"""The markers of tests that need a real thing outside the test's own process, set here
from each test's path and fixtures rather than by hand; each such test is also marked
``integration``. ``make check`` runs the others (``-m "not integration"``): the in-process
tier for the edit-test loop. ``make test`` runs everything, as CI does."""


def pytest_configure(config: pytest.Config) -> None:
    for name, needs in OUTSIDE.items():
        config.addinivalue_line("markers", f"{name}: needs {needs.what}")
    config.addinivalue_line("markers", "integration: needs one of the above (not in make check)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        needs = [name for name, needed in OUTSIDE.items() if needed(item)]
        for name in needs:
            item.add_marker(name)
        if needs:
            item.add_marker("integration")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    home = tmp_path / "home"
    for variable, folder in (
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_DATA_HOME", "data"),
    ):
        monkeypatch.setenv(variable, str(home / folder))
    for variable in list(os.environ):
        if variable.startswith("TOOLCTL_") and variable not in {
            "TOOLCTL_REQUIRE_ENGINES",
            "TOOLCTL_CONTAINER_ENGINE",
        }:
            monkeypatch.delenv(variable)
    monkeypatch.setenv("NO_COLOR", "1")
    return {k: v for k, v in os.environ.items()}


def write_files(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``{relative path: text}`` below root (text is dedented); returns root."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


Toolctl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def toolctl(tmp_path: Path) -> Toolctl:
    """Run a toolctl command line in this process, through the CLI's dispatch function.

    Cheaper than a subprocess by the interpreter's start-up, and the same code path as
    ``main`` but for the final ``os._exit``. Descriptors 0-2 are redirected to files for the
    call, so what a tool's child process writes straight to them is captured too; the
    working directory, the environment and the signal handlers are restored afterwards.
    Tests of signals and of process exit use ``toolctl_process`` instead.
    """

    def call(
        *args: str,
        cwd: Path | None = None,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        del timeout  # pytest-timeout bounds an in-process call
        return run_in_process(list(args), cwd or tmp_path, input, env)

    return call


@pytest.fixture
def toolctl_process(tmp_path: Path) -> Toolctl:
    """Run the real ``toolctl`` command (``python -m toolctl``) in a subprocess."""

    def call(
        *args: str,
        cwd: Path | None = None,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        environment = {**os.environ, **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "toolctl", *args],
            cwd=cwd or tmp_path,
            input=input,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return call


_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_in_process(
    args: list[str], cwd: Path, input: str | None, env: Mapping[str, str] | None
) -> subprocess.CompletedProcess[str]:
    from toolctl.cli import dispatch

    saved_environ = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_handlers = {number: signal.getsignal(number) for number in _SIGNALS}
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_fds = {fd: os.dup(fd) for fd in (0, 1, 2)}
    with (
        tempfile.TemporaryFile() as stdin,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        stdin.write((input or "").encode())
        stdin.seek(0)
        for fd, target in ((0, stdin), (1, out), (2, err)):
            os.dup2(target.fileno(), fd)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        try:
            os.environ.update(env or {})
            os.chdir(cwd)
            code = dispatch(args)
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            for fd, original in saved_fds.items():
                os.dup2(original, fd)
                os.close(original)
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_environ)
            for number, handler in saved_handlers.items():
                signal.signal(number, handler)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            ["toolctl", *args],
            code,
            out.read().decode("utf-8", errors="replace"),
            err.read().decode("utf-8", errors="replace"),
        )
