"""Fixtures for the HTTP runtime tests: a real server on 127.0.0.1, and services cleaned up."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runners.http.fixture_server import FixtureServer, serve
from toolctl.processes import ProcessTable, stop
from toolctl.settings import Settings


@pytest.fixture
def http_server() -> Iterator[FixtureServer]:
    """A real HTTP server on a free 127.0.0.1 port, in a thread of the test process."""
    with serve() as server:
        yield server


@pytest.fixture
def self_signed(tmp_path: Path) -> Path:
    """A self-signed certificate (and key) for 127.0.0.1, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    argv = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    argv += ["-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=x"]
    subprocess.run(
        [*argv, "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return cert


@pytest.fixture
def https_server(self_signed: Path) -> Iterator[FixtureServer]:
    """The same server behind TLS with a self-signed certificate (``self_signed``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(self_signed, self_signed.with_name("key.pem"))
    with serve(context) as server:
        yield server


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on: connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture(autouse=True)
def stop_background(isolated_env: dict[str, str]) -> Iterator[ProcessTable]:
    """The test's process table; whatever a test left running in it is stopped afterwards."""
    settings = Settings.load(environ=isolated_env)
    table = ProcessTable(settings)
    yield table
    for name in table.names():
        stop(settings, name, grace=2.0)
