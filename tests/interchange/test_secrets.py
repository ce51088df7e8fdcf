"""What `import mcp-config` and `import chat2graph` take for a secret, by name and by shape,
and how each becomes its own variable while the rest of the value stays."""

from __future__ import annotations

import pytest

from toolctl.interchange.secrets import (
    Scope,
    Vault,
    rewrite,
    rewrite_args,
    rewrite_url,
    secret_spans,
)
from toolctl.secret_names import secret_name

NOT_SECRETS = [
    "@modelcontextprotocol/server-github", "@upstash/context7-mcp", "mcp-server-fetch",
    "ghcr.io/github/github-mcp-server", "--local-timezone=America/New_York", "/Users/me/app",
    "GITHUB_PERSONAL_ACCESS_TOKEN", "123e4567-e89b-12d3-a456-426614174000", "mcp/github",
    "server-everything-2025-11-25", "@playwright/mcp@latest", "https://api.githubcopilot.com/mcp/",
    "--project-ref=abcdefghijklmnopqrst", "postgresql://localhost/mydb", "dist/index.js",
    "@browserbasehq/mcp-server-browserbase", "gpt-4o-mini-2024-07-18", "mcp-atlassian==0.11.9",
    "io.github.modelcontextprotocol.servers", "--features=docs,account,database", "us-east-1",
    "1234567890-abcdefg.apps.googleusercontent.com", "sqlite:///data.db",
    "ghcr.io/github/github-mcp-server@sha256:3f9a1c5e6b7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071",
    "sha512:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071f00dfeedbeefcafe0123",
]  # fmt: skip
SECRETS = [
    "sbp_0123456789abcdef0123456789abcdef01234567", "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "sk-proj-abcDEF1234567890ghiJKL",
    "sk-ant-api03-abcdefghijklmnop1234", "xoxb-1234567890-abcdefghij", "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "a8f5f167f44f4964e6c998dee827110c1234abcd", "Zx9Kq2Lm8Np4Rt6Vw1Yb3Cd5Ef7Gh0Jk",
    "glpat-abcdefghij0123456789", "hf_abcdefghijklmnopqrstuvwxyz012345",
]  # fmt: skip


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_what_is_not_a_secret_by_its_shape(text: str) -> None:
    assert secret_spans(text) == []


@pytest.mark.parametrize("text", SECRETS)
def test_what_is_a_secret_by_its_shape(text: str) -> None:
    assert secret_spans(text) == [(0, len(text))]


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("GITHUB_PERSONAL_ACCESS_TOKEN", True), ("apiKey", True), ("X-API-Key", True),
        ("Authorization", True), ("DB_PASSWORD", True), ("GOOGLE_CLIENT_SECRET", True),
        ("access-token", True), ("KEY_PATH", False), ("TOKEN_URL", False), ("AUTH_TYPE", False),
        ("AWS_ACCESS_KEY_ID", False), ("NODE_ENV", False), ("MONKEY", False), ("", False),
    ],
)  # fmt: skip
def test_what_is_a_secret_by_its_name(name: str, secret: bool) -> None:
    assert secret_name(name) is secret


def scope(service: str = "svc", vault: Vault | None = None) -> Scope:
    return Scope(service, service, vault or Vault())


def test_the_parts_that_are_not_secret_stay() -> None:
    s = scope("remote")
    assert (
        rewrite("Bearer abc.def", s, "Authorization", "h") == "Bearer ${env:REMOTE_AUTHORIZATION}"
    )
    assert rewrite("Bearer ${env:MINE}", s, "Authorization", "h") == "Bearer ${env:MINE}"
    assert rewrite("production", s, "NODE_ENV", "env") == "production"
    assert rewrite("/home/me/key.pem", s, "PRIVATE_KEY", "env") == "/home/me/key.pem"
    assert rewrite_url("postgres://u:pw@db:5432/x?sslmode=require", s, "u") == (
        "postgres://u:${env:REMOTE_PASSWORD}@db:5432/x?sslmode=require"
    )
    assert rewrite_url("https://h/mcp?apiKey=k9k9k9&region=eu", s, "u") == (
        "https://h/mcp?apiKey=${env:REMOTE_API_KEY}&region=eu"
    )
    assert rewrite_url("https://h/mcp?access%5Ftoken=k9k9k9", s, "u") == (
        "https://h/mcp?access%5Ftoken=${env:REMOTE_ACCESS_TOKEN}"
    )
    assert rewrite_url("http://[::1", s, "u") == "http://[::1"


def test_a_number_under_a_weak_secret_word_is_a_setting() -> None:
    """`MAX_TOKENS`, `DEFAULT_MINIMUM_TOKENS`, `TOKEN_LIMIT`: a count of a model's tokens
    was taken for a secret to export; a number under a strong name still is one."""
    s = scope("ctx")
    for name, value in (("MAX_TOKENS", "5000"), ("DEFAULT_MINIMUM_TOKENS", "10000"),
                        ("TOKEN_LIMIT", "200")):  # fmt: skip
        assert rewrite(value, s, name, "env") == value
    assert rewrite("12345678", s, "DB_PASSWORD", "env") == "${env:CTX_DB_PASSWORD}"
    assert rewrite("k9k9k9k9", s, "MAX_TOKENS", "env") == "${env:CTX_MAX_TOKENS}"


def test_variables_distinct_per_server_and_value() -> None:
    vault = Vault()
    one, two = scope("gdrive", vault), scope("gmail", vault)
    assert rewrite("a1", one, "GOOGLE_CLIENT_SECRET", "e") == "${env:GDRIVE_GOOGLE_CLIENT_SECRET}"
    assert rewrite("b2", two, "GOOGLE_CLIENT_SECRET", "e") == "${env:GMAIL_GOOGLE_CLIENT_SECRET}"
    # the same value twice in one server: one variable; another value: another variable
    assert rewrite("a1", one, "GOOGLE_CLIENT_SECRET", "e") == "${env:GDRIVE_GOOGLE_CLIENT_SECRET}"
    assert rewrite("c3", one, "GOOGLE_CLIENT_SECRET", "e") == "${env:GDRIVE_GOOGLE_CLIENT_SECRET_2}"
    # a name that starts with the service's is not prefixed twice
    assert rewrite("x", scope("github"), "GITHUB_TOKEN", "e") == "${env:GITHUB_TOKEN}"


def test_an_env_option_with_its_pair_attached_keeps_the_key() -> None:
    """docker's ``--env=KEY=X`` (and ``-e=KEY=X``) is ``--env KEY=X`` in one argument: X is
    judged under KEY, the key stays in the command (it was taken into the variable)."""
    s = scope("d2")
    args = ["run", "--env=GITLAB_TOKEN=glpat-abcdefghij0123456789", "-e=MODE=fast", "--env=x"]
    assert rewrite_args(args, s) == [
        "run", "--env=GITLAB_TOKEN=${env:D2_GITLAB_TOKEN}", "-e=MODE=fast", "--env=x",
    ]  # fmt: skip
    assert list(s.vault.exports) == ["D2_GITLAB_TOKEN"]  # no variable for "--env" itself
    # docker's short option with the pair attached: -eKEY=X (the variable was E_KEY)
    attached = ["run", "-eGITLAB_TOKEN=glpat-abcdefghij0123456789", "-eMODE=fast"]
    assert rewrite_args(attached, s) == [
        "run",
        "-eGITLAB_TOKEN=${env:D2_GITLAB_TOKEN}",
        "-eMODE=fast",
    ]
    assert list(s.vault.exports) == ["D2_GITLAB_TOKEN"]


def test_arguments_in_every_form() -> None:
    s = scope("srv")
    args = [
        "run", "-e", "API_TOKEN=t0k3n", "--env", "MODE=fast", "--access-token", "v4lue",
        "--api-key=k3y", "-H", "Authorization: Bearer b34r3r", "LOG_LEVEL=debug",
        "--name", "plain", "sk-proj-abcDEF1234567890ghiJKL",
    ]  # fmt: skip
    assert rewrite_args(args, s) == [
        "run", "-e", "API_TOKEN=${env:SRV_API_TOKEN}", "--env", "MODE=fast", "--access-token",
        "${env:SRV_ACCESS_TOKEN}", "--api-key=${env:SRV_API_KEY}", "-H",
        "Authorization: Bearer ${env:SRV_AUTHORIZATION}", "LOG_LEVEL=debug", "--name", "plain",
        "${env:SRV_SECRET}",
    ]  # fmt: skip


def test_a_shell_script_keeps_all_but_its_secrets() -> None:
    """``sh -c 'API_KEY=X exec srv'``: each ``KEY=VALUE`` word of the script is judged under
    KEY, quoted or not, and the rest of the script stays as written (the whole script was
    taken as the key's value: `exec srv` was lost and the server ran something else)."""
    s = scope("g")
    script = "cd /srv && API_KEY=inl1nes3cret exec srv --flag; export TOKEN='t0k3n v4l' PORT=8080"
    assert rewrite_args(["-c", script], s, program="bash") == [
        "-c",
        "cd /srv && API_KEY=${env:G_API_KEY} exec srv --flag; "
        "export TOKEN='${env:G_TOKEN}' PORT=8080",
    ]
    assert s.vault.values == {"G_API_KEY": "inl1nes3cret", "G_TOKEN": "t0k3n v4l"}


def test_an_authorization_value_a_json_value_and_sshpass_are_secrets() -> None:
    """What the name alone does not give away: ``Bearer X`` under a name ending in HEADER,
    a JSON object's keys in an env value (as in an argument), sshpass's ``-p X``."""
    from toolctl.interchange.secrets import rewrite_map

    s = scope("k")
    env = {"AUTH_HEADER": "Bearer tok123456789", "CONFIG_JSON": '{"token": "jsont0ken12", "n": 1}',
           "PLAIN_JSON": '{"mode": "fast"}', "NOTE": "Bearer tokens", "MODEL": "gpt-4o",
           "HOSTS_JSON": '[{"host": "a", "password": "arr4ysecr3t"}, "x"]'}  # fmt: skip
    assert rewrite_map(env, s, "env") == {
        "AUTH_HEADER": "Bearer ${env:K_AUTH_HEADER}",
        "CONFIG_JSON": '{"token": "${env:K_TOKEN}", "n": 1}',
        "HOSTS_JSON": '[{"host": "a", "password": "${env:K_PASSWORD}"}, "x"]',
        "PLAIN_JSON": '{"mode": "fast"}', "NOTE": "Bearer tokens", "MODEL": "gpt-4o",
    }  # fmt: skip
    args = ["-p", "sshpassw0rd1", "ssh", "-p", "2222", "host"]
    assert rewrite_args(args, scope("j"), program="sshpass") == [
        "-p", "${env:J_PASSWORD}", "ssh", "-p", "2222", "host"
    ]  # fmt: skip


def test_a_token_given_as_a_urls_user_is_a_secret() -> None:
    """GitHub's `https://TOKEN:x-oauth-basic@host` (and `https://TOKEN@host`): the token
    is the URL's user, and it becomes a reference as a password does; `check` and `show`
    hide it too."""
    from toolctl.interchange.secrets import rewrite_url
    from toolctl.secret_names import hide_written

    token = "ghp_FUZZ0123456789abcdefghij"
    for url in (f"https://{token}:x-oauth-basic@api.example.com/mcp", f"https://{token}@h/mcp"):
        hidden = rewrite_url(url, scope("gh"), "url")
        assert token not in hidden and "${env:" in hidden
        assert token not in hide_written("url", url)


def test_a_shell_scripts_flags_and_headers_are_judged_as_arguments_are() -> None:
    """Inside `sh -c '...'`: `--token X` and `-H 'Authorization: Bearer X'` as in a command's
    own arguments (they were written into the registry as they were)."""
    s = scope("g")
    assert rewrite_args(["-c", "exec srv --token t0k3nvalue123 --port 80"], s) == [
        "-c", "exec srv --token ${env:G_TOKEN} --port 80"
    ]  # fmt: skip
    curl = "curl -H 'Authorization: Bearer b34r3rtoken99' https://x"
    assert rewrite_args(["-c", curl], s) == [
        "-c", "curl -H 'Authorization: Bearer ${env:G_AUTHORIZATION}' https://x"
    ]  # fmt: skip


def test_a_json_value_whose_secret_json_escapes_is_hidden_whole() -> None:
    """A service account's JSON (its private_key holds newlines): a reference in its place
    would come back from the variable raw and break the JSON, so the whole value is the
    variable, as before; a secret JSON writes as it is keeps the JSON around it."""
    import json as json_module

    from toolctl.interchange.secrets import rewrite_map

    key = "-----BEGIN PRIVATE KEY-----\nMIIabc\n-----END PRIVATE KEY-----\n"
    account = json_module.dumps({"type": "service_account", "private_key": key})
    s = scope("g")
    hidden = rewrite_map({"GOOGLE_CREDENTIALS_JSON": account}, s, "env")
    assert hidden == {"GOOGLE_CREDENTIALS_JSON": "${env:G_GOOGLE_CREDENTIALS_JSON}"}
    assert json_module.loads(s.vault.values["G_GOOGLE_CREDENTIALS_JSON"])["private_key"] == key
