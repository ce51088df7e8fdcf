"""Announced tools: what workers announce on Pulsar, believed or refused, kept as files.

When announcements are read (``Settings.announced``), the last directory of the search
path is ``Settings.announced_dir``: toolctl writes one ``SERVICE.toml`` there per announcement
it accepts, and nothing else ever writes there. So an announced name stands after every
registry directory and goes through the index like any other (first wins, confusables,
the cache, `lock`), and a file always wins.

``refresh`` is a bounded read of the topic (``READ_TIMEOUT`` s, from where the last read
ended; the first read takes the compacted view) before the registry opens; a broker that
does not answer is one warning, and the announcements last read stay until they expire.
``decide`` then decides, announcement by announcement, in service order:

* expired (its last heartbeat older than its time to live), stopped (the signed stop a
  worker sends on a clean stop), or a tombstone: gone, silently. A message supersedes a
  kept announcement that a key trusted for its service signed only when it is one too,
  sent no earlier (``take``): an unsigned tombstone or junk under its key cannot hide it
* unsigned, signed by a key no ``[[trust]]`` entry names, for a service outside its key's
  pattern, or not matching its signature or content hash: refused (a ``[[trust]]`` entry
  with ``key = "any"`` is the opt-in: its services' announcements need no trusted key,
  but a signature they carry must still verify, and their hash must match)
* a service or tool name that a registry file defines, or confusable with a file's: refused
* a name (or a look-alike) that two announcements use: both refused, as there is no order
  among announcements to trust (a time, a name sorts as its sender chooses), and any winner
  would let one key take a name from another's service
* a time or time to live that is no finite number of seconds, a host or identity that is
  not one printable line, a body that cannot be put in canonical form: refused

A refusal is a warning-level ``Finding`` (code ``announced``) that every command warns
about in one line and `check` reports (an error under ``--strict``). Reading nothing is
free: with ``Settings.announced`` None none of this, nor pulsar-client, is imported.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from toolctl.findings import Finding
from toolctl.names import fold
from toolctl.registry.trust import ANY
from toolctl.reporting import Reporter
from toolctl.settings import Settings

CODE = "announced"
MAX_DEPTH = 64
MAX_BODY = 1024 * 1024
"""Bytes an announcement may have (a service of hundreds of tools with their schemas is a
tenth of it); a larger one is refused, and only its size is kept."""
_REFUSED = "\x00refused "
"""What is kept of a message that is no announcement: this, when it came, and why."""
JUNK_SECONDS = 600.0
"""Seconds a message that is no announcement (not JSON, no time to live, too large) is
told about; then it is dropped, as it has no time of its own to expire with."""
MAX_REASON = 300
WHERE = "(announcements)"
FORMAT = "toolctl-announcement/1"
MAX_TTL = 86400.0
"""The longest time to live an announcement may give, as `worker --announce-ttl` allows:
a longer one is refused (a flood of them would be kept, and read, until it ran out)."""
MAX_REFUSALS = 1000
"""Refusals kept to be told (the newest): past them a flood is dropped unsaid."""
AHEAD = 300.0
"""Seconds an announcement's time may be ahead of this clock (hosts' clocks differ): one
sent further ahead is refused, or a host whose clock runs fast (or a forger) would keep
it past its time to live and hold its service's key against the worker's heartbeats."""


class Origin(NamedTuple):
    """Who announced a kept service: what list and show say about its names."""

    service: str
    host: str
    at: float
    identity: str
    hash: str
    key: str | None
    expires: float = 0.0
    """When it is dropped unless a heartbeat comes first (its ``at`` + ``ttl``)."""

    def describe(self) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.at))
        return f"announced by {self.service} on {self.host} at {stamp}"


def _state_file(settings: Settings, suffix: str) -> Path:
    directory = settings.announced_dir
    assert directory is not None
    return directory.with_name(f"{directory.name}.{suffix}.json")


def _load(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _save(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(value, sort_keys=True))
    os.replace(temporary, path)


def refresh(settings: Settings, reporter: Reporter, *, required: bool = False) -> list[Finding]:
    """Read what was announced since the last read, then ``take`` it; the refusals. A read
    that fails is a warning (those read before stand), or with ``required`` its error
    (TransportUnavailable for a broker that does not answer)."""
    from toolctl.errors import ToolctlError, UsageError
    from toolctl.pulsar.announcements import READ_TIMEOUT, read

    if settings.announced is None:
        return []
    try:
        received, last = read(
            settings.announced, settings.announce_topic, position(settings), READ_TIMEOUT
        )
    except ToolctlError as exc:
        if required or isinstance(exc, UsageError):  # a URL that is none: a setting given
            raise  # wrong, refused as a bad --pulsar-url is (a broker away is a warning)
        reporter.warn(f"announcements not read: {exc}; using those read before")
        received, last = [], None
    return take(settings, received, last)


def take(settings: Settings, received: list[Any], last: str | None) -> list[Finding]:
    """Fold messages into the announcements kept (the latest per service; a tombstone
    removes it), remember where reading ended, then ``decide``; the refusals.

    Anyone may publish under any key, so a message supersedes a kept announcement that a
    key trusted for its service signed (and that has not expired) only when it is one too,
    sent no earlier: an unsigned tombstone or a junk body cannot hide a trusted service,
    nor a replayed older message bring back one that stopped (its worker signs the stop)."""
    from toolctl.registry.trust import read_trust

    state_path = _state_file(settings, "state")
    state = _load(state_path)
    bodies: dict[str, str] = dict(state.get("bodies") or {})
    ignored: dict[str, str] = dict(state.get("ignored") or {})
    trusted: list[Any] | None = None
    now = time.time()
    for message in received:
        if len(message.body) > MAX_BODY:  # refused, and never kept whole: the cache is read
            size = f"{len(message.body):,} bytes, more than an announcement may be"
            text = f"{_REFUSED}{now!r} {size} ({MAX_BODY:,})"  # on every command
        else:
            text = message.body.decode("utf-8", "replace")
        kept = bodies.get(message.service)
        if kept is not None:
            trusted = (
                read_trust(settings.without_announcements())[0] if trusted is None else trusted
            )
            held = _authentic(message.service, kept, trusted, now)
            sent = _authentic(message.service, text, trusted, now)
            if held is not None and (sent is None or sent < held):
                if sent is None and (why := _why_refused(message.service, text, trusted, now)):
                    ignored[message.service] = why  # someone forges it: told while it holds
                continue
        ignored.pop(message.service, None)
        if text:
            trusted = (
                read_trust(settings.without_announcements())[0] if trusted is None else trusted
            )
            bodies[message.service] = _kept(message.service, text, trusted, now)
        else:
            bodies.pop(message.service, None)
    stale = [service for service, text in bodies.items() if _stale(text, now)]
    stale += _untold(bodies)
    for service in stale:
        del bodies[service]
    if received or stale:
        _save(state_path, {"position": last, "bodies": bodies, "ignored": ignored})
    return decide(settings, bodies, ignored=ignored)


def _kept(service: str, text: str, trusted: list[Any], now: float) -> str:
    """What is kept of a message: an announcement believed now whole (it expires with its
    time to live); anything else only as when it came and why it is refused, never its
    body: the cache is read on every command, junk has no time to expire with, and a
    flood of refused announcements (unsigned, say) was kept and read whole on every
    command until theirs ran out. Trust given later takes the service's next heartbeat
    (a worker sends one every third of its time to live)."""
    if text.startswith(_REFUSED):
        return text
    why = _why_refused(service, text, trusted, now)
    if not why and _timed(text) is not None:
        return text
    return f"{_REFUSED}{now!r} {(why or 'not an announcement')[:MAX_REASON]}"


def _untold(bodies: Mapping[str, str]) -> list[str]:
    """The services whose refusals are past the newest ``MAX_REFUSALS``: dropped unsaid."""
    refusals = [(text, service) for service, text in bodies.items() if text.startswith(_REFUSED)]
    if len(refusals) <= MAX_REFUSALS:
        return []
    refusals.sort(key=lambda pair: _float(pair[0][len(_REFUSED) :].partition(" ")[0]) or 0.0)
    return [service for _, service in refusals[: len(refusals) - MAX_REFUSALS]]


def _timed(text: str) -> float | None:
    """When an announcement ``text`` expires (its ``at`` + ``ttl``), or None: no time."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict):
        return None
    at, ttl = _seconds(body.get("at")), _seconds(body.get("ttl"))
    return None if at is None or ttl is None else at + ttl


def _stale(text: str, now: float) -> bool:
    """Kept past its use: an announcement expired (a message replayed older than it would
    be expired too), a refusal told for JUNK_SECONDS, or a kept form this version does
    not write (a state file of an older toolctl)."""
    if text.startswith(_REFUSED):
        came = _seconds(_float(text[len(_REFUSED) :].partition(" ")[0]))
        return came is None or came + JUNK_SECONDS < now
    if text.startswith("\x00"):
        return True
    expires = _timed(text)
    return expires is None or expires < now


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _why_refused(service: str, text: str, trusted: list[Any], now: float) -> str:
    """Why ``text`` would be refused on its own ("" when it merely expired or stopped)."""
    try:
        _decide(service, text, trusted, now)
    except Refused as exc:
        return str(exc)
    except (RecursionError, ValueError, TypeError, ArithmeticError):
        return "malformed"
    return ""


def _authentic(service: str, text: str, trusted: list[Any], now: float) -> float | None:
    """The time ``text`` was sent, when it is an announcement (or the stop) of ``service``
    signed by a key trusted for it, verified, not expired; else None."""
    if not text or text.startswith(_REFUSED):
        return None
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict) or body.get("service") != service:
        return None
    at, ttl = _seconds(body.get("at")), _seconds(body.get("ttl"))
    key, signature = body.get("key"), body.get("signature")
    if at is None or ttl is None or at + ttl < now or at > now + AHEAD:
        return None
    if not isinstance(key, str) or not isinstance(signature, str):
        return None
    if not any(t.key == key and t.allows(service) for t in trusted):
        return None
    return at if _verifies(key, signature, body) else None


def position(settings: Settings) -> str | None:
    """Where the last read ended (a follower starts there)."""
    found = _load(_state_file(settings, "state")).get("position")
    return found if isinstance(found, str) else None


def decide(
    settings: Settings,
    bodies: Mapping[str, str | None],
    now: float | None = None,
    *,
    ignored: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Decide every announcement (see the module docstring), write the accepted ones into
    the announcements' directory, and keep the refusals for `check`; the refusals.
    ``ignored``: why a message was dropped that would have replaced a trusted announcement
    still held (forged, tampered, signed by another key), told while that one stands."""
    from toolctl.registry.index import Registry
    from toolctl.registry.trust import read_trust

    now = time.time() if now is None else now
    files = settings.without_announcements()
    registry = Registry.open(files)
    trusted, _ = read_trust(files)
    believed: dict[str, tuple[list[dict[str, Any]], bytes, Origin]] = {}
    refused: list[Finding] = []
    for service in sorted(bodies):
        text = bodies[service]
        if text is None:
            continue
        try:
            tables, origin = _decide(service, text, trusted, now)
            _refuse_names(tables, registry)
            _refuse_queues(tables, registry)
            believed[service] = (tables, _toml(service, tables, settings.announced_dir), origin)
        except RecursionError:
            message = f"service '{service}': nested deeper than {MAX_DEPTH} levels"
            refused.append(Finding("warning", CODE, WHERE, 1, message))
        except Refused as exc:
            if str(exc):
                refused.append(Finding("warning", CODE, WHERE, 1, f"service '{service}': {exc}"))
        except (ValueError, TypeError, ArithmeticError) as exc:  # a body no check foresaw
            message = f"service '{service}': malformed ({type(exc).__name__})"
            refused.append(Finding("warning", CODE, WHERE, 1, message))
    accepted: dict[str, tuple[bytes, Origin]] = {}
    claims = _claims({service: tables for service, (tables, _, _) in believed.items()})
    for service, (tables, data, origin) in believed.items():
        contested = _contested(service, tables, claims)
        if contested:
            refused.append(Finding("warning", CODE, WHERE, 1, f"service '{service}': {contested}"))
        else:
            accepted[service] = (data, origin)
    for service, why in sorted((ignored or {}).items()):
        if service in accepted:
            message = (
                f"service '{service}': a message ignored, its trusted announcement kept: {why}"
            )
            refused.append(Finding("warning", CODE, WHERE, 1, message))
    _write(settings, accepted)
    _save(_state_file(settings, "refused"), [list(f) for f in refused])
    return refused


class Refused(Exception):
    """Why an announcement is not believed (empty: it expired, nothing to say)."""


def _decide(
    service: str, text: str, trusted: list[Any], now: float
) -> tuple[list[dict[str, Any]], Origin]:
    """The tables of one announcement and who sent it, or Refused naming why."""
    import re

    from toolctl.names import NAME_PATTERN
    from toolctl.pulsar.announcements import content_hash

    if not re.fullmatch(NAME_PATTERN, service):
        raise Refused("sent under a key that is not a valid service name")
    if text.startswith(_REFUSED):
        raise Refused(text[len(_REFUSED) :].partition(" ")[2])
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        raise Refused("not JSON (or nested too deeply)") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise Refused(f"not a {FORMAT} message")
    if body.get("service") != service:
        raise Refused(
            f"sent under the key of service '{service}' but names '{body.get('service')}'"
        )
    at, ttl = _seconds(body.get("at")), _seconds(body.get("ttl"))
    if at is None or ttl is None:
        raise Refused("no time or time to live (seconds, 0 to 10^11)")
    if ttl > MAX_TTL:
        raise Refused(f"a time to live above {MAX_TTL:.0f} s, the most a worker gives")
    if at + ttl < now:
        raise Refused("")  # expired: its worker stopped heart-beating
    if at > now + AHEAD:
        raise Refused(
            f"sent {at - now:,.0f} s ahead of this clock: its host's clock is wrong "
            "(keep hosts' clocks in step, NTP)"
        )
    for field in ("host", "identity"):
        if not _one_line(body.get(field, "?")):
            raise Refused(f"its {field} is not one line of printable text (at most 256)")
    key, signature = body.get("key"), body.get("signature")
    anyone = any(t.key == ANY and t.allows(service) for t in trusted)  # the opt-in
    signed = isinstance(key, str) and isinstance(signature, str)
    if not signed and not anyone:
        raise Refused("unsigned; workers sign with `worker --announce --key FILE`")
    if signed and not _verifies(str(key), str(signature), body):
        raise Refused(f"signature does not verify with key {key}: forged or tampered")
    items = body.get("items")
    if not isinstance(items, list) or content_hash(items) != body.get("hash"):
        raise Refused("content hash does not match its items: tampered")
    if body.get("stopped") is True:
        raise Refused("")  # its worker stopped cleanly: gone at once, silently
    keyed = [t for t in trusted if t.key == key]
    if signed and not anyone and not keyed:
        raise Refused(f"signed by untrusted key {key}; `toolctl trust add KEY --services PATTERN`")
    if signed and not anyone and not any(t.allows(service) for t in keyed):
        patterns = ", ".join(sorted({t.services for t in keyed}))
        raise Refused(f"key {key} may announce only services matching {patterns}")
    origin = Origin(
        service, str(body.get("host") or "?"), at, str(body.get("identity") or "?"),
        str(body.get("hash")), key if signed else None, at + ttl,
    )  # fmt: skip
    return _tables(service, items, body.get("descriptors", {})), origin


def _seconds(value: Any) -> float | None:
    """A time or time to live as sent: a finite number of seconds from 0 to 10^11 (JSON
    holds integers of any size, and NaN, which would never expire), else None."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if 0 <= seconds <= 1e11 else None  # (NaN fails both tests)


def _one_line(value: Any) -> bool:
    """Text that may stand on one line of a terminal or in a `#` comment (`adopt`)."""
    return isinstance(value, str) and len(value) <= 256 and value.isprintable()


def _verifies(key: str, signature: str, body: dict[str, Any]) -> bool:
    """Whether ``signature`` by ``key`` covers ``body``; a body whose text cannot even be
    put in canonical form (a lone surrogate) verifies nothing."""
    from toolctl.pulsar.announcements import signed_part
    from toolctl.signing import verify

    try:
        signed = signed_part(body)
    # UnicodeEncodeError is a ValueError; a body nested just short of what json.loads
    # takes is too deep for json.dumps a few frames further down: it crashed every
    # command reading the topic (exit 70), and for good, the read position never saved
    except (ValueError, TypeError, RecursionError):
        return False
    return verify(key, signature, signed)


def _tables(service: str, items: list[Any], descriptors: Any) -> list[dict[str, Any]]:
    """TrustGraph config items as toolctl tables: the service first, then its tools, with
    what ``descriptors`` adds to each (checked with the rest when the file is made)."""
    from toolctl.pulsar.announcements import DESCRIPTOR_FIELDS

    if not isinstance(descriptors, dict) or not all(
        isinstance(v, dict) for v in descriptors.values()
    ):
        raise Refused("its descriptors are not a table of tables")
    services, tools = [], []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("value"), dict):
            raise Refused("an item is not {key, value}")
        kind, _, name = str(item.get("key")).partition("/")
        value = item["value"]
        if kind == "tool-service" and name == service == value.get("id"):
            services.append(_service_table(value))
        elif kind == "tool" and value.get("service") == service and name == value.get("name"):
            added = descriptors.get(name, {})
            tools.append(
                _tool_table(value) | {k: added[k] for k in DESCRIPTOR_FIELDS if k in added}
            )
        else:
            key = str(item.get("key"))
            raise Refused(f"item {key!r} is not this service's or one of its tools")
    if len(services) != 1:
        raise Refused(f"no tool-service/{service} item")
    unknown = sorted(set(descriptors) - {table["name"] for table in tools})
    if unknown:
        raise Refused(f"its descriptors name {unknown[0]!r}, which it does not announce")
    return services + tools


def _service_table(value: dict[str, Any]) -> dict[str, Any]:
    pulsar = {
        "request_queue": value.get("request-queue"),
        "response_queue": value.get("response-queue"),
        "config_params": value.get("config-params") or [],
    }
    table = {"name": value["id"], "pulsar": pulsar}
    if value.get("description"):
        table["description"] = value["description"]
    return table


TOOL_FIELDS = ("type", "name", "description", "service", "arguments")


def _tool_table(value: dict[str, Any]) -> dict[str, Any]:
    table: dict[str, Any] = {
        "name": value["name"],
        "description": value.get("description") or "",
        "service": value["service"],
        "arguments": value.get("arguments") or [],
    }
    config = {k: v for k, v in value.items() if k not in TOOL_FIELDS}
    if config:
        table["config"] = config
    return table


def _refuse_names(tables: list[dict[str, Any]], registry: Any) -> None:
    """Refused when a file defines a name the announcement uses, or one a reader could
    mistake for it. Quietly when files define the whole announcement as it is (it was
    adopted: `toolctl adopt`, then `register`)."""
    if _adopted(tables, registry):
        raise Refused("")
    for kind, name in _names(tables):
        held = registry.definitions(kind, name)
        if held:
            where = f"{held[0].file}:{held[0].line}"
            raise Refused(f"{kind} '{name}' is defined by a file ({where}); a file always wins")
        holder = registry.confusable_with(kind, name)
        if holder is not None:
            raise Refused(
                f"{kind} '{name}' is confusable with '{holder.name}' "
                f"({holder.file}:{holder.line}): a look-alike, quarantined"
            )


def _refuse_queues(tables: list[dict[str, Any]], registry: Any) -> None:
    """Refused when the announced service sends on a queue of a service a file defines: a
    key trusted for `lab-*` steered the reader's calls, with config of its choosing, into
    that service's workers (a pattern bounds the names a key announces, not the queues)."""
    from toolctl.models.service_sections import pulsar_topic

    pulsar = tables[0].get("pulsar") if tables else None
    if not isinstance(pulsar, dict):
        return
    mine: dict[str, str] = {}
    for key in ("request_queue", "response_queue"):
        try:
            mine[pulsar_topic(str(pulsar.get(key)))] = key
        except ValueError:
            continue  # malformed: refused where the tables are checked
    for definition in registry.winners("service"):
        theirs = definition.data.get("pulsar")
        if not isinstance(theirs, dict):
            continue
        for key in ("request_queue", "response_queue"):
            if theirs.get(key) in mine:
                raise Refused(
                    f"its {mine[theirs[key]].replace('_', ' ')} {theirs[key]} is that of "
                    f"service '{definition.name}' ({definition.file}:{definition.line}): an "
                    "announcement never sends to a service a file defines"
                )


def _names(tables: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(kind, name) of an announcement's tables: its service, then its tools."""
    return [("service" if index == 0 else "tool", t["name"]) for index, t in enumerate(tables)]


def _claims(announced: Mapping[str, list[dict[str, Any]]]) -> dict[tuple[str, str], set[str]]:
    """The services whose announcements use each (kind, folded name)."""
    claims: dict[tuple[str, str], set[str]] = {}
    for service, tables in announced.items():
        for kind, name in _names(tables):
            claims.setdefault((kind, fold(name)), set()).add(service)
    return claims


def _contested(
    service: str, tables: list[dict[str, Any]], claims: Mapping[tuple[str, str], set[str]]
) -> str | None:
    """Why the announcement of ``service`` is refused for a name another announcement
    uses too (or a look-alike of it), or None. Such a name goes to neither: announcements
    have no order to trust (a time or a name sorts as its sender chooses), so any rule
    for a winner would let one key take a name from another's service."""
    for kind, name in _names(tables):
        others = sorted(claims[(kind, fold(name))] - {service})
        if others:
            return (
                f"{kind} '{name}' (or a look-alike) is announced by service '{others[0]}' too; "
                "a name two announcements claim is given to neither"
            )
    return None


def _adopted(tables: list[dict[str, Any]], registry: Any) -> bool:
    """Whether the definitions in force of every name the announcement uses are what it
    announces (a file holds each; the same descriptor, once normalised)."""
    from toolctl.registry.loader import parse_document

    kinds = ["service", *["tool"] * (len(tables) - 1)]
    held = [
        registry.definitions(kind, table["name"]) for kind, table in zip(kinds, tables, strict=True)
    ]
    if not all(held):
        return False
    document = {"service": tables[:1], **({"tool": tables[1:]} if tables[1:] else {})}
    parsed = parse_document(_without_none(document), "", "announced.toml")
    if parsed.problems or len(parsed.definitions) != len(tables):
        return False
    announced = {(d.kind, d.name): _given(d.data) for d in parsed.definitions}
    return all(announced.get((d[0].kind, d[0].name)) == _given(d[0].data) for d in held)


def _given(data: Mapping[str, Any]) -> dict[str, Any]:
    """A definition's data less what the index derives (a tool's runtime, from its service)."""
    return {key: value for key, value in data.items() if key != "runtime"}


def _toml(service: str, tables: list[dict[str, Any]], directory: Path | None) -> bytes:
    """The file an accepted announcement is kept as; Refused when it would not load
    (checked when it differs from the file kept: a heartbeat costs no validation)."""
    from toolctl.registry.dumping import registry_toml
    from toolctl.registry.loader import parse_document

    document = {"service": tables[:1], **({"tool": tables[1:]} if tables[1:] else {})}
    try:
        text = registry_toml(_without_none(document))
    except (TypeError, ValueError) as exc:
        raise Refused(f"a value TOML cannot hold: {exc}") from None
    try:
        if directory is not None and (directory / f"{service}.toml").read_text() == text:
            return text.encode()
    except (OSError, UnicodeDecodeError):
        pass
    import tomllib

    parsed = parse_document(tomllib.loads(text), text, f"{service}.toml")
    if parsed.problems:
        raise Refused(f"not a valid descriptor: {parsed.problems[0].message}")
    return text.encode()


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value if v is not None]
    return value


def _write(settings: Settings, accepted: dict[str, tuple[bytes, Origin]]) -> None:
    """The accepted announcements as files (rewritten only when they change, so the index
    cache stays valid), the rest removed; and who announced each."""
    directory = settings.announced_dir
    assert directory is not None
    directory.mkdir(parents=True, exist_ok=True)
    wanted = {f"{service}.toml": data for service, (data, _) in accepted.items()}
    for entry in os.scandir(directory):
        if entry.name.endswith(".toml") and entry.name not in wanted:
            os.unlink(entry.path)
    for name, data in wanted.items():
        path = directory / name
        try:
            if path.read_bytes() == data:
                continue
        except OSError:
            pass
        temporary = directory / f".{name}.{os.getpid()}.tmp"
        temporary.write_bytes(data)
        os.replace(temporary, path)
    origins = {s: origin._asdict() for s, (_, origin) in accepted.items()}
    if origins != _load(_state_file(settings, "origins")):
        _save(_state_file(settings, "origins"), origins)


def origin_of(settings: Settings, file: str) -> Origin | None:
    """Who announced the definition in ``file``, or None for a registry file."""
    directory = settings.announced_dir
    if directory is None or Path(file).parent != directory:
        return None
    found = _load(_state_file(settings, "origins")).get(Path(file).stem)
    try:
        return Origin(**found) if isinstance(found, dict) else None
    except TypeError:  # written by another version: no origin rather than a crash
        return None


def next_expiry(settings: Settings) -> float | None:
    """When the first kept announcement expires (None: none is kept)."""
    found = _load(_state_file(settings, "origins")).values()
    times = [o["expires"] for o in found if isinstance(o, dict) and "expires" in o]
    return min(times) if times else None


def findings(settings: Settings) -> list[Finding]:
    """The refusals of the last read (what `check` reports)."""
    if settings.announced is None:
        return []
    try:
        kept = json.loads(_state_file(settings, "refused").read_bytes())
        return [Finding(*f) for f in kept]
    except (OSError, ValueError, TypeError):
        return []
