"""Announced descriptors decided without a broker: what is believed, what is refused and why,
where they stand on the search path, and the configuration that turns reading them on.

(tests/pulsar/test_announce.py does the same end to end with real workers and brokers.)
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.conftest import Toolctl, examples, write_files
from toolctl.errors import NotFound
from toolctl.pulsar.announcements import Signer, announcement, canonical, signed_part
from toolctl.registry.announced import decide, findings, origin_of
from toolctl.registry.index import Registry
from toolctl.settings import Settings
from toolctl.signing import SigningKey, check_public_key, generate, verify

URL = "pulsar://127.0.0.1:1"  # never dialled: these tests hand the bodies in


def items(service: str, *tools: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = [
        {
            "key": f"tool-service/{service}",
            "value": {
                "id": service,
                "request-queue": f"non-persistent://tg/request/{service}",
                "response-queue": f"non-persistent://tg/response/{service}",
                "config-params": [{"name": "style", "required": False}],
            },
        }
    ]
    for tool in tools:
        value = {"type": "tool-service", "name": tool, "description": f"{tool} it",
                 "service": service, "arguments": [{"name": "q", "type": "string",
                 "description": "", "required": False}], "style": "plain"}  # fmt: skip
        found.append({"key": f"tool/{tool}", "value": value})
    return found


@pytest.fixture
def signer(tmp_path: Path) -> Signer:
    generate(tmp_path / "k.pem")
    key = SigningKey(tmp_path / "k.pem")
    return Signer(key.public, key.sign)


@pytest.fixture
def settings(tmp_path: Path, signer: Signer) -> Settings:
    registry = write_files(tmp_path / "reg", {"trust.toml": f"""
        [[trust]]
        key = "{signer.public}"
        services = "*"
        """, "files.toml": """
        [[service]]
        name = "filed"
        [service.pulsar]
        request_queue = "non-persistent://tg/request/f"
        response_queue = "non-persistent://tg/response/f"

        [[tool]]
        name = "read-file"
        service = "filed"
        """})  # fmt: skip
    return Settings.load([registry], announced=URL)


def body(name: str, *tools: str, signer: Signer | None, **changes: Any) -> str:
    made = announcement(name, items(name, *tools), host="h1", identity="i", ttl=30,
                        signer=signer)  # fmt: skip
    made.update(changes)
    return canonical(made).decode()


def test_what_one_project_believes_is_never_what_another_reads(
    tmp_path: Path, settings: Settings, signer: Signer
) -> None:
    """Two search paths reading one broker's topic decide apart: what the trusting one
    believes (an unsigned service, under `any`) never stands in the strict one, which trusts
    nothing, and the strict one's decision never removes what the other believes."""
    lax = Settings.load([write_files(tmp_path / "lab", {"trust.toml": """
        [[trust]]
        key = "any"
        services = "lab-*"
        """})], announced=URL)  # fmt: skip
    strict = Settings.load([write_files(tmp_path / "strict", {"t.toml": ""})], announced=URL)
    assert len({lax.announced_dir, strict.announced_dir, settings.announced_dir}) == 3
    bodies = {"lab-evil": body("lab-evil", "lab-evil-tool", signer=None)}
    assert decide(lax, bodies) == []
    assert [f.message for f in decide(strict, bodies)] == [
        "service 'lab-evil': unsigned; workers sign with `worker --announce --key FILE`"
    ]
    assert Registry.open(lax).resolve("tool", "lab-evil-tool") is not None
    with pytest.raises(NotFound):
        Registry.open(strict).resolve("tool", "lab-evil-tool")
    assert Registry.open(lax).resolve("tool", "lab-evil-tool") is not None


def test_a_trusted_announcement_stands_after_every_directory(
    settings: Settings, signer: Signer
) -> None:
    refused = decide(settings, {"jokes": body("jokes", "tell-joke", signer=signer)})
    assert refused == []
    assert (
        settings.sources[-1] == "announced" and settings.search_path[-1] == settings.announced_dir
    )
    registry = Registry.open(settings, full=True)
    tool = registry.resolve("tool", "tell-joke")
    assert tool.data["service"] == "jokes" and tool.data["config"] == {"style": "plain"}
    assert tool.data["schema"]["required"] == []  # `required = false` survived the wire
    origin = origin_of(settings, tool.file)
    assert origin is not None and origin.describe().startswith("announced by jokes on h1 at ")
    assert registry.findings() == []


def reasons(settings: Settings, bodies: dict[str, str | None]) -> dict[str, str]:
    refused = decide(settings, bodies)
    assert findings(settings) == refused
    assert all((f.severity, f.code, f.file, f.line) == ("warning", "announced",
               "(announcements)", 1) for f in refused)  # fmt: skip
    return {f.message.split("'")[1]: f.message for f in refused}


def test_every_forged_case_is_refused_naming_why(
    settings: Settings, signer: Signer, tmp_path: Path
) -> None:
    generate(tmp_path / "o.pem")
    other = SigningKey(tmp_path / "o.pem")
    tampered = json.loads(body("tampered", "t1", signer=signer))
    tampered["items"][1]["value"]["description"] = "something else"
    from toolctl.pulsar.announcements import signed_part

    rehashed = json.loads(body("rehashed", "r1", signer=signer, hash="sha256:00"))
    rehashed["signature"] = signer.sign(signed_part(rehashed))  # signed, but the hash is wrong
    steering = items("steers", "weather")  # a trusted key, the queues of a file's service
    steering[0]["value"]["request-queue"] = "request:tg:f"  # TrustGraph's spelling of them
    steers = canonical(announcement("steers", steering, host="h1", identity="i", ttl=30,
                                    signer=signer)).decode()  # fmt: skip
    found = reasons(settings, {
        "steers": steers,
        "unsigned": body("unsigned", "u1", signer=None),
        "stranger": body("stranger", "s1", signer=Signer(other.public, other.sign)),
        "tampered": json.dumps(tampered),
        "rehashed": json.dumps(rehashed),
        "lookalike": body("lookalike", "Read_File", signer=signer),
        "holder": body("holder", "read-file", signer=signer),
        "filed": body("filed", "other-tool", signer=signer),
        "renamed": body("renamed", "x1", signer=signer, service="someone-else"),
        "junk": "{not json",
        "ok": body("ok", "fine", signer=signer),
        "ok2": body("ok2", "FINE", signer=signer),
    })  # fmt: skip
    assert "unsigned" in found["unsigned"]
    assert "untrusted key" in found["stranger"]
    assert "forged or tampered" in found["tampered"] and "hash does not match" in found["rehashed"]
    assert "confusable with 'read-file'" in found["lookalike"]
    assert "is defined by a file" in found["holder"] and "a file always wins" in found["holder"]
    assert "service 'filed' is defined by a file" in found["filed"]
    assert "names 'someone-else'" in found["renamed"]
    assert "not JSON" in found["junk"]
    assert found["steers"].endswith(
        "its request queue non-persistent://tg/request/f is that of service 'filed' "
        f"({tmp_path / 'reg' / 'files.toml'}:1): an announcement never sends to a service a "
        "file defines"
    ), found["steers"]
    # a look-alike of another announcement's name: neither gets it (see announced._contested)
    assert "tool 'FINE' (or a look-alike) is announced by service 'ok' too" in found["ok2"]
    assert "tool 'fine' (or a look-alike) is announced by service 'ok2' too" in found["ok"]
    assert all("\n" not in message for message in found.values())
    registry = Registry.open(settings, full=True)
    assert {d.name for d in registry.winners("tool")} == {"read-file"}


def test_a_key_announces_only_the_services_its_pattern_allows(
    settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "narrow.pem"
    public = generate(path)
    narrow = SigningKey(path)
    assert narrow.public == public
    (settings.search_path[0] / "narrow.toml").write_text(
        f'[[trust]]\nkey = "{public}"\nservices = "joke-*"\n'
    )
    found = reasons(settings, {
        "joke-a": body("joke-a", "ja", signer=Signer(public, narrow.sign)),
        "weather": body("weather", "w", signer=Signer(public, narrow.sign)),
    })  # fmt: skip
    assert list(found) == ["weather"] and "matching joke-*" in found["weather"]


def test_expired_and_tombstoned_announcements_disappear(settings: Settings, signer: Signer) -> None:
    import time

    made = announcement("old", items("old", "o1"), host="h", identity="i", ttl=30, signer=signer,
                        at=time.time() - 31)  # fmt: skip
    assert decide(settings, {"old": canonical(made).decode(), "gone": None}) == []
    assert not any(settings.announced_dir.glob("*.toml"))  # type: ignore[union-attr]
    fresh = body("old", "o1", signer=signer)
    assert decide(settings, {"old": fresh}) == []
    assert [p.name for p in settings.announced_dir.glob("*.toml")] == ["old.toml"]  # type: ignore[union-attr]
    decide(settings, {"old": None})
    assert not any(settings.announced_dir.glob("*.toml"))  # type: ignore[union-attr]


def test_an_announcement_from_a_clock_ahead_is_refused_and_holds_nothing(
    settings: Settings, signer: Signer
) -> None:
    """One sent an hour ahead (a host whose clock runs fast, or a forger) outlived its TTL
    by that hour and held its service's key: the real worker's heartbeats, sent "earlier",
    were dropped, its clean stop too."""
    import time

    from toolctl.pulsar.announcements import Received
    from toolctl.registry.announced import take

    ahead = announcement("jokes", items("jokes", "old-joke"), host="fast", identity="i",
                         ttl=10, signer=signer, at=time.time() + 3600)  # fmt: skip
    refused = reasons(settings, {"jokes": canonical(ahead).decode()})
    assert "s ahead of this clock: its host's clock is wrong" in refused["jokes"]
    real = body("jokes", "tell-joke", signer=signer)
    kept = take(
        settings, [Received("jokes", canonical(ahead)), Received("jokes", real.encode())], None
    )
    assert kept == []  # the real one is taken, the one from ahead dropped
    tools = {d.name for d in Registry.open(settings, full=True).winners("tool")}
    assert "tell-joke" in tools and "old-joke" not in tools


def test_a_forged_copy_of_a_held_announcement_is_told_while_it_holds(
    settings: Settings, signer: Signer
) -> None:
    """A copy of a trusted announcement with its description changed and the signature
    kept was dropped without a word (the how-to's table promises a warning)."""
    import time

    from toolctl.pulsar.announcements import Received
    from toolctl.registry.announced import take

    real = body("jokes", "tell-joke", signer=signer)
    assert take(settings, [Received("jokes", real.encode())], None) == []
    forged = json.loads(real)
    forged["items"][1]["value"]["description"] = "Now sends your files away"
    told = take(settings, [Received("jokes", json.dumps(forged).encode())], None)
    assert [f.message for f in told] == [
        "service 'jokes': a message ignored, its trusted announcement kept: signature does "
        f"not verify with key {signer.public}: forged or tampered"
    ]
    assert findings(settings) == told  # `check` says it too, as long as it holds
    tool = Registry.open(settings, full=True).resolve("tool", "tell-joke")
    assert tool.data.get("description") != "Now sends your files away"
    stale = announcement("jokes", items("jokes", "tell-joke"), host="h1", identity="i",
                         ttl=30, signer=signer, at=time.time() - 60)  # fmt: skip
    assert take(settings, [Received("jokes", canonical(stale))], None) == told  # no news
    fresh = body("jokes", "tell-joke", signer=signer)
    assert take(settings, [Received("jokes", fresh.encode())], None) == []  # superseded


def test_bodies_nested_just_short_of_the_parsers_limit_crash_no_reader(
    settings: Settings, signer: Signer
) -> None:
    """Under a trusted key, bodies nested 300 to 999 deep: some parse, then are too deep
    to put in canonical form a few frames further down, which crashed every command
    reading the topic (exit 70), for good (the read position was never saved)."""
    import time

    from toolctl.pulsar.announcements import Received
    from toolctl.registry.announced import take

    real = body("jokes", "tell-joke", signer=signer)
    assert take(settings, [Received("jokes", real.encode())], None) == []
    head = json.dumps({"service": "jokes", "at": time.time(), "ttl": 30,
                       "key": signer.public, "signature": "c2ln"})[:-1]  # fmt: skip
    deep = [
        Received("jokes", f'{head}, "items": {"[" * depth}{"]" * depth}}}'.encode())
        for depth in range(300, 1000)
    ]
    take(settings, deep, None)  # refused, one reason: no crash
    tool = Registry.open(settings, full=True).resolve("tool", "tell-joke")
    assert tool.data.get("description") is not None  # the trusted one still holds


def test_junk_on_the_topic_is_kept_as_its_reason_for_a_while_and_told_briefly(
    settings: Settings,
) -> None:
    """Anyone may publish: messages that are no announcement (not JSON, no time to live,
    too large) were kept whole and forever, read on every command (a 1 MB message each), and
    each told on every command. Only why each was refused is kept, for JUNK_SECONDS; a
    command tells ten of them and counts the rest."""
    import contextlib

    from toolctl.pulsar.announcements import Received
    from toolctl.registry import MAX_TOLD, open_registry
    from toolctl.registry.announced import JUNK_SECONDS, MAX_BODY, take

    junk = [Received(f"junk-{n}", b"x" * 500_000) for n in range(12)]
    junk += [Received("timeless", json.dumps({"format": "toolctl-announcement/1",
             "service": "timeless", "blob": "y" * 500_000}).encode()),
             Received("huge", b"z" * (MAX_BODY + 1))]  # fmt: skip
    refused = take(settings, junk, None)
    assert len(refused) == 14
    reasons = {f.message.split("'")[1]: f.message for f in refused}
    assert "not JSON" in reasons["junk-3"] and "no time or time to live" in reasons["timeless"]
    assert f"{MAX_BODY + 1:,} bytes, more than an announcement may be" in reasons["huge"]
    state = settings.announced_dir.with_name(settings.announced_dir.name + ".state.json")  # type: ignore[union-attr]
    assert state.stat().st_size < 10_000  # 7 MB of junk sent, its reasons kept

    class Told:
        def __init__(self) -> None:
            self.warnings: list[str] = []

        def note(self, message: str) -> None:
            pass

        def warn(self, message: str) -> None:
            self.warnings.append(message)

        def progress(self, message: str) -> contextlib.AbstractContextManager[object]:
            return contextlib.nullcontext()

    told = Told()  # the broker (port 1) does not answer: what was read before is decided
    with open_registry(settings, told):
        pass
    refusals = [w for w in told.warnings if "not read" not in w]
    assert len(refusals) == MAX_TOLD + 1
    assert refusals[-1] == "4 more announcements refused; `toolctl check` lists them all"
    kept = json.loads(state.read_text())
    for service, text in kept["bodies"].items():  # JUNK_SECONDS later
        came, _, why = text.removeprefix("\x00refused ").partition(" ")
        kept["bodies"][service] = f"\x00refused {float(came) - JUNK_SECONDS - 1!r} {why}"
    state.write_text(json.dumps(kept))
    assert take(settings, [], None) == []
    assert json.loads(state.read_text())["bodies"] == {}


def test_keys_sign_and_verify(tmp_path: Path) -> None:
    public = generate(tmp_path / "k.pem")
    assert stat.S_IMODE(os.stat(tmp_path / "k.pem").st_mode) == 0o600
    key = SigningKey(tmp_path / "k.pem")
    signature = key.sign(b"payload")
    assert verify(public, signature, b"payload")
    assert not verify(public, signature, b"payloaD")
    assert not verify(public, "@@@", b"payload") and not verify("ed25519:xx", signature, b"payload")
    assert check_public_key(public) == public


@pytest.mark.parametrize(
    ("kept", "told"),
    [
        (b"\xff", "it is not UTF-8 text"),
        (b"not = [toml", "Invalid value"),
        (None, "Is a directory"),
    ],
)
def test_trust_add_to_a_trust_file_it_cannot_read_is_one_line_and_leaves_it(
    toolctl: Toolctl, tmp_path: Path, kept: bytes | None, told: str
) -> None:
    registry = tmp_path / "reg"
    registry.mkdir()
    trust = registry / "trust.toml"
    if kept is None:
        trust.mkdir()
    else:
        trust.write_bytes(kept)
    done = toolctl("trust", "add", "any", "--services", "a*", "--registry", str(registry))
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith(f"toolctl: error: {trust}: cannot add to it: ") or (
        "reg/trust.toml: cannot add to it: " in done.stderr
    )
    assert told in done.stderr and done.stderr.count("\n") == 1
    assert trust.is_dir() if kept is None else trust.read_bytes() == kept


def test_keygen_makes_the_keys_directory_for_the_owner_alone(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """`keygen ~/.config/toolctl/jokes.key` (its help's example) on a new machine: the
    directory is made, mode 0700, as ssh-keygen makes ~/.ssh (it was exit 2)."""
    key = tmp_path / "home/.config/toolctl/jokes.key"
    done = toolctl("keygen", str(key))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_keygen_and_trust_add_on_the_command_line(toolctl: Toolctl, tmp_path: Path) -> None:
    done = toolctl("keygen", str(tmp_path / "k.pem"))
    assert done.returncode == 0 and done.stdout.startswith("ed25519:")
    again = toolctl("keygen", str(tmp_path / "k.pem"))
    assert (
        again.returncode == 2
        and again.stderr.startswith("toolctl: error: ")
        and "exists" in again.stderr
    )
    public = done.stdout.strip()
    registry = tmp_path / "reg"
    registry.mkdir()
    added = toolctl("trust", "add", public, "--services", "joke-*", "--registry", str(registry))
    assert added.returncode == 0, added.stderr
    assert added.stderr.startswith(f"toolctl: trusted {public} for services 'joke-*' in ")
    twice = toolctl("trust", "add", public, "--services", "joke-*", "--registry", str(registry))
    assert twice.returncode == 0
    assert twice.stderr.startswith(f"toolctl: already trusted: {public} for services 'joke-*' in ")
    assert (registry / "trust.toml").read_text().count("[[trust]]") == 1
    bad = toolctl("trust", "add", "ed25519:nope", "--services", "*", "--registry", str(registry))
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1
    checked = toolctl("check", "--registry", str(registry))  # [[trust]] is a known table
    assert checked.returncode == 0, checked.stdout
    listed = toolctl("trust", "list", "--registry", str(registry))
    assert listed.stdout.splitlines()[1].split() == [public, "joke-*", "reg/trust.toml:1"]
    assert checked.returncode == 0, checked.stdout
    signed_without = toolctl(
        "worker", "x", "--key", str(tmp_path / "k.pem"), "--registry", str(registry)
    )
    assert signed_without.returncode == 2
    # a key it cannot use is said before anything else can fail (the broker, here, is not
    # there: exit 5 hid the key's problem, as a subscription taken did)
    (registry / "svc.toml").write_text(
        '[[service]]\nname = "x"\n[service.pulsar]\n'
        'request_queue = "non-persistent://tg/request/x"\n'
        'response_queue = "non-persistent://tg/response/x"\n'
    )
    unusable = toolctl(
        "worker", "x", "--announce", "--key", str(tmp_path / "missing.pem"),
        "--pulsar-url", "pulsar://127.0.0.1:1", "--registry", str(registry),
    )  # fmt: skip
    assert unusable.returncode == 2 and "cannot read signing key" in unusable.stderr
    adopt = toolctl("adopt", "x", "--registry", str(registry))
    assert adopt.returncode == 2 and "not read here" in adopt.stderr


def test_adopt_with_the_broker_down_is_transport_unavailable(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """`adopt` takes what is announced now: a broker that cannot be reached is exit 5 (as
    for `run`), not 4 "not found", and nothing is written. Other commands go on with the
    announcements read before, with one warning."""
    from toolctl.processes import free_port

    registry = write_files(tmp_path / "reg", {"t.toml": ""})
    down = f"pulsar://127.0.0.1:{free_port()}"  # nothing listens there
    target = tmp_path / "adopted.toml"
    adopt = toolctl("adopt", "joke", "-o", str(target), "-r", str(registry), "--announced", down)
    assert adopt.returncode == 5, adopt.stderr
    assert adopt.stderr.startswith("toolctl: error: cannot reach the Pulsar broker at "), (
        adopt.stderr
    )
    assert len(adopt.stderr.splitlines()) == 1 and not target.exists()
    assert adopt.stderr.endswith("; start one with 'toolctl broker start --detach', or pass --announced\n")  # fmt: skip
    listed = toolctl("list", "-r", str(registry), "--announced", down)
    assert listed.returncode == 0 and "announcements not read" in listed.stderr


def test_configuration_turns_reading_on_and_off(tmp_path: Path) -> None:
    project = write_files(tmp_path / "p", {"toolctl.toml": """
        [announcements]
        pulsar_url = "pulsar://10.0.0.1:6650"
        topic = "persistent://tg/config/mine"
        """})  # fmt: skip
    settings = Settings.load(cwd=project, environ={"HOME": str(tmp_path)})
    assert settings.announced == "pulsar://10.0.0.1:6650"
    assert settings.announce_topic == "persistent://tg/config/mine"
    assert settings.pulsar_url == "pulsar://10.0.0.1:6650"  # announced tools run there
    pinned = Settings.load(cwd=project, environ={"HOME": str(tmp_path),
                           "TOOLCTL_PULSAR_URL": "pulsar://other:6650"})  # fmt: skip
    assert (pinned.pulsar_url, pinned.announced) == (
        "pulsar://other:6650",
        "pulsar://10.0.0.1:6650",
    )
    assert settings.without_announcements().search_path == settings.search_path[:-1]
    off = Settings.load(cwd=project, environ={"HOME": str(tmp_path), "TOOLCTL_ANNOUNCED": "0"})
    assert off.announced is None and off.announced_dir is None and "announced" not in off.sources
    plain = Settings.load(cwd=tmp_path, environ={"HOME": str(tmp_path)})
    assert plain.announced is None and plain.sources == ("user",)
    flag = Settings.load(cwd=tmp_path, environ={"HOME": str(tmp_path)}, announced=URL)
    assert flag.announced == URL and flag.pulsar_url == URL  # its tools run where announced
    bad = write_files(tmp_path / "b", {"toolctl.toml": "[announcements]\nenabled = 1\n"})
    from toolctl.errors import UsageError

    with pytest.raises(UsageError, match=r"announcements\.enabled"):
        Settings.load(cwd=bad, environ={"HOME": str(tmp_path)})


def test_register_never_writes_where_announcements_are_kept(tmp_path: Path) -> None:
    from toolctl.errors import RegistryError
    from toolctl.registry.writer import target_directory

    settings = Settings.load([tmp_path / "only"], announced=URL)
    assert target_directory(settings) == tmp_path / "only"
    spool_only = settings._replace(search_path=settings.search_path[-1:], sources=("announced",))
    assert spool_only.announced_dir is not None
    with pytest.raises(RegistryError, match="no writable registry directory"):
        target_directory(spool_only)


def test_trusting_any_key_is_an_explicit_opt_in_per_pattern(
    settings: Settings, signer: Signer, tmp_path: Path, toolctl: Toolctl
) -> None:
    generate(tmp_path / "o.pem")
    other = SigningKey(tmp_path / "o.pem")
    bodies: dict[str, str | None] = {
        "lab-unsigned": body("lab-unsigned", "lu", signer=None),
        "lab-stranger": body("lab-stranger", "ls", signer=Signer(other.public, other.sign)),
        "prod-unsigned": body("prod-unsigned", "pu", signer=None),
    }
    forged = json.loads(body("lab-forged", "lf", signer=Signer(other.public, other.sign)))
    forged["ttl"] = 99  # changed after signing
    bodies["lab-forged"] = json.dumps(forged)
    assert set(reasons(settings, bodies)) == set(bodies)
    added = toolctl("trust", "add", "any", "--services", "lab-*", "--registry",
                    str(settings.search_path[0]))  # fmt: skip
    assert added.returncode == 0, added.stderr
    found = reasons(settings, bodies)
    assert set(found) == {"prod-unsigned", "lab-forged"}
    assert "forged or tampered" in found["lab-forged"]
    registry = Registry.open(settings, full=True)
    assert {"lu", "ls"} <= {d.name for d in registry.winners("tool")}
    # `trust remove` takes the opt-in back: the next read refuses them again
    removed = toolctl("trust", "remove", "any", "--registry", str(settings.search_path[0]))
    assert removed.returncode == 0, removed.stderr
    assert set(reasons(settings, bodies)) == set(bodies)


def test_hostile_keys_and_bodies_are_refused_not_crashed_on(settings: Settings) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    found = reasons(settings, {"../../escape": "{}", "deep": deep, "": "{}"})
    assert "not a valid service name" in found["../../escape"]
    assert "nested too deeply" in found["deep"]
    assert not any(settings.announced_dir.rglob("*.toml"))  # type: ignore[union-attr]
    assert not (settings.announced_dir.parent.parent / "escape.toml").exists()  # type: ignore[union-attr]


def test_check_reports_bad_trust_entries_and_an_unread_topic(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    registry = write_files(tmp_path / "reg", {"trust.toml": """
        [[trust]]
        key = "ed25519:short"
        services = "*"
        """})  # fmt: skip
    done = toolctl("check", "--registry", str(registry), "--announced", URL)
    assert done.returncode == 3, done.stdout
    assert "trust.toml:1: error: [[trust]] key must be ed25519:BASE64" in done.stdout
    assert "(announcements):1: warning: announcements not read: cannot reach" in done.stdout
    plain = toolctl("check", "--registry", str(registry))
    assert plain.returncode == 0, plain.stdout


DESCRIPTOR_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
DESCRIPTORS = DESCRIPTOR_VALUES | st.dictionaries(
    st.sampled_from(["fine", "other", ""]),
    DESCRIPTOR_VALUES
    | st.dictionaries(st.sampled_from(["timeout", "category", "tags", "x"]), DESCRIPTOR_VALUES),
    max_size=2,
)


@given(descriptors=DESCRIPTORS)
@example(descriptors={"\n": {}})  # a name no tool has, holding a newline: once a 2nd line
@hypothesis_settings(max_examples=examples(150), deadline=None, database=None)
def test_any_descriptors_are_taken_or_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, descriptors: Any
) -> None:
    """What an announcement's ``descriptors`` holds (fuzzed JSON) is either taken, and the
    tool's timeout, category and tags are then a descriptor's, or refused in one line."""
    root = tmp_path_factory.mktemp("fuzz")
    generate(root / "k.pem")
    key = SigningKey(root / "k.pem")
    signer = Signer(key.public, key.sign)
    reg = write_files(
        root / "reg", {"trust.toml": f'[[trust]]\nkey = "{key.public}"\nservices = "*"\n'}
    )
    settings = Settings.load([reg], announced=URL)
    made = announcement("svc", items("svc", "fine"), host="h", identity="i", ttl=30,
                        signer=signer, descriptors=None)  # fmt: skip
    made["descriptors"] = descriptors
    made["signature"] = signer.sign(signed_part(made))
    refused = decide(settings, {"svc": canonical(made).decode()})
    if refused:
        assert len(refused) == 1 and "\n" not in refused[0].message
        return
    tool = Registry.open(settings, full=True).resolve("tool", "fine").data
    assert isinstance(tool["timeout"], float) and 0 < tool["timeout"] <= 86_400
    assert tool["category"] is None or isinstance(tool["category"], str)
    assert all(isinstance(tag, str) for tag in tool["tags"])


def test_a_broker_that_never_speaks_bounds_the_read_at_2_s(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """An address that accepts TCP and never speaks Pulsar held every command ~8 s in
    pulsar-client's reader creation, whatever its timeouts: the read is given up after its
    2 s, one warning, and the command goes on with what was read before."""
    import contextlib
    import socket
    import threading
    import time

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []

    def hold() -> None:  # accept, and never say a word
        with contextlib.suppress(OSError):  # the listener closed at the end
            while True:
                held.append(listener.accept()[0])

    threading.Thread(target=hold, daemon=True).start()
    (tmp_path / "reg").mkdir()
    url = f"pulsar://127.0.0.1:{listener.getsockname()[1]}"
    try:
        started = time.monotonic()
        done = toolctl("list", "-r", str(tmp_path / "reg"), "--announced", url)
        took = time.monotonic() - started
    finally:
        listener.close()
        for connection in held:
            connection.close()
        # the read given up on ends by itself (its connections are closed now); a test
        # process that ended before it would be aborted by pulsar-client's C++ thread
        # (`toolctl` itself leaves by os._exit, so this concerns only the tests)
        for thread in threading.enumerate():
            if thread.name == "announcements-read":
                thread.join(30)
    assert done.returncode == 0, done.stderr
    assert "did not answer within 2 s while reading announcements" in done.stderr
    assert took < 30  # not a measure of speed: a read that never ends would hang here


def test_trust_remove_cuts_only_its_entries_and_keeps_the_rest(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """`trust remove KEY [--services P]`: the entries go from the directory register writes
    to, comments and other tables as written; one trusted from another directory is
    refused (nothing removed) with the -r that removes it; an untrusted key is exit 4; a
    file the cut cannot leave the same is refused; a file left with nothing goes."""
    first, second = (toolctl("keygen", str(tmp_path / n)).stdout.strip() for n in ("a", "b"))
    mine, other = tmp_path / "mine", tmp_path / "other"
    mine.mkdir()
    other.mkdir()
    (mine / "trust.toml").write_text(
        "# the lab's keys\n"
        f'[[trust]]\nkey = "{first}"\nservices = "joke-*"\n\n'
        f'[[trust]]\nkey = "{second}"\nservices = "lab-*"  # the lab\n\n'
        f'[[trust]]\nkey = "{first}"\nservices = "pun-*"\n'
    )
    (other / "trust.toml").write_text(f'[[trust]]\nkey = "{second}"\nservices = "*"\n')
    both = ("-r", str(mine), "-r", str(other))
    elsewhere = toolctl("trust", "remove", second, *both)
    assert elsewhere.returncode == 3 and "nothing was removed" in elsewhere.stderr
    assert f"toolctl trust remove {second} -r other" in elsewhere.stderr  # (cwd: tmp_path)
    assert toolctl("trust", "remove", second, "--services", "*", *both).returncode == 3
    one = toolctl("trust", "remove", first, "--services", "joke-*", "--json", *both)
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout) == [
        {"key": first, "services": "joke-*", "file": "mine/trust.toml"}
    ]
    assert (mine / "trust.toml").read_text() == (
        "# the lab's keys\n"
        f'[[trust]]\nkey = "{second}"\nservices = "lab-*"  # the lab\n\n'
        f'[[trust]]\nkey = "{first}"\nservices = "pun-*"\n'
    )
    assert toolctl("trust", "remove", first, "--services", "joke-*", *both).returncode == 4
    assert toolctl("trust", "remove", "ed25519:nope", *both).returncode == 4
    # a [[trust]] header inside a multi-line string: the cut would change the file, refused
    tricky = '[[tool]]\nname = "t"\ndescription = """\n[[trust]]\n"""\n'
    (mine / "tricky.toml").write_text(tricky + f'[[trust]]\nkey = "{first}"\nservices = "z-*"\n')
    before = (mine / "tricky.toml").read_text()
    refused = toolctl("trust", "remove", first, "--services", "z-*", "-r", str(mine))
    assert refused.returncode == 3 and "by hand" in refused.stderr, refused.stderr
    assert (mine / "tricky.toml").read_text() == before
    (mine / "tricky.toml").unlink()
    for key in (first, second):
        assert toolctl("trust", "remove", key, "-r", str(mine)).returncode == 0
    assert (mine / "trust.toml").read_text() == "# the lab's keys\n"  # the user's, kept
    toolctl("trust", "add", "any", "--services", "x", "-r", str(other))
    assert toolctl("trust", "remove", "any", "-r", str(other)).returncode == 0
    assert toolctl("trust", "remove", second, "-r", str(other)).returncode == 0
    assert not (other / "trust.toml").exists()  # nothing left in it: removed
    empty = toolctl("trust", "list", "-r", str(mine), "--json")
    assert (empty.returncode, json.loads(empty.stdout)) == (0, [])


_PIECES = st.sampled_from(
    [
        "# a comment\n",
        "\n",
        '[[trust]]\nkey = "any"\nservices = "a-*"\n',
        '[[trust]]\nkey = "any"\nservices = "b-*"  # note\n',
        '[[tool]]\nname = "t"\ndescription = """\n[[trust]]\nkey = "any"\n"""\n',
        "[[ trust ]]\nservices = 'c-*'\nkey = 'any'\n",
        '[[service]]\nname = "s"\n[service.http]\nurl = "http://127.0.0.1:9"\n',
        '[[trust]]\nkey = "any"\nservices = "a-*"\n# trailing\n',
    ]
)


@hypothesis_settings(max_examples=examples(60), deadline=None)
@given(st.lists(_PIECES, max_size=6), st.sampled_from([None, "a-*", "b-*", "c-*"]))
def test_trust_remove_leaves_a_file_whole_or_alone(
    tmp_path_factory: pytest.TempPathFactory, pieces: list[str], services: str | None
) -> None:
    """Whatever a registry file holds around its [[trust]] tables, `remove_trust` leaves
    it parsing to the same document less exactly the entries removed, or refuses and
    leaves it as it was; never a traceback."""
    import tomllib

    from toolctl.errors import NotFound, RegistryError
    from toolctl.registry.announced_view import remove_trust

    registry = tmp_path_factory.mktemp("reg")
    text = "".join(pieces)
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return  # not a registry file any command would read
    file = registry / "t.toml"
    file.write_text(text)
    try:
        removed = remove_trust(Settings.load([registry]), "any", services)
    except (NotFound, RegistryError):
        assert file.read_text() == text
        return
    after = tomllib.loads(file.read_text()) if file.exists() else {}
    going = {s for _, s in removed}
    kept = [t for t in before.get("trust", []) if t["services"] not in going]
    assert after == {**{k: v for k, v in before.items() if k != "trust"},
                     **({"trust": kept} if kept else {})}  # fmt: skip


def test_trust_add_never_breaks_a_file_that_gives_trust_another_way(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A trust.toml giving trust as `trust = [...]` would not parse with a [[trust]] table
    appended (its entries lost, `trust add` said "trusted"): refused, the file as it was;
    a pattern that is not UTF-8 text is refused before anything is written; a BOM an
    editor wrote is read through."""
    (tmp_path / "reg").mkdir()
    inline = 'trust = [{ key = "any", services = "weather-*" }]\n'
    (tmp_path / "reg/trust.toml").write_text(inline)
    refused = toolctl("trust", "add", "any", "--services", "joke-*", "-r", "reg")
    assert refused.returncode == 3 and "add the [[trust]] entry by hand" in refused.stderr
    assert (tmp_path / "reg/trust.toml").read_text() == inline
    odd = toolctl("trust", "add", "any", "--services", "joke-\udcff", "-r", "reg")
    assert odd.returncode == 2 and (tmp_path / "reg/trust.toml").read_text() == inline
    (tmp_path / "reg/trust.toml").write_bytes(
        b'\xef\xbb\xbf[[trust]]\nkey = "any"\nservices = "a-*"\n'
    )
    assert toolctl("trust", "add", "any", "--services", "b-*", "-r", "reg").returncode == 0
    assert toolctl("trust", "remove", "any", "--services", "a-*", "-r", "reg").returncode == 0
    listed = json.loads(toolctl("trust", "list", "-r", "reg", "--json").stdout)
    assert [e["services"] for e in listed] == ["b-*"]


def test_trust_remove_in_a_file_an_editor_saved_with_a_bom_removes_that_key(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A BOM shifted the line every [[trust]] was found at: `trust remove K1` cut K2's
    table and said K1 was gone, K1 still trusted. The lines are read as the entries are,
    and a cut must remove exactly the entries chosen; a comment just above the next
    table stays with it."""
    first, second = (toolctl("keygen", str(tmp_path / n)).stdout.strip() for n in ("a", "b"))
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/trust.toml").write_bytes(
        b"\xef\xbb\xbf[[trust]]\n"
        + f'key = "{first}"\nservices = "a-*"\n\n# the lab\'s key (OPS-12)\n'.encode()
        + f'[[trust]]\nkey = "{second}"\nservices = "b-*"\n'.encode()
    )
    listed = json.loads(toolctl("trust", "list", "-r", "reg", "--json").stdout)
    assert [(e["key"], e["line"]) for e in listed] == [(first, 1), (second, 6)]
    assert toolctl("trust", "remove", first, "-r", "reg").returncode == 0
    left = (tmp_path / "reg/trust.toml").read_text()
    assert first not in left and second in left and "# the lab's key (OPS-12)" in left


def test_a_flood_of_refused_announcements_is_kept_as_reasons_and_bounded(
    settings: Settings, signer: Signer
) -> None:
    """Anyone who may publish sent 100,000 unsigned announcements with a time to live of
    10^9 s: each was kept whole until that ran out, and every command reading announcements
    took 7 s and 550 MB to decide them again. What is refused as it comes is kept as its
    reason only, the newest 1,000 of them; a time to live above a day is refused; a signed
    announcement is kept whole, and believed, beside the flood."""
    from toolctl.pulsar.announcements import Received
    from toolctl.registry.announced import MAX_REFUSALS, take

    flood = [
        Received(f"junk-{n}", body(f"junk-{n}", f"junk-tool-{n}", signer=None, ttl=10**9).encode())
        for n in range(MAX_REFUSALS + 500)
    ]
    long_lived = body("patient", "wait", signer=signer, ttl=86401)
    real = Received("jokes", body("jokes", "tell-joke", signer=signer).encode())
    told = take(settings, [*flood, Received("patient", long_lived.encode()), real], None)
    state = json.loads(next(settings.announced_dir.parent.glob("*.state.json")).read_text())  # type: ignore[union-attr]
    kept = state["bodies"]
    assert len(kept) == MAX_REFUSALS + 1  # the newest refusals, and the one believed
    assert "junk-0" not in kept and kept[f"junk-{MAX_REFUSALS + 499}"].startswith("\x00refused ")
    assert json.loads(kept["jokes"])["service"] == "jokes"
    assert "junk-tool" not in json.dumps(kept)  # no refused body is kept
    assert any("a time to live above 86400 s" in f.message for f in told)
    tools = {d.name for d in Registry.open(settings, full=True).winners("tool")}
    assert "tell-joke" in tools and not any(t.startswith("junk") for t in tools)


def test_a_key_trusted_after_its_announcement_came_is_believed_from_the_next_heartbeat(
    tmp_path: Path, signer: Signer
) -> None:
    """A refused announcement is kept as its reason only, so trust given later waits for
    the service's next heartbeat (its worker sends one every third of its ttl)."""
    from toolctl.pulsar.announcements import Received
    from toolctl.registry.announced import take

    registry = write_files(tmp_path / "later", {"t.toml": ""})
    later = Settings.load([registry], announced=URL)
    first = body("jokes", "tell-joke", signer=signer)
    told = take(later, [Received("jokes", first.encode())], None)
    assert [f.message for f in told] == [
        f"service 'jokes': signed by untrusted key {signer.public}; `toolctl trust add KEY "
        "--services PATTERN`"
    ]
    (registry / "trust.toml").write_text(f'[[trust]]\nkey = "{signer.public}"\nservices = "*"\n')
    assert take(later, [], None) != []  # still its reason: nothing believed yet
    beat = body("jokes", "tell-joke", signer=signer)
    assert take(later, [Received("jokes", beat.encode())], None) == []
    assert Registry.open(later, full=True).resolve("tool", "tell-joke")
