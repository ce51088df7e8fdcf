"""OAuth without a login: a server that answers 401 makes a run exit 5 naming
`toolctl mcp login`, and `check --live` says so; what a login keeps is 0600 and never
printed. (The login itself is run against the conformance suite's authorization servers
in tests/mcp/test_conformance.py.)"""

from __future__ import annotations

import json
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from tests.conftest import Toolctl
from toolctl.mcp.oauth import Kept


class _Protected(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer resource_metadata="http://127.0.0.1/x"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def protected() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Protected)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    server.shutdown()
    server.server_close()


def registry(root: Path, url: str) -> Path:
    document = {
        "service": [{"name": "saas", "mcp": {"url": url}}],
        "tool": [{"name": "saas.echo", "service": "saas", "mcp": {"name": "echo"}}],
    }
    (root / "reg").mkdir()
    (root / "reg/s.toml").write_text(tomli_w.dumps(document))
    return root / "reg"


def test_a_missing_login_is_exit_5_naming_the_command(
    toolctl: Toolctl, tmp_path: Path, protected: str
) -> None:
    reg = registry(tmp_path, protected)
    ran = toolctl("run", "saas.echo", "-r", str(reg))
    assert ran.returncode == 5
    assert ran.stderr.strip().splitlines()[-1] == (
        "toolctl: error: MCP service 'saas' needs a login; run 'toolctl mcp login saas'"
    )
    live = toolctl("check", "--live", "-r", str(reg))
    assert (
        "MCP service 'saas' needs a login: run 'toolctl mcp login saas'"
        in live.stdout + live.stderr
    )


def test_kept_tokens_are_owner_only(tmp_path: Path) -> None:
    kept = Kept(tmp_path / "oauth/saas.json")
    kept.write(tokens={"access_token": "S3CR3T", "token_type": "Bearer"})
    assert stat.S_IMODE((tmp_path / "oauth/saas.json").stat().st_mode) == 0o600
    assert (
        json.loads((tmp_path / "oauth/saas.json").read_text())["tokens"]["access_token"] == "S3CR3T"
    )
