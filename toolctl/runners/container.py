"""The container runtime: a tool runs in a docker or podman container driven through its CLI.

Each call is one ``<engine> run --rm --name toolctl-<tool>-<id> --pull never`` with no
network, a read-only root and the descriptor's limits; the arguments go as JSON on stdin.
The container's name is unique, so a timeout or Ctrl-C can kill and remove exactly it: the
command inside runs as PID 1 and ignores SIGTERM, and killing the client alone would leave
the container running. Secrets (``${env:NAME}`` values) never reach the engine's argv:
they travel in the engine process's environment and are named with ``-e NAME`` only.
The engine process gets what every process toolctl starts inherits
(``descriptor_env.INHERITED``) and the variables docker and podman read themselves
(``CONTAINERS_CONF``, ``DOCKER_HOST``, ``DBUS_SESSION_BUS_ADDRESS`` for rootless podman's
cgroups, ...), so they apply as on the command line; never the rest of the caller's
environment (a shell's API keys), as the engine is a program a config file may name.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolctl.errors import (
    Interrupted,
    RegistryError,
    TimedOut,
    TransportUnavailable,
    UsageError,
    interruption,
)
from toolctl.runners.argv import render_argv
from toolctl.runners.base import Call, ToolResult, ToolSpec, expand_env, expand_env_map
from toolctl.runners.process import Children, Completed, run_process
from toolctl.settings import Settings

ENGINES = ("docker", "podman")
"""Auto-detection order: the first whose CLI reaches a working engine wins."""
PROBE_TIMEOUT = 5.0
REMOVE_TIMEOUT = 30.0
INSTALL_HINT = "install podman or docker, or set TOOLCTL_CONTAINER_ENGINE to one that works"
_ENGINE_ERROR = ("Error:", "Error response from daemon", "docker:")
_ENGINE_LINES = (*_ENGINE_ERROR, "Run 'docker run --help'", "See 'docker run --help'")
"""What the engine prints when it cannot start a container: its error, and docker's line
pointing at its help after it (held and dropped with the error, which toolctl tells)."""
MISSING_IMAGE = ("image not known", "No such image", "not found locally", "manifest unknown")
_ENGINE_VARIABLES = ("CONTAINER", "DOCKER_", "PODMAN_", "XDG_", "LD_", "REGISTRY_AUTH")
"""Prefixes of variables docker or podman read, which a secret must not be named."""
ABANDON_TIMEOUT = 5.0
"""Seconds a second signal waits for the engine to remove the containers in flight."""
ENGINE_PASSED = (
    "CONTAINER*", "DOCKER_*", "PODMAN_*", "BUILDAH_*", "STORAGE_*", "REGISTRY_AUTH_FILE",
    "DBUS_SESSION_BUS_ADDRESS", "XDG_*", "SSH_AUTH_SOCK", "SSH_AGENT_PID",
)  # fmt: skip
"""What the engine process gets of the caller's environment beyond what every process
toolctl starts inherits: the variables docker and podman read (not ``LD_*``), and the
ssh agent a remote engine is reached through (``DOCKER_HOST=ssh://...``)."""
_NO_DAEMON = ("Cannot connect to the Docker daemon", "Is the docker daemon running")


@dataclass(frozen=True)
class Engine:
    """A container engine CLI: which kind it is and the executable that drives it."""

    kind: str
    path: str

    def remove_argv(self, *names: str) -> list[str]:
        """Kill and remove containers at once; a missing one is not an error."""
        if self.kind == "podman":
            return [self.path, "rm", "--force", "--time", "0", *names]
        return [self.path, "rm", "--force", *names]


@dataclass(frozen=True)
class Invocation:
    """One ``<engine> run``: its argv, the engine process's environment, the container name."""

    argv: list[str]
    env: dict[str, str]
    name: str


class ContainerRunner:
    """Runs ``[tool.container]`` tools with ``<engine> run``; finds the engine once per runner."""

    runtime = "container"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._detected: Engine | None = None
        self._lock = threading.Lock()
        self._children = Children()
        self._containers: dict[str, Engine] = {}  # running now: removed by close()

    def describe(self, call: Call) -> dict[str, Any]:
        tool, arguments = call.tool, call.arguments
        section = tool.data["container"]
        engine = self.engine_for(section)
        invocation = self._invocation(tool, arguments, engine)
        return {
            "transport": self.runtime,
            "engine": engine.kind,
            "image": section["image"],
            "argv": invocation.argv,
            "stdin": "arguments as JSON" if section["input"] == "json" else "none",
            "env": expand_env_map(section["env"], self.settings, mask=True),
            "network": section["network"],
            "timeout": call.timeout,
        }

    def run(self, call: Call) -> ToolResult:
        tool, arguments, sink = call.tool, call.arguments, call.sink
        section = tool.data["container"]
        engine = self.engine_for(section)
        invocation = self._invocation(tool, arguments, engine, call.traceparent)
        stdin = json.dumps(arguments).encode() if section["input"] == "json" else None
        waiting = sink.waiting(f"running '{tool.name}' in a {engine.kind} container")
        stderr = _EngineLines(_after(waiting.stop, sink.stderr))
        output = _after(waiting.stop, sink.output)
        with self._lock:
            self._containers[invocation.name] = engine
        try:
            with waiting:
                done = run_process(
                    invocation.argv,
                    stdin=stdin,
                    env=invocation.env,
                    cwd=None,
                    timeout=call.timeout,
                    stream=None if output is None else stderr.before(output),
                    on_stderr=stderr.write if sink.stderr is not None else None,
                    children=self._children,
                    max_output=call.max_output,
                )
            stderr.end(engine_failed=_engine_complaint(done) is not None)
        except TimedOut as exc:
            gone = self._remove(engine, invocation.name)
            raise TimedOut(
                f"tool '{tool.name}' ran past its {call.timeout:g} s timeout; {gone}"
            ) from exc
        except Interrupted as exc:
            gone = self._remove(engine, invocation.name)
            raise interruption(exc, f"interrupted; {gone}") from exc
        except BaseException:  # its output's reader gone (141), a full disk (74), ...
            self._remove(engine, invocation.name)  # the tool "is ended then", its container too
            raise
        finally:
            stderr.end(engine_failed=False)  # (a second end does nothing)
            with self._lock:
                self._containers.pop(invocation.name, None)
        return self._result(tool, section, engine, done)

    def abandon(self) -> None:
        """A second signal: remove the containers in flight now (``Abandoning``), before
        their engine clients and conmon are SIGKILLed with the rest of toolctl's tree,
        which would leave them running with nothing left to remove them. (No lock: it runs
        in a signal handler, maybe on the thread that holds it.)"""
        for engine, names in _by_engine(_copied(self._containers)).items():
            self._remove(engine, *names, attempts=1, timeout=ABANDON_TIMEOUT)  # "at once"

    def close(self) -> None:
        """End the calls in flight: kill their engine clients, remove their containers."""
        with self._lock:  # before the kill: a call whose client is killed forgets its name
            running = dict(self._containers)
        self._children.close()
        with self._lock:
            running.update(self._containers)
            self._containers = {}
        for engine, names in _by_engine(running).items():
            self._remove(engine, *names)

    def engine_for(self, section: Mapping[str, Any]) -> Engine:
        """The descriptor's engine, else TOOLCTL_CONTAINER_ENGINE, else the first that answers."""
        if section.get("engine"):
            return _named(section["engine"], "the tool's engine", self.settings)
        wanted = self.settings.container_engine
        if wanted and wanted != "auto":
            told = self.settings.environ.get("TOOLCTL_CONTAINER_ENGINE")
            origin = "TOOLCTL_CONTAINER_ENGINE" if told else "defaults.container_engine"
            return _named(wanted, origin, self.settings)
        with self._lock:
            if self._detected is None:
                self._detected = detect_engine(self.settings)
            return self._detected

    def _invocation(
        self,
        tool: ToolSpec,
        arguments: dict[str, Any],
        engine: Engine,
        traceparent: str | None = None,
    ) -> Invocation:
        section = tool.data["container"]
        name = f"toolctl-{tool.name[:40]}-{uuid.uuid4().hex[:8]}"
        argv = [engine.path, "run", "--rm", "--name", name, "--pull", "never"]
        argv.append(f"--network={section['network']}")  # = : never read as an option
        if engine.kind == "podman":  # it passes the caller's proxies (and their passwords) in
            argv.append("--http-proxy=false")  # unless told: a descriptor's env names them
        if section["read_only"]:
            argv.append("--read-only")
            if engine.kind == "docker":  # podman mounts a writable /tmp by itself
                argv += ["--tmpfs", "/tmp"]
        if section.get("memory"):
            argv.append(f"--memory={section['memory']}")
        if section.get("cpus"):
            argv += ["--cpus", format(section["cpus"], "g")]
        if section["input"] == "json":
            argv.append("-i")
        env = engine_environment(self.settings)
        for key, value in section["env"].items():
            if "${env:" in value:  # a secret: its value rides in the engine's environment
                _check_secret_name(tool, key)
                env[key] = expand_env(value, self.settings)
                argv += ["-e", key]
            else:
                argv += ["-e", f"{key}={value}"]
        if traceparent:
            argv += ["-e", f"TRACEPARENT={traceparent}"]
        declared = frozenset(tool.data["schema"].get("properties", {}))
        allowed = frozenset(tool.data.get("allow_option", ()))
        command = render_argv(section["command"], arguments, declared, allowed)
        if section["image"].startswith("-"):  # a descriptor read before the model said no
            raise RegistryError(f"tool '{tool.name}': image must not start with '-'")
        argv += [section["image"], *command]
        return Invocation(argv, env, name)

    def _remove(
        self, engine: Engine, *names: str, attempts: int = 2, timeout: float = REMOVE_TIMEOUT
    ) -> str:
        """Kill and remove containers; says what became of them, for the error message."""
        name = " ".join(names)
        for attempt in range(attempts):
            try:
                removed = subprocess.run(
                    engine.remove_argv(*names),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=engine_environment(self.settings),
                    timeout=timeout,
                    check=False,
                )
                if removed.returncode == 0:
                    return f"container {name} was killed and removed"
            except (OSError, subprocess.TimeoutExpired):
                pass
            if attempt + 1 < attempts:
                time.sleep(0.2 * (attempt + 1))
        return f"container {name} could not be removed: run '{engine.kind} rm -f {name}'"

    def _result(
        self, tool: ToolSpec, section: Mapping[str, Any], engine: Engine, done: Completed
    ) -> ToolResult:
        if done.returncode == 0:
            return ToolResult.from_answer(
                done.stdout,
                runtime=self.runtime,
                exit_code=0,
                duration_ms=done.duration_ms,
                truncated=done.dropped,
            )
        complaint = _engine_complaint(done)
        if complaint is not None:
            _raise_unavailable(tool, section["image"], engine, complaint)
        last = _last_line(done.stderr_tail)
        reason = f"exit status {done.returncode}"
        if done.returncode == 126:
            reason += f": the command cannot be run in image {section['image']}"
        elif done.returncode == 127:
            reason += f": the command was not found in image {section['image']}"
        elif done.returncode == 137:
            limit = f" (memory limit {section['memory']})" if section.get("memory") else ""
            reason += f": the container was killed, out of memory?{limit}"
        if last:
            reason += f" ({last})" if done.returncode in (126, 127) else f": {last}"
        return done.failure(reason, self.runtime)


def detect_engine(settings: Settings) -> Engine:
    """The first of docker, podman whose CLI reaches a working engine (probed in parallel).

    ``version --format {{.Server.Version}}`` fails fast when docker's daemon is down, where
    ``--version`` would answer anyway.
    """
    found = [Engine(kind, path) for kind in ENGINES if (path := _which(kind, settings))]
    if not found:
        raise TransportUnavailable(
            "no container engine: neither docker nor podman is on PATH", hint=INSTALL_HINT
        )
    probes = [(engine, _probe(engine, settings)) for engine in found]
    deadline = time.monotonic() + PROBE_TIMEOUT
    try:
        for engine, probe in probes:
            try:
                if probe.wait(timeout=max(0.0, deadline - time.monotonic())) == 0:
                    return engine
            except subprocess.TimeoutExpired:
                continue
    finally:
        for _, probe in probes:
            if probe.poll() is None:
                probe.kill()
                probe.wait()
    tried = " and ".join(engine.kind for engine in found)
    raise TransportUnavailable(
        f"no container engine answers: {tried} did not reach a working engine",
        hint=f"start the docker daemon, {INSTALL_HINT}",
    )


def _by_engine(containers: Mapping[str, Engine]) -> dict[Engine, list[str]]:
    """Container names grouped by their engine: one `rm -f` each."""
    grouped: dict[Engine, list[str]] = {}
    for name, engine in containers.items():
        grouped.setdefault(engine, []).append(name)
    return grouped


def _copied(containers: dict[str, Engine]) -> dict[str, Engine]:
    """A copy of a dict another thread may change meanwhile (no lock can be taken)."""
    for _ in range(100):
        with contextlib.suppress(RuntimeError):  # "dictionary changed size during iteration"
            return dict(containers)
    return {}


def _probe(engine: Engine, settings: Settings) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [engine.path, "version", "--format", "{{.Server.Version}}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=engine_environment(settings),
    )


def engine_environment(settings: Settings) -> dict[str, str]:
    """The engine process's environment (see the module docstring); a secret passed to the
    container is added to it by name."""
    from toolctl.descriptor_env import child_environment

    return child_environment(settings.environ, {}, ENGINE_PASSED)


def _named(value: str, origin: str, settings: Settings) -> Engine:
    """An engine chosen by name or path; it must be docker or podman and on PATH."""
    kind = next((k for k in ENGINES if os.path.basename(value).startswith(k)), None)
    if kind is None:
        raise UsageError(
            f"{origin} is '{value}': expected docker, podman (or a path to one) or auto",
            hint="or leave it unset to use the first that answers",
        )
    path = _which(value, settings)
    if path is None:
        raise TransportUnavailable(
            f"container engine '{value}' ({origin}) not found", hint=INSTALL_HINT
        )
    return Engine(kind, path)


def _which(command: str, settings: Settings) -> str | None:
    return shutil.which(command, path=settings.environ.get("PATH", os.defpath))


def _raise_unavailable(tool: ToolSpec, image: str, engine: Engine, message: str) -> None:
    """The engine could not start the container: say why and what to do."""
    if any(marker in message for marker in MISSING_IMAGE):
        raise TransportUnavailable(
            f"image '{image}' of tool '{tool.name}' is not available to {engine.kind}",
            hint=f"pull, build or import it first (toolctl never pulls), e.g. "
            f"'{engine.kind} pull {image}' (the README's sample image: scripts/setup-podman.sh "
            "in toolctl's repository)",
        )
    if any(marker in message for marker in _NO_DAEMON):
        raise TransportUnavailable(
            f"{engine.kind} cannot reach its daemon: {message}",
            hint="start the docker daemon, or set TOOLCTL_CONTAINER_ENGINE=podman",
        )
    hint = f"check [tool.container] of tool '{tool.name}' in {tool.source}"
    if "rlimit" in message:
        hint = (
            "Debian's podman needs CONTAINERS_CONF naming a containers.conf that says "
            '[containers] default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"] and '
            '[engine] runtime = "runc" (scripts/setup-podman.sh in toolctl\'s repository '
            "writes one); export it"
        )
    raise TransportUnavailable(
        f"{engine.kind} could not start the container of tool '{tool.name}': {message}",
        hint=hint,
    )


def _check_secret_name(tool: ToolSpec, key: str) -> None:
    """A secret travels in the engine's own environment: it must not rename what it reads."""
    if key in ("PATH", "HOME", "TMPDIR") or key.startswith(_ENGINE_VARIABLES):
        raise UsageError(
            f"tool '{tool.name}': env {key} holds a secret, but the container engine reads "
            f"{key} itself",
            hint=f"pass the secret under another name (see {tool.source})",
        )


def _engine_complaint(done: Completed) -> str | None:
    """The engine's own error when it failed before the container ran, else None.

    The container's exit status passes through, so 125 alone proves nothing: the engine
    also printed an error line of its own and the tool printed nothing. A 126 is the
    engine's only when it could not set up the process (rlimits); otherwise 126 and 127
    mean the tool's command cannot run in the image, which is the tool failing.
    """
    if done.stdout or done.returncode not in (125, 126):
        return None
    lines = [line.strip() for line in done.stderr_tail.splitlines()]
    complaints = [line for line in lines if line.startswith(_ENGINE_ERROR)]
    if not complaints or (done.returncode == 126 and "rlimit" not in complaints[-1]):
        return None
    message = complaints[-1]
    for prefix in ("docker: ", "Error: "):
        message = message.removeprefix(prefix)
    return message


class _EngineLines:
    """The container's stderr passed on as it comes, but for the engine's own error lines
    (``Error: ...`` when it cannot start the container, such as a missing image): held
    while they are all the stderr there is and nothing came on stdout, then dropped when
    the run ends in that engine error (toolctl's own line says it, once), else passed on."""

    def __init__(self, then: Callable[[str], None] | None) -> None:
        self.then, self.held, self.passing = then, "", then is None

    def write(self, text: str) -> None:
        if self.passing:
            if self.then is not None:
                self.then(text)
            return
        self.held += text
        *lines, rest = self.held.split("\n")
        complete = [line for line in lines if line.strip()]
        if any(not line.lstrip().startswith(_ENGINE_LINES) for line in complete) or not (
            rest.lstrip().startswith(_ENGINE_LINES) or _may_become_engine_error(rest.lstrip())
        ):
            self._release()

    def before(self, then: Callable[[str], None]) -> Callable[[str], None]:
        """``then`` (stdout), releasing what is held first: the container runs."""

        def call(text: str) -> None:
            self._release()
            then(text)

        return call

    def end(self, *, engine_failed: bool) -> None:
        if engine_failed:
            self.held = ""
        self._release()

    def _release(self) -> None:
        held, self.held, self.passing = self.held, "", True
        if held and self.then is not None:
            self.then(held)


def _may_become_engine_error(start: str) -> bool:
    """Whether ``start`` may still become an engine error line (it is short so far)."""
    return any(prefix.startswith(start) for prefix in _ENGINE_LINES)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _after(
    first: Callable[[], None], then: Callable[[str], None] | None
) -> Callable[[str], None] | None:
    """``then`` preceded by ``first`` (taking the spinner down before output is written)."""
    if then is None:
        return None

    def call(text: str) -> None:
        first()
        then(text)

    return call
