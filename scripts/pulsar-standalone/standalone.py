"""Run a real Apache Pulsar standalone from Maven Central: fetch, start, stop, status.

Used through ``scripts/pulsar-standalone.sh``; needs Java 17, Maven and Python 3 (standard
library only). The broker's jars are fetched once into a cache directory outside the
checkout (``$TOOLCTL_PULSAR_CACHE``, default ``${XDG_CACHE_HOME:-~/.cache}/toolctl/
pulsar-4.0.7``); each instance lives in a directory of its own (``--dir``, default
``${XDG_STATE_HOME:-~/.local/state}/toolctl/pulsar-standalone``) holding its config, data,
log, pid record and URLs. Ports are free loopback ports picked at start.

``--address IP`` (repeatable) makes the broker also listen, and advertise itself, on that
address (e.g. a veth address that workers in a network namespace reach it by); a client
that connected on an address is told that address on lookups (Pulsar's PIP-95).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSION = "4.0.7"
MAIN_CLASS = "org.apache.pulsar.PulsarStandaloneStarter"
START_TIMEOUT = float(os.environ.get("TOOLCTL_PULSAR_START_TIMEOUT", "300"))
STOP_TIMEOUT = 30.0
TENANT = "tg"
# what TrustGraph's tg-init-trustgraph creates: tenant tg and its four namespaces
NAMESPACES: dict[str, dict[str, object]] = {
    "flow": {},
    "request": {},
    "response": {
        "retention_policies": {"retentionTimeInMinutes": 3, "retentionSizeInMB": -1},
        "subscription_expiration_time_minutes": 30,
    },
    "state": {},
    # announcements (persistent://tg/config/tool-descriptors): kept, compacted per service
    "config": {"retention_policies": {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}},
}
# the JVM flags Pulsar's own bin/pulsar passes, with a heap that fits beside a test suite
JVM_FLAGS = [
    "-Xms128m",
    "-Xmx512m",
    "-XX:MaxDirectMemorySize=256m",
    "-XX:+UseG1GC",
    "-XX:+ExitOnOutOfMemoryError",
    "--add-opens",
    "java.base/java.io=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util.zip=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.nio=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.net=ALL-UNNAMED",
    "--add-opens",
    "java.management/sun.management=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djava.net.preferIPv4Stack=true",
    "-Djute.maxbuffer=10485760",
    "-Dbookkeeper.metadata.bookie.drivers="
    "org.apache.pulsar.metadata.bookkeeper.PulsarMetadataBookieDriver",
    "-Dbookkeeper.metadata.client.drivers="
    "org.apache.pulsar.metadata.bookkeeper.PulsarMetadataClientDriver",
    "-Dpulsar.allocator.exit_on_oom=true",
]


class Failed(Exception):
    """A one-line reason; the script prints it and exits 1."""


def say(message: str) -> None:
    print(f"pulsar-standalone: {message}", file=sys.stderr, flush=True)


def cache_dir() -> Path:
    if os.environ.get("TOOLCTL_PULSAR_CACHE"):
        return Path(os.environ["TOOLCTL_PULSAR_CACHE"]).resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base, "toolctl", f"pulsar-{VERSION}").resolve()


def default_instance_dir() -> Path:
    if os.environ.get("TOOLCTL_PULSAR_HOME"):
        return Path(os.environ["TOOLCTL_PULSAR_HOME"]).resolve()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base, "toolctl", "pulsar-standalone").resolve()


# -- fetching -------------------------------------------------------------------------


def classpath(cache: Path) -> str | None:
    """The fetched classpath, or None if it is missing or incomplete."""
    listing = cache / "classpath"
    if not listing.is_file():
        return None
    text = listing.read_text().strip()
    jars = text.split(os.pathsep)
    if not text or not all(Path(jar).is_file() for jar in jars):
        return None
    return text


def fetch(cache: Path) -> str:
    found = classpath(cache)
    if found:
        return found
    if shutil.which("mvn") is None:
        raise Failed("Maven (mvn) is needed to fetch Apache Pulsar's jars; install it")
    cache.mkdir(parents=True, exist_ok=True)
    partial = cache / "classpath.partial"
    command = [
        "mvn",
        "-B",
        "-q",
        "-s",
        str(HERE / "settings.xml"),
        "-f",
        str(HERE / "pom.xml"),
        f"-Dmaven.repo.local={cache / 'repository'}",
        "dependency:build-classpath",
        "-DincludeScope=runtime",
        f"-Dmdep.outputFile={partial}",
    ]
    say(f"fetching org.apache.pulsar:pulsar-broker:{VERSION} into {cache} (first time: minutes)")
    began = time.monotonic()
    done = subprocess.run(command, cwd=cache, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise Failed(f"mvn failed ({done.returncode}):\n{tail}")
    partial.replace(cache / "classpath")
    found = classpath(cache)
    if not found:
        raise Failed(f"mvn finished but {cache / 'classpath'} lists missing jars")
    say(f"fetched {len(found.split(os.pathsep))} jars in {time.monotonic() - began:.1f} s")
    return found


# -- one instance ---------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_time_of(pid: int) -> str | None:
    """The kernel's start time of a process (clock ticks since boot), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


class Instance:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.record_file = directory / "standalone.json"
        self.log = directory / "broker.log"
        self.conf = directory / "standalone.conf"

    def record(self) -> dict[str, object] | None:
        try:
            parsed: dict[str, object] = json.loads(self.record_file.read_text())
        except (OSError, ValueError):
            return None
        return parsed

    def running(self) -> dict[str, object] | None:
        """The record, if the process it names is alive and is the one this script started."""
        record = self.record()
        if record is None:
            return None
        pid = int(str(record["pid"]))
        if start_time_of(pid) != record.get("start_time"):
            return None  # gone, or the pid now belongs to another process
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return None
        if MAIN_CLASS.encode() not in command or str(self.conf).encode() not in command:
            return None
        return record

    def start(self, cache: Path, addresses: list[str], port: int = 0) -> dict[str, object]:
        record = self.running()
        if record is not None:
            say(f"already running (pid {record['pid']}) in {self.dir}")
            return record
        jars = fetch(cache)
        if shutil.which("java") is None:
            raise Failed("java (17 or newer) is needed to run Apache Pulsar; install it")
        self.dir.mkdir(parents=True, exist_ok=True)
        # a given port: how a restarted broker is found again at the URL its clients hold
        broker_port, web_port, bookie_port = port or free_port(), free_port(), free_port()
        url = f"pulsar://127.0.0.1:{broker_port}"
        admin = f"http://127.0.0.1:{web_port}"
        extra = [
            "",
            "# -- chosen by pulsar-standalone.sh at start --",
            f"brokerServicePort={broker_port}",
            f"webServicePort={web_port}",
        ]
        if addresses:
            # one listener per address, the same port on each; a client that connected
            # on an address is told that address on lookups (127.0.0.1 is "internal")
            more = [
                f"external{n}:pulsar://{address}:{broker_port}"
                for n, address in enumerate(addresses)
            ]
            listeners = [f"internal:pulsar://127.0.0.1:{broker_port}", *more]
            extra += [
                f"bindAddresses={','.join(more)}",
                f"advertisedListeners={','.join(listeners)}",
                "internalListenerName=internal",
            ]
        self.conf.write_text((HERE / "standalone.conf").read_text() + "\n".join(extra) + "\n")
        data = self.dir / "data"
        command = [
            "java",
            *JVM_FLAGS,
            f"-Dlog4j.configurationFile={HERE / 'log4j2.xml'}",
            "-cp",
            jars,
            MAIN_CLASS,
            "--config",
            str(self.conf),
            "--no-functions-worker",
            "--no-stream-storage",
            "--metadata-dir",
            str(data / "metadata"),
            "--bookkeeper-dir",
            str(data / "bookkeeper"),
            "--bookkeeper-port",
            str(bookie_port),
        ]
        began = time.monotonic()
        with open(self.log, "ab") as log:
            child = subprocess.Popen(
                command,
                cwd=self.dir,  # not a checkout: data/standalone/zookeeper would mean ZK mode
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        record = {
            "pid": child.pid,
            "start_time": start_time_of(child.pid),
            "url": url,
            "admin_url": admin,
            "addresses": addresses,
            "log": str(self.log),
        }
        self.record_file.write_text(json.dumps(record, indent=2) + "\n")
        try:
            wait_until_ready(child, admin, self.log)
            create_namespaces(admin)
        except BaseException:
            terminate(child.pid)
            self.record_file.unlink(missing_ok=True)
            raise
        (self.dir / "url").write_text(url + "\n")
        (self.dir / "admin-url").write_text(admin + "\n")
        say(f"ready in {time.monotonic() - began:.1f} s (pid {child.pid}), log {self.log}")
        return record

    def stop(self) -> bool:
        record = self.running()
        for name in ("url", "admin-url"):
            (self.dir / name).unlink(missing_ok=True)
        if record is None:
            if self.record_file.exists():
                say("not running (stale record removed)")
                self.record_file.unlink()
            else:
                say("not running")
            return False
        pid = int(str(record["pid"]))
        began = time.monotonic()
        terminate(pid)
        self.record_file.unlink(missing_ok=True)
        say(f"stopped (pid {pid}) in {time.monotonic() - began:.1f} s")
        return True


def terminate(pid: int) -> None:
    """SIGTERM the broker's process group, SIGKILL it after STOP_TIMEOUT; wait until gone."""
    first = start_time_of(pid)
    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return
            except ChildProcessError:
                pass  # not our child: watch /proc instead
            if start_time_of(pid) != first or _zombie(pid):
                return
            time.sleep(0.1)
    raise Failed(f"pid {pid} did not exit after SIGKILL")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def http(method: str, url: str, body: object = None, timeout: float = 5.0) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def wait_until_ready(child: subprocess.Popen[bytes], admin: str, log: Path) -> None:
    """Until the admin API lists public/default (the HTTP port answers ~1 s earlier)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if child.poll() is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            raise Failed(f"the broker exited with {child.returncode}; {log} ends:\n{tail}")
        try:
            status, body = http("GET", f"{admin}/admin/v2/namespaces/public", timeout=2)
            if status == 200 and "public/default" in body:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.25)
    raise Failed(f"not ready within {START_TIMEOUT:.0f} s; see {log}")


def create_namespaces(admin: str) -> None:
    """Tenant tg and tg/flow, tg/request, tg/response, tg/state, as TrustGraph's init does."""
    status, body = http(
        "PUT",
        f"{admin}/admin/v2/tenants/{TENANT}",
        {"adminRoles": [], "allowedClusters": ["standalone"]},
    )
    if status not in (204, 409):
        raise Failed(f"creating tenant {TENANT}: HTTP {status} {body}")
    for namespace, policies in NAMESPACES.items():
        status, body = http("PUT", f"{admin}/admin/v2/namespaces/{TENANT}/{namespace}", policies)
        if status not in (204, 409):
            raise Failed(f"creating namespace {TENANT}/{namespace}: HTTP {status} {body}")
        # a lookup makes the broker own the namespace's bundle now, not on the first call
        # (that costs ~1 s, more than some callers' timeouts)
        http("GET", f"{admin}/lookup/v2/topic/non-persistent/{TENANT}/{namespace}/warm-up")


def memory_of(pid: int) -> str:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return f"{int(line.split()[1]) // 1024} MiB"
    except OSError:
        pass
    return "?"


def port_number(text: str) -> int:
    """A TCP port for --port (argparse turns the ValueError into a usage error)."""
    port = int(text)
    if not 0 < port < 65536:
        raise ValueError(text)
    return port


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="pulsar-standalone.sh",
        description="A real Apache Pulsar standalone, fetched from Maven Central.",
    )
    parser.add_argument(
        "command", choices=["fetch", "start", "stop", "status", "url", "admin-url", "log"]
    )
    parser.add_argument(
        "--dir", type=Path, help="the instance directory (default $TOOLCTL_PULSAR_HOME)"
    )
    parser.add_argument(
        "--address",
        action="append",
        default=[],
        help="also listen and advertise on this address (repeatable)",
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=0,
        help="the broker's service port (default: a free one); e.g. to restart on the same URL",
    )
    options = parser.parse_args(argv)
    instance = Instance((options.dir or default_instance_dir()).resolve())
    try:
        if options.command == "fetch":
            fetch(cache_dir())
        elif options.command == "start":
            print(instance.start(cache_dir(), options.address, options.port)["url"])
        elif options.command == "stop":
            instance.stop()
        elif options.command == "log":
            print(instance.log)
        else:
            record = instance.running()
            if record is None:
                if options.command == "status":
                    print("pulsar-standalone: not running")
                else:
                    say(f"not running in {instance.dir}")
                return 3
            if options.command == "url":
                print(record["url"])
            elif options.command == "admin-url":
                print(record["admin_url"])
            else:
                pid = int(str(record["pid"]))
                print(
                    f"pulsar-standalone: running, pid {pid}, {memory_of(pid)} RSS\n"
                    f"url {record['url']}\nadmin-url {record['admin_url']}\n"
                    f"dir {instance.dir}"
                )
    except Failed as failure:
        say(str(failure))
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
