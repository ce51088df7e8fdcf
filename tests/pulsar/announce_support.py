"""What the announcement tests share: a topic of their own, keys, a reader's registry, a
message published by hand (the forger), and worker hosts in network namespaces.

A namespace host reaches the broker the way a machine on a link would: it has its own
loopback and a veth pair to this machine, and nothing else. The broker (either kind) keeps
listening on this machine's 127.0.0.1, where it also says it is (a Pulsar lookup answers
with the broker's advertised address), so each host runs a TCP forwarder on its own
127.0.0.1:PORT that crosses the link to a forwarder on this machine's end of it, which
goes on to the broker. Every byte a namespace worker sends travels over its veth link.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.pulsar.pulsar_support import APACHE_ADMIN_URL, APACHE_URL, no_cluster

FORWARDER = r"""
import asyncio, sys

async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except Exception:
        pass
    finally:
        writer.close()

async def handle(reader, writer):
    try:
        up_reader, up_writer = await asyncio.open_connection(sys.argv[3], int(sys.argv[4]))
    except OSError:
        writer.close()
        return
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

async def main():
    server = await asyncio.start_server(handle, sys.argv[1], int(sys.argv[2]))
    print("ready", flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
"""


def ensure_config_namespace(url: str) -> str:
    """The namespace the topics go in: tg/config (made on Apache Pulsar if missing)."""
    if url == APACHE_URL and APACHE_ADMIN_URL:
        request = urllib.request.Request(
            f"{APACHE_ADMIN_URL}/admin/v2/namespaces/tg/config",
            data=json.dumps({}).encode(),
            method="PUT",
            headers={"Content-Type": "application/json"},
        )
        try:
            urllib.request.urlopen(request, timeout=30).close()
        except urllib.error.HTTPError as exc:
            if exc.code != 409:
                raise
    return "tg/config"


def compact(topic: str) -> None:
    """Ask Apache Pulsar to compact the topic now, and wait until it did."""
    path = topic.replace("persistent://", "persistent/")
    base = f"{APACHE_ADMIN_URL}/admin/v2/{path}/compaction"
    urllib.request.urlopen(urllib.request.Request(base, method="PUT"), timeout=30).close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with urllib.request.urlopen(base, timeout=30) as answer:
            status = json.loads(answer.read())
        if status.get("status") == "SUCCESS":
            return
        assert status.get("status") != "ERROR", status
        time.sleep(0.2)
    raise AssertionError(f"{topic} was not compacted in 60 s")


def publish(url: str, topic: str, key: str, body: bytes) -> None:
    """Send one message by hand, as anyone who may publish on the topic can."""
    import pulsar

    client = pulsar.Client(url, logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull))
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        producer.send(body, partition_key=key)
    finally:
        client.close()


@dataclass(frozen=True)
class Host:
    namespace: str
    name: str  # its host name (a UTS namespace of its own)
    host_side: str
    address: str  # this machine's end of the link

    def prefix(self) -> tuple[str, ...]:
        """Run a command on this host: its network, its own host name."""
        script = 'hostname "$0" && exec "$@"'
        return ("ip", "netns", "exec", self.namespace, "unshare", "--uts", "sh", "-c", script,
                self.name)  # fmt: skip


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _start_forwarder(
    prefix: tuple[str, ...], listen: tuple[str, int], to: tuple[str, int]
) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [*prefix, sys.executable, "-c", FORWARDER, listen[0], str(listen[1]), to[0], str(to[1])],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


@contextmanager
def namespace_hosts(broker_port: int, count: int = 2) -> Iterator[list[Host]]:
    """``count`` namespace hosts, each with forwarders so that pulsar://127.0.0.1:PORT on
    the host reaches the broker here across its link; everything removed afterwards."""
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("unshare") is None:
        no_cluster("worker hosts in network namespaces need root, `ip` and `unshare`")
    taken = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    if " 10.214." in taken:
        no_cluster("10.214.0.0/16 is already in use on this machine")
    tag = uuid.uuid4().hex[:6]
    made: list[Host] = []
    forwarders: list[subprocess.Popen[str]] = []
    try:
        for n in range(1, count + 1):
            host = Host(f"tca-{tag}-{n}", f"host-{n}", f"ta{tag}h{n}", f"10.214.{n}.1")
            ip("netns", "add", host.namespace)
            made.append(host)
            inside = f"ta{tag}n{n}"
            ip("link", "add", host.host_side, "type", "veth", "peer", "name", inside)
            ip("link", "set", inside, "netns", host.namespace)
            ip("addr", "add", f"{host.address}/30", "dev", host.host_side)
            ip("link", "set", host.host_side, "up")
            ip("-n", host.namespace, "addr", "add", f"10.214.{n}.2/30", "dev", inside)
            ip("-n", host.namespace, "link", "set", inside, "up")
            ip("-n", host.namespace, "link", "set", "lo", "up")
            # this machine's end: the link address, on to the broker's loopback port
            forwarders.append(
                _start_forwarder((), (host.address, broker_port), ("127.0.0.1", broker_port))
            )
            # the host's end: its own loopback, across the link
            forwarders.append(
                _start_forwarder(
                    ("ip", "netns", "exec", host.namespace),
                    ("127.0.0.1", broker_port),
                    (host.address, broker_port),
                )
            )
        yield made
    finally:
        for child in forwarders:
            child.kill()
            child.wait(timeout=10)
        for host in made:
            subprocess.run(["ip", "link", "del", host.host_side], capture_output=True)
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].rstrip("/"))


def signed_key(tmp_path: Path, name: str) -> tuple[Path, str]:
    """A fresh signing key file and its public key, as `toolctl keygen` makes them."""
    from toolctl.signing import generate

    path = tmp_path / f"{name}.pem"
    return path, generate(path)


def wait_until(condition: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.1)
