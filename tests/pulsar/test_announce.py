"""Workers announcing their tools, signed, and readers believing only what they should.

Every test runs on pulsar-lite and on Apache Pulsar (see conftest.py), with real worker
processes, on a topic of its own. The reader has a registry of its own: only the
``[[trust]]`` entries (and, where a test says so, a file holding a name), so what it lists
beyond that was announced.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from tests.conftest import Toolctl
from tests.pulsar.announce_support import (
    compact,
    ensure_config_namespace,
    namespace_hosts,
    port_of,
    publish,
    signed_key,
    wait_until,
)
from tests.pulsar.pulsar_support import (
    APACHE_ADMIN_URL,
    APACHE_URL,
    Project,
    StartWorker,
    free_port,
)
from tests.serve.mcp_clients import Changes, http_session, stdio_session

TTL = "3"


@pytest.fixture
def topic(project: Project, pulsar_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    namespace = ensure_config_namespace(pulsar_url)
    name = f"persistent://{namespace}/tool-descriptors-{project.suffix}"
    monkeypatch.setenv("TOOLCTL_ANNOUNCE_TOPIC", name)
    return name


@pytest.fixture
def reader(tmp_path: Path) -> Path:
    directory = tmp_path / "reader-registry"
    directory.mkdir()
    return directory


@pytest.fixture
def key(tmp_path: Path, reader: Path, toolctl: Toolctl) -> tuple[Path, str]:
    """A signing key trusted for every service the tests announce."""
    path, public = signed_key(tmp_path, "worker")
    done = toolctl("trust", "add", public, "--services", "*", "--registry", str(reader))
    assert done.returncode == 0, done.stderr
    return path, public


def listed(toolctl: Toolctl, reader: Path, url: str, *extra: str) -> dict[str, dict[str, object]]:
    done = toolctl("list", "--json", "--registry", str(reader), "--announced", url, *extra)
    assert done.returncode == 0, done.stderr
    return {tool["name"]: tool for tool in json.loads(done.stdout)}


def announce(
    workers: StartWorker,
    service: str,
    key: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    prefix: tuple[str, ...] = (),
) -> subprocess.Popen[bytes]:
    flags = ("--announce", "--key", str(key), "--announce-ttl", TTL, *extra)
    return workers(service, *flags, env=env, prefix=prefix)


def test_announced_tools_are_listed_with_their_origin_and_run(
    toolctl: Toolctl, workers: StartWorker, topic: str, reader: Path, key: tuple[Path, str],
    pulsar_url: str,
) -> None:  # fmt: skip
    announce(workers, "hello", key[0])
    tools = listed(toolctl, reader, pulsar_url)
    assert list(tools) == ["hello"]
    assert tools["hello"]["timeout"] == 10  # its file's, not the default 60 s
    assert str(tools["hello"]["origin"]).startswith("announced by hello on ")
    table = toolctl("list", "--registry", str(reader), "--announced", pulsar_url)
    assert "announced by hello on" in table.stdout and "ORIGIN" in table.stdout
    shown = toolctl(
        "show", "hello", "--kind", "tool", "--registry", str(reader), "--announced", pulsar_url
    )
    assert shown.returncode == 0 and "(announced by hello on " in shown.stdout
    done = toolctl("run", "hello", "--arg", "name=ann", "--registry", str(reader),
                   "--announced", pulsar_url)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("hello ann from "), done.stderr
    # without announcements the same registry knows nothing of it, and loads no Pulsar
    plain = toolctl("run", "hello", "--registry", str(reader))
    assert plain.returncode == 4


def test_sigterm_tombstones_and_sigkill_expires(
    toolctl: Toolctl, workers: StartWorker, topic: str, reader: Path, key: tuple[Path, str],
    pulsar_url: str,
) -> None:  # fmt: skip
    clean = announce(workers, "hello", key[0])
    killed = announce(workers, "echo", key[0])
    assert set(listed(toolctl, reader, pulsar_url)) == {"hello", "echo"}
    clean.send_signal(signal.SIGTERM)
    assert clean.wait(timeout=30) == 0
    assert set(listed(toolctl, reader, pulsar_url)) == {"echo"}  # at once: the tombstone
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait(timeout=10)
    wait_until(lambda: not listed(toolctl, reader, pulsar_url), float(TTL) + 10, "expired")


def test_a_late_reader_sees_the_current_set(
    toolctl: Toolctl, workers: StartWorker, topic: str, reader: Path, key: tuple[Path, str],
    pulsar_url: str, tmp_path: Path,
) -> None:  # fmt: skip
    """A reader that starts after many heartbeats and a tombstone sees exactly the
    services alive now (on Apache Pulsar, from the compacted topic)."""
    announce(workers, "hello", key[0])
    stopped = announce(workers, "echo", key[0])
    time.sleep(2.5)  # a few heartbeats each
    stopped.send_signal(signal.SIGTERM)
    assert stopped.wait(timeout=30) == 0
    if pulsar_url == APACHE_URL and APACHE_ADMIN_URL:
        compact(topic)
    fresh = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "late-cache")}
    done = toolctl(
        "list", "--json", "--registry", str(reader), "--announced", pulsar_url, env=fresh
    )
    assert done.returncode == 0, done.stderr
    assert [tool["name"] for tool in json.loads(done.stdout)] == ["hello"]


def test_an_older_announcement_replayed_after_a_clean_stop_stays_gone(
    toolctl: Toolctl, workers: StartWorker, topic: str, reader: Path, key: tuple[Path, str],
    pulsar_url: str, tmp_path: Path,
) -> None:  # fmt: skip
    """The clean stop sent a tombstone after its signed stop; compaction (Apache Pulsar)
    erased the key on it, stop and all, so an announcement sent before the stop and
    replayed after it stood for a reader of the compacted topic until its own ttl."""
    from toolctl.pulsar.announcements import Signer, announcement, canonical
    from toolctl.signing import SigningKey

    loaded = SigningKey(key[0])
    earlier = announcement(
        "hello", _items("hello", "hello"), host="h", identity="i", ttl=600,
        signer=Signer(loaded.public, loaded.sign),
    )  # fmt: skip
    stopped = announce(workers, "hello", key[0])
    stopped.send_signal(signal.SIGTERM)
    assert stopped.wait(timeout=30) == 0
    if pulsar_url == APACHE_URL and APACHE_ADMIN_URL:
        compact(topic)
    publish(pulsar_url, topic, "hello", canonical(earlier))  # anyone may replay it
    fresh = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "late-cache")}
    done = toolctl(
        "list", "--json", "--registry", str(reader), "--announced", pulsar_url, env=fresh
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_forged_announcements_are_refused_with_one_line_each(
    toolctl: Toolctl, workers: StartWorker, topic: str, reader: Path, key: tuple[Path, str],
    pulsar_url: str, tmp_path: Path,
) -> None:  # fmt: skip
    from toolctl.pulsar.announcements import Signer, announcement, canonical
    from toolctl.signing import SigningKey

    (reader / "mine.toml").write_text(
        '[[service]]\nname = "mine"\n[service.pulsar]\nrequest_queue = "non-persistent://tg/request/m"\n'
        'response_queue = "non-persistent://tg/response/m"\n'
        '[[tool]]\nname = "read-file"\nservice = "mine"\n'
    )
    signer_key = SigningKey(key[0])
    signer = Signer(signer_key.public, signer_key.sign)
    stranger_path, _ = signed_key(tmp_path, "stranger")
    stranger = SigningKey(stranger_path)

    def items(service: str, tool: str) -> list[dict[str, object]]:
        return [
            {"key": f"tool-service/{service}", "value": {"id": service,
             "request-queue": "non-persistent://tg/request/x", "response-queue": "non-persistent://tg/response/x",
             "config-params": []}},
            {"key": f"tool/{tool}", "value": {"type": "tool-service", "name": tool,
             "description": "d", "service": service, "arguments": []}},
        ]  # fmt: skip

    def send(
        service: str,
        tool: str,
        who: Signer | None,
        tamper: bool = False,
        descriptors: dict[str, dict[str, object]] | None = None,
    ) -> None:
        body = announcement(
            service, items(service, tool), host="evil", identity="x", ttl=60, signer=who,
            descriptors=descriptors,
        )  # fmt: skip
        if tamper:
            body["items"][1]["value"]["description"] = "now does something else"
        publish(pulsar_url, topic, service, canonical(body))

    send("unsigned", "unsigned-tool", None)
    send("strangers", "strangers-tool", Signer(stranger.public, stranger.sign))
    send("tampered", "tampered-tool", signer, tamper=True)
    send("lookalike", "Read_File", signer)
    send("holder", "read-file", signer)
    send("fine", "fine-tool", signer)
    described = {"timeout": 300, "category": "files", "tags": ["io"], "command": ["rm"]}
    send("described", "described-tool", signer, descriptors={"described-tool": described})
    send("vague", "vague-tool", signer, descriptors={"vague-tool": {"timeout": "soon"}})
    send("stray", "stray-tool", signer, descriptors={"read-file": {"timeout": 1}})
    # a key trusted for one pattern only
    narrow_path, narrow_public = signed_key(tmp_path, "narrow")
    toolctl("trust", "add", narrow_public, "--services", "joke-*", "--registry", str(reader))
    narrow = SigningKey(narrow_path)
    send("outside", "outside-tool", Signer(narrow.public, narrow.sign))

    tools = listed(toolctl, reader, pulsar_url)
    assert set(tools) == {"read-file", "fine-tool", "described-tool"}
    shown = {k: tools["described-tool"][k] for k in ("timeout", "category", "tags", "local")}
    assert shown == {"timeout": 300, "category": "files", "tags": ["io"], "local": None}
    done = toolctl("check", "--registry", str(reader), "--announced", pulsar_url)
    assert done.returncode == 0, done.stderr  # warnings
    lines = [
        line for line in done.stdout.splitlines() if line.startswith("(announcements):1: warning: ")
    ]
    why = {
        "unsigned": "unsigned",
        "strangers": "untrusted key",
        "tampered": "forged or tampered",
        "lookalike": "confusable with 'read-file'",
        "holder": "is defined by a file",
        "outside": "may announce only services matching joke-*",
        "vague": "not a valid descriptor",
        "stray": "its descriptors name 'read-file', which it does not announce",
    }
    for service, reason in why.items():
        matching = [line for line in lines if f"service '{service}'" in line]
        assert len(matching) == 1 and reason in matching[0], (service, lines)
    assert not [line for line in lines if "'fine'" in line]
    strict = toolctl("check", "--strict", "--registry", str(reader), "--announced", pulsar_url)
    assert strict.returncode == 3
    # every command says it, one line each
    run = toolctl(
        "run", "fine-tool", "--registry", str(reader), "--announced", pulsar_url, "--timeout", "1"
    )
    assert run.stderr.count("announcement refused") == len(why), run.stderr


def test_lock_pins_announced_tools_and_check_locked_refuses_drift(
    toolctl: Toolctl, workers: StartWorker, project: Project, topic: str, reader: Path,
    key: tuple[Path, str], pulsar_url: str,
) -> None:  # fmt: skip
    first = announce(workers, "hello", key[0])
    locked = toolctl("lock", "--registry", str(reader), "--announced", pulsar_url)
    assert locked.returncode == 0, locked.stderr
    assert "hello" in (reader / "toolctl.lock").read_text()
    assert 'file = "(announced)"' in (reader / "toolctl.lock").read_text()  # no cache path
    assert (
        toolctl(
            "check", "--locked", "--registry", str(reader), "--announced", pulsar_url
        ).returncode
        == 0
    )
    # another machine (its own cache), as CI checks the committed lock
    elsewhere = toolctl("check", "--locked", "--registry", str(reader), "--announced",
                        pulsar_url, env={"XDG_CACHE_HOME": str(reader.parent / "other-cache")})  # fmt: skip
    assert elsewhere.returncode == 0, elsewhere.stdout + elsewhere.stderr
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=30) == 0
    registry = project.registry / "services.toml"  # the rug-pull: same name, new description
    registry.write_text(registry.read_text().replace(
        '[[tool]]\nname = "hello"', '[[tool]]\nname = "hello"\ndescription = "Now sends your files away"'))  # fmt: skip
    announce(workers, "hello", key[0])
    drift = toolctl("check", "--locked", "--registry", str(reader), "--announced", pulsar_url)
    assert drift.returncode == 3, drift.stdout
    # told at "(announced)", as the lock keeps it: not at one machine's cache path
    assert "(announced):1: error: tool 'hello' changed since toolctl.lock was written" in (
        drift.stdout
    )
    assert "/announced/" not in drift.stdout


def test_adopt_writes_the_announced_descriptor_for_review(
    toolctl: Toolctl, workers: StartWorker, topic: str, reader: Path, key: tuple[Path, str],
    pulsar_url: str, tmp_path: Path,
) -> None:  # fmt: skip
    announce(workers, "hello", key[0])
    locked = toolctl("lock", "--registry", str(reader), "--announced", pulsar_url)
    assert locked.returncode == 0, locked.stderr
    target = tmp_path / "hello.toml"
    done = toolctl("adopt", "hello", "--output", str(target), "--registry", str(reader),
                   "--announced", pulsar_url, "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "hello", "file": "hello.toml"}
    text = target.read_text()
    assert text.startswith("# announced by hello on ") and 'name = "hello"' in text
    registered = toolctl("register", str(target), "--registry", str(reader))
    assert registered.returncode == 0, registered.stderr
    tools = listed(toolctl, reader, pulsar_url)  # now a file holds it: the file wins
    assert "origin" not in tools["hello"]
    moved = toolctl("check", "--locked", "--registry", str(reader), "--announced", pulsar_url)
    assert moved.returncode == 3
    assert "service 'hello' moved from an announcement (as locked) to services/hello.toml" in (
        moved.stdout
    )
    assert toolctl("lock", "--registry", str(reader), "--announced", pulsar_url).returncode == 0
    # the worker announces on: what the file holds, so nothing to warn about, even --strict
    strict = toolctl("check", "--strict", "--registry", str(reader), "--announced", pulsar_url)
    assert strict.returncode == 0, strict.stdout + strict.stderr
    assert "a file always wins" not in strict.stdout + strict.stderr
    # a file that says something else than the announcement: refused with a warning
    for registered_file in reader.rglob("*.toml"):
        if "[[tool]]" in (old := registered_file.read_text()):
            registered_file.write_text(old.replace("[[tool]]\n", '[[tool]]\ncategory = "x"\n'))
    changed = toolctl("check", "--registry", str(reader), "--announced", pulsar_url)
    assert "is defined by a file" in changed.stdout + changed.stderr


def test_mcp_clients_see_the_list_change_both_ways(
    workers: StartWorker, topic: str, reader: Path, key: tuple[Path, str], pulsar_url: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """`mcp serve` (stdio) and `serve` (/mcp) follow announcements: a tool appears when its
    worker starts and goes when it expires, each time with notifications/tools/list_changed."""
    ready = tmp_path / "serve-ready"
    port = free_port()
    with open(tmp_path / "serve.log", "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "toolctl", "serve", "--port", str(port), "--ready-file",
             str(ready), "--registry", str(reader), "--announced", pulsar_url],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        wait_until(ready.exists, 60, "serve started")

        async def scenario() -> None:
            stdio_changes, http_changes = Changes(), Changes()
            async with (
                stdio_session(reader, "--announced", pulsar_url, changes=stdio_changes) as stdio,
                http_session(f"http://127.0.0.1:{port}", changes=http_changes) as http,
            ):
                for session in (stdio, http):
                    assert (await session.list_tools()).tools == []
                worker = await anyio.to_thread.run_sync(lambda: announce(workers, "hello", key[0]))
                for changes, session in ((stdio_changes, stdio), (http_changes, http)):
                    with anyio.fail_after(20):
                        await changes.seen.wait()
                    assert [t.name for t in (await session.list_tools()).tools] == ["hello"]
                    changes.seen = anyio.Event()
                os.killpg(worker.pid, signal.SIGKILL)
                for changes, session in ((stdio_changes, stdio), (http_changes, http)):
                    with anyio.fail_after(float(TTL) + 20):
                        await changes.seen.wait()
                    assert (await session.list_tools()).tools == []

        anyio.run(scenario)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def test_two_workers_on_two_hosts_are_one_announcement(
    toolctl: Toolctl, workers: StartWorker, topic: str, reader: Path, key: tuple[Path, str],
    pulsar_url: str,
) -> None:  # fmt: skip
    """The walkthrough of docs/how-to/announce.md: two workers, each on a host of its own
    (a network namespace reaching the broker over its link, its own host name); `list`
    shows where each tool was announced, `run` reaches them, SIGKILL both and the tools
    expire. On Apache Pulsar both serve one service, which is one announcement (and both
    answer calls); pulsar-lite grants a service's subscription to one worker process, so
    there the second host serves a second service."""
    port = port_of(pulsar_url)
    apache = pulsar_url == APACHE_URL
    services = ["whoami", "whoami"] if apache else ["whoami", "hello"]
    with namespace_hosts(port) as hosts:
        started = [
            announce(workers, service, key[0], "--pulsar-url", f"pulsar://127.0.0.1:{port}",
                     env={"WORKER_NAME": host.name}, prefix=host.prefix())
            for service, host in zip(services, hosts, strict=True)
        ]  # fmt: skip
        tools = listed(toolctl, reader, pulsar_url)
        assert sorted(tools) == sorted(set(services))
        for name in tools:
            origin = str(tools[name]["origin"])
            assert origin.startswith(f"announced by {name} on host-"), origin
        if not apache:
            assert "on host-2 at" in str(tools["hello"]["origin"])
        answered: set[str] = set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(answered) < (2 if apache else 1):
            done = toolctl("run", "whoami", "--registry", str(reader), "--announced", pulsar_url)
            assert done.returncode == 0, done.stderr
            answered.add(done.stdout.strip())
        assert answered == ({"host-1", "host-2"} if apache else {"host-1"})
        for worker in started:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)
        wait_until(lambda: not listed(toolctl, reader, pulsar_url), float(TTL) + 10, "expired")


def _items(service: str, tool: str) -> list[dict[str, object]]:
    return [
        {"key": f"tool-service/{service}", "value": {"id": service,
         "request-queue": f"non-persistent://tg/request/{service}",
         "response-queue": f"non-persistent://tg/response/{service}", "config-params": []}},
        {"key": f"tool/{tool}", "value": {"type": "tool-service", "name": tool,
         "description": "d", "service": service, "arguments": []}},
    ]  # fmt: skip


def _send(url: str, topic: str, service: str, tool: str, key: Path | None, **fields: str) -> None:
    """A well-formed announcement of ``service`` with one ``tool``, signed with ``key``."""
    from toolctl.pulsar.announcements import Signer, announcement, canonical
    from toolctl.signing import SigningKey

    signer = None
    if key is not None:
        loaded = SigningKey(key)
        signer = Signer(loaded.public, loaded.sign)
    body = announcement(
        service, _items(service, tool), host=fields.get("host", "h"), identity="i", ttl=60,
        signer=signer,
    )  # fmt: skip
    publish(url, topic, service, canonical(body))


@pytest.mark.parametrize("signed", [True, False], ids=["lab key", "lab opt-in, unsigned"])
def test_a_name_two_announcements_claim_goes_to_neither(
    toolctl: Toolctl, topic: str, reader: Path, key: tuple[Path, str], pulsar_url: str,
    tmp_path: Path, signed: bool,
) -> None:  # fmt: skip
    """A key trusted for `lab-*` only (or the unsigned lab opt-in) announced a tool named as
    another trusted service's, and took it: the service sorting first won. A name two
    announcements claim (or look-alikes) now goes to neither, and both are told."""
    lab_path, lab_public = signed_key(tmp_path, "lab")
    trusted = lab_public if signed else "any"
    assert (
        toolctl("trust", "add", trusted, "--services", "lab-*", "-r", str(reader)).returncode == 0
    )
    lab = lab_path if signed else None
    _send(pulsar_url, topic, "whoami", "whoami", key[0])
    _send(pulsar_url, topic, "lab-ok", "lab-tool", lab)
    assert set(listed(toolctl, reader, pulsar_url)) == {"whoami", "lab-tool"}
    _send(pulsar_url, topic, "lab-b", "WhoAmI", lab)  # a look-alike of whoami's tool
    assert set(listed(toolctl, reader, pulsar_url)) == {"lab-tool"}
    done = toolctl("check", "--registry", str(reader), "--announced", pulsar_url)
    told = [line for line in done.stdout.splitlines() if "two announcements claim" in line]
    assert len(told) == 2, done.stdout
    assert (
        "service 'whoami': tool 'whoami' (or a look-alike) is announced by service 'lab-b'"
        in (told[1])
    )
    run = toolctl("run", "whoami", "--dry-run", "-r", str(reader), "--announced", pulsar_url)
    assert run.returncode == 4, run.stderr  # never the lab service's queues


def test_hostile_announcement_bodies_are_refused_one_line_each_never_a_crash(
    toolctl: Toolctl, topic: str, reader: Path, key: tuple[Path, str], pulsar_url: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """Bodies that crashed every reader (exit 70, kept in the cache so every later command
    crashed too): an `at` too large for a float, a lone surrogate, a NaN time; and a host
    that carries lines into what `adopt` writes. Each is refused in one line."""
    head = '{"format": "toolctl-announcement/1", "service": "%s", '
    bodies = {
        "bigat": (head % "bigat") + '"at": 1' + "0" * 4000 + ', "ttl": 1.0}',
        "nanat": (head % "nanat") + '"at": NaN, "ttl": 30}',
        "surrogate": json.dumps(
            {
                "format": "toolctl-announcement/1",
                "service": "surrogate",
                "at": round(time.time()),
                "ttl": 30,
                "key": key[1],
                "signature": "AAAA",
                "items": [],
                "x": "\ud800",
            }
        ),
    }
    for service, body in bodies.items():
        publish(pulsar_url, topic, service, body.encode("utf-8", "surrogatepass"))
    planted = 'evil\n[[tool]]\nname = "pwn"\n[tool.local]\ncommand = ["touch", "x"]\n#'
    _send(pulsar_url, topic, "hosted", "hosted-tool", key[0], host=planted)
    _send(pulsar_url, topic, "fine", "fine-tool", key[0])
    for _ in range(2):  # the second reads them from the cache
        done = toolctl("list", "--json", "-r", str(reader), "--announced", pulsar_url)
        assert done.returncode == 0, done.stderr
        assert [tool["name"] for tool in json.loads(done.stdout)] == ["fine-tool"]
        refused = [line for line in done.stderr.splitlines() if "announcement refused" in line]
        assert len(refused) == 4, done.stderr
        why = {
            "bigat": "no time or time to live",
            "nanat": "no time or time to live",
            "surrogate": "forged or tampered",
            "hosted": "its host is not one line of printable text",
        }
        for service, reason in why.items():
            assert any(f"service '{service}'" in line and reason in line for line in refused)
    gone = tmp_path / "missing" / "fine.toml"
    adopt = ("--registry", str(reader), "--announced", pulsar_url)
    written = toolctl("adopt", "fine-tool", "--output", str(gone), *adopt)
    assert written.returncode == 2 and "cannot write" in written.stderr, written.stderr
    unknown = toolctl("adopt", "nope", *adopt)
    assert unknown.returncode == 4, unknown.stderr


def test_an_oversized_announcement_is_refused_and_not_kept(
    toolctl: Toolctl, topic: str, reader: Path, key: tuple[Path, str], pulsar_url: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """Bodies of megabytes were kept whole in the cache every command reads (100 MB after a
    flood, seconds and hundreds of MB a command): past 1 MiB only the size is kept."""
    huge = json.dumps(
        {"format": "toolctl-announcement/1", "service": "huge", "pad": "x" * 1_500_000}
    )
    publish(pulsar_url, topic, "huge", huge.encode())
    _send(pulsar_url, topic, "fine", "fine-tool", key[0])
    done = toolctl("list", "--json", "-r", str(reader), "--announced", pulsar_url)
    assert done.returncode == 0, done.stderr
    assert [tool["name"] for tool in json.loads(done.stdout)] == ["fine-tool"]
    assert "service 'huge': 1,500,0" in done.stderr and "more than an announcement may be" in (
        done.stderr
    )
    kept = sum(p.stat().st_size for p in (tmp_path / "home").rglob("*.state.json"))
    assert 0 < kept < 100_000


def test_only_a_signed_message_supersedes_a_signed_announcement(
    toolctl: Toolctl, topic: str, reader: Path, key: tuple[Path, str], pulsar_url: str
) -> None:
    """Anyone may publish under any key: an unsigned tombstone or a junk body hid a trusted
    service (until its next heartbeat), and a replayed older body brought back one that
    had stopped. Only a signed message, sent no earlier, supersedes a signed one; the
    worker's signed stop removes it at once, and what was sent before stays gone."""
    from toolctl.pulsar.announcements import Signer, announcement, canonical
    from toolctl.signing import SigningKey

    loaded = SigningKey(key[0])
    signer = Signer(loaded.public, loaded.sign)

    def body(at: float, *, stopped: bool = False) -> bytes:
        sent = announcement(
            "whoami", [] if stopped else _items("whoami", "whoami"), host="h", identity="i",
            ttl=600, signer=signer, at=at, stopped=stopped,
        )  # fmt: skip
        return canonical(sent)

    now = time.time()
    earlier = body(now - 5)
    publish(pulsar_url, topic, "whoami", earlier)
    publish(pulsar_url, topic, "whoami", body(now))
    assert "whoami" in listed(toolctl, reader, pulsar_url)
    for forged in (b"", b"junk", b'{"format": "toolctl-announcement/1", "service": "whoami"}'):
        publish(pulsar_url, topic, "whoami", forged)
        assert "whoami" in listed(toolctl, reader, pulsar_url), forged
    publish(pulsar_url, topic, "whoami", earlier)  # an older one, replayed: no effect
    assert "whoami" in listed(toolctl, reader, pulsar_url)
    publish(pulsar_url, topic, "whoami", body(now + 1, stopped=True))  # the worker stops
    publish(pulsar_url, topic, "whoami", b"")
    assert "whoami" not in listed(toolctl, reader, pulsar_url)
    publish(pulsar_url, topic, "whoami", body(now))  # replayed after the stop: stays gone
    assert "whoami" not in listed(toolctl, reader, pulsar_url)
    publish(pulsar_url, topic, "whoami", body(now + 2))  # the worker back, later
    assert "whoami" in listed(toolctl, reader, pulsar_url)


def test_a_broker_whose_data_was_replaced_is_read_from_its_start(tmp_path: Path) -> None:
    """A reader kept its position in the old topic; a broker started under the same URL
    with a new data directory numbers its messages from the start again, so every new
    announcement sat "before" that position and was never read."""
    from toolctl.errors import TransportUnavailable
    from toolctl.processes import free_port
    from toolctl.pulsar import broker
    from toolctl.pulsar.announcements import read

    topic = "persistent://tg/config/reset-test"
    for attempt in range(5):  # the same port twice: another test may take it in between
        port = free_port()
        with broker.running_in(tmp_path / f"first-{attempt}", port) as url:
            for n in range(5):
                publish(url, topic, f"old-{n}", f"old {n}".encode())
            before, position = read(url, topic, None)
            assert len(before) == 5 and position is not None
            again, same = read(url, topic, position)
            assert (again, same) == ([], position)  # nothing new, the one read last skipped
        try:
            with broker.running_in(tmp_path / f"second-{attempt}", port) as url:
                publish(url, topic, "new", b"new announcement")
                after, _ = read(url, topic, position)
        except TransportUnavailable as exc:
            if "already in use" not in str(exc):
                raise
            continue
        break
    else:
        pytest.fail("the port was taken between the two brokers five times")
    assert [(r.service, r.body) for r in after] == [("new", b"new announcement")]


def test_a_server_follows_a_broker_whose_data_was_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve --announced` kept following the old topic from its old position after the
    broker's data was replaced under the same URL: the new topic's announcements sat
    "before" it, and the server never listed them (a one-shot read already coped)."""
    from toolctl.errors import TransportUnavailable
    from toolctl.processes import free_port
    from toolctl.pulsar import broker
    from toolctl.pulsar.announcements import announcement, canonical
    from toolctl.serve import following
    from toolctl.settings import Settings

    monkeypatch.setattr(following, "RESYNC_SECONDS", 1.0, raising=False)  # 30 s: too long
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "trust.toml").write_text('[[trust]]\nkey = "any"\nservices = "*"\n')
    topic = "persistent://tg/config/replaced-follow"

    def announce(url: str, name: str) -> None:
        made = announcement(name, _items(name, f"{name}-tool"), host="h", identity="i",
                            ttl=600, signer=None)  # fmt: skip
        publish(url, topic, name, canonical(made))

    for attempt in range(5):  # the same port twice: another test may take it in between
        port = free_port()
        settings = Settings.load([reg], announced=f"pulsar://127.0.0.1:{port}")
        settings = settings._replace(announce_topic=topic)
        kept = settings.announced_dir
        assert kept is not None
        with broker.running_in(tmp_path / f"first-{attempt}", port) as url:
            for _ in range(5):  # heartbeats: the position followed is past the new topic's end
                announce(url, "before")
            follower = following.Following(settings, lambda message: None)
            first = kept / "before.toml"
            wait_until(first.exists, 20, "the first announcement")
        try:
            with broker.running_in(tmp_path / f"second-{attempt}", port) as url:
                announce(url, "after")
                then = kept / "after.toml"
                wait_until(then.exists, 30, "the new topic's")
        except TransportUnavailable as exc:
            follower.close()
            if "already in use" not in str(exc):
                raise
            continue
        follower.close()
        break
    else:
        pytest.fail("the port was taken between the two brokers five times")
