"""`toolctl new tool --runtime container` runs as written, once its image is present."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Toolctl
from tests.runners.container.conftest import IMAGE


def test_a_container_scaffold_runs_on_a_local_image(
    tmp_path: Path, toolctl: Toolctl, podman: str
) -> None:
    assert toolctl("new", "tool", "ct-hello", "--runtime", "container").returncode == 0
    descriptor = tmp_path / "ct-hello.toml"
    text = descriptor.read_text()
    assert 'image = "docker.io/library/busybox:latest"' in text
    # the sample image stands in for busybox (the tests never pull)
    descriptor.write_text(text.replace("docker.io/library/busybox:latest", IMAGE))
    assert toolctl("check", "--strict", "ct-hello.toml").returncode == 0
    assert toolctl("register", "ct-hello.toml").returncode == 0
    done = toolctl("run", "ct-hello", "--arg", "who=container")
    assert (done.returncode, done.stdout) == (0, "Hello, container!\n"), done.stderr
