"""HTTP calls stopped from another thread end at once, not when the server answers.

A server that reads the request and never answers (plain and behind TLS) holds each call;
the tools' timeout is minutes, so a call that ends here was ended by the stop: a call
cancelled (``Cancel``, as a server cancels one), a ``--batch`` stopped by Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write_files
from tests.runners.http.fixture_server import FixtureServer
from toolctl.calls import Caller, resolve
from toolctl.calls.cancel import Cancel
from toolctl.errors import Interrupted
from toolctl.registry.index import Registry
from toolctl.settings import Settings


class Silent:
    """Accepts connections, reads each request, answers nothing until the test ends."""

    def __init__(self, tls: ssl.SSLContext | None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.tls = tls
        self.requests = threading.Semaphore(0)
        self.stopping = threading.Event()
        self.held: list[socket.socket] = []
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.listener.getsockname()[1]}/slow"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._hold, args=(connection,), daemon=True).start()

    def _hold(self, connection: socket.socket) -> None:
        with contextlib.suppress(OSError):
            if self.tls is not None:
                connection = self.tls.wrap_socket(connection, server_side=True)
            self.held.append(connection)
            if connection.recv(65536):
                self.requests.release()
            self.stopping.wait()

    def wait_for_requests(self, count: int) -> None:
        for _ in range(count):
            assert self.requests.acquire(timeout=30), "the request never came"

    def close(self) -> None:
        self.stopping.set()
        self.listener.close()
        for connection in self.held:
            connection.close()


@pytest.fixture(params=["http", "https"])
def silent(request: pytest.FixtureRequest) -> Iterator[tuple[Silent, dict[str, str]]]:
    """The silent server, and the environment that trusts its certificate."""
    tls, env = None, {}
    if request.param == "https":
        cert = request.getfixturevalue("self_signed")
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, cert.with_name("key.pem"))
        env = {"SSL_CERT_FILE": str(cert)}
    server = Silent(tls)
    try:
        yield server, env
    finally:
        server.close()


def registry(root: Path, silent_url: str, echo_url: str = "http://127.0.0.1:9/") -> Path:
    return write_files(
        root / "reg",
        {
            "tools.toml": f"""
            [[tool]]
            name = "slow"
            timeout = 600
            [tool.http]
            url = "{silent_url}"
            [[tool.arguments]]
            name = "n"
            type = "integer"
            required = false

            [[tool]]
            name = "echo"
            [tool.http]
            url = "{echo_url}"
            """
        },
    )


def test_a_cancelled_http_call_ends_at_once_and_its_thread_calls_again(
    tmp_path: Path,
    silent: tuple[Silent, dict[str, str]],
    http_server: FixtureServer,
    isolated_env: dict[str, str],
) -> None:
    server, env = silent
    settings = Settings.load(
        [registry(tmp_path, server.url, f"{http_server.url}/echo")],
        environ={**isolated_env, **env},
    )
    cancel = Cancel()
    outcome: dict[str, object] = {}
    registry_ = Registry.open(settings)
    slow, echo = resolve(registry_, "slow"), resolve(registry_, "echo")
    with Caller(settings, registry_) as caller:

        def calls() -> None:
            try:
                caller.call(slow, cancel=cancel)
            except Interrupted as exc:
                outcome["error"] = exc
            outcome["after"] = caller.call(echo)  # the same thread, its client kept

        thread = threading.Thread(target=calls)
        thread.start()
        server.wait_for_requests(1)
        cancel.cancel()
        thread.join(60)
        assert not thread.is_alive(), "the cancelled call still waits for its answer"
    assert str(outcome["error"]) == "cancelled; the tool's processes were killed"
    assert outcome["after"].success  # type: ignore[attr-defined]


def test_a_batch_of_http_calls_stopped_by_ctrl_c_ends_at_once(
    tmp_path: Path, silent: tuple[Silent, dict[str, str]]
) -> None:
    server, env = silent
    reg = registry(tmp_path, server.url)
    (tmp_path / "lines.jsonl").write_text("".join(f'{{"n": {n}}}\n' for n in range(3)))
    batch = ["--batch", "lines.jsonl", "--concurrency", "3"]
    child = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", "slow", "-r", str(reg), *batch],
        cwd=tmp_path,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        server.wait_for_requests(3)
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 130, stderr
    assert stderr == "toolctl: error: interrupted; the batch's calls were stopped\n"
    results = [json.loads(line) for line in stdout.splitlines()]
    assert [(r["error"], r["exit_code"]) for r in results] == [
        (f"line {n}: interrupted; the call was stopped", 130) for n in (1, 2, 3)
    ]
