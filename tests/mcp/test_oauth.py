"""OAuth without a login: a server that answers 401 makes a run exit 5 naming
`toolctl mcp login`, and `check --live` says so; what a login keeps is 0600 and never
printed; step-up (a 403 insufficient_scope) is exit 5 naming the login and the scope, and
a login never loops on it. (The login is run against the conformance suite's
authorization servers in tests/mcp/test_conformance.py too.)"""

from __future__ import annotations

import contextlib
import io
import json
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
import tomli_w

from tests.conftest import Toolctl
from toolctl.mcp.oauth import Kept, token_file
from toolctl.settings import Settings


class _Protected(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer resource_metadata="http://127.0.0.1/x"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler], **attributes: Any) -> Iterator[Any]:
    """A server of a subclass of ``handler`` with ``attributes`` (each test its own state)
    on 127.0.0.1, for the block; yields that subclass, its ``base`` the server's URL."""
    made: Any = type(handler.__name__, (handler,), attributes)
    server = ThreadingHTTPServer(("127.0.0.1", 0), made)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    made.base = f"http://127.0.0.1:{server.server_address[1]!s}"
    made.url = f"{made.base}/mcp"
    try:
        yield made
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def protected() -> Iterator[str]:
    with serving(_Protected) as server:
        yield server.url


def registry(root: Path, url: str, oauth: dict[str, str] | None = None) -> Path:
    mcp: dict[str, Any] = {"url": url, **({"oauth": oauth} if oauth else {})}
    document = {
        "service": [{"name": "saas", "mcp": mcp}],
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


@pytest.mark.parametrize(
    "kept",
    ['{"tokens": "x"}', '{"tokens": [1]}', '{"tokens": {"access_token": "a\\ud800"}}',
     '{"tokens": {"access_token": "two words"}}', '{"client": "x", "tokens": {"x": 1}}'],
)  # fmt: skip
def test_a_damaged_token_file_is_no_login(tmp_path: Path, kept: str) -> None:
    """A kept file whose tokens are not an object (`{"tokens": "x"}`), or whose access
    token no header can carry, made `run` exit 70: it is taken as no login."""
    import anyio

    from toolctl.mcp.oauth import bearer

    settings = Settings.load(environ={"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path)})
    path = token_file(settings, "saas")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(kept)
    assert bearer(settings, "saas") is None
    stored = Kept(path)
    assert anyio.run(stored.get_client_info) is None
    if "access_token" not in kept:  # no tokens the SDK can take either
        assert anyio.run(stored.get_tokens) is None


class _Scoped(BaseHTTPRequestHandler):
    """An MCP server and its authorization server (client credentials) in one: initialize
    is open, tools/list wants scope "read", tools/call "read write" (403
    insufficient_scope: step-up); with ``never``, tools/list always wants more."""

    base: str
    """http://127.0.0.1:PORT"""
    url: str
    """The MCP endpoint."""
    granted: dict[str, str]
    token_requests: list[dict[str, list[str]]]
    never = False

    def _json(self, status: int, body: object, **headers: str) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        base = self.base
        if self.path == "/.well-known/oauth-protected-resource/mcp":
            self._json(200, {"resource": f"{base}/mcp", "authorization_servers": [base]})
        elif self.path == "/.well-known/oauth-authorization-server":
            metadata = {"issuer": base, "token_endpoint": f"{base}/token",
                        "authorization_endpoint": f"{base}/authorize"}  # fmt: skip
            self._json(200, {**metadata, "response_types_supported": ["code"]})
        else:
            self._json(405 if self.path == "/mcp" else 404, {})

    def do_DELETE(self) -> None:
        self._json(200, {})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/token":
            form = parse_qs(body.decode())
            type(self).token_requests.append(form)
            token = f"S3CR3T-{len(type(self).token_requests)}"
            scope = form.get("scope", [""])[0]
            type(self).granted[token] = scope
            self._json(200, {"access_token": token, "token_type": "Bearer", "scope": scope})
            return
        message = json.loads(body)
        method = message.get("method", "")
        if method == "initialize":
            info = {"name": "scoped", "version": "1"}
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}}
            self._json(200, {"jsonrpc": "2.0", "id": message["id"],
                             "result": {**result, "serverInfo": info}})  # fmt: skip
            return
        if method.startswith("notifications/"):
            self._json(202, {})
            return
        base = self.base
        where = f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        if token not in type(self).granted:
            self._json(401, {}, WWW_Authenticate=f'Bearer scope="read", {where}')
            return
        needed = {"read", "write"} if method == "tools/call" else {"read"}
        if type(self).never or not needed <= set(type(self).granted[token].split()):
            asked = "admin" if type(self).never else " ".join(sorted(needed))
            challenge = f'Bearer error="insufficient_scope", scope="{asked}", {where}'
            self._json(403, {}, WWW_Authenticate=challenge)
            return
        answer: dict[str, Any] = {"content": [{"type": "text", "text": "written"}]}
        if method == "tools/list":
            answer = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        self._json(200, {"jsonrpc": "2.0", "id": message["id"], "result": answer})

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def scoped() -> Iterator[type[_Scoped]]:
    with serving(_Scoped, granted={}, token_requests=[]) as server:
        yield server


def test_a_login_kept_at_the_doubled_path_is_moved_and_used(
    toolctl: Toolctl, tmp_path: Path, scoped: Any
) -> None:
    """A login earlier builds kept under the doubled ``toolctl/toolctl/oauth`` still serves a
    run; the first read moves it to ``toolctl/oauth`` (owner-only still) and leaves no
    doubled directory behind."""
    reg = registry(tmp_path, scoped.url)
    state = Settings.load([reg]).state_dir
    old, new = state / "toolctl/oauth/saas.json", state / "oauth/saas.json"
    Kept(old).write(tokens={"access_token": "t1", "token_type": "Bearer"})
    scoped.granted["t1"] = "read write"
    done = toolctl("run", "saas.echo", "-r", str(reg))
    assert (done.returncode, done.stdout.strip()) == (0, "written"), done.stderr
    assert not (state / "toolctl").exists()
    assert stat.S_IMODE(new.stat().st_mode) == 0o600
    assert json.loads(new.read_text())["tokens"]["access_token"] == "t1"
    assert token_file(Settings.load([reg]), "saas") == new


CI = {"grant": "client_credentials", "client_id": "ci", "client_secret": "shh"}


def test_step_up_is_exit_5_naming_the_login_and_the_scope_it_asks_for(
    toolctl: Toolctl, tmp_path: Path, scoped: Any
) -> None:
    """A 403 insufficient_scope during a run: exit 5, one line naming `toolctl mcp login`
    and the union of the scopes; the next login asks for that union, and the run works."""
    reg = registry(tmp_path, scoped.url, CI)
    first = toolctl("mcp", "login", "saas", "-r", str(reg))
    assert first.returncode == 0, first.stderr
    assert scoped.token_requests[-1]["scope"] == ["read"]  # what the 401 named
    ran = toolctl("run", "saas.echo", "-r", str(reg))
    assert ran.returncode == 5
    assert [line for line in ran.stderr.splitlines() if "error" in line] == [
        "toolctl: error: MCP service 'saas' needs a login with scope 'read write';"
        " run 'toolctl mcp login saas'"
    ]  # (and the warning that the tool has no pin)
    again = toolctl("mcp", "login", "saas", "-r", str(reg), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {"login": True, "service": "saas", "scope": "read write"}
    assert scoped.token_requests[-1]["scope"] == ["read write"]
    done = toolctl("run", "saas.echo", "-r", str(reg))
    assert (done.returncode, done.stdout.strip()) == (0, "written"), done.stderr
    said = first.stdout + first.stderr + ran.stdout + again.stdout + again.stderr + done.stdout
    assert "S3CR3T" not in said


def test_a_scope_that_is_never_enough_stops_the_login_in_one_line(
    toolctl: Toolctl, tmp_path: Path, scoped: Any
) -> None:
    """A server that answers 403 insufficient_scope whatever is granted: the login asks
    again a bounded number of times (1 + STEP_UPS), then exit 5 with one line."""
    from toolctl.mcp.oauth_flow import STEP_UPS

    scoped.never = True
    reg = registry(tmp_path, scoped.url, CI)
    login = toolctl("mcp", "login", "saas", "-r", str(reg))
    assert login.returncode == 5
    assert login.stderr.strip().splitlines() == [
        "toolctl: error: login to MCP service 'saas' failed: the server still wants more"
        " scope than it granted (asked for 'read admin')"
    ]
    assert len(scoped.token_requests) == 1 + STEP_UPS


def test_a_login_without_an_issuer_names_the_one_to_pin(
    toolctl: Toolctl, tmp_path: Path, scoped: Any
) -> None:
    """A client secret with no ``issuer``: the login works and warns, in one line naming
    the key (never its value) and the issuer to add; with that issuer, no warning."""
    reg = registry(tmp_path, scoped.url, CI)
    login = toolctl("mcp", "login", "saas", "-r", str(reg))
    assert login.returncode == 0, login.stderr
    warned = [line for line in login.stderr.splitlines() if "warning" in line]
    assert warned == [
        "toolctl: warning: service 'saas': [service.mcp.oauth] names no issuer, so its"
        " client_secret goes to whichever authorization server the MCP server names; add"
        f' issuer = "{scoped.base}/" to send it there only'
    ]
    assert "shh" not in login.stdout + login.stderr
    (tmp_path / "pinned").mkdir()
    pinned = registry(tmp_path / "pinned", scoped.url, {**CI, "issuer": scoped.base})
    again = toolctl("mcp", "login", "saas", "-r", str(pinned))
    assert again.returncode == 0, again.stderr
    assert "warning" not in again.stderr
    assert len(scoped.token_requests) == 2


@pytest.mark.parametrize("grant", ["client_credentials", "browser"])
def test_an_authorization_server_other_than_the_issuer_gets_nothing(
    toolctl: Toolctl, tmp_path: Path, scoped: Any, grant: str
) -> None:
    """``issuer`` set: a server naming another authorization server ends the login, exit 5
    in one line, before the secret is sent or a browser is opened (no token request)."""
    elsewhere = "http://127.0.0.1:9/"
    oauth = {**CI, "issuer": elsewhere}
    if grant == "browser":
        oauth = {"client_id": "ci", "client_secret": "shh", "issuer": elsewhere}
    reg = registry(tmp_path, scoped.url, oauth)
    login = toolctl("mcp", "login", "saas", "--no-browser", "-r", str(reg))
    assert login.returncode == 5
    assert login.stderr.strip().splitlines() == [
        "toolctl: error: login to MCP service 'saas' failed: the server's authorization"
        f" server is {scoped.base}/, not the issuer configured ({elsewhere}); nothing was"
        " sent to it"
    ]
    assert scoped.token_requests == []


KEY = "-----BEGIN PRIVATE KEY-----\nS3CR3T-KEY\n-----END PRIVATE KEY-----\n"
HOSTILE_OAUTH = [
    ({"issuer": "not-a-url"}, "issuer in [service.mcp.oauth] must be an http(s) URL"),
    ({"issuer": ""}, "issuer in [service.mcp.oauth] must be an http(s) URL"),
    ({"issuer": "ftp://auth.example"}, "issuer in [service.mcp.oauth] must be an http(s) URL"),
    ({"issuer": "https//x"}, "issuer in [service.mcp.oauth] must be an http(s) URL"),
    (
        {"grant": "bogus"},
        "grant in [service.mcp.oauth] must be one of: client_credentials, id_jag",
    ),
    (
        {"token_endpoint_auth_method": "zzz"},
        "token_endpoint_auth_method in [service.mcp.oauth] must be one of: none,"
        " client_secret_post, client_secret_basic, private_key_jwt",
    ),
    (
        {"client_metadata_url": "zzz"},
        "client_metadata_url in [service.mcp.oauth] must be an https URL with a path",
    ),
    (
        {"client_metadata_url": "https://example.com/"},
        "client_metadata_url in [service.mcp.oauth] must be an https URL with a path",
    ),
    (
        {"grant": "id_jag", "client_id": "c", "idp_token_endpoint": "no url", "idp_id_token": "t"},
        "idp_token_endpoint in [service.mcp.oauth] must be an http(s) URL",
    ),
    (
        {"grant": "client_credentials", "client_id": "c", "private_key_pem": KEY},
        "private_key_pem in [service.mcp.oauth] cannot sign with ES256: not a PEM private key"
        " of that kind",
    ),
    (
        {"client_id": "c", "private_key_pem": KEY, "signing_algorithm": "HS256"},
        "signing_algorithm in [service.mcp.oauth] must be one of: ES256, ES384, ES512, RS256,"
        " RS384, RS512, PS256, PS384, PS512, EdDSA",
    ),
]


@pytest.mark.parametrize(("oauth", "said"), HOSTILE_OAUTH)
def test_oauth_settings_a_login_cannot_use_are_a_usage_error(
    toolctl: Toolctl, tmp_path: Path, protected: str, oauth: dict[str, str], said: str
) -> None:
    """Hostile or mistyped [service.mcp.oauth] values: exit 2, one line naming the key and
    what it may be, before any request; never a traceback, never the value."""
    reg = registry(tmp_path, protected, {**oauth, "client_secret": "shh"})
    login = toolctl("mcp", "login", "saas", "--no-browser", "-r", str(reg))
    assert (login.returncode, login.stderr.strip().splitlines()) == (2, [f"toolctl: error: {said}"])
    assert "S3CR3T" not in login.stderr and "shh" not in login.stderr


def test_a_private_key_that_signs_passes_the_check(
    toolctl: Toolctl, tmp_path: Path, protected: str
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    oauth = {"grant": "client_credentials", "client_id": "c", "private_key_pem": pem.decode()}
    login = toolctl("mcp", "login", "saas", "-r", str(registry(tmp_path, protected, oauth)))
    assert login.returncode == 5, login.stderr  # checked, then the server's metadata is bad
    assert "PRIVATE KEY" not in login.stderr


def test_an_id_jag_login_without_its_identity_provider_is_a_usage_error(
    toolctl: Toolctl, tmp_path: Path, protected: str
) -> None:
    """grant = "id_jag" (SEP-990) names what it lacks, in one line, before any request."""
    reg = registry(tmp_path, protected, {"grant": "id_jag", "client_id": "c"})
    login = toolctl("mcp", "login", "saas", "-r", str(reg))
    assert (login.returncode, login.stderr.strip().splitlines()) == (2, [
        'toolctl: error: grant = "id_jag" needs idp_token_endpoint, idp_id_token in'
        " [service.mcp.oauth]"
    ])  # fmt: skip


@pytest.mark.parametrize(
    "body", ["[1]", "{}", '{"result": 3}', '{"result": []}', "[" * 100_000, "not json", ""]
)
def test_a_hostile_initialize_answer_during_a_login_is_not_a_crash(body: str) -> None:
    """What a server answers to the login's initialize is whatever it likes: an answer
    that is not an initialize result falls back to the newest revision we speak."""
    import httpx

    from toolctl.mcp.oauth_flow import _version

    assert _version(httpx.Response(200, text=body)) == _version(httpx.Response(200, text=""))


class _Refreshing(_Scoped):
    """The MCP server takes only the bearer token "fresh"; its token endpoint answers a
    refresh with ``answer``."""

    answer: bytes = b""

    def do_POST(self) -> None:
        if self.path == "/token":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = type(self).answer
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.headers.get("Authorization") != "Bearer fresh":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._json(401, {}, WWW_Authenticate='Bearer scope="read"')
            return
        type(self).granted["fresh"] = "read write"
        super().do_POST()


def keep_tokens(reg: Path, server: Any, access_token: str) -> None:
    """What a login would have left: ``access_token`` and a refresh token for ``server``."""
    Kept(token_file(Settings.load([reg]), "saas")).write(
        tokens={"access_token": access_token, "token_type": "Bearer", "refresh_token": "r"},
        token_endpoint=f"{server.base}/token",
        client={"client_id": "c"},
    )


FRESH = json.dumps({"access_token": "fresh", "token_type": "Bearer"}).encode()


@pytest.mark.parametrize(
    "answer",
    [
        FRESH,
        b"[" * 100_000,
        json.dumps({"access_token": ["S3CR3T"], "token_type": "Bearer"}).encode(),
        json.dumps({"access_token": "S3CR3T\r\nX-Injected: 1", "token_type": "Bearer"}).encode(),
        json.dumps({"access_token": "", "token_type": "Bearer"}).encode(),
        b"not json S3CR3T",
    ],
)
def test_a_run_refreshes_an_expired_token_once_and_a_hostile_answer_is_a_login(
    toolctl: Toolctl, tmp_path: Path, answer: bytes
) -> None:
    """A 401 with the kept token: the refresh token is traded once, then the run goes on;
    a token endpoint answering something no header can carry is exit 5 naming the login
    (a deeply nested answer was exit 70), never the answer."""
    with serving(_Refreshing, granted={}, token_requests=[], answer=answer) as server:
        reg = registry(tmp_path, server.url)
        keep_tokens(reg, server, "stale")
        done = toolctl("run", "saas.echo", "-r", str(reg))
    if answer == FRESH:
        assert (done.returncode, done.stdout.strip()) == (0, "written"), done.stderr
        return
    assert done.returncode == 5
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == [
        "toolctl: error: MCP service 'saas' needs a login (the kept one was refused);"
        " run 'toolctl mcp login saas'"
    ], done.stderr
    assert "S3CR3T" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    "answer",
    [
        {"access_token": ["S3CR3T"], "token_type": "Bearer"},
        {"access_token": "a", "token_type": "Bearer", "refresh_token": {"S3CR3T": 1}},
        {"access_token": "a", "token_type": "Bearer", "expires_in": "S3CR3T"},
    ],
)
def test_a_login_never_shows_what_a_token_endpoint_answered(
    toolctl: Toolctl, tmp_path: Path, answer: dict[str, object]
) -> None:
    """The SDK's validation error quotes the value it was given (pydantic's input_value):
    the login's one line leaves it out."""
    body = json.dumps(answer).encode()
    with serving(_Refreshing, granted={}, token_requests=[], answer=body) as server:
        login = toolctl("mcp", "login", "saas", "-r", str(registry(tmp_path, server.url, CI)))
    assert login.returncode == 5
    assert login.stderr.startswith("toolctl: error: login to MCP service 'saas' failed: Invalid")
    assert len(login.stderr.splitlines()) == 1
    assert "S3CR3T" not in login.stdout + login.stderr


class _Expiring(_Scoped):
    """The kept token "t1" opens the session, then expires at the first tools/call (401);
    the token endpoint trades the refresh token for "t2" (accepted unless ``refuse_new``)."""

    refuse_new = False

    def do_POST(self) -> None:
        if self.path == "/token":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            type(self).token_requests.append({})
            if not type(self).refuse_new:
                type(self).granted["t2"] = "read write"
            self._json(200, {"access_token": "t2", "token_type": "Bearer", "expires_in": 60})
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if b'"tools/call"' in body and self.headers.get("Authorization") == "Bearer t1":
            type(self).granted.pop("t1", None)  # expired, mid-session
        self.rfile = io.BytesIO(body)
        super().do_POST()


@pytest.mark.parametrize("refuse_new", [False, True])
def test_a_token_that_expires_mid_session_is_refreshed_and_the_call_sent_again(
    toolctl: Toolctl, tmp_path: Path, refuse_new: bool
) -> None:
    """A long-lived session outlives its token: the 401 on the call is answered by one
    refresh and the call, which the server never ran, is sent again in a new session."""
    granted = {"t1": "read write"}
    with serving(_Expiring, granted=granted, token_requests=[], refuse_new=refuse_new) as server:
        reg = registry(tmp_path, server.url)
        keep_tokens(reg, server, "t1")
        done = toolctl("run", "saas.echo", "-r", str(reg))
        requests = len(server.token_requests)
    if refuse_new:
        assert done.returncode == 5
        assert [line for line in done.stderr.splitlines() if "error" in line] == [
            "toolctl: error: MCP service 'saas' needs a login (a refreshed token was refused"
            " too); run 'toolctl mcp login saas'"
        ]
        return
    assert (done.returncode, done.stdout.strip()) == (0, "written"), done.stderr
    assert requests == 1


class _ExpiringPrompts(_Expiring):
    """As _Expiring, with prompts: "t1" expires at the first prompts/get instead."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.path == "/token":
            self.rfile = io.BytesIO(body)
            return super().do_POST()
        message = json.loads(body)
        method = message.get("method")
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        if method == "prompts/get" and token == "t1":
            type(self).granted.pop("t1", None)  # expired, mid-session
        if method in ("prompts/list", "prompts/get") and token in type(self).granted:
            answer: dict[str, Any] = {"prompts": [{"name": "greet"}]}
            if method == "prompts/get":
                text = {"type": "text", "text": f"hello with {token}"}
                answer = {"messages": [{"role": "user", "content": text}]}
            return self._json(200, {"jsonrpc": "2.0", "id": message["id"], "result": answer})
        if method == "initialize":
            info = {"name": "prompting", "version": "1"}
            capabilities: dict[str, Any] = {"tools": {}, "prompts": {}}
            result = {"protocolVersion": "2025-06-18", "capabilities": capabilities}
            return self._json(
                200,
                {"jsonrpc": "2.0", "id": message["id"], "result": {**result, "serverInfo": info}},
            )
        self.rfile = io.BytesIO(body)
        return super().do_POST()


def test_a_gateway_prompt_whose_token_expired_is_refreshed_and_sent_again(
    tmp_path: Path,
) -> None:
    """What a door forwards besides calls (a prompt, a read, a listing) goes over the
    calls' session: the 401 of an expired token is one refresh and the request again, in
    a new session, as for a call (it failed with "needs a login" until the next call)."""
    import anyio

    from tests.serve.mcp_clients import stdio_session

    async def get_twice(reg: Path) -> list[str]:
        async with stdio_session(reg) as session:
            names = [p.name for p in (await session.list_prompts()).prompts]
            first = await session.get_prompt("greet")
            second = await session.get_prompt("greet")
            texts = [m.content.text for m in (*first.messages, *second.messages)]  # type: ignore[union-attr]
            return [*names, *texts]

    with serving(_ExpiringPrompts, granted={"t1": "read write"}, token_requests=[]) as server:
        reg = registry(tmp_path, server.url)
        keep_tokens(reg, server, "t1")
        got = anyio.run(get_twice, reg)
        assert got == ["greet", "hello with t2", "hello with t2"]
        assert len(server.token_requests) == 1


def test_a_login_to_a_server_that_asks_for_none_says_so(
    toolctl: Toolctl, tmp_path: Path, probe_url: str
) -> None:
    """A server that answers without asking for a login: "logged in" (exit 0) was said,
    with a warning about where the client secret would go, and nothing was granted."""
    reg = registry(tmp_path, probe_url, CI)
    done = toolctl("mcp", "login", "saas", "-r", str(reg))
    assert done.returncode == 0, done.stderr
    assert done.stderr == "toolctl: MCP service 'saas' asks for no login: nothing to do\n"
    as_json = toolctl("mcp", "login", "saas", "-r", str(reg), "--json")
    assert json.loads(as_json.stdout) == {"login": False, "service": "saas", "scope": None}
