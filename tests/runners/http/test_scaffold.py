"""`toolctl new tool --runtime http` runs as written against a real endpoint."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Toolctl
from tests.runners.http.fixture_server import FixtureServer


def test_an_http_scaffold_posts_its_arguments(
    tmp_path: Path, toolctl: Toolctl, http_server: FixtureServer
) -> None:
    assert toolctl("new", "tool", "hello", "--runtime", "http").returncode == 0
    descriptor = tmp_path / "hello.toml"
    text = descriptor.read_text()
    descriptor.write_text(text.replace("http://127.0.0.1:8000/hello", f"{http_server.url}/echo"))
    assert toolctl("register", "hello.toml").returncode == 0
    done = toolctl("run", "hello", "--arg", "who=http", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"] == {"method": "POST", "arguments": {"who": "http"}}
