"""A secret in what an import refuses is never part of the error that refuses it (an entry
without a name is described by its keys, a URL that does not parse is shown without its
password, query or fragment), and the forms of secrets people write are never copied."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from subprocess import CompletedProcess

from tests.conftest import Toolctl, write_files


def _nowhere(secret: str, done: object, registry: Path) -> None:
    shown = getattr(done, "stdout", "") + getattr(done, "stderr", "")
    assert secret not in shown
    assert all(secret not in p.read_text() for p in registry.rglob("*") if p.is_file())


def test_a_chat2graph_tool_without_a_name_is_told_by_its_keys(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(
        tmp_path,
        {
            "x.yml": "tools:\n  - type: MCP\n    mcp_transport_config: {transport_type: STDIO, "
            'command: npx, env: {OPENAI_API_KEY: "sk-proj-Hunter95PwAAAA"}, '
            'headers: {Authorization: "Bearer Hunter93Pw"}}\n'
        },
    )
    (tmp_path / "R").mkdir()
    done = toolctl("import", "chat2graph", "x.yml", "-r", "R", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "toolctl: error: x.yml: a tool without a name (it holds: mcp_transport_config, type)\n",
    )
    _nowhere("Hunter9", done, tmp_path / "R")


def test_a_url_that_does_not_parse_is_shown_without_its_password(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    url = "http://admin:Hunter8Pw@[::1/mcp?token=Hunter7Pw"
    write_files(tmp_path, {"v6.json": json.dumps({"mcpServers": {"v6": {"url": url}}})})
    (tmp_path / "R").mkdir()
    imported = toolctl("import", "mcp-config", "v6.json", "-r", "R", cwd=tmp_path)
    assert imported.returncode == 3 and "http://***@[::1/mcp?***" in imported.stderr
    _nowhere("Hunter", imported, tmp_path / "R")
    added = toolctl("mcp", "add", "s", "--url", url, "-r", "R", cwd=tmp_path)
    assert added.returncode != 0 and "http://***@[::1/mcp?***" in added.stderr
    _nowhere("Hunter", added, tmp_path / "R")


def test_the_forms_of_secrets_people_write_become_references(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    servers = {
        "upper": {"url": "HTTPS://admin:Hunter5Pw@api.example.com/mcp"},
        "remote": {
            "command": "npx",
            "args": [
                "mcp-remote",
                "https://x.example/mcp",
                "--header=Authorization: Bearer Hunter28Pw",
            ],
        },
        "conn": {"command": "srv", "env": {"CONN": "Server=db;User Id=sa;Password=Hunter26Pw;"}},
        "frag": {"url": "https://h.example/mcp#token=Hunter15Pw"},
    }
    write_files(tmp_path, {"leak.json": json.dumps({"mcpServers": servers})})
    (tmp_path / "R").mkdir()
    done = toolctl("import", "mcp-config", "leak.json", "-r", "R", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _nowhere("Hunter", done, tmp_path / "R")
    for variable in ("UPPER_PASSWORD", "REMOTE_AUTHORIZATION", "CONN_PASSWORD", "FRAG_TOKEN"):
        assert f"export {variable}=..." in done.stdout


def _import(
    tmp_path: Path, toolctl: Toolctl, servers: Mapping[str, object]
) -> CompletedProcess[str]:
    write_files(tmp_path, {"leak.json": json.dumps({"mcpServers": servers})})
    (tmp_path / "R").mkdir()
    done = toolctl("import", "mcp-config", "leak.json", "-r", "R", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _nowhere("Hunter", done, tmp_path / "R")
    return done


def test_the_password_after_p_becomes_a_reference_a_port_or_package_stays(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    servers = {
        "mysql": {"command": "mcp-mysql", "args": ["-u", "root", "-p", "Hunter3Pw"]},
        "docker": {"command": "docker", "args": ["run", "-u", "1000", "-p", "8080:80", "img"]},
        "npx": {"command": "npx", "args": ["-y", "-p", "@scope/server", "server"]},
    }
    done = _import(tmp_path, toolctl, servers)
    assert "export MYSQL_PASSWORD=...   # server 'mysql', argument 4" in done.stdout
    assert "DOCKER_" not in done.stdout and "NPX_" not in done.stdout
    services = tmp_path / "R" / "services"
    assert '"-p",\n    "${env:MYSQL_PASSWORD}",' in (services / "mysql.toml").read_text()
    assert '"8080:80"' in (services / "docker.toml").read_text()
    assert '"@scope/server"' in (services / "npx.toml").read_text()


def test_a_session_in_a_url_path_parameter_becomes_a_reference(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    servers = {"jsess": {"url": "https://h.example/mcp;jsessionid=Hunter41Pw?region=eu"}}
    done = _import(tmp_path, toolctl, servers)
    assert "export JSESS_JSESSIONID=...   # server 'jsess', url (URL path jsessionid)" in (
        done.stdout
    )
    written = (tmp_path / "R" / "services" / "jsess.toml").read_text()
    assert "/mcp;jsessionid=${env:JSESS_JSESSIONID}?region=eu" in written


def test_the_url_of_a_trustgraph_mcp_server_keeps_no_secret(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    url = "https://admin:Hunter71Pw@h.example/mcp?api_key=Hunter72Pw&region=eu"
    items = [{"key": "mcp/good", "value": {"url": url, "auth-token": "Hunter73Pw"}}]
    bad = [{"key": "mcp/bad", "value": {"url": "http://admin:Hunter70Pw@[::1/mcp#t=Hunter69"}}]
    write_files(tmp_path, {"tg.json": json.dumps(items), "bad.json": json.dumps(bad)})
    (tmp_path / "R").mkdir()
    done = toolctl("import", "trustgraph", "tg.json", "-r", "R", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _nowhere("Hunter", done, tmp_path / "R")
    assert "its url reads GOOD_API_KEY, GOOD_PASSWORD from the environment" in done.stderr
    written = (tmp_path / "R" / "services" / "good.toml").read_text()
    assert (
        'url = "https://admin:${env:GOOD_PASSWORD}@h.example/mcp'
        '?api_key=${env:GOOD_API_KEY}&region=eu"'
    ) in written
    refused = toolctl("import", "trustgraph", "bad.json", "-r", "R", cwd=tmp_path)
    assert refused.returncode == 3 and "http://***@[::1/mcp#***" in refused.stderr
    _nowhere("Hunter", refused, tmp_path / "R")
