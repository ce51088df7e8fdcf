"""Past one process and one machine, on a real Apache Pulsar broker (marked ``cluster``).

pulsar-lite refuses a second consumer process on a Shared subscription; Apache Pulsar
splits the calls between them. Here N real `toolctl worker` processes serve one service
and every call is answered once, by one of them; then the same with each worker in a
network namespace of its own (a separate "host" with its own address on a veth pair),
reaching a broker that listens on those veth addresses as well as on 127.0.0.1.
Faults: an idle worker answers while another is busy, a worker drained with SIGTERM, a
worker host whose link is cut (at-least-once services), and a standalone SIGKILLed under a
`--batch` and started again on its port (a standalone of its own, started twice).
Runs only with TOOLCTL_TEST_PULSAR_URL (see conftest.py); the namespace tests also need
root and `ip`, and start a second standalone of their own with scripts/pulsar-standalone.sh.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, Toolctl
from tests.pulsar.pulsar_support import (
    APACHE_ADMIN_URL,
    PULSAR_CACHE,
    Project,
    StartWorker,
    admin_get,
    broker_killed_under_a_batch,
    no_cluster,
)

pytestmark = pytest.mark.cluster

SCRIPT = ROOT / "scripts" / "pulsar-standalone.sh"
CALLS = 60


def batch_of(tmp_path: Path, calls: int, seconds: float) -> Path:
    batch = tmp_path / "calls.jsonl"
    batch.write_text("".join(json.dumps({"seconds": seconds}) + "\n" for _ in range(calls)))
    return batch


def answered_by(done: subprocess.CompletedProcess[str]) -> collections.Counter[str]:
    """Which worker answered how many calls of a `--batch` (each must have succeeded)."""
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(result["success"] for result in results), done.stdout[-2000:]
    return collections.Counter(str(result["output"]) for result in results)


def test_worker_processes_on_one_shared_subscription_split_the_calls(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    names = ["w0", "w1", "w2"]
    for name in names:
        workers("whoami", "--concurrency", "1", env={"WORKER_NAME": name})
    if APACHE_ADMIN_URL:  # the broker's own view: three consumers on one subscription
        topic = project.request_queue("whoami").replace("://", "/")
        stats = admin_get(APACHE_ADMIN_URL, f"/admin/v2/{topic}/stats")
        assert isinstance(stats, dict)
        subscription = stats["subscriptions"]["whoami-request"]
        assert subscription["type"] == "Shared"
        assert len(subscription["consumers"]) == len(names)
    batch = batch_of(tmp_path, CALLS, seconds=0.05)
    done = toolctl(
        "run", "whoami", "--batch", str(batch), "--concurrency", "12",
        "--registry", str(project.registry), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    counts = answered_by(done)
    assert sum(counts.values()) == CALLS  # every call answered once
    assert set(counts) == set(names), counts  # by every worker


def test_an_idle_worker_answers_while_another_is_busy(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    """On persistent queues a worker holds no more requests than it serves (--concurrency):
    the broker keeps the rest for whichever worker is free, so no call waits behind a long
    one. (On non-persistent queues a worker must prefetch: the broker drops a request that
    no consumer has room for, so there a busy worker may hold calls; README, Scaling.)"""
    for name in ("a", "b"):
        workers("sure", "--concurrency", "1", env={"WORKER_NAME": name})
    marker = tmp_path / "long-call-started"
    registry = ("--registry", str(project.registry))
    long_call = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", "sure", *registry, "--timeout", "60",
         "--arg", "seconds=15", "--arg", f"marker={marker}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert time.monotonic() < deadline and long_call.poll() is None
            time.sleep(0.01)
        busy = marker.read_text().strip()
        batch = batch_of(tmp_path, 10, seconds=0)
        done = toolctl(
            "run", "sure", "--batch", str(batch), "--concurrency", "10", "--timeout", "5",
            *registry, timeout=120,
        )  # fmt: skip
        results = [json.loads(line) for line in done.stdout.splitlines()]
        waited = [r["error"] for r in results if not r["success"]]
        assert waited == [], f"{len(waited)} of 10 calls waited behind the busy worker"
        assert {r["output"] for r in results} == {"ab".replace(busy, "")}  # the idle one
    finally:
        long_call.kill()
        long_call.communicate()


def test_a_worker_drained_with_sigterm_finishes_its_calls_and_the_rest_go_elsewhere(
    project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    """At least once: SIGTERM lets the calls a worker holds answer, and the requests that
    are still queued go to the other worker; nothing is lost or handled twice."""
    marker = tmp_path / "takers"
    drained = workers("sure", "--concurrency", "2", env={"WORKER_NAME": "drained"})
    workers("sure", "--concurrency", "2", env={"WORKER_NAME": "stays"})
    lines = tmp_path / "calls.jsonl"
    calls = 40
    lines.write_text(
        "".join(json.dumps({"seconds": 0.3, "marker": str(marker)}) + "\n" for _ in range(calls))
    )
    batch = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", "sure", "--batch", str(lines),
         "--concurrency", "8", "--timeout", "60", "--registry", str(project.registry)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while marker.read_text().count("drained") < 3 if marker.exists() else True:
            assert time.monotonic() < deadline and batch.poll() is None
            time.sleep(0.01)
        drained.send_signal(signal.SIGTERM)
        assert drained.wait(timeout=30) == 0
        out, err = batch.communicate(timeout=120)
    finally:
        batch.kill()
    assert batch.returncode == 0, err
    answered = collections.Counter(json.loads(line)["output"] for line in out.splitlines())
    assert sum(answered.values()) == calls and answered["drained"] >= 3, answered
    handled = collections.Counter(marker.read_text().split())
    assert handled == answered  # each call handled once, by the worker that answered it


def test_a_killed_standalone_fails_a_batch_at_once_and_workers_come_back(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    """SIGKILL of a real broker under a running `--batch`: the pending calls fail at once
    ("lost the Pulsar broker", exit 5); started again on the same port, the running
    workers (at most once and at least once) resubscribe and serve without a restart."""

    directory = tmp_path / "standalone"
    command = ["bash", str(SCRIPT), "--dir", str(directory)]
    env = {**os.environ, "TOOLCTL_PULSAR_CACHE": PULSAR_CACHE}

    def start(*extra: str) -> str:
        done = subprocess.run(
            [*command, *extra, "start"], env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    url = start()
    try:
        port = url.rsplit(":", 1)[1]
        pid = int(json.loads((directory / "standalone.json").read_text())["pid"])
        kept = [
            workers("whoami", "--concurrency", "8", "--pulsar-url", url),
            workers("sure", "--pulsar-url", url, env={"WORKER_NAME": "sure"}),
        ]
        code, _, _ = broker_killed_under_a_batch(
            project, tmp_path, url, lambda: os.kill(pid, signal.SIGKILL)
        )
        assert code == 5
        assert start("--port", port) == url
        registry = ("--registry", str(project.registry), "--pulsar-url", url)
        for service in ("whoami", "sure"):
            deadline = time.monotonic() + 120
            while (done := toolctl("run", service, "--timeout", "5", *registry)).returncode:
                assert done.returncode in (5, 124), done.stderr
                assert time.monotonic() < deadline, f"the {service} worker never came back"
        assert all(worker.poll() is None for worker in kept)  # never restarted
    finally:
        subprocess.run([*command, "stop"], env=env, capture_output=True, timeout=120)


# -- separate hosts: worker processes in network namespaces of their own ---------------


@dataclass(frozen=True)
class Host:
    namespace: str
    host_side: str  # the veth end on this machine
    address: str  # this machine's address on the link, where the broker listens
    own_address: str  # the namespace's address


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def hosts() -> Iterator[list[Host]]:
    """Two network namespaces, each linked to this machine by a veth pair in a /30 of
    10.213.0.0/16; only these addresses are used. Removed afterwards, whatever happened."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        no_cluster("worker hosts in network namespaces need root and `ip` (iproute2)")
    taken = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    if " 10.213." in taken:
        no_cluster("10.213.0.0/16 is already in use on this machine")
    tag = uuid.uuid4().hex[:6]
    made: list[Host] = []
    try:
        for n in (1, 2):
            host = Host(f"toolctl-{tag}-{n}", f"tc{tag}h{n}", f"10.213.{n}.1", f"10.213.{n}.2")
            ip("netns", "add", host.namespace)
            made.append(host)
            inside = f"tc{tag}n{n}"
            ip("link", "add", host.host_side, "type", "veth", "peer", "name", inside)
            ip("link", "set", inside, "netns", host.namespace)
            ip("addr", "add", f"{host.address}/30", "dev", host.host_side)
            ip("link", "set", host.host_side, "up")
            ip("-n", host.namespace, "addr", "add", f"{host.own_address}/30", "dev", inside)
            ip("-n", host.namespace, "link", "set", inside, "up")
            ip("-n", host.namespace, "link", "set", "lo", "up")
        yield made
    finally:
        for host in made:
            subprocess.run(["ip", "link", "del", host.host_side], capture_output=True)
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)


@dataclass(frozen=True)
class Standalone:
    url: str  # on 127.0.0.1
    port: int


@pytest.fixture(scope="module")
def multi_homed_broker(
    hosts: list[Host], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Standalone]:
    """A second Apache Pulsar standalone listening on 127.0.0.1 and on the hosts' links."""
    directory = tmp_path_factory.mktemp("multi-homed-pulsar")
    command = ["bash", str(SCRIPT), "--dir", str(directory)]
    for host in hosts:
        command += ["--address", host.address]
    env = {**os.environ, "TOOLCTL_PULSAR_CACHE": PULSAR_CACHE}
    started = subprocess.run(
        [*command, "start"], env=env, capture_output=True, text=True, timeout=600
    )
    record = directory / "standalone.json"
    pid = json.loads(record.read_text())["pid"] if record.exists() else None
    try:
        assert started.returncode == 0, started.stderr
        url = started.stdout.strip()
        shown = subprocess.run([*command, "url"], env=env, capture_output=True, text=True)
        assert shown.stdout.strip() == url
        yield Standalone(url, int(url.rsplit(":", 1)[1]))
    finally:
        stopped = subprocess.run([*command, "stop"], env=env, capture_output=True, text=True)
        assert stopped.returncode == 0, stopped.stderr
        assert pid is None or not running(pid)  # it did not outlive stop


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's exit status waits for whoever reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def reaches(namespace: str, address: str, port: int) -> bool:
    probe = (
        "import socket, sys\n"
        "s = socket.socket()\ns.settimeout(2)\n"
        "sys.exit(s.connect_ex((sys.argv[1], int(sys.argv[2]))))"
    )
    done = subprocess.run(
        ["ip", "netns", "exec", namespace, sys.executable, "-c", probe, address, str(port)],
        capture_output=True,
    )
    return done.returncode == 0


def test_workers_on_separate_hosts_split_the_calls(
    toolctl: Toolctl,
    project: Project,
    workers: StartWorker,
    hosts: list[Host],
    multi_homed_broker: Standalone,
    tmp_path: Path,
) -> None:
    port = multi_homed_broker.port
    for host in hosts:
        # a host of its own: the broker's loopback address is not its loopback
        assert not reaches(host.namespace, "127.0.0.1", port)
        assert reaches(host.namespace, host.address, port)
        workers(
            "whoami",
            "--concurrency", "1",
            "--pulsar-url", f"pulsar://{host.address}:{port}",
            env={"WORKER_NAME": host.namespace},
            prefix=("ip", "netns", "exec", host.namespace),
        )  # fmt: skip
    batch = batch_of(tmp_path, CALLS, seconds=0.05)
    done = toolctl(
        "run", "whoami", "--batch", str(batch), "--concurrency", "12",
        "--pulsar-url", multi_homed_broker.url, "--registry", str(project.registry),
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    counts = answered_by(done)
    assert sum(counts.values()) == CALLS
    assert set(counts) == {host.namespace for host in hosts}, counts


def test_a_worker_host_cut_off_has_its_requests_answered_by_another(
    toolctl: Toolctl,
    project: Project,
    workers: StartWorker,
    hosts: list[Host],
    multi_homed_broker: Standalone,
    tmp_path: Path,
) -> None:
    """At least once: the link of the host whose worker holds a call goes down (no FIN,
    no RST); the broker notices by its keepalive (5 s in standalone.conf) and gives the
    request to the worker on the other host, and the caller gets that answer in time."""
    port = multi_homed_broker.port
    marker = tmp_path / "takers"
    cut, other = hosts
    prefix = ("ip", "netns", "exec")
    workers(
        "sure", "--pulsar-url", f"pulsar://{cut.address}:{port}", prefix=(*prefix, cut.namespace),
        env={"WORKER_NAME": "cut", "STALL": "1"},
    )  # fmt: skip
    call = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", "sure", "--arg", f"marker={marker}",
         "--timeout", "90", "--pulsar-url", multi_homed_broker.url,
         "--registry", str(project.registry)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert time.monotonic() < deadline and call.poll() is None
            time.sleep(0.01)
        workers(
            "sure", "--pulsar-url", f"pulsar://{other.address}:{port}",
            prefix=(*prefix, other.namespace), env={"WORKER_NAME": "other"},
        )  # fmt: skip
        ip("link", "set", cut.host_side, "down")  # the cable is pulled: nothing is sent
        out, err = call.communicate(timeout=120)
    finally:
        call.kill()
        subprocess.run(["ip", "link", "set", cut.host_side, "up"], capture_output=True)
    assert (call.returncode, out) == (0, "other\n"), err
    assert marker.read_text().split() == ["cut", "other"]
