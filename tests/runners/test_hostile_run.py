"""`run` under hostile arguments, timeouts and secrets: exit 2 naming the culprit, never 70.

Issue 9, items F (arguments no command line can carry), L (option injection), P (timeouts)
and K (secrets never echoed). Real subprocesses; the HTTP tools point at a closed port.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files

PY = sys.executable
DEEP = "[" * 5000 + "]" * 5000

REGISTRY = f"""
[[tool]]
name = "argv"
[tool.local]
command = ["{PY}", "-c", "import sys; print(*sys.argv[1:], sep='\\\\n')", "{{text}}"]
input = "none"
[[tool.arguments]]
name = "text"

[[tool]]
name = "obj"
[tool.local]
command = ["{PY}", "-c", "import sys; print(sys.stdin.read())"]
[[tool.arguments]]
name = "o"
type = "array"
required = false

[[tool]]
name = "cat"
[tool.local]
command = ["cat", "{{file}}"]
input = "none"
[[tool.arguments]]
name = "file"

[[tool]]
name = "sort-into"
[tool.local]
command = ["sort", "{{file}}"]
input = "none"
[[tool.arguments]]
name = "file"

[[tool]]
name = "cat-allowed"
[tool.local]
command = ["{PY}", "-c", "import sys; print(sys.argv[1:])", "{{flag}}"]
input = "none"
[[tool.arguments]]
name = "flag"
allow_option = true

[[tool]]
name = "cat-dashdash"
[tool.local]
command = ["cat", "--", "{{file}}"]
input = "none"
[[tool.arguments]]
name = "file"

[[tool]]
name = "sleepy"
timeout = 2
[tool.local]
command = ["sleep", "30"]
input = "none"

[[tool]]
name = "web"
[tool.http]
url = "http://127.0.0.1:9/run"
headers = {{ Authorization = "Bearer ${{env:HOSTILE_TOKEN}}" }}

[[tool]]
name = "pulsar-tool"
service = "svc"

[[service]]
name = "svc"
[service.pulsar]
request_queue = "non-persistent://tg/request/x"
response_queue = "non-persistent://tg/response/x"
"""


@pytest.fixture
def reg(tmp_path: Path) -> Path:
    write_files(tmp_path, {"reg/tools.toml": REGISTRY})
    return tmp_path / "reg"


def _usage(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


# -- F: arguments no command line can carry --------------------------------------------


@pytest.mark.parametrize(
    ("value", "why"),
    [("a\0b", "NUL"), ("\ud800", "Unicode"), ("x" * 140_000, "longer than")],
)
def test_argv_values_no_command_line_can_carry_are_exit_2(
    reg: Path, toolctl: Toolctl, value: str, why: str
) -> None:
    done = toolctl("run", "argv", "--arg", f"text={value}", "-r", str(reg))
    _usage(done, "'text'", why)
    done = toolctl("run", "argv", "--args", json.dumps({"text": value}), "-r", str(reg))
    _usage(done, "'text'", why)


def test_a_long_value_on_stdin_is_fine(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl("run", "obj", "--args", json.dumps({"o": ["x" * 200_000]}), "-r", str(reg))
    assert done.returncode == 0, done.stderr


def test_deep_json_is_exit_2(reg: Path, toolctl: Toolctl) -> None:
    _usage(toolctl("run", "obj", "--args", '{"o": ' + DEEP + "}", "-r", str(reg)), "deeper")
    _usage(toolctl("run", "obj", "--arg", f"o={DEEP}", "-r", str(reg)), "'o'", "deeper")
    middling = "[" * 200 + "]" * 200  # parses, but deeper than the limit
    _usage(toolctl("run", "obj", "--arg", f"o={middling}", "-r", str(reg)), "'o'", "deeper")
    _usage(toolctl("run", "obj", "--args", '{"o": [NaN]}', "-r", str(reg)), "finite")


def test_non_utf8_args_file_is_exit_2(reg: Path, tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "bad.json").write_bytes(b'{"o": ["\xff\xfe"]}')
    _usage(toolctl("run", "obj", "--args", f"@{tmp_path / 'bad.json'}", "-r", str(reg)), "UTF-8")


def test_a_batch_goes_on_past_hostile_lines(reg: Path, tmp_path: Path, toolctl: Toolctl) -> None:
    lines = [
        b'{"text": "ok"}',
        b'{"text": ' + DEEP.encode() + b"}",
        b'{"text": "\xff"}',
        b'{"text": "a\\u0000b"}',
        b'{"text": "\\ud800"}',
        b'{"text": "' + b"y" * 140_000 + b'"}',
        b'{"text": "--version"}',
        b'{"text": "end"}',
    ]
    (tmp_path / "batch.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    done = toolctl("run", "argv", "--batch", str(tmp_path / "batch.jsonl"), "-r", str(reg))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["success"] for r in results] == [True, *[False] * 6, True]
    assert results[-1]["output"] == "end"
    assert "UTF-8" in results[2]["error"]
    assert "NUL" in results[3]["error"]
    assert "'text'" in results[6]["error"]


def test_a_batch_from_stdin_with_bad_bytes_goes_on(reg: Path) -> None:
    done = subprocess.run(
        [PY, "-m", "toolctl", "run", "argv", "--batch", "-", "-r", str(reg)],
        input=b'{"text": "\xff"}\n{"text": "fine"}\n',
        capture_output=True,
        check=False,
    )
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["success"] for r in results] == [False, True], done.stderr


# -- L: option injection ----------------------------------------------------------------


def test_an_option_in_a_whole_argv_item_is_refused(
    reg: Path, tmp_path: Path, toolctl: Toolctl
) -> None:
    done = toolctl("run", "cat", "--arg", "file=--version", "-r", str(reg))
    _usage(done, "'file'", "allow_option = true", "'--'")
    assert "GNU" not in done.stdout and "coreutils" not in done.stdout
    done = toolctl("run", "sort-into", "--arg", "file=-opwned.txt", "-r", str(reg), cwd=tmp_path)
    _usage(done, "'file'")
    assert not (tmp_path / "pwned.txt").exists()


def test_allow_option_and_double_dash_let_dashes_through(
    reg: Path, tmp_path: Path, toolctl: Toolctl
) -> None:
    done = toolctl("run", "cat-allowed", "--arg", "flag=--loud", "-r", str(reg))
    assert done.returncode == 0, done.stderr
    assert "--loud" in done.stdout
    (tmp_path / "-notes.txt").write_text("dash file\n")
    done = toolctl("run", "cat-dashdash", "--arg", "file=-notes.txt", "-r", str(reg), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "dash file\n"


def test_dry_run_refuses_an_option_too(reg: Path, toolctl: Toolctl) -> None:
    _usage(toolctl("run", "cat", "--arg", "file=-n", "--dry-run", "-r", str(reg)), "'file'")


# -- P: timeouts -------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["sleepy", "web", "pulsar-tool"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "0", "-1", "86401"])
def test_a_timeout_must_be_finite_and_bounded(
    reg: Path, toolctl: Toolctl, tool: str, value: str
) -> None:
    done = toolctl("run", tool, "--timeout", value, "-r", str(reg), env={"HOSTILE_TOKEN": "t"})
    _usage(done, "--timeout", "86400")


@pytest.mark.parametrize("value", ["nan", "inf", "1e300"])
def test_a_descriptor_timeout_must_be_finite_and_bounded(
    tmp_path: Path, toolctl: Toolctl, value: str
) -> None:
    write_files(
        tmp_path,
        {
            "r/t.toml": f'[[tool]]\nname = "t"\ntimeout = {value}\n[tool.local]\ncommand = ["true"]\n'
        },
    )
    done = toolctl("run", "t", "-r", str(tmp_path / "r"))
    assert done.returncode in (2, 3, 4), done.stderr  # broken file: never runs unbounded
    assert "Traceback" not in done.stderr
    check = toolctl("check", "-r", str(tmp_path / "r"))
    assert check.returncode != 0


def test_a_timeout_in_a_batch_is_checked_once(reg: Path, toolctl: Toolctl) -> None:
    done = toolctl("run", "argv", "--batch", "-", "--timeout", "nan", "-r", str(reg), input="{}\n")
    _usage(done, "--timeout")


# -- K: secrets never echoed ---------------------------------------------------------------

SECRET = "S3CR3T-hostile-7731"


@pytest.mark.parametrize("value", [f"Bearer {SECRET}\n", f"{SECRET}\r\nX-Evil: 1", f"{SECRET}é☃"])
def test_an_invalid_header_value_is_named_never_echoed(
    reg: Path, toolctl: Toolctl, value: str
) -> None:
    env = {"HOSTILE_TOKEN": value}
    outputs = []
    done = toolctl("run", "web", "-r", str(reg), env=env)
    _usage(done, "Authorization")
    outputs.append(done.stdout + done.stderr)
    for extra in (["--json"], ["-v"], ["--dry-run"], ["--dry-run", "--json"]):
        done = toolctl("run", "web", *extra, "-r", str(reg), env=env)
        outputs.append(done.stdout + done.stderr)
    done = toolctl("run", "web", "--batch", "-", "-r", str(reg), env=env, input="{}\n{}\n")
    outputs.append(done.stdout + done.stderr)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 2 and all("Authorization" in r["error"] for r in lines)
    for text in outputs:
        assert SECRET not in text
        assert "S3CR3T" not in text


def test_local_env_secrets_never_echoed(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path,
        {
            "r/t.toml": f"""
            [[tool]]
            name = "envy"
            [tool.local]
            command = ["{PY}", "-c", "import sys; sys.exit(4)"]
            input = "none"
            env = {{ TOKEN = "${{env:HOSTILE_TOKEN}}", OTHER = "x${{env:HOSTILE_TOKEN}}" }}

            [[tool]]
            name = "gone"
            [tool.local]
            command = ["/no/such/binary-xyz"]
            env = {{ TOKEN = "${{env:HOSTILE_TOKEN}}" }}
            """
        },
    )
    outputs = []
    for args in (["envy"], ["envy", "--json"], ["envy", "--dry-run"], ["envy", "-v"], ["gone"]):
        done = toolctl("run", *args, "-r", str(tmp_path / "r"), env={"HOSTILE_TOKEN": SECRET})
        assert "Traceback" not in done.stderr
        outputs.append(done.stdout + done.stderr)
    for text in outputs:
        assert SECRET not in text


@pytest.mark.parametrize(
    "parameters",
    [
        '{ "$ref" = "#" }',
        '{ "$ref" = "#/$defs/a", "$defs" = { a = { "$ref" = "#/$defs/b" }, '
        'b = { "$ref" = "#/$defs/a" } } }',
    ],
    ids=["self", "a-b-a"],
)
def test_a_ref_that_never_ends_is_an_invalid_descriptor(
    tmp_path: Path, toolctl: Toolctl, parameters: str
) -> None:
    """A schema whose $ref never ends is found when the descriptor is read, as any other
    unusable schema: `check` fails on it (exit 3) and `run` skips it with the warning."""
    write_files(
        tmp_path,
        {
            "reg/t.toml": f'[[tool]]\nname = "ps"\nparameters = {parameters}\n'
            '[tool.local]\ncommand = ["echo", "hi"]\ninput = "none"\n'
        },
    )
    told = "tool 'ps': parameters: its $ref refers back to itself without end"
    checked = toolctl("check", "-r", str(tmp_path / "reg"))
    # line 3: the parameters the finding is about, not the [[tool]] header
    assert checked.returncode == 3 and f"reg/t.toml:3: error: {told}" in checked.stdout
    done = toolctl("run", "ps", "--args", "{}", "-r", str(tmp_path / "reg"))
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr.startswith(f"toolctl: warning: reg/t.toml:3: {told} (skipped)\n")


def test_an_mcp_service_header_that_cannot_be_sent_is_exit_2_never_echoed(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """As an HTTP tool's header: a value from the environment with a CR/LF (or a name that
    cannot be one) is exit 2 naming the header, before any connection is tried, for every
    door to the server (listing its tools, running one); it was exit 5 "cannot reach"."""
    write_files(
        tmp_path,
        {
            "r/s.toml": """
            [[service]]
            name = "remote"
            [service.mcp]
            url = "http://127.0.0.1:9/mcp"
            headers = { Authorization = "Bearer ${env:HOSTILE_TOKEN}" }

            [[tool]]
            name = "remote.echo"
            service = "remote"
            [tool.mcp]
            name = "echo"
            """
        },
    )
    env = {"HOSTILE_TOKEN": f"{SECRET}\r\nX-Evil: 1"}
    for line in (["import", "mcp", "remote"], ["run", "remote.echo"]):
        done = toolctl(*line, "-r", str(tmp_path / "r"), env=env)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(
            "toolctl: error: MCP service 'remote': header 'Authorization' cannot be sent: its "
            "value has a control character"
        ), done.stderr
        assert "S3CR3T" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("header", "why"),
    [
        ('"A\\nB" = "x"', "its name is not a valid HTTP header name"),
        ('X-A = "x\\r\\nInjected: 1"', "its value has a control character"),
    ],
)
def test_a_header_that_cannot_be_sent_is_a_finding_of_check(
    tmp_path: Path, toolctl: Toolctl, header: str, why: str
) -> None:
    """Written into a descriptor (an MCP client's config imported, a hand edit), such a
    header is refused when the registry loads: `check` names the file, the other entries
    stay in force."""
    write_files(
        tmp_path,
        {
            "r/s.toml": f"""
            [[service]]
            name = "remote"
            [service.mcp]
            url = "http://127.0.0.1:9/mcp"
            headers = {{ {header} }}
            """,
            "r/t.toml": """
            [[tool]]
            name = "web"
            [tool.http]
            url = "http://127.0.0.1:9/x"
            headers = { Ok = "fine" }
            """,
        },
    )
    done = toolctl("check", "-r", str(tmp_path / "r"))
    assert done.returncode == 3
    assert "s.toml" in done.stdout + done.stderr and why in done.stdout + done.stderr
    assert "t.toml" not in done.stdout + done.stderr
    assert "web" in toolctl("list", "-r", str(tmp_path / "r")).stdout


def test_json_forms_mask_url_passwords_as_the_text_forms_do(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`run --dry-run --json`, `show --json` and `list --json` printed a URL's password and
    secret parameters that their text forms print as `***`."""
    write_files(
        tmp_path,
        {
            "r/t.toml": f"""
            [[tool]]
            name = "web"
            [tool.http]
            url = "http://user:{SECRET}@127.0.0.1:9/x?api_key={SECRET}"

            [[service]]
            name = "queue"
            [service.pulsar]
            request_queue = "non-persistent://tg/request/q"
            response_queue = "non-persistent://tg/response/q"

            [[tool]]
            name = "queued"
            service = "queue"
            """
        },
    )
    reg = str(tmp_path / "r")
    lines = [
        ["run", "web", "--dry-run", "--json"],
        ["show", "web", "--json"],
        ["list", "--json"],
        [
            "run",
            "queued",
            "--dry-run",
            "--json",
            "--pulsar-url",
            f"pulsar://127.0.0.1:9?token={SECRET}",
        ],
    ]
    for line in lines:
        done = toolctl(*line, "-r", reg, env={"TOOLCTL_PULSAR_URL": f"pulsar://u:{SECRET}@h:1"})
        assert done.returncode == 0, (line, done.stderr)
        assert "S3CR3T" not in done.stdout + done.stderr, line
        assert "***" in done.stdout, line
        json.loads(done.stdout)


WRITTEN = """
[[tool]]
name = "h"
description = "a secret written out in a header and a URL"
[tool.http]
url = "https://api.example.com/v1?api_key=sk-proj-abcdefghijklmnopqrstuvwxyz0123"
headers = { Authorization = "Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789", Accept = "json" }

[[tool]]
name = "l"
description = "secrets written out in env (by name, by shape, a URL's password) and a command"
[tool.local]
command = ["true", "--token", "s3cr3t-in-argv-77x", "-H", "X-Api-Key: abc12345", "--api-key", "dGVzdDEyMzQ="]
env = { API_KEY = "s3cr3t-value-9f8e7d", NODE_ENV = "production", OTHER = "xoxb-1234567890-abcdef", DATABASE_URL = "postgresql://app:S3cretPassw0rd@db:5432/app" }

[[tool]]
name = "m"
description = "secrets a name gives away whatever they look like"
[tool.local]
command = ["true"]
env = { JWT_SECRET = "supersecretkey", PGPASSWORD = "hunter2", DSN = "Server=db;User Id=sa;Password=Str0ngPass;", URL = "postgresql://app:p@ssw0rd1@db/app" }
[[tool]]
name = "b"
description = "basic auth"
[tool.http]
url = "https://api.example.com/x"
headers = { Authorization = "Basic dXNlcjpwYXNz" }

[[tool]]
name = "c"
description = "a container's literal env goes on the engine's command line"
[tool.container]
image = "alpine"
env = { API_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123" }

[[tool]]
name = "ordinary"
description = "what is not a secret, though its name holds TOKEN, KEY, AUTH or PASS"
[tool.http]
url = "https://api.example.com/v1/complete?max_tokens=512"
headers = { X-Session-Affinity = "sticky", X-Auth-Scheme = "hmac" }
"""
ORDINARY_ENV = {
    "MAX_TOKENS": "4096", "KEY_ALGORITHM": "RS256", "AUTH_BACKEND": "ldap",
    "COOKIE_SAMESITE": "Lax", "PASS_THROUGH": "1", "DISABLE_AUTH": "1",
    "SORT_KEY": "created_at", "PRIMARY_KEY": "id", "PASSWORD_POLICY": "strong",
    "GIT_COMMIT": "3f2a9c8e1b7d4a6f0e5c2b9a8d7f6e5c4b3a2918",
    "MODEL": "mistralai/Mixtral-8x7B-Instruct-v0.1", "S3_KEY": "reports/2024.csv",
    "SSH_KEY": "id_ed25519", "KMS_KEY_ARN": "arn:aws:kms:eu-west-1:123456789012:key/ab-12",
    "CACHE_KEY": "v2-cache", "PASSTHROUGH_MODE": "enabled1",
}  # fmt: skip
ORDINARY_COMMAND = [
    "aws", "s3api", "get-object", "--key", "reports/2024.csv", "--session", "prod2024",
    "--index-url", "https://pypi-mirror-internal-company.example.com/simple",
]  # fmt: skip


def test_a_secret_written_in_a_descriptor_is_never_shown(tmp_path: Path, toolctl: Toolctl) -> None:
    """A secret written out in env, headers, a URL or a command (by its name, a URL's
    password, or a token's prefix) is `***` in `show`, `list --json` and `run --dry-run`,
    text and JSON; `check` warns of each, naming where it is (an error under --strict).
    What only looks like one by a word of its name (MAX_TOKENS = "4096") or by its
    randomness (a commit hash, a model's id) is shown, and not warned of."""
    ordinary = "".join(f'{key} = "{value}"\n' for key, value in ORDINARY_ENV.items())
    command = json.dumps(ORDINARY_COMMAND)
    tool = f'[[tool]]\nname = "plain"\n[tool.local]\ncommand = {command}\n[tool.local.env]\n'
    write_files(tmp_path, {"r/t.toml": WRITTEN, "r/u.toml": tool + ordinary})
    secrets = ("sk-proj-", "ghp_", "s3cr3t", "xoxb-", "S3cretPassw0rd", "abc12345", "dGVzd",
               "supersecretkey", "hunter2", "Str0ngPass", "ssw0rd1", "dXNlcjpwYXNz")  # fmt: skip
    outputs = []
    for args in (
        ["show", "h"], ["show", "l"], ["show", "h", "--json"], ["show", "l", "--json"],
        ["list", "--json"], ["run", "h", "--dry-run"], ["run", "l", "--dry-run", "--json"],
        ["run", "c", "--dry-run"], ["run", "c", "--dry-run", "--json"],
        ["show", "m", "--json"], ["show", "b"],
    ):  # fmt: skip
        done = toolctl(*args, "-r", str(tmp_path / "r"))
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout + done.stderr)
    for text in outputs:
        assert not any(secret in text for secret in secrets), text
    assert "Bearer ***" in outputs[0] and "production" in outputs[1]
    assert json.loads(outputs[3])["descriptor"]["local"]["env"] == {
        "API_KEY": "***", "NODE_ENV": "production", "OTHER": "***",
        "DATABASE_URL": "postgresql://app:***@db:5432/app",
    }  # fmt: skip
    assert "API_KEY=***" in outputs[7]
    shown = json.loads(toolctl("show", "plain", "--json", "-r", str(tmp_path / "r")).stdout)
    assert shown["descriptor"]["local"]["env"] == ORDINARY_ENV
    assert shown["descriptor"]["local"]["command"] == ORDINARY_COMMAND
    checked = toolctl("check", "-r", str(tmp_path / "r"))
    assert checked.returncode == 0 and not any(s in checked.stdout for s in secrets)
    assert [line.split(": ", 2)[2].split(" holds")[0] for line in checked.stdout.splitlines()] == [
        "tool 'b': http.headers.Authorization",
        "tool 'c': container.env.API_KEY",
        "tool 'h': http.headers.Authorization",
        "tool 'h': http.url",
        "tool 'l': local.env.API_KEY",
        "tool 'l': local.env.DATABASE_URL",
        "tool 'l': local.env.OTHER",
        "tool 'l': local.command",
        "tool 'm': local.env.DSN",
        "tool 'm': local.env.JWT_SECRET",
        "tool 'm': local.env.PGPASSWORD",
        "tool 'm': local.env.URL",
    ]
    assert toolctl("check", "--strict", "-r", str(tmp_path / "r")).returncode == 3
