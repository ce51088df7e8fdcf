"""A tool URL that `check` lets through but httpx cannot send to is exit 3 naming it, and
a URL is printed without its password, query or fragment."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files


@pytest.mark.parametrize("url", ["http://h\\u0000/x", "http://a..b/", "http://h/x\\u007f"])
def test_a_url_no_request_can_go_to_is_a_descriptor_error(
    tmp_path: Path, toolctl: Toolctl, url: str
) -> None:
    """A control character, a host with an empty label: the descriptor is refused where it
    is read (`check` exit 3; `run` skips it with that warning), as every invalid one is."""
    write_files(tmp_path, {"reg/t.toml": f'[[tool]]\nname = "hp"\n[tool.http]\nurl = "{url}"\n'})
    checked = toolctl("check", "-r", "reg")
    assert checked.returncode == 3 and "http: url must be absolute http(s)" in checked.stdout
    done = toolctl("run", "hp", "-r", "reg")
    assert done.returncode == 4 and "(skipped)" in done.stderr, done.stderr


@pytest.mark.parametrize("url", ["http://xn--/x", "http://h\\u2024com/"])
def test_a_url_httpx_cannot_send_to_is_exit_3(tmp_path: Path, toolctl: Toolctl, url: str) -> None:
    write_files(tmp_path, {"reg/t.toml": f'[[tool]]\nname = "hp"\n[tool.http]\nurl = "{url}"\n'})
    done = toolctl("run", "hp", "-r", "reg")
    assert done.returncode == 3, done.stderr
    assert "the url cannot be used" in done.stderr and done.stderr.count("\n") == 1


def test_a_password_in_a_url_is_never_printed(tmp_path: Path, toolctl: Toolctl) -> None:
    url = "http://user:hunter2SECRET@127.0.0.1:9/x?token=QSECRET"
    write_files(tmp_path, {"reg/t.toml": f'[[tool]]\nname = "hp"\n[tool.http]\nurl = "{url}"\n'})
    done = toolctl("run", "hp", "-r", "reg")
    assert done.returncode == 5
    assert "SECRET" not in done.stdout + done.stderr
    assert "cannot connect to http://***@127.0.0.1:9/x?***" in done.stderr


def test_show_dry_run_and_where_hide_a_urls_password(tmp_path: Path, toolctl: Toolctl) -> None:
    url = "http://user:hunter2SECRET@127.0.0.1:9/x"
    write_files(
        tmp_path,
        {
            "toolctl.toml": '[defaults]\npulsar_url = "pulsar://u:PASSWORDY@127.0.0.1:1"\n',
            "registry/t.toml": f'[[tool]]\nname = "hp"\n[tool.http]\nurl = "{url}"\n',
        },
    )
    for line in (["show", "hp"], ["run", "hp", "--dry-run"], ["where"], ["where", "--json"]):
        done = toolctl(*line, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        shown = done.stdout + done.stderr
        assert "SECRET" not in shown and "PASSWORDY" not in shown, line
    assert "http://user:***@127.0.0.1:9/x" in toolctl("show", "hp", cwd=tmp_path).stdout
    assert "pulsar://u:***@127.0.0.1:1" in toolctl("where", cwd=tmp_path).stdout


def test_show_and_dry_run_hide_the_secret_parameters_of_a_url(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    url = (
        "https://api.example.com/v1;jsessionid=SESSIONX?api_key=KEYX&format=json#access_token=TOKX"
    )
    write_files(tmp_path, {"reg/t.toml": f'[[tool]]\nname = "hp"\n[tool.http]\nurl = "{url}"\n'})
    for line in (["show", "hp"], ["run", "hp", "--dry-run"]):
        done = toolctl(*line, "-r", "reg")
        assert done.returncode == 0, done.stderr
        assert not [s for s in ("SESSIONX", "KEYX", "TOKX") if s in done.stdout], line
        masked = (
            "https://api.example.com/v1;jsessionid=***?api_key=***&format=json#access_token=***"
        )
        assert masked in done.stdout, line


@pytest.mark.parametrize("password", ["hunter2/x", "hun?ter2", "hunt#er2"])
def test_a_password_holding_url_syntax_is_never_printed(
    tmp_path: Path, toolctl: Toolctl, password: str
) -> None:
    """A password holding `/`, `?` or `#` ends the URL's host early: the parser's message
    ("Port could not be cast ... 'hunter2'") and the URL shown quoted it."""
    url = f"https://bob:{password}SECRET@example.com/api"
    write_files(tmp_path, {"reg/t.toml": f'[[tool]]\nname = "hp"\n[tool.http]\nurl = "{url}"\n'})
    checked = toolctl("check", "-r", "reg", "--json")
    added = toolctl("mcp", "add", "m", "--url", url, "-r", "reg2")
    for done in (checked, added):
        assert "SECRET" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert checked.returncode == 3 and added.returncode == 3
