"""Captured output is capped (issue 9, item O): a flood of output never floods toolctl.

Peak memory is read from the kernel: ``os.wait4`` gives the toolctl process's maximum
resident set (VmHWM as it ended, its reaped children included: the tool here is ``yes``
and ``head``, a few hundred KiB), so the assertion is on memory, never on time.
"""

from __future__ import annotations

import gzip
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Toolctl, write_files

MiB = 1024 * 1024

REGISTRY = """
[[tool]]
name = "flood"
[tool.local]
command = ["sh", "-c", "yes abcdefghijklmnopqrstuvwxyz012 | head -c $N"]
input = "none"
env = { N = "${env:FLOOD_BYTES}" }

[[tool]]
name = "flood-json"
[tool.local]
command = ["sh", "-c", "printf '{\\"a\\": \\"'; yes x | head -c $N; printf '\\"}'"]
input = "none"
env = { N = "${env:FLOOD_BYTES}" }

[[tool]]
name = "capped"
max_output = 1000
[tool.local]
command = ["sh", "-c", "yes abcdefghi | head -c 5000"]
input = "none"
"""


@pytest.fixture
def reg(tmp_path: Path) -> Path:
    write_files(tmp_path, {"reg/tools.toml": REGISTRY})
    return tmp_path / "reg"


def _peak_kib(args: list[str], size: int, stdout: int | None = subprocess.DEVNULL) -> int:
    """Run toolctl as a real process; its peak resident set in KiB, from wait4."""
    env = {**os.environ, "FLOOD_BYTES": str(size)}
    child = subprocess.Popen(
        [sys.executable, "-m", "toolctl", *args],
        stdout=stdout,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0, child.returncode
    return int(usage.ru_maxrss)


@pytest.mark.parametrize("tool", ["flood", "flood-json"])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_64_mib_of_output_with_a_1_mib_cap_keeps_memory_bounded(
    reg: Path, tool: str, json_flag: list[str]
) -> None:
    args = ["run", tool, "--max-output", "1MiB", "-r", str(reg), *json_flag]
    baseline = _peak_kib(args, 1024)
    flooded = _peak_kib(args, 64 * MiB)
    # Holding the output alone would be 64 MiB (more as text and JSON): allow 24.
    assert flooded - baseline < 24 * 1024, (baseline, flooded)


def test_the_result_says_how_much_was_dropped(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl(
        "run",
        "flood",
        "--max-output",
        "1KiB",
        "--json",
        "-r",
        str(reg),
        env={"FLOOD_BYTES": "5000"},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert len(result["output"]) == 1024
    assert result["truncated"] == 5000 - 1024
    done = toolctl("run", "capped", "--json", "-r", str(reg))
    result = json.loads(done.stdout)
    assert len(result["output"]) == 999 and result["truncated"] == 4000  # less its last newline


def test_an_untruncated_result_keeps_its_shape(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl("run", "capped", "--max-output", "1MiB", "--json", "-r", str(reg))
    result = json.loads(done.stdout)
    assert "truncated" not in result
    assert len(result["output"]) == 4999  # the final newline is not output


def test_streamed_output_passes_through_whole(reg: Path, tmp_path: Path) -> None:
    env = {**os.environ, "FLOOD_BYTES": str(3 * MiB)}
    done = subprocess.run(
        [sys.executable, "-m", "toolctl", "run", "flood", "--max-output", "1KiB", "-r", str(reg)],
        capture_output=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) == 3 * MiB


def test_a_batch_caps_each_result(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl(
        "run",
        "flood",
        "--batch",
        "-",
        "--max-output",
        "100",
        "-r",
        str(reg),
        input="{}\n{}\n",
        env={"FLOOD_BYTES": "300"},
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(len(r["output"]), r["truncated"]) for r in lines] == [(100, 200), (100, 200)]


@pytest.mark.parametrize("size", ["0", "-1", "2GiB", "lots", "1e3", "nan"])
def test_a_bad_max_output_is_exit_2(reg: Path, toolctl: Toolctl, size: str) -> None:
    done = toolctl("run", "capped", "--max-output", size, "-r", str(reg))
    assert done.returncode == 2, done.stderr
    assert "--max-output" in done.stderr


class _Flood(http.server.BaseHTTPRequestHandler):
    """GET /N answers N bytes of text; /gzip/N the same, gzip-encoded."""

    def do_GET(self) -> None:
        parts = self.path.strip("/").split("/")
        body = b"x" * int(parts[-1])
        headers = {"Content-Type": "text/plain"}
        if parts[0] == "gzip":
            body = gzip.compress(body)
            headers["Content-Encoding"] = "gzip"
        self.send_response(200)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def flood_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flood)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("route", ["plain", "gzip"])
def test_an_http_answer_is_capped_too(
    tmp_path: Path, toolctl: Toolctl, flood_url: str, route: str
) -> None:
    size = 3 * MiB
    write_files(
        tmp_path,
        {
            "r/t.toml": f"""
            [[tool]]
            name = "web-flood"
            [tool.http]
            url = "{flood_url}/{route}/{size}"
            method = "GET"
            """
        },
    )
    done = toolctl("run", "web-flood", "--max-output", "1MiB", "--json", "-r", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert len(result["output"]) == MiB
    assert result["truncated"] == size - MiB
    done = toolctl("run", "web-flood", "--json", "-r", str(tmp_path / "r"))
    result = json.loads(done.stdout)
    assert len(result["output"]) == size and "truncated" not in result
