"""Fixtures for the Pulsar tests: one broker of each kind per session, real workers per test.

Every test that uses ``pulsar_url`` (directly or through ``project``/``workers``) runs
twice: against the embedded pulsar-lite binary, started the way `toolctl broker start`
starts it on a free 127.0.0.1 port, and against a real Apache Pulsar broker (marked
``cluster``) when ``TOOLCTL_TEST_PULSAR_URL`` names one (``scripts/pulsar-standalone.sh
start`` prints it). Without it the Apache variant skips, saying so, unless
``TOOLCTL_REQUIRE_CLUSTER=1``: then it fails. Tests about pulsar-lite itself are marked
``embedded_only``. Each test gets a small project (a registry and a ``handlers.py``) whose
queues carry a per-test suffix, so tests never see each other's messages, and a
``workers`` factory whose worker processes are killed when the test ends.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_files
from tests.pulsar.pulsar_support import (
    APACHE,
    HANDLERS,
    LITE,
    Project,
    StartWorker,
    apache_pulsar_url,
    registry_toml,
)
from toolctl.processes import ProcessTable, stop
from toolctl.pulsar import broker
from toolctl.settings import Settings


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test that needs a broker runs on pulsar-lite and on Apache Pulsar.

    A test marked ``cluster`` runs on Apache Pulsar only, one marked ``embedded_only`` on
    pulsar-lite only.
    """
    if "pulsar_url" not in metafunc.fixturenames:
        return
    kinds = []
    if metafunc.definition.get_closest_marker("cluster") is None:
        kinds.append(pytest.param(LITE, id=LITE))
    if metafunc.definition.get_closest_marker("embedded_only") is None:
        kinds.append(pytest.param(APACHE, id=APACHE, marks=pytest.mark.cluster))
    metafunc.parametrize("pulsar_url", kinds, indirect=True, scope="session")


@pytest.fixture(scope="session")
def pulsar_url(request: pytest.FixtureRequest) -> str:
    """The URL of this test's broker: the session's pulsar-lite, or the given Apache Pulsar."""
    if request.param == APACHE:
        return apache_pulsar_url()
    url: str = request.getfixturevalue("lite_pulsar_url")
    return url


@pytest.fixture(scope="session")
def lite_pulsar_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One pulsar-lite broker for the whole session, started by toolctl.pulsar.broker; its URL.

    It is recorded in a state directory of its own, so no test's process table lists it.
    """
    with broker.running_in(tmp_path_factory.mktemp("pulsar-broker-state")) as url:
        yield url


@pytest.fixture
def raw_client(pulsar_url: str) -> Iterator[Any]:
    """A plain pulsar-client Client on the test's broker (what TrustGraph's side uses)."""
    import pulsar

    client = pulsar.Client(
        pulsar_url,
        operation_timeout_seconds=5,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull),
    )
    yield client
    client.close()


@pytest.fixture
def project(tmp_path: Path, pulsar_url: str, monkeypatch: pytest.MonkeyPatch) -> Project:
    """This test's project; TOOLCTL_PULSAR_URL points at the session broker."""
    monkeypatch.setenv("TOOLCTL_PULSAR_URL", pulsar_url)
    suffix = uuid.uuid4().hex[:10]
    made = Project(tmp_path / "project", tmp_path / "project" / "registry", suffix)
    write_files(made.root, {"handlers.py": HANDLERS})
    made.registry.mkdir(parents=True)
    (made.registry / "services.toml").write_text(registry_toml(made))
    return made


@pytest.fixture
def workers(project: Project, tmp_path: Path) -> Iterator[StartWorker]:
    """Start `toolctl worker SERVICE ...` (foreground, a subprocess) and wait until it serves.

    Every worker a test started is killed (its whole process group) when the test ends.
    """
    started: list[subprocess.Popen[bytes]] = []

    def start(
        service: str,
        *extra: str,
        env: dict[str, str] | None = None,
        prefix: tuple[str, ...] = (),
    ) -> subprocess.Popen[bytes]:
        """``prefix`` runs the worker under another command (``ip netns exec NS``)."""
        ready = tmp_path / f"ready-{uuid.uuid4().hex}"
        log = tmp_path / f"worker-{service}-{len(started)}.log"
        command = [*prefix, sys.executable, "-m", "toolctl", "worker", service, *extra]
        command += ["--registry", str(project.registry), "--ready-file", str(ready)]
        with open(log, "wb") as output:
            child = subprocess.Popen(
                command,
                cwd=project.root,
                env={**os.environ, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started.append(child)
        deadline = time.monotonic() + 30
        while not ready.exists() or json.loads(ready.read_text()) != {"ok": True}:
            if child.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"worker did not start: {log.read_text()}")
            time.sleep(0.01)
        return child

    yield start
    for child in started:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=10)


@pytest.fixture(autouse=True)
def stop_background(isolated_env: dict[str, str]) -> Iterator[None]:
    """Whatever a test started with --detach (brokers, workers) is stopped afterwards."""
    yield
    settings = Settings.load(environ=isolated_env)
    for name in ProcessTable(settings).names():
        stop(settings, name, grace=5.0)
