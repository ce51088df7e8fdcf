"""`toolctl run` on HTTP tools, through the real CLI, against a real server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files
from tests.runners.http.fixture_server import FixtureServer

SECRET = "s3cret-token-value"


def http_registry(root: Path, url: str, *, method: str = "POST", extra: str = "") -> Path:
    """A registry with one tool 'call' at ``url``, taking an optional text and a number."""
    return write_files(
        root / "reg",
        {
            "tools.toml": f"""
                [[tool]]
                name = "call"
                timeout = 10
                [tool.http]
                url = "{url}"
                method = "{method}"
                {extra}
                [[tool.arguments]]
                name = "text"
                required = false
                [[tool.arguments]]
                name = "n"
                type = "integer"
                required = false
            """
        },
    )


def test_post_sends_arguments_as_a_json_body(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/echo")
    done = toolctl(
        "run", "call", "--registry", str(reg), "--arg", "text=hi", "--arg", "n=3", "--json"
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["success"] is True
    assert result["transport"] == "http"
    assert result["data"] == {"method": "POST", "arguments": {"text": "hi", "n": 3}}
    assert json.loads(http_server.seen[0].body) == {"text": "hi", "n": 3}


def test_get_sends_arguments_as_query_parameters(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/echo", method="GET")
    done = toolctl("run", "call", "--registry", str(reg), "--arg", "text=a b", "--arg", "n=7")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["arguments"] == {"text": "a b", "n": "7"}
    assert http_server.seen[0].method == "GET"


def test_get_keeps_the_query_its_url_gives(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    """A GET tool's URL with a query of its own (`?api_key=${env:KEY}`, the form imports
    write) sends it, the arguments after it; it was replaced by the arguments (httpx's
    params), so the key never went. An argument of the same name does not override it."""
    url = f"{http_server.url}/echo?api_key=${{env:ECHO_KEY}}&format=json"
    reg = http_registry(tmp_path, url, method="GET")
    env = {"ECHO_KEY": "k3y%2Fwith%2Bchars"}  # URL text, as the configs it comes from
    done = toolctl("run", "call", "-r", str(reg), "-a", "text=hi", "-a", "n=2", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["arguments"] == {
        "api_key": "k3y/with+chars", "format": "json", "text": "hi", "n": "2"
    }  # fmt: skip


def test_an_output_field_is_the_observation_and_the_body_is_data(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/with-output")
    done = toolctl("run", "call", "--registry", str(reg))
    assert (done.returncode, done.stdout) == (0, "the observation\n")
    done = toolctl("run", "call", "--registry", str(reg), "--json")
    assert json.loads(done.stdout)["data"] == {"output": "the observation", "count": 3}


def test_plain_text_answer_is_the_output(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/text")
    done = toolctl("run", "call", "--registry", str(reg))
    assert (done.returncode, done.stdout) == (0, "plain words\n")


def test_a_toolresult_shaped_answer_is_taken_as_the_result(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/result")
    done = toolctl("run", "call", "--registry", str(reg))
    assert done.returncode == 1
    assert "the tool failed: no such word" in done.stderr


def test_an_error_status_fails_with_the_status_and_an_excerpt(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/fail")
    done = toolctl("run", "call", "--registry", str(reg))
    assert done.returncode == 1
    assert "HTTP 500 Internal Server Error" in done.stderr
    assert "database exploded xxx" in done.stderr
    assert "x" * 400 not in done.stderr  # an excerpt, not the whole body
    assert "Traceback" not in done.stderr


def test_refused_connection_is_transport_unavailable(
    toolctl: Toolctl, tmp_path: Path, closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}/echo"
    done = toolctl("run", "call", "--registry", str(http_registry(tmp_path, url)))
    assert done.returncode == 5
    assert f"cannot connect to {url}" in done.stderr


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://[::1/echo", "its IPv6 host is not valid"),
        ("http://h:abc/echo", "its port is not a number from 0 to 65535"),
        ("http://h:99999/echo", "its port is not a number from 0 to 65535"),
        ("http://:80/echo", "it names no host"),
        ("http://a b/echo", "it holds white space"),
    ],
)
def test_a_url_no_request_can_go_to_is_a_finding(
    toolctl: Toolctl, tmp_path: Path, url: str, problem: str
) -> None:
    """A url urllib or httpx cannot take apart (an unclosed bracket, a port of letters were
    exit 70 at run time): the definition is skipped with a warning naming why; check: 3."""
    reg = http_registry(tmp_path, url)
    done = toolctl("run", "call", "--registry", str(reg))
    assert done.returncode == 4
    assert f"http: url must be absolute http(s), got '{url}': {problem} (skipped)" in done.stderr
    checked = toolctl("check", "--registry", str(reg))
    assert checked.returncode == 3, checked.stdout + checked.stderr


def test_no_answer_within_the_timeout_is_124(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/slow")
    done = toolctl("run", "call", "--registry", str(reg), "--timeout", "0.5")
    assert done.returncode == 124
    assert "got no answer within 0.5 s" in done.stderr


def test_a_redirect_to_another_host_is_not_followed(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/away")
    done = toolctl("run", "call", "--registry", str(reg))
    assert done.returncode == 1
    assert "HTTP 302 Found" in done.stderr
    assert "not followed (another host)" in done.stderr
    assert http_server.paths() == ["/away"]


def test_a_redirect_on_the_same_host_is_followed(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/home", method="GET")
    done = toolctl("run", "call", "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["arguments"] == {"moved": "yes"}
    assert http_server.paths() == ["/home", "/echo"]


def test_a_307_on_the_same_host_sends_the_body_again(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/keep")
    done = toolctl("run", "call", "--registry", str(reg), "--arg", "text=again")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"method": "POST", "arguments": {"text": "again"}}
    assert [seen.body for seen in http_server.seen] == [b'{"text":"again"}'] * 2


def test_redirects_without_end_stop_after_five(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/loop", method="GET")
    done = toolctl("run", "call", "--registry", str(reg))
    assert done.returncode == 1
    assert "redirect to /loop not followed (more than 5 redirects)" in done.stderr
    assert http_server.paths() == ["/loop"] * 6


def test_a_gzip_answer_is_unpacked(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/gzip")
    done = toolctl("run", "call", "--registry", str(reg), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["output"], result["data"]) == ("unpacked", {"output": "unpacked", "size": 8})


def test_the_declared_charset_decodes_the_answer(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/latin")
    done = toolctl("run", "call", "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "café crème\n"


def test_an_environment_proxy_does_not_catch_loopback(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer, closed_port: int
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/echo")
    dead = f"http://127.0.0.1:{closed_port}"
    env = {"HTTP_PROXY": dead, "http_proxy": dead, "ALL_PROXY": dead}
    done = toolctl("run", "call", "--registry", str(reg), "--arg", "text=x", env=env)
    assert done.returncode == 0, done.stderr
    assert http_server.paths() == ["/echo"]


def test_an_env_header_reaches_the_server_and_is_never_printed(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    extra = 'headers = { Authorization = "Bearer ${env:TOKEN}" }'
    reg = http_registry(tmp_path, f"{http_server.url}/echo", extra=extra)
    env = {"TOKEN": SECRET}
    dry = toolctl("run", "call", "--registry", str(reg), "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    assert "Bearer ***" in dry.stdout
    assert SECRET not in dry.stdout + dry.stderr
    assert http_server.seen == []  # a dry run sends nothing
    ran = toolctl("run", "call", "--registry", str(reg), "-v", "--arg", "text=x", env=env)
    assert ran.returncode == 0, ran.stderr
    assert "start" in ran.stderr and "done" in ran.stderr
    assert SECRET not in ran.stdout + ran.stderr
    assert http_server.seen[0].headers["Authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize("route", ["/denied", "/denied?result=1", "/denied?json=1"])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_server_echoing_a_passed_secret_in_its_error_gets_it_masked(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer, route: str, json_flag: list[str]
) -> None:
    extra = 'headers = { Authorization = "Bearer ${env:TOKEN}" }'
    reg = http_registry(tmp_path, f"{http_server.url}{route}", extra=extra)
    ran = toolctl("run", "call", "--registry", str(reg), *json_flag, env={"TOKEN": SECRET})
    assert ran.returncode == 1, ran.stderr
    assert http_server.seen[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in ran.stdout + ran.stderr
    said = '"you_sent": "' if "json" in route else "invalid credentials: "
    assert f"{said}Bearer ***" in ran.stdout + ran.stderr


def test_an_unset_env_header_is_a_usage_error(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    extra = 'headers = { Authorization = "Bearer ${env:TOOLCTL_TEST_UNSET}" }'
    reg = http_registry(tmp_path, f"{http_server.url}/echo", extra=extra)
    done = toolctl("run", "call", "--registry", str(reg))
    assert done.returncode == 2
    assert "TOOLCTL_TEST_UNSET is not set" in done.stderr
    assert http_server.seen == []


def test_batch_reuses_one_client_and_keeps_input_order(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    reg = http_registry(tmp_path, f"{http_server.url}/echo")
    lines = "".join(json.dumps({"n": i}) + "\n" for i in range(40))
    done = toolctl(
        "run", "call", "--registry", str(reg), "--batch", "-", "--concurrency", "8", input=lines
    )
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["data"]["arguments"]["n"] for r in results] == list(range(40))
    connections = {seen.peer for seen in http_server.seen}
    assert len(connections) <= 8  # kept open and reused, never one per call


def test_https_verifies_certificates_against_ssl_cert_file(
    toolctl: Toolctl, tmp_path: Path, https_server: FixtureServer, self_signed: Path
) -> None:
    reg = http_registry(tmp_path, f"{https_server.url}/echo")
    untrusted = toolctl("run", "call", "--registry", str(reg), "--arg", "text=x")
    assert untrusted.returncode == 5
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr
    env = {"SSL_CERT_FILE": str(self_signed)}
    trusted = toolctl("run", "call", "--registry", str(reg), "--arg", "text=x", env=env)
    assert trusted.returncode == 0, trusted.stderr
    assert json.loads(trusted.stdout)["arguments"] == {"text": "x"}


@pytest.mark.parametrize("template", ["http://${env:ECHO_HOST}:{port}/echo", "${env:ECHO_URL}"])
def test_a_url_with_env_values_is_sent_expanded_and_shown_masked(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer, template: str
) -> None:
    """``${env:NAME}`` in a url (a host, or the whole url) is the variable's value when the
    call is sent (it was sent as written: "Invalid port"), masked wherever it is shown; a
    value that makes no URL is exit 2."""
    port = http_server.url.rsplit(":", 1)[1]
    reg = http_registry(tmp_path, template.replace("{port}", port))
    env = {"ECHO_HOST": "127.0.0.1", "ECHO_URL": f"{http_server.url}/echo"}
    ran = toolctl("run", "call", "-r", str(reg), "--arg", "text=x", env=env)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["arguments"] == {"text": "x"}
    planned = toolctl("run", "call", "-r", str(reg), "--dry-run", "--json", env=env)
    assert "127.0.0.1" not in json.loads(planned.stdout)["url"]
    bad = toolctl("run", "call", "-r", str(reg), env={"ECHO_HOST": "a b", "ECHO_URL": "nope"})
    assert bad.returncode == 2, bad.stderr
    assert "its url, with its ${env:} values, is not an http(s) URL" in bad.stderr


def test_a_url_wholly_from_a_variable_is_never_shown_in_an_error(
    toolctl: Toolctl, tmp_path: Path, closed_port: int
) -> None:
    """Its path may be the token (`https://hooks.example/T0K3N`): an error shows `***`
    for the whole of it, not the URL with only its query masked."""
    reg = http_registry(tmp_path, "${env:HOOK_URL}")
    hook = f"http://127.0.0.1:{closed_port}/SECRET-PATH-TOKEN?k=v"
    done = toolctl("run", "call", "-r", str(reg), "--json", env={"HOOK_URL": hook})
    assert done.returncode == 5, done.stderr
    assert "SECRET-PATH-TOKEN" not in done.stdout + done.stderr
    assert "cannot connect to ***" in done.stderr


def test_get_sends_its_urls_query_as_written(
    toolctl: Toolctl, tmp_path: Path, http_server: FixtureServer
) -> None:
    """A signed URL, a valueless flag, `;` between parameters: the URL's own query goes as
    it is written (httpx re-encoded it: `?flag` became `?flag=`, `;` became `%3B`), the
    arguments after it."""
    reg = http_registry(tmp_path, f"{http_server.url}/echo?flag&a=1;b=2&q=x%20y", method="GET")
    assert toolctl("run", "call", "-r", str(reg)).returncode == 0
    assert toolctl("run", "call", "-r", str(reg), "-a", "text=hi there").returncode == 0
    assert [s.path for s in http_server.seen] == [
        "/echo?flag&a=1;b=2&q=x%20y", "/echo?flag&a=1;b=2&q=x%20y&text=hi+there"
    ]  # fmt: skip
