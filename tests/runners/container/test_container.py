"""`toolctl run` of container tools under a real podman, with the busybox test image.

Each podman run costs 150-350 ms, so every test runs at most one or two containers.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import tomllib
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, Toolctl, write_files

IMAGE = "localhost/toolctl-busybox:latest"

REGISTRY = f"""
[[tool]]
name = "ct-echo"
[tool.container]
image = "{IMAGE}"
command = ["cat"]
[[tool.arguments]]
name = "text"

[[tool]]
name = "ct-argv"
[tool.container]
image = "{IMAGE}"
command = ["printf", "%s|%s\\\\n", "{{text}}", "x{{n}}y"]
input = "none"
[[tool.arguments]]
name = "text"
[[tool.arguments]]
name = "n"
type = "integer"

[[tool]]
name = "ct-fail"
[tool.container]
image = "{IMAGE}"
command = ["sh", "-c", "echo partial; echo 'boom: disk on fire' >&2; exit 3"]
input = "none"

[[tool]]
name = "ct-missing-command"
[tool.container]
image = "{IMAGE}"
command = ["no-such-command"]
input = "none"

[[tool]]
name = "ct-missing-image"
[tool.container]
image = "localhost/toolctl-no-such-image:latest"
input = "none"

[[tool]]
name = "ct-sleepy"
timeout = 1
[tool.container]
image = "{IMAGE}"
command = ["sh", "-c", "echo started; sleep 60"]
input = "none"

[[tool]]
name = "ct-says-error"
[tool.container]
image = "{IMAGE}"
command = ["sh", "-c", "echo 'Error: from the tool' >&2; sleep 0.5; echo 'Error: again' >&2; exit 3"]
input = "none"

[[tool]]
name = "ct-slow"
[tool.container]
image = "{IMAGE}"
command = ["sh", "-c", "sleep 1; echo 'a warning' >&2; echo done"]
input = "none"

[[tool]]
name = "ct-secret"
[tool.container]
image = "{IMAGE}"
command = ["sh", "-c", "echo \\"$TOKEN|$PLAIN\\""]
input = "none"
env = {{ TOKEN = "${{env:CT_SECRET}}", PLAIN = "visible" }}

[[tool]]
name = "ct-engine-secret"
[tool.container]
image = "{IMAGE}"
env = {{ DOCKER_HOST = "${{env:CT_SECRET}}" }}

[[tool]]
name = "ct-hog"
[tool.container]
image = "{IMAGE}"
command = ["sh", "-c", "dd if=/dev/zero of=/dev/null bs=100M count=1 && echo survived"]
input = "none"
memory = "16m"

[[tool]]
name = "ct-isolated"
[tool.container]
image = "{IMAGE}"
command = ["nc", "-w", "5", "127.0.0.1", "{{port}}"]
input = "none"  # it never reads stdin: with -i podman 4.3 drops its output 1 run in 20
[[tool.arguments]]
name = "port"
type = "integer"

[[tool]]
name = "ct-host-network"
[tool.container]
image = "{IMAGE}"
command = ["nc", "-w", "5", "127.0.0.1", "{{port}}"]
network = "host"
[[tool.arguments]]
name = "port"
type = "integer"
"""

SECRET = "s3cr3t-value-only-in-env"


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    return write_files(tmp_path / "reg", {"tools.toml": REGISTRY})


@pytest.fixture
def pong_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 answering one connection with b"pong " + what it got."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(30)
    address = listener.getsockname()
    received: list[bytes] = []
    done = threading.Event()

    def serve() -> None:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            if done.is_set():
                return
            connection.settimeout(5)
            data = connection.recv(4096)
            received.append(data)
            connection.sendall(b"pong " + data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield address[1], received
    done.set()
    if thread.is_alive():  # nobody connected: wake accept() so the thread ends now
        with socket.create_connection(address, timeout=5):
            pass
    thread.join(timeout=10)
    listener.close()


def test_json_arguments_arrive_intact(podman: str, toolctl: Toolctl, registry: Path) -> None:
    arguments = {"text": 'naïve "quoted"\n$HOME `id` \\ 😀'}
    done = toolctl("run", "ct-echo", "--args", json.dumps(arguments), "-r", str(registry), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["data"] == arguments
    assert result["success"] is True
    assert result["transport"] == "container"
    assert done.stderr == ""  # piped: no spinner


def test_sample_checksum_tool_matches_a_bare_podman_run(podman: str, toolctl: Toolctl) -> None:
    sample = tomllib.loads((ROOT / "registry" / "container.toml").read_text())
    section = next(t for t in sample["tool"] if t["name"] == "checksum")["container"]
    command = [item.replace("{text}", "hello") for item in section["command"]]
    bare = subprocess.run(
        [podman, "run", "--rm", "--network", "none", section["image"], *command],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bare.returncode == 0, f"the sample tool itself fails in its image: {bare.stderr}"
    done = toolctl("run", "checksum", "--arg", "text=hello", "-r", str(ROOT / "registry"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == bare.stdout == f"{zlib.crc32(b'hello'):08x}\n"  # of the text itself


def test_arguments_are_substituted_literally(podman: str, toolctl: Toolctl, registry: Path) -> None:
    text = "$(touch /tmp/pwned); `id` && echo hi | cat > out; *"
    done = toolctl("run", "ct-argv", "--arg", f"text={text}", "--arg", "n=7", "-r", str(registry))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{text}|x7y\n"


def test_non_zero_exit_fails_with_the_tool_stderr(
    podman: str, toolctl: Toolctl, registry: Path
) -> None:
    done = toolctl("run", "ct-fail", "-r", str(registry))
    assert done.returncode == 1
    assert done.stdout == "partial\n"
    assert "boom: disk on fire" in done.stderr  # passed through as it came
    assert "the tool failed: exit status 3: boom: disk on fire" in done.stderr


def test_command_missing_from_the_image_fails(
    podman: str, toolctl: Toolctl, registry: Path
) -> None:
    done = toolctl("run", "ct-missing-command", "-r", str(registry))
    assert done.returncode == 1
    assert f"exit status 127: the command was not found in image {IMAGE}" in done.stderr


def test_missing_image_is_transport_unavailable(
    podman: str, toolctl: Toolctl, registry: Path
) -> None:
    done = toolctl("run", "ct-missing-image", "-r", str(registry))
    assert done.returncode == 5
    assert (
        "image 'localhost/toolctl-no-such-image:latest' of tool 'ct-missing-image'" in done.stderr
    )
    assert "is not available to podman; pull, build or import it first" in done.stderr
    assert len(done.stderr.splitlines()) == 1  # the engine's own "Error: ..." is not repeated


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker CLI")
def test_docker_without_its_daemon_is_one_line(toolctl: Toolctl, tmp_path: Path) -> None:
    """docker's own error, and its "Run 'docker run --help'" line after it, are held and
    dropped: toolctl's line says it once (they were passed on before it, three lines)."""
    if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0:
        pytest.skip("a docker daemon answers here")
    write_files(tmp_path, {"reg/t.toml": '[[tool]]\nname = "ct"\n[tool.container]\n'
                           'image = "docker.io/library/alpine:3"\ncommand = ["true"]\n'})  # fmt: skip
    done = toolctl("run", "ct", "-r", "reg", env={"TOOLCTL_CONTAINER_ENGINE": "docker"})
    assert (done.returncode, done.stdout) == (5, ""), done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("toolctl: error: docker cannot reach its daemon: ")


def test_podman_without_its_ulimits_says_what_containers_conf_needs(
    podman: str, toolctl: Toolctl, registry: Path, tmp_path: Path
) -> None:
    """Debian's podman with a containers.conf that sets no ulimits fails every run ("error
    setting rlimit type 7"): the hint named scripts/setup-podman.sh alone, which an
    installed toolctl does not have; it says what the file must hold."""
    bare = tmp_path / "bare.conf"
    bare.write_text('[engine]\npull_policy = "never"\n')
    done = toolctl("run", "ct-echo", "-a", "text=x", "-r", str(registry),
                   env={"CONTAINERS_CONF": str(bare)})  # fmt: skip
    if done.returncode == 0:
        pytest.skip("this podman runs without explicit ulimits")
    assert done.returncode == 5 and len(done.stderr.splitlines()) == 1, done.stderr
    assert 'default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]' in done.stderr
    assert '[engine] runtime = "runc"' in done.stderr


def test_a_tools_own_error_lines_are_passed_on(
    podman: str, toolctl: Toolctl, registry: Path
) -> None:
    """Lines like the engine's own ("Error: ...") held back in case the engine failed
    reach stderr once it is clear the tool wrote them."""
    done = toolctl("run", "ct-says-error", "-r", str(registry))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "Error: from the tool",
        "Error: again",
        "toolctl: error: the tool failed: exit status 3: Error: again",
    ]


def test_timeout_kills_and_removes_the_container(
    podman: str, toolctl: Toolctl, registry: Path, leftovers: Callable[[str], list[str]]
) -> None:
    done = toolctl("run", "ct-sleepy", "-r", str(registry))
    assert done.returncode == 124
    assert "tool 'ct-sleepy' ran past its 1 s timeout; container toolctl-ct-sleepy-" in done.stderr
    assert "was killed and removed" in done.stderr
    assert leftovers("toolctl-ct-sleepy-") == []


def test_ctrl_c_kills_and_removes_the_container(
    podman: str, registry: Path, leftovers: Callable[[str], list[str]]
) -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolctl",
            "run",
            "ct-sleepy",
            "--timeout",
            "60",
            "-r",
            str(registry),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "started\n"
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 130
    assert "interrupted; container toolctl-ct-sleepy-" in stderr
    assert leftovers("toolctl-ct-sleepy-") == []


def test_network_none_cannot_reach_the_host(
    podman: str, toolctl: Toolctl, registry: Path, pong_server: tuple[int, list[bytes]]
) -> None:
    port, received = pong_server
    done = toolctl("run", "ct-isolated", "--arg", f"port={port}", "-r", str(registry))
    assert done.returncode == 1
    assert "can't connect" in done.stderr
    assert received == []


def test_network_host_reaches_the_host(
    podman: str, toolctl: Toolctl, registry: Path, pong_server: tuple[int, list[bytes]]
) -> None:
    port, received = pong_server
    done = toolctl("run", "ct-host-network", "--arg", f"port={port}", "-r", str(registry))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f'pong {{"port": {port}}}'  # streamed as it came: no newline
    assert received == [f'{{"port": {port}}}'.encode()]


def test_secret_reaches_the_container_and_never_the_argv(
    podman: str, toolctl: Toolctl, registry: Path
) -> None:
    env = {"CT_SECRET": SECRET}
    done = toolctl("run", "ct-secret", "-r", str(registry), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{SECRET}|visible\n"
    planned = toolctl("run", "ct-secret", "-r", str(registry), "--dry-run", "--json", env=env)
    assert planned.returncode == 0, planned.stderr
    assert SECRET not in planned.stdout
    plan = json.loads(planned.stdout)
    assert plan["env"] == {"TOKEN": "***", "PLAIN": "visible"}
    assert plan["engine"] == "podman" and plan["image"] == IMAGE
    argv = plan["argv"]
    assert argv[argv.index("TOKEN") - 1] == "-e" and "PLAIN=visible" in argv
    assert "--network=none" in argv  # one item: a value never read as an option
    assert "--read-only" in argv and "--rm" in argv and "-i" not in argv


def test_secret_named_like_an_engine_variable_is_refused(
    podman: str, toolctl: Toolctl, registry: Path
) -> None:
    done = toolctl("run", "ct-engine-secret", "-r", str(registry), env={"CT_SECRET": SECRET})
    assert done.returncode == 2
    assert "env DOCKER_HOST holds a secret, but the container engine reads" in done.stderr
    assert SECRET not in done.stderr


def test_memory_limit_kills_a_hog(podman: str, toolctl: Toolctl, registry: Path) -> None:
    done = toolctl("run", "ct-hog", "-r", str(registry))
    assert done.returncode == 1
    assert "survived" not in done.stdout
    assert "exit status 137: the container was killed, out of memory? (memory limit 16m)" in (
        done.stderr
    )


def test_spinner_on_a_terminal_stops_before_output(podman: str, registry: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"TERM": "xterm"}
    controller, terminal = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", "ct-slow", "-r", str(registry)],
        stdout=subprocess.PIPE,
        stderr=terminal,
        env=env,
    )
    os.close(terminal)
    screen = _drain(controller)
    stdout, _ = child.communicate(timeout=30)
    os.close(controller)
    assert child.returncode == 0
    assert stdout == b"done\n"
    shown = screen.decode()
    assert "running 'ct-slow' in a podman container" in shown
    spinner_gone = shown.rindex("\x1b[?25h")  # rich shows the cursor again when it stops
    assert shown.index("a warning") > spinner_gone


def _drain(controller: int) -> bytes:
    """Everything written to the terminal until its last writer closes it (bounded)."""
    screen = b""
    while select.select([controller], [], [], 30)[0]:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    return screen


def test_auto_detection_picks_an_engine_that_answers(
    podman: str, toolctl: Toolctl, registry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLCTL_CONTAINER_ENGINE")
    done = toolctl("run", "ct-echo", "--arg", "text=x", "-r", str(registry), "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    docker = (
        subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            timeout=10,
        )
        if _on_path("docker")
        else None
    )
    expected = "docker" if docker is not None and docker.returncode == 0 else "podman"
    assert json.loads(done.stdout)["engine"] == expected


def _on_path(command: str) -> bool:
    import shutil

    return shutil.which(command) is not None


def test_no_engine_on_path_is_transport_unavailable(
    toolctl: Toolctl, registry: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLCTL_CONTAINER_ENGINE")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    done = toolctl(
        "run", "ct-echo", "--arg", "text=x", "-r", str(registry), env={"PATH": str(empty)}
    )
    assert done.returncode == 5
    assert "no container engine: neither docker nor podman is on PATH" in done.stderr
    assert "install podman or docker, or set TOOLCTL_CONTAINER_ENGINE" in done.stderr


def test_named_engine_missing_is_transport_unavailable(toolctl: Toolctl, registry: Path) -> None:
    env = {"TOOLCTL_CONTAINER_ENGINE": "/nonexistent/podman"}
    done = toolctl("run", "ct-echo", "--arg", "text=x", "-r", str(registry), env=env)
    assert done.returncode == 5
    assert "container engine '/nonexistent/podman' (TOOLCTL_CONTAINER_ENGINE) not found" in (
        done.stderr
    )


def test_a_container_tool_gets_the_calls_traceparent(
    podman: str, toolctl: Toolctl, tmp_path: Path
) -> None:
    write_files(
        tmp_path / "tp",
        {
            "t.toml": f"""
            [[tool]]
            name = "ct-traced"
            [tool.container]
            image = "{IMAGE}"
            command = ["sh", "-c", "echo $TRACEPARENT"]
            input = "none"
            """
        },
    )
    done = toolctl("run", "ct-traced", "-r", str(tmp_path / "tp"))
    assert done.returncode == 0, done.stderr
    (call,) = json.loads(toolctl("history", "--json").stdout)["calls"]
    assert done.stdout == f"00-{call['trace_id']}-{call['span_id']}-01\n"


def test_the_engine_gets_what_it_reads_and_the_secrets_passed_never_the_rest(
    podman: str, toolctl: Toolctl, registry: Path, tmp_path: Path
) -> None:
    """The engine process (podman, behind a wrapper that writes down its environment and
    runs it) gets CONTAINERS_CONF and the secret a container is given, by name; a
    variable of the caller's shell nobody passes (an API key) never reaches it."""
    seen = tmp_path / "engine-env"
    wrapper = tmp_path / "bin" / "podman"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nenv > "{seen}"\nexec "{podman}" "$@"\n')
    wrapper.chmod(0o755)
    env = {"CT_SECRET": SECRET, "SHELL_API_KEY": "sk-shell-only-123456",
           "SSH_AUTH_SOCK": "/tmp/agent.sock",  # a remote engine is reached through it
           "TOOLCTL_CONTAINER_ENGINE": str(wrapper)}  # fmt: skip
    done = toolctl("run", "ct-secret", "-r", str(registry), env=env)
    assert (done.returncode, done.stdout) == (0, f"{SECRET}|visible\n"), done.stderr
    names = {line.partition("=")[0] for line in seen.read_text().splitlines()}
    assert {"TOKEN", "PATH", "HOME", "SSH_AUTH_SOCK"} <= names and "CONTAINERS_CONF" in names
    assert "SHELL_API_KEY" not in names and "CT_SECRET" not in names


def test_a_project_names_its_engine_but_never_a_path(toolctl: Toolctl, tmp_path: Path) -> None:
    """A checkout's toolctl.toml that points the engine at a program of its own (which
    would run, with the secrets of the user's own container tools, whenever they run
    there) is refused in one line, exit 2; a name (looked up on the user's PATH) is fine."""
    project = tmp_path / "checkout"
    (project / "registry").mkdir(parents=True)
    for engine in ("bin/podman", "./podman", "/opt/x/podman", "../podman"):
        (project / "toolctl.toml").write_text(f'[defaults]\ncontainer_engine = "{engine}"\n')
        done = toolctl("list", cwd=project)
        assert done.returncode == 2, (engine, done.stderr)
        assert (
            "defaults.container_engine must be a name (podman or docker), not a path"
            in (done.stderr)
            and done.stderr.count("\n") == 1
        )
    (project / "toolctl.toml").write_text('[defaults]\ncontainer_engine = "podman"\n')
    assert toolctl("list", cwd=project).returncode == 0


def test_an_engine_toolctl_does_not_know_is_refused_when_read(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """`container_engine = "dockr"` in a project or in config.toml is exit 2 for any
    command (it passed `list`, and failed only when a container tool ran); a path in
    config.toml (the user's own) and "auto" are fine."""
    project = tmp_path / "checkout"
    (project / "registry").mkdir(parents=True)
    (project / "toolctl.toml").write_text('[defaults]\ncontainer_engine = "dockr"\n')
    done = toolctl("list", cwd=project)
    assert (done.returncode, done.stderr.count("\n")) == (2, 1), done.stderr
    assert "defaults.container_engine is 'dockr': expected podman, docker or auto" in done.stderr
    (project / "toolctl.toml").write_text('[defaults]\ncontainer_engine = "auto"\n')
    assert toolctl("list", cwd=project).returncode == 0
    config = tmp_path / "config"
    (config / "toolctl").mkdir(parents=True)
    env = {"XDG_CONFIG_HOME": str(config)}
    for engine, code in (("podmn", 2), ("/usr/local/bin/podman", 0)):
        (config / "toolctl/config.toml").write_text(f'[defaults]\ncontainer_engine = "{engine}"\n')
        assert toolctl("list", cwd=tmp_path, env=env).returncode == code, engine


def test_the_callers_proxy_is_not_passed_into_the_container(
    podman: str, toolctl: Toolctl, tmp_path: Path
) -> None:
    """podman passes the caller's proxy variables into a container unless told not to, a
    proxy's password with them; toolctl tells it not to (a descriptor's env names one)."""
    write_files(
        tmp_path / "px",
        {
            "t.toml": f'[[tool]]\nname = "ct-env"\n[tool.container]\nimage = "{IMAGE}"\n'
            'command = ["env"]\ninput = "none"\n'
        },
    )
    proxy = "http://user:proxypass@127.0.0.1:3128"
    done = toolctl("run", "ct-env", "-r", str(tmp_path / "px"), env={"http_proxy": proxy})
    assert done.returncode == 0, done.stderr
    assert "proxypass" not in done.stdout and "http_proxy" not in done.stdout.lower()
