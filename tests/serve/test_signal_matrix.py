"""The rest of the signal matrix (issue #24): every stopping signal a terminal or supervisor
sends, to `serve` and `mcp serve`, with a call in flight that started a container or left
grandchildren in sessions of their own; nothing is left and the exit code is documented.
(TERM and HUP of `serve` with grandchildren, `mcp serve` with grandchildren and stdin
closed are in test_signals.py.)"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.runners.container.conftest import leftovers, podman, use_podman
from tests.runners.test_lifetimes import gone
from tests.serve.serve_support import StartServe, wait_for
from tests.serve.test_signals import (
    STOPPING,
    call,
    container_registry,
    ended,
    mcp_serve,
    post_spawner,
    spawning_registry,
    started,
)

__all__ = ["leftovers", "podman", "use_podman"]  # the container tests' fixtures, used here

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

SERVE_CODES: dict[int, int] = {
    signal.SIGTERM: 0,
    signal.SIGINT: 130,
    signal.SIGHUP: 129,
    signal.SIGQUIT: 131,
}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGQUIT], ids=["INT", "QUIT"])
def test_serve_stopped_by_int_or_quit_leaves_no_grandchild(
    serve: StartServe, tmp_path: Path, signum: int
) -> None:
    registry, marks = spawning_registry(tmp_path)
    served = serve("--grace", "1", "--registry", str(registry))
    threading.Thread(target=post_spawner, args=(served.url, []), daemon=True).start()
    assert started(marks)
    code = served.stop(signum, timeout=60)
    assert code == SERVE_CODES[signum], served.log.read_text()
    # Ctrl-C asks the server to stop: said in a note, as the broker and a worker say it;
    # SIGQUIT is told as the error it is
    last = served.log.read_text().splitlines()[-1]
    assert last == (
        "toolctl: server stopped" if signum == signal.SIGINT else "toolctl: error: quit"
    )
    assert "Traceback" not in served.log.read_text()
    assert gone(marks) == []


@pytest.mark.parametrize("signum", list(SERVE_CODES), ids=["TERM", "INT", "HUP", "QUIT"])
def test_serve_stopped_by_a_signal_leaves_no_container(
    podman: str,
    serve: StartServe,
    tmp_path: Path,
    leftovers: Callable[[str], list[str]],
    signum: int,
) -> None:
    registry, name = container_registry(tmp_path)
    served = serve("--grace", "1", "--registry", str(registry))

    def post() -> None:
        import contextlib

        import httpx

        with contextlib.suppress(httpx.HTTPError):
            httpx.post(f"{served.url}/run_tool", json={"tool_id": name}, timeout=90)

    threading.Thread(target=post, daemon=True).start()
    assert wait_for(lambda: leftovers(f"toolctl-{name}-") != [], seconds=60)
    assert served.stop(signum, timeout=90) == SERVE_CODES[signum], served.log.read_text()
    assert leftovers(f"toolctl-{name}-") == []


@pytest.mark.parametrize(("signum", "code"), STOPPING[2:])
def test_mcp_serve_stopped_by_hup_or_quit_leaves_no_container(
    podman: str,
    tmp_path: Path,
    leftovers: Callable[[str], list[str]],
    signum: int,
    code: int,
) -> None:
    registry, name = container_registry(tmp_path)
    child = mcp_serve(registry)
    call(child, name)
    if not wait_for(lambda: leftovers(f"toolctl-{name}-") != [], seconds=60):
        child.kill()  # what the server said, to tell why its container never started
        pytest.fail(f"no container started; the server said: {ended(child)[1][-2000:]}")
    child.send_signal(signum)
    returncode, stderr = ended(child)
    assert returncode == code, stderr
    assert leftovers(f"toolctl-{name}-") == []


def test_mcp_serve_whose_stdin_closes_leaves_no_container(
    podman: str, tmp_path: Path, leftovers: Callable[[str], list[str]]
) -> None:
    registry, name = container_registry(tmp_path)
    child = mcp_serve(registry)
    call(child, name)
    assert wait_for(lambda: leftovers(f"toolctl-{name}-") != [], seconds=60)
    assert child.stdin is not None
    child.stdin.close()
    child.stdin = None
    returncode, stderr = ended(child)
    assert returncode == 0, stderr
    assert leftovers(f"toolctl-{name}-") == []
